/* test_misc.c — signals, threads, UDP, AF_UNIX and a TCP connection passed
 * over SCM_RIGHTS (progs/misc.c) under the hook against kernel TCP.  UDP and
 * AF_UNIX must fall through to the kernel: no accelerated connection. */
#include <criterion/criterion.h>

#include "runner.h"

Test(misc, signals_eintr_and_sa_restart, .timeout = 120) { hk_scenario("misc", "signals", 1, -1, 30); }
Test(misc, many_threads_own_sockets, .timeout = 180) { hk_scenario("misc", "threads_many", 1, -1, 60); }
Test(misc, two_threads_one_socket, .timeout = 180) { hk_scenario("misc", "threads_shared", 1, -1, 60); }
Test(misc, udp_untouched, .timeout = 120) { hk_scenario("misc", "udp", 0, 0, 30); }
Test(misc, af_unix_untouched, .timeout = 120) { hk_scenario("misc", "unix", 0, 0, 30); }
/* Beyond the list: a dispatcher hands an accepted connection to a
 * worker process over SCM_RIGHTS (as pre-forking servers do). */
Test(misc, tcp_connection_passed_with_scm_rights, .timeout = 120) { hk_scenario("misc", "scm_tcp", 1, -1, 30); }
