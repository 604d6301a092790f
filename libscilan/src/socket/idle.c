/* idle.c — what a thread does when it is about to wait for its peer: the
 * set-up work kept off the connect path (the next connect's segment, the
 * runtime directory's janitor, the segment-reopening probe), done while the
 * peer is busy anyway.
 */
#include "socket/idle.h"

#include "fabric/shm/seg_pool.h"
#include "ring/segment.h"
#include "runtime/rundir_sweep.h"

void sl_about_to_wait(void)
{
	sl_seg_pool_idle();
	sl_rundir_sweep_idle();
	if (sl_segment_reopenable_known() < 0)
		sl_segment_reopenable();
}
