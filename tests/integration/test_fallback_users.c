/* test_fallback_users.c — the reasons an acceptor of another user than its
 * runtime directory's records (a worker that dropped root, as nginx's and
 * php-fpm's do): a plain client is `no-offer`, not a failure to read the
 * directory, and an offer it may not read is `unreadable-offer`.  Needs root.
 * (The other reasons: test_fallback.c.) */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fallback_helpers.h"
#include "runtime/stats.h"
#include "scilan.h"
#include "testutil.h"

#define NOBODY 65534

static void need_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to act as uid %d", NOBODY);
}

TestSuite(fallback_users, .timeout = 60);

/* accept on l as uid NOBODY (the effective uid alone, so that the test
 * can come back): its runtime directory is root's, mode 0700. */
static int accept_as_nobody(int l)
{
	int s, err;

	cr_assert_eq(seteuid(NOBODY), 0, "seteuid: %s", strerror(errno));
	s = tu_accept(l);
	err = errno;
	cr_assert_eq(seteuid(0), 0, "seteuid back: %s", strerror(errno));
	errno = err;
	return s;
}

static uint64_t counted(const char *reason)
{
	struct sl_stats st;

	sl_stats_read(&st);
	return st.fb[reason_of(reason)];
}

/* The worker changed user as the hook sees it (setuid): its listener's
 * registry entries are withdrawn, so no connector names an offer file for
 * it, and a plain client's connection is what it is, `no-offer` (it was
 * `other`, after a failed open in root's directory, at every accept). */
Test(fallback_users, plain_client_of_a_worker_that_changed_user_is_no_offer)
{
	uint16_t port;
	int l, c, s;

	need_root();
	cr_assert_not_null(tu_isolated_rundir());
	l = tu_listen(AF_INET, 4, &port);
	sl_user_changing(); /* what the hook's setuid does first */
	c = tu_plain_connect(AF_INET, port);
	cr_assert_geq(c, 0);
	s = accept_as_nobody(l);
	cr_assert_geq(s, 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(s), 0);
	cr_expect_eq(counted("no-offer"), 1, "no-offer counted %llu times", (unsigned long long)counted("no-offer"));
	cr_expect_eq(counted("other"), 0, "other counted %llu times", (unsigned long long)counted("other"));
	cr_assert_eq(send(c, "p", 1, 0), 1);
	{
		char b = 0;

		cr_assert_eq(tu_recv_all(s, &b, 1), 1, "recv: %s", strerror(errno));
		cr_assert_eq(b, 'p');
	}
	scilan_close(s);
	close(c);
	scilan_close(l);
}

/* The same through the hook's eyes, a hooked client whose offer came by the
 * rendezvous: accelerated, whichever user the acceptor is. */
Test(fallback_users, offer_by_rendezvous_to_a_worker_that_changed_user_is_accelerated)
{
	uint16_t port;
	int l, s;
	pid_t pid;

	need_root();
	cr_assert_not_null(tu_isolated_rundir());
	l = tu_listen(AF_INET, 4, &port);
	sl_user_changing();
	pid = connecting_child(port, false);
	s = accept_as_nobody(l);
	cr_assert_geq(s, 0, "accept: %s", strerror(errno));
	cr_expect_eq(tu_accelerated(s), 1);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	scilan_close(s);
	scilan_close(l);
}


/* A root client connects to l; nobody accepts and may not read its offer:
 * kernel TCP, counted once as unreadable-offer and never as not_reason
 * (what it was called before). */
static void expect_unreadable_offer(int l, uint16_t port, const char *not_reason)
{
	pid_t pid = connecting_child(port, false);
	int s = accept_as_nobody(l);

	cr_assert_geq(s, 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(s), 0);
	cr_expect_eq(counted("unreadable-offer"), 1, "unreadable-offer counted %llu times",
		     (unsigned long long)counted("unreadable-offer"));
	cr_expect_eq(counted(not_reason), 0, "%s counted %llu times", not_reason,
		     (unsigned long long)counted(not_reason));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	scilan_close(s);
}

/* An acceptor whose user changed unseen by scilan (a raw system call; the
 * listener keeps its registry entry) meets a root client's offer file in
 * root's directory, which it may not open: `unreadable-offer`, and the
 * client's bytes come by kernel TCP. */
Test(fallback_users, offer_file_the_acceptor_may_not_read_is_unreadable_offer)
{
	uint16_t port;
	int l, squat;

	need_root();
	cr_assert_not_null(tu_isolated_rundir());
	l = listen_without_rendezvous(&port, &squat);
	expect_unreadable_offer(l, port, "other");
	scilan_close(l);
	close(squat);
}

/* A listener another process may hold asks connectors of its user for offer
 * files too (SL_REG_NAMED), so a root client's offer through the rendezvous
 * carries its named FIFOs (mode 0600, root's) for bells: an acceptor of
 * another user may not open them, and says so as `unreadable-offer` (it
 * was `bad-offer`, with a warning per connection). */
Test(fallback_users, bells_the_acceptor_may_not_open_are_unreadable_offer)
{
	uint16_t port;
	int l;

	need_root();
	cr_assert_not_null(tu_isolated_rundir());
	l = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(l, 0);
	sl_sock_get(l)->maybe_shared = true; /* as a listener received or passed on is */
	{
		struct sockaddr_in me = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

		cr_assert_eq(scilan_bind(l, (struct sockaddr *)&me, sizeof(me)), 0);
	}
	port = tu_local_port(l);
	cr_assert_eq(scilan_listen(l, 4), 0);
	expect_unreadable_offer(l, port, "bad-offer");
	scilan_close(l);
}
