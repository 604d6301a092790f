/* test_epollq.c — epoll sets with many connections (progs/epollq.c) under the
 * hook against kernel TCP, and what a wait on such a set costs: the
 * connections a waiter arms (SCILAN_STATS sleeps) are the ready ones, not
 * the whole set.  SCEN_HANDOFFS sets the hand-off count (make stress-long). */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "runner.h"

/* 4,000 ends in one process whose soft limit is its hard one (scen_pairs):
 * the library's descriptors keep within a quarter of it (own_fd.c), so at a
 * limit of 20,000 about 2,000 ends ride the rings and the rest kernel TCP. */
Test(epollq, large_set_few_ready, .timeout = 240) { hk_scenario("epollq", "large", 1800, -1, 120); }
Test(epollq, closed_reset_shut_members_under_a_waiter, .timeout = 120) { hk_scenario("epollq", "ends", 1000, -1, 60); }
Test(epollq, nested_large_set, .timeout = 120) { hk_scenario("epollq", "nested", 600, -1, 60); }
Test(epollq, set_shared_with_forked_child, .timeout = 120) { hk_scenario("epollq", "fork", 400, -1, 60); }
Test(epollq, one_connection_in_six_sets, .timeout = 120) { hk_scenario("epollq", "six_sets", 2, -1, 60); }
Test(epollq, members_deleted_and_added_back, .timeout = 120) { hk_scenario("epollq", "readd", 7, -1, 60); }
Test(epollq, set_level_handoffs_watchdog, .timeout = 600) { hk_scenario("epollq", "handoff", 404, -1, 500); }

/* The waits of "large" sleep 20 times on 2,000 members: scanning them armed
 * every member at each sleep (40,000 connection sleeps); the event queue
 * sleeps on the set alone. */
Test(epollq, a_sleeping_wait_arms_no_idle_member, .timeout = 240)
{
	char *err;
	long sleeps = hk_scenario_stat("epollq", "large", "sleeps", 120, &err);

	cr_expect(sleeps >= 0 && sleeps < 2000, "connection sleeps %ld: the waits armed idle members\n%s", sleeps, err);
	free(err);
}
