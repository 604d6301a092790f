/* test_fence.c — the sender's one-way switch from unfenced to fenced
 * publishing and back (conn.c, fence_policy.c): fenced when the peer sleeps
 * for our data, seen by the peer as SL_PEER_UNFENCED taken back; unfenced
 * again when it stops; never switched by a process that did not set the
 * flag (a fork child).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ring/layout.h"
#include "scilan.h"
#include "socket/sock_state.h"
#include "testutil.h"

TestSuite(fence, .timeout = 60);

static bool publishes_unfenced(int fd)
{
	struct sl_sock *s = sl_sock_get(fd);

	cr_assert_not_null(s);
	return s->tx.unfenced;
}

/* What the peer reads of our mode. */
static bool peer_told_unfenced(int fd)
{
	struct sl_sock *s = sl_sock_get(fd);

	return (atomic_load(&s->peer_ctl->peer_state) & SL_PEER_UNFENCED) != 0;
}

static void *sleepy_reader(void *arg)
{
	int fd = *(int *)arg;
	char b;

	return (void *)(intptr_t)tu_recv_all(fd, &b, 1);
}

/* A pair whose client publishes unfenced: skipped without membarrier. */
static void unfenced_pair(int *c, int *s)
{
	cr_assert_not_null(tu_isolated_rundir());
	cr_assert_eq(tu_pair(AF_INET, c, s), 0);
	if (!publishes_unfenced(*c))
		cr_skip_test("no membarrier(GLOBAL_EXPEDITED): every send fences already");
	cr_assert(peer_told_unfenced(*c), "the peer was not told");
}

/* Until the client publishes fenced: the server sleeps in recv (no spin)
 * for each byte the client sends. */
static void peer_sleeps_until_fenced(int c, int s)
{
	cr_assert_eq(tu_set_poll_us(s, 0), 0);
	for (int i = 0; i < 200 && publishes_unfenced(c); i++) {
		pthread_t t;
		void *got;

		cr_assert_eq(pthread_create(&t, NULL, sleepy_reader, &s), 0);
		usleep(i ? 2000 : 100 * 1000); /* asleep by now; if not, the next round */
		cr_assert_eq(scilan_send(c, "x", 1, 0), 1);
		pthread_join(t, &got);
		cr_assert_eq((intptr_t)got, 1);
	}
	cr_assert_not(publishes_unfenced(c), "the client still publishes unfenced");
}

/* The server sleeps in recv (no spin) for the client's byte: from then on
 * the client fences, and the server no longer pays membarrier.  Exchanges
 * go on as before after the switch. */
Test(fence, peer_sleeping_for_data_switches_sender_to_fenced)
{
	char buf[8];
	int c, s;

	unfenced_pair(&c, &s);
	peer_sleeps_until_fenced(c, s);
	cr_assert_not(peer_told_unfenced(c), "the flag was not taken back");
	for (int i = 0; i < 1000; i++) {
		cr_assert_eq(scilan_send(c, "ping", 4, 0), 4);
		cr_assert_eq(tu_recv_all(s, buf, 4), 4, "exchange %d: %s", i, strerror(errno));
		cr_assert_eq(scilan_send(s, "pong", 4, 0), 4);
		cr_assert_eq(tu_recv_all(c, buf, 4), 4, "exchange %d: %s", i, strerror(errno));
	}
	/* The process learnt: its next connection fences from the start. */
	{
		int c2, s2;

		cr_assert_eq(tu_pair(AF_INET, &c2, &s2), 0);
		cr_assert_not(publishes_unfenced(c2), "a new connection after a sleepy one is unfenced");
		cr_assert_not(peer_told_unfenced(c2));
		scilan_close(c2);
		scilan_close(s2);
	}
	scilan_close(c);
	scilan_close(s);
}

/* The peer sleeps once, then reads without waiting (its data always there
 * before it looks): after a few hundred sends the sender publishes unfenced
 * again, and says so.  Every byte arrives. */
Test(fence, quiet_peer_brings_unfenced_back)
{
	char buf[4];
	int c, s;

	unfenced_pair(&c, &s);
	peer_sleeps_until_fenced(c, s);
	/* Nobody waits now: the sends pile up in the ring, read afterwards. */
	for (int i = 0; i < 600; i++)
		cr_assert_eq(scilan_send(c, "abcd", 4, 0), 4, "send %d: %s", i, strerror(errno));
	cr_assert(publishes_unfenced(c), "still fenced after 600 sends nobody waited for");
	cr_assert(peer_told_unfenced(c), "the flag was not set again");
	for (int i = 0; i < 600; i++) {
		cr_assert_eq(tu_recv_all(s, buf, 4), 4, "message %d", i);
		cr_assert_arr_eq(buf, "abcd", 4, "message %d", i);
	}
	scilan_close(c);
	scilan_close(s);
}

/* A polling peer never sleeps: the sender keeps its plain stores. */
Test(fence, polling_peer_keeps_sender_unfenced)
{
	char buf[4];
	int c, s;

	unfenced_pair(&c, &s);
	for (int i = 0; i < 1000; i++) {
		cr_assert_eq(scilan_send(c, "ping", 4, 0), 4);
		cr_assert_eq(tu_recv_all(s, buf, 4), 4);
	}
	cr_assert(publishes_unfenced(c));
	cr_assert(peer_told_unfenced(c));
	scilan_close(c);
	scilan_close(s);
}

/* Only the process that told the peer it publishes unfenced may take the
 * flag back, so any other holder fences: a fork child's copy would go on
 * with plain stores after its parent's switch. */
Test(fence, fork_child_publishes_fenced)
{
	int c, s, status;
	pid_t pid;

	unfenced_pair(&c, &s);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* Nobody waits for these either: the child still never publishes
		 * unfenced, the flag being its parent's to switch. */
		for (int i = 0; i < 600; i++)
			if (publishes_unfenced(c) || scilan_send(c, "k", 1, 0) != 1)
				_exit(1);
		_exit(publishes_unfenced(c) ? 1 : 0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: status %d", status);
	cr_assert(publishes_unfenced(c), "the parent keeps its mode");
	for (int i = 0; i < 600; i++) {
		char b;

		cr_assert_eq(tu_recv_all(s, &b, 1), 1);
		cr_assert_eq(b, 'k');
	}
	scilan_close(c);
	scilan_close(s);
}
