/* idle.c — what a thread does when it is about to wait for its peer: the
 * set-up work kept off the connect path (the next connect's segment, the
 * runtime directory's janitor, the segment-reopening probe), done while the
 * peer is busy anyway.
 */
#include "socket/idle.h"

#include "fabric/shm/seg_pool.h"
#include "ring/segment.h"
#include "runtime/log.h"
#include "runtime/rundir_sweep.h"

void sl_about_to_wait(void)
{
	sl_seg_pool_idle();
	/* Asked for before a sandbox, these open files the filter may refuse,
	 * or kill the process for: they were set-up work, and set-up is over. */
	if (sl_log_sandboxed())
		return;
	sl_rundir_sweep_idle();
	sl_segment_reopen_idle();
}
