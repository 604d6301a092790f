/* test_pass.c — sockets handed between processes as Node.js's cluster does
 * (progs/pass.c) under the hook against kernel TCP: connections closed behind
 * libc's back, listeners passed bound or listening, all accelerated. */
#include <criterion/criterion.h>

#include "runner.h"

/* ROUNDS connections, each counted by the client and by the dispatcher. */
Test(pass, worker_closes_with_syscall, .timeout = 120) { hk_scenario("pass", "syscall_close", 6, -1, 30); }
Test(pass, worker_closes_unseen, .timeout = 120) { hk_scenario("pass", "raw_close", 6, -1, 30); }
/* As uid 65534, which cannot reopen a segment through /proc/self/map_files:
 * each connection keeps its rings (it was reset). */
Test(pass, worker_of_an_unprivileged_user, .timeout = 120)
{
	hk_scenario("pass", "syscall_close_as_nobody", 6, -1, 30);
}
/* Set up as root, passed after dropping to 65534: the first connection
 * continues on kernel TCP (it was reset), the others keep their rings. */
Test(pass, connection_passed_after_dropping_root_moves_to_kernel, .timeout = 120)
{
	hk_scenario("pass", "dropped_root_before_passing", 4, -1, 30);
}
/* Two connections, counted by the client and by the worker that accepted. */
Test(pass, listen_in_worker, .timeout = 120) { hk_scenario("pass", "listen_in_worker", 4, -1, 30); }
Test(pass, listener_passed, .timeout = 120) { hk_scenario("pass", "listener_passed", 4, -1, 30); }
Test(pass, accept_where_not_listened, .timeout = 120) { hk_scenario("pass", "accept_where_not_listened", 2, -1, 30); }

/* The receiver of an accelerated connection runs without the hook (exec'd
 * with LD_PRELOAD removed): it reads the kernel socket.  The client, whose
 * request the peer never takes from the ring, moves the connection to kernel
 * TCP after SL_STALL_MS; the exchange completes (it hung before). */
Test(pass, connection_passed_to_unhooked_process_moves_to_kernel, .timeout = 120)
{
	hk_scenario("pass", "pass_to_unhooked", 0, -1, 30);
}
