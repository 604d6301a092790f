/* test_users.c — connections across users (progs/users.c): accelerated as
 * kernel TCP allows them, whichever user each end runs as, and a client
 * killed before the accept loses nothing.  Same transcript as kernel TCP. */
#include <criterion/criterion.h>
#include <unistd.h>

#include "runner.h"

static void need_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to switch to uid 65534");
}

Test(users, client_of_another_uid_accelerated, .timeout = 120)
{
	need_root();
	hk_scenario("users", "other_uid_client", 2, 2, 30);
}

/* nginx's and php-fpm's pattern: the root master listens, the worker that
 * accepts runs as another user; clients of either user are accelerated. */
Test(users, worker_dropping_uid_after_listen_accelerated, .timeout = 120)
{
	need_root();
	hk_scenario("users", "worker_drops_uid", 4, 4, 30);
}

/* varnish's pattern: root binds, the worker gives root up (setuid) and only
 * then listens.  Both connections (a root client, a nobody client) are
 * accelerated, with no warning; before, the clients saw a rendezvous of
 * uid 65534 for a TCP listener of uid 0 and used kernel TCP. */
Test(users, worker_listening_after_dropping_root_accelerated, .timeout = 120)
{
	need_root();
	hk_scenario("users", "listen_after_drop", 4, 4, 30);
}

/* The offer travels with the segment: a client killed (SIGKILL) before its
 * connection is accepted still delivers what it wrote into the ring. */
Test(users, client_killed_before_accept_loses_nothing, .timeout = 120)
{
	hk_scenario("users", "killed_before_accept", 1, 1, 30);
}

/* The listener passed to the process that accepts (Node.js's cluster without
 * round-robin, a hot reload): its rendezvous travels with it, so the offers
 * reach that process as descriptors too. */
Test(users, client_killed_before_passed_listener_accepts_loses_nothing, .timeout = 120)
{
	hk_scenario("users", "killed_before_passed_accept", 1, 1, 30);
}

/* wrk or ab as root against nginx workers or Apache children of another
 * user: the peer cannot open root's epoll set through /proc to mark it, so
 * root's set looks at the connection itself (no warning that a mark failed;
 * before, every answer waited for the set's 1 s sweep). */
Test(users, epoll_waiter_of_another_uid_is_scanned, .timeout = 120)
{
	need_root();
	hk_scenario("users", "epoll_waiter_other_uid", 4, 4, 30);
}

/* A client reusing a 4-tuple that waits in TIME_WAIT on the server's side:
 * the owner check must find the listener, not the TIME_WAIT socket (uid 0
 * to the kernel), so both connections are accelerated (2 each side). */
Test(users, time_wait_tuple_reused_accelerated, .timeout = 120)
{
	need_root();
	hk_scenario("users", "time_wait_tuple", 4, 4, 30);
}
