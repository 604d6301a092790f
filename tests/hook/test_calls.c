/* test_calls.c — the connection-level calls (progs/calls.c) under the hook
 * against kernel TCP: socket/bind/listen/accept/accept4, blocking and
 * non-blocking connect, names, socket options (TCP_DEFER_ACCEPT on a listener
 * among them), shutdown, close, fstat; O_NONBLOCK changed where the library
 * does not see it first-hand (progs/nonblock.c). */
#include <criterion/criterion.h>

#include "runner.h"

/* Every scenario connects over loopback: each connection between two
 * preloaded ends must be accelerated, so at least one per scenario. */
Test(calls, accept_accept4_bind_listen, .timeout = 120) { hk_scenario("calls", "accept", 1, -1, 30); }
Test(calls, connect_blocking_and_refused, .timeout = 120) { hk_scenario("calls", "connect", 1, -1, 30); }
Test(calls, connect_nonblocking_so_error, .timeout = 120) { hk_scenario("calls", "connect_nb", 1, -1, 30); }
Test(calls, getsockname_getpeername, .timeout = 120) { hk_scenario("calls", "names", 1, -1, 30); }
Test(calls, getsockopt_setsockopt, .timeout = 120) { hk_scenario("calls", "sockopt", 1, -1, 30); }
Test(calls, shutdown_wr_rd_rdwr, .timeout = 120) { hk_scenario("calls", "shutdown", 1, -1, 30); }
Test(calls, close_eof_reset, .timeout = 120) { hk_scenario("calls", "close", 1, -1, 30); }
Test(calls, fstat_is_socket, .timeout = 120) { hk_scenario("calls", "fstat", 1, -1, 30); }
Test(calls, ipv6_and_dual_stack, .timeout = 120) { hk_scenario("calls", "ipv6", 1, -1, 30); }
/* Both connections accelerated on both ends: the kernel's deferred accept
 * would wait for bytes that go into the ring, until the client gave up on
 * its offer (1 s) and sent them over kernel TCP. */
Test(calls, tcp_defer_accept_listener, .timeout = 120) { hk_scenario("calls", "defer_accept", 4, 4, 30); }
/* The library trusts its O_NONBLOCK hint only while this process alone
 * holds the socket and set or read the flag itself: each of these would
 * hang on a stale hint.  The SCM_RIGHTS receiver counts the connection it
 * adopted too. */
Test(calls, nonblock_through_raw_syscalls, .timeout = 120) { hk_scenario("nonblock", "raw_syscalls", 2, 2, 30); }
Test(calls, nonblock_set_by_forked_child, .timeout = 120) { hk_scenario("nonblock", "forked_child", 2, 2, 30); }
Test(calls, nonblock_set_by_scm_rights_receiver, .timeout = 120) { hk_scenario("nonblock", "scm_receiver", 3, 3, 30); }
Test(calls, rcvtimeo_through_raw_syscall, .timeout = 120) { hk_scenario("nonblock", "timeout_raw_syscall", 2, 2, 30); }
Test(calls, rcvtimeo_set_by_forked_child, .timeout = 120) { hk_scenario("nonblock", "timeout_forked_child", 2, 2, 30); }
Test(calls, rcvtimeo_set_by_scm_rights_receiver, .timeout = 120) { hk_scenario("nonblock", "timeout_scm_receiver", 3, 3, 30); }
