/* test_listener_close.c — a listener closed with a hooked client's
 * connection still queued (progs/listener_close.c): the client's epoll,
 * select, FIONREAD, MSG_PEEK, recv and send see kernel TCP's reset, with the
 * offer just made and once the agreement's second is up, also after passing
 * the connection with SCM_RIGHTS or through exec.  No connection is accepted,
 * so none ends accelerated. */
#include <criterion/criterion.h>

#include "runner.h"

Test(listener_close, queued_client_is_reset, .timeout = 120) { hk_scenario("listener_close", "now", 0, 0, 30); }
Test(listener_close, queued_client_is_reset_after_the_second, .timeout = 120)
{
	hk_scenario("listener_close", "late", 0, 0, 30);
}
/* The offer is decided at the hand-over: the new image reads the reset. */
Test(listener_close, queued_client_is_reset_after_exec, .timeout = 120)
{
	hk_scenario("listener_close", "exec", 0, 0, 30);
}
