/* test_stall.c — a client waiting in epoll_wait for the answer of a server
 * end that reads past the hook (progs/stall.c): the stall watch moves the
 * connection to kernel TCP and the answer arrives, as with kernel TCP. */
#include <criterion/criterion.h>

#include "runner.h"

/* The server's end runs in a process without the hook: the request waits in
 * the ring until the client, asleep in epoll_wait, sees the peer took none
 * of it for SL_STALL_MS (it hung before, in the event queue's sleep). */
Test(stall, epoll_level_waits_for_unhooked_reader, .timeout = 120)
{
	hk_scenario("stall", "unhooked_level", 0, -1, 30);
}
Test(stall, epoll_edge_waits_for_unhooked_reader, .timeout = 120)
{
	hk_scenario("stall", "unhooked_edge", 0, -1, 30);
}
/* Each 200 ms wait expires before the bound: the watch adds them up. */
Test(stall, epoll_timeouts_add_up, .timeout = 120) { hk_scenario("stall", "unhooked_timeouts", 0, -1, 30); }
/* A nested set makes the wait a poll of the scanned part; the queued client
 * is watched beside it. */
Test(stall, epoll_beside_nested_set_waits_for_unhooked_reader, .timeout = 120)
{
	hk_scenario("stall", "unhooked_beside_nested", 0, -1, 30);
}
/* A set inherited through fork scans its members (no event queue). */
Test(stall, epoll_forked_set_waits_for_unhooked_reader, .timeout = 120)
{
	hk_scenario("stall", "unhooked_forked_set", 0, -1, 30);
}
/* A hooked acceptor that reads and answers with io_uring. */
Test(stall, epoll_edge_waits_for_uring_reader, .timeout = 120) { hk_scenario("stall", "uring_edge", 0, -1, 30); }

/* A hooked server that read the request and answers after SL_STALL_MS: the
 * peer took our bytes, so nothing moves: both ends stay accelerated. */
Test(stall, epoll_level_slow_answer_keeps_the_rings, .timeout = 120)
{
	hk_scenario("stall", "slow_answer_level", 2, 2, 30);
}
Test(stall, epoll_edge_slow_answer_keeps_the_rings, .timeout = 120)
{
	hk_scenario("stall", "slow_answer_edge", 2, 2, 30);
}
