/* test_procs.c — sockets across processes (progs/procs.c) under the hook
 * against kernel TCP: fork, pre-forked acceptors, vfork+exec, inetd-style
 * exec on stdin/stdout, FD_CLOEXEC across exec, daemon(); fork's read indices,
 * sleeping threads and holder counting. */
#include <criterion/criterion.h>

#include "runner.h"

Test(procs, fork_parent_closes_child_serves, .timeout = 120) { hk_scenario("procs", "fork", 1, -1, 30); }
Test(procs, preforked_children_accept_on_one_listener, .timeout = 120) { hk_scenario("procs", "prefork", 1, -1, 30); }
Test(procs, vfork_exec_serves_inherited_fd, .timeout = 120) { hk_scenario("procs", "vfork_exec", 1, -1, 30); }
/* The exec'd image's environment preloads another library: ours joins it. */
Test(procs, exec_with_other_preload_adopts, .timeout = 120)
{
	hk_scenario("procs", "exec_other_preload", 1, -1, 30);
}
/* The exec'd image is static (no preload): its connection moves to kernel
 * TCP before the exec, the bytes waiting in the rings with it. */
Test(procs, exec_static_image_gets_kernel_tcp, .timeout = 120)
{
	hk_scenario("procs", "exec_static", 0, -1, 30);
}
/* The exec'd image is a Go program (its build-id note; or only the
 * .go.buildinfo section): it loads the hook but makes its own system calls,
 * so its connection moves to kernel TCP before the exec, as for a static one. */
Test(procs, exec_go_image_gets_kernel_tcp, .timeout = 120) { hk_scenario("procs", "exec_go", 0, -1, 30); }
Test(procs, exec_go_image_without_build_id_gets_kernel_tcp, .timeout = 120)
{
	hk_scenario("procs", "exec_go_buildinfo", 0, -1, 30);
}
Test(procs, inetd_exec_handover_on_stdin_stdout, .timeout = 120) { hk_scenario("procs", "inetd", 1, -1, 30); }
Test(procs, cloexec_socket_not_inherited_by_exec, .timeout = 120) { hk_scenario("procs", "exec_cloexec", 1, -1, 30); }
Test(procs, daemon_serves_inherited_listener, .timeout = 120) { hk_scenario("procs", "daemon", 1, -1, 30); }
Test(procs, fork_child_continues_at_parents_read_index, .timeout = 120) { hk_scenario("procs", "fork_read_index", 1, -1, 30); }
Test(procs, fork_while_thread_sleeps_child_closes, .timeout = 120) { hk_scenario("procs", "fork_thread_sleeps", 1, -1, 30); }
Test(procs, fork_child_with_dup_exits_parent_keeps_connection, .timeout = 120) { hk_scenario("procs", "fork_dup_exit", 1, -1, 30); }
Test(procs, dup_fork_both_close_peer_sees_eof, .timeout = 120) { hk_scenario("procs", "dup_fork_close", 1, -1, 30); }
Test(procs, fork_child_exit_without_destructors_peer_sees_eof, .timeout = 120) { hk_scenario("procs", "fork_exit_no_destructors", 1, -1, 30); }
