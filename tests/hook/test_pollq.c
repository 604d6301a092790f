/* test_pollq.c — poll, ppoll, select and pselect over many connections
 * (progs/pollq.c) under the hook against kernel TCP, and what a sleeping
 * poll costs: the connections it arms (SCILAN_STATS sleeps) are not the
 * whole array.  SCEN_HANDOFFS sets the hand-off count (make stress-long). */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "runner.h"

/* 4,000 ends in one process whose soft limit is its hard one (scen_pairs):
 * the library's descriptors keep within a quarter of it (own_fd.c), so at a
 * limit of 20,000 about 2,000 ends ride the rings and the rest kernel TCP. */
Test(pollq, large_array_few_ready, .timeout = 240) { hk_scenario("pollq", "large", 1800, -1, 120); }
Test(pollq, select_and_pselect_over_300, .timeout = 120) { hk_scenario("pollq", "select", 600, -1, 60); }
Test(pollq, closed_reset_shut_under_a_sleeping_poll, .timeout = 120) { hk_scenario("pollq", "ends", 1000, -1, 60); }
Test(pollq, two_threads_poll_the_same_connections, .timeout = 120) { hk_scenario("pollq", "threads", 600, -1, 60); }
Test(pollq, signal_during_a_large_poll, .timeout = 120) { hk_scenario("pollq", "signal", 600, -1, 60); }
Test(pollq, queue_across_fork_and_thread_exit, .timeout = 120) { hk_scenario("pollq", "fork", 400, -1, 60); }
Test(pollq, a_forced_spin_sees_kernel_entries, .timeout = 120) { hk_scenario("pollq", "spin_sees_kernel", 12, -1, 30); }
Test(pollq, poll_handoffs_watchdog, .timeout = 600) { hk_scenario("pollq", "handoff", 404, -1, 500); }

Test(pollq, poll_before_the_offers_are_decided, .timeout = 120) { hk_scenario("pollq", "offers_out", 80, -1, 60); }

/* "large" sleeps some 25 times in poll over 2,000 connections: arming each
 * of them at each sleep counts some 50,000 connection sleeps; a poll that
 * sleeps on its queue arms none. */
Test(pollq, a_sleeping_poll_arms_no_idle_connection, .timeout = 240)
{
	char *err;
	long sleeps = hk_scenario_stat("pollq", "large", "sleeps", 120, &err);

	cr_expect(sleeps >= 0 && sleeps < 2000, "connection sleeps %ld: the polls armed idle connections\n%s", sleeps, err);
	free(err);
}

/* "offers_out" polls 40 connections before they are accepted (they cannot
 * be queued yet), then sleeps 20 times on them: those sleeps must arm no
 * connection (arming each: some 800 connection sleeps). */
Test(pollq, a_poll_queues_connections_once_their_offers_are_decided, .timeout = 120)
{
	char *err;
	long sleeps = hk_scenario_stat("pollq", "offers_out", "sleeps", 60, &err);

	cr_expect(sleeps >= 0 && sleeps < 200, "connection sleeps %ld: the polls armed every connection\n%s", sleeps, err);
	free(err);
}
