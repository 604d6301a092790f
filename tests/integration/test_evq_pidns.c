/* test_evq_pidns.c — an epoll set's registration names its process by pid
 * (evq.c), which only a peer of the same pid namespace can take: a peer in
 * another one (a container of the same pod) is never asked to mark our sets,
 * and such connections are scanned by their sets instead. */
#include <criterion/criterion.h>

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "evq/evq.h"
#include "socket/sock_state.h"
#include "testutil.h"

struct peer_arg {
	struct tu_sync sync;
	uint16_t port;
	bool own_pidns;
};

/* Connects, sends a byte, and holds the connection until told. */
static int connect_and_hold(struct peer_arg *a)
{
	uint64_t v;
	int c = tu_connect(AF_INET, a->port);

	TU_CHECK(c >= 0, "connect");
	TU_CHECK(scilan_send(c, "x", 1, 0) == 1, "send");
	TU_CHECK(tu_sync_put_child(&a->sync, 1) == 0 && tu_sync_get_child(&a->sync, &v) == 0, "hold");
	scilan_close(c);
	return 0;
}

/* The peer, in a pid namespace of its own when asked (pid 1 of it). */
static int peer(void *p)
{
	struct peer_arg *a = p;
	int status;
	pid_t kid;

	if (!a->own_pidns)
		return connect_and_hold(a);
	TU_CHECK(unshare(CLONE_NEWPID) == 0, "unshare(CLONE_NEWPID)");
	kid = fork();
	TU_CHECK(kid >= 0, "fork into the new pid namespace");
	if (kid == 0)
		_exit(connect_and_hold(a));
	TU_CHECK(waitpid(kid, &status, 0) == kid, "wait");
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* Whether our end of a connection from such a peer would be marked. */
static bool marked_by(bool own_pidns)
{
	struct peer_arg *a = tu_shared_alloc(sizeof(*a));
	struct tu_child kid;
	char b = 0;
	uint64_t v;
	bool eligible;
	int l, s;

	l = tu_listen(AF_INET, 4, &a->port);
	cr_assert_geq(l, 0);
	a->own_pidns = own_pidns;
	cr_assert_eq(tu_sync_init(&a->sync), 0);
	cr_assert_eq(tu_spawn(&kid, peer, a), 0);
	s = tu_accept(l);
	cr_assert_geq(s, 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_recv_all(s, &b, 1), 1);
	cr_assert_eq(b, 'x');
	cr_assert_eq(tu_sync_get(&a->sync, &v), 0, "peer failed:\n%s", (tu_reap(&kid), kid.output));
	cr_assert_eq(tu_accelerated(s), 1, "the connection is not on the rings");
	eligible = sl_evq_eligible(sl_sock_get(s));
	cr_assert_eq(tu_sync_put(&a->sync, 1), 0);
	tu_reap(&kid);
	cr_assert(tu_exited_with(&kid, 0), "peer:\n%s", kid.output);
	scilan_close(s);
	scilan_close(l);
	return eligible;
}

Test(evq_pidns, peer_of_our_pid_namespace_marks_our_sets, .timeout = 60)
{
	cr_assert_not_null(tu_isolated_rundir());
	cr_assert(marked_by(false), "a peer of our own pid namespace is not asked to mark");
}

Test(evq_pidns, peer_of_another_pid_namespace_is_not_asked_to_mark, .timeout = 60)
{
	if (geteuid() != 0)
		cr_skip_test("needs root for a pid namespace");
	cr_assert_not_null(tu_isolated_rundir());
	cr_assert_not(marked_by(true), "a peer in another pid namespace would be asked to mark our sets");
}
