/* test_stall.c — a client waiting in epoll_wait for the answer of a server
 * end that reads past the hook (progs/stall.c): the stall watch moves the
 * connection to kernel TCP and the answer arrives, as with kernel TCP. */
#include <criterion/criterion.h>

#include "runner.h"

/* A set inherited through fork scans its members (no event queue). */
Test(stall, epoll_forked_set_waits_for_unhooked_reader, .timeout = 120)
{
	hk_scenario("stall", "unhooked_forked_set", 0, -1, 30);
}
