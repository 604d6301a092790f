/* idle.c — what a thread does when it is about to wait for its peer: the
 * set-up work kept off the connect path (the next connect's segment, the
 * statistics file, the runtime directory's janitor, the segment-reopening
 * probe), done while the peer is busy anyway.
 */
#include "socket/idle.h"

#include "fabric/shm/seg_pool.h"
#include "ring/segment.h"
#include "runtime/log.h"
#include "runtime/rundir_sweep.h"
#include "runtime/stats_file.h"
#include "runtime/young.h"

/* A young process's waits are its first connection's: a reply that lands
 * while a chore of 20-60 us runs waits for the chore, asleep or not.  So
 * these wait for the young period's end (young.h). */
static void chores_that_can_wait(void)
{
	sl_stats_publish_idle();
	sl_rundir_sweep_idle();
	sl_segment_reopen_idle();
}

void sl_about_to_wait(void)
{
	sl_seg_pool_idle();
	/* Asked for before a sandbox, these open files the filter may refuse,
	 * or kill the process for: they were set-up work, and set-up is over. */
	if (sl_log_sandboxed() || sl_young())
		return;
	chores_that_can_wait();
}

int sl_about_to_sleep(void)
{
	int64_t left;

	if (sl_log_sandboxed())
		return -1;
	left = sl_young_left_ns();
	if (!left) {
		chores_that_can_wait();
		return -1;
	}
	/* The janitor and the probe can wait for any later wait; the file is
	 * what scilan_ctl stat shows, and this sleep may be a long one. */
	if (!sl_stats_publish_pending())
		return -1;
	return (int)(left / 1000000) + 1;
}
