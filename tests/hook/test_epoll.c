/* test_epoll.c — epoll (progs/epoll.c) under the hook against kernel TCP:
 * create/ctl/wait errors, level-triggered, EPOLLET, EPOLLONESHOT, RDHUP/HUP/ERR,
 * nested sets (in epoll, poll and select), pwait/pwait2 masks, mixed members,
 * changes made by another thread under a sleeping waiter, several waiters. */
#include <criterion/criterion.h>

#include "runner.h"

Test(epoll, level_triggered_ctl_and_errors, .timeout = 120) { hk_scenario("epoll", "lt", 1, -1, 30); }
Test(epoll, edge_triggered, .timeout = 120) { hk_scenario("epoll", "et", 1, -1, 30); }
Test(epoll, oneshot, .timeout = 120) { hk_scenario("epoll", "oneshot", 1, -1, 30); }
Test(epoll, rdhup_hup_err_on_close_and_reset, .timeout = 120) { hk_scenario("epoll", "hup", 1, -1, 30); }
Test(epoll, nested_in_epoll_poll_select, .timeout = 120) { hk_scenario("epoll", "nested", 1, -1, 30); }
Test(epoll, pwait_pwait2_signal_mask, .timeout = 120) { hk_scenario("epoll", "pwait", 1, -1, 30); }
Test(epoll, mixed_members_connecting_listener_udp_pipe, .timeout = 120) { hk_scenario("epoll", "mixed", 1, -1, 30); }
Test(epoll, other_thread_ctl_reaches_sleeping_waiter, .timeout = 120) { hk_scenario("epoll", "xthread", 1, -1, 30); }
Test(epoll, other_thread_ctl_reaches_outer_set_and_poll, .timeout = 120) { hk_scenario("epoll", "xthread_nested", 1, -1, 30); }
Test(epoll, other_thread_ctl_after_dup2_onto_own_fd_and_fork, .timeout = 120) { hk_scenario("epoll", "xthread_fork", 1, -1, 30); }
Test(epoll, several_waiters_and_exclusive, .timeout = 120) { hk_scenario("epoll", "shared", 1, -1, 30); }
