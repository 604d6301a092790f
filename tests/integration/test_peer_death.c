/* test_peer_death.c — a SIGKILLed peer while this side is blocked in recv, send
 * (full ring), scilan_poll or accept, or idle: ECONNRESET/EPIPE, the listener keeps
 * working, data sent before death arrives; an orderly close is EOF.  Watchdogs only. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define WATCHDOG_SECS 20

struct victim_arg {
	uint16_t port;
	int rcvbuf;        /* client SO_RCVBUF (its receive ring) */
	int poll_us;       /* client poll time, -1 = default */
	size_t send_first; /* bytes of stream 0x77 to send before reporting ready */
	bool close_orderly;/* close instead of waiting to be killed */
	bool close_then_exit; /* close and _exit at once (no waiting for the parent) */
	struct tu_sync sync;
};

/* The peer: connect, maybe send, report ready, then wait (to be killed) or close. */
static int peer_main(void *p)
{
	struct victim_arg *a = p;
	uint64_t v;
	int fd = tu_connect_rcvbuf(AF_INET, a->port, a->rcvbuf);

	TU_CHECK(fd >= 0, "connect");
	TU_CHECK(tu_accelerated(fd) == 1, "not accelerated");
	if (a->poll_us >= 0)
		TU_CHECK(tu_set_poll_us(fd, a->poll_us) == 0, "poll_us");
	if (a->send_first) {
		unsigned char *buf = malloc(a->send_first);

		TU_CHECK(buf != NULL, "malloc");
		tu_stream_fill(0x77, 0, buf, a->send_first);
		TU_CHECK(tu_send_all(fd, buf, a->send_first, 0) == (ssize_t)a->send_first, "send");
		free(buf);
	}
	TU_CHECK(tu_sync_put_child(&a->sync, 1) == 0, "ready");
	if (a->close_orderly) {
		TU_CHECK(tu_sync_get_child(&a->sync, &v) == 0, "wait for close order");
		TU_CHECK(scilan_close(fd) == 0, "close");
		if (a->close_then_exit)
			_exit(0);
		TU_CHECK(tu_sync_put_child(&a->sync, 2) == 0, "closed");
	}
	/* Wait (for SIGKILL, or for the parent to finish). */
	tu_sync_get_child(&a->sync, &v);
	return 0;
}

struct setup {
	struct victim_arg *a;
	struct tu_child child;
	int l, s;
};

static void start(struct setup *t, int rcvbuf, int poll_us, size_t send_first, bool orderly)
{
	uint64_t v;

	t->a = tu_shared_alloc(sizeof(*t->a));
	cr_assert_not_null(t->a);
	memset(t->a, 0, sizeof(*t->a));
	t->a->rcvbuf = rcvbuf;
	t->a->poll_us = poll_us;
	t->a->send_first = send_first;
	t->a->close_orderly = orderly;
	cr_assert_eq(tu_sync_init(&t->a->sync), 0);
	t->l = tu_listen(AF_INET, 4, &t->a->port);
	cr_assert_geq(t->l, 0, "listen: %s", strerror(errno));
	cr_assert_eq(tu_spawn(&t->child, peer_main, t->a), 0);
	t->s = tu_accept(t->l);
	cr_assert_geq(t->s, 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(t->s), 1, "connection not accelerated");
	cr_assert_eq(tu_sync_get(&t->a->sync, &v), 0, "peer failed before ready:\n%s",
		     (tu_reap(&t->child), t->child.output));
}

/* SIGKILL the peer from a thread while the main thread blocks. */
struct killer {
	pthread_t t;
	pid_t pid;
	unsigned delay_ms;
};

static void *killer_main(void *p)
{
	struct killer *k = p;

	tu_sleep_ms(k->delay_ms);
	kill(k->pid, SIGKILL);
	return NULL;
}

static void kill_soon(struct killer *k, pid_t pid)
{
	k->pid = pid;
	k->delay_ms = 300;
	cr_assert_eq(pthread_create(&k->t, NULL, killer_main, k), 0);
}

static void end(struct setup *t, bool expect_killed)
{
	char st[128];

	tu_sync_put(&t->a->sync, 9);
	tu_reap(&t->child);
	if (expect_killed)
		cr_assert(WIFSIGNALED(t->child.status) && WTERMSIG(t->child.status) == SIGKILL, "peer %s\n%s",
			  tu_status_str(&t->child, st, sizeof(st)), t->child.output);
	else
		cr_assert(tu_exited_with(&t->child, 0), "peer %s\n%s", tu_status_str(&t->child, st, sizeof(st)),
			  t->child.output);
	scilan_close(t->s);
	scilan_close(t->l);
}

/* After the reset was reported, further calls return at once (0 or an error). */
static void later_calls_do_not_hang(int s)
{
	char b;
	ssize_t n = scilan_recv(s, &b, 1, 0);

	cr_assert(n == 0 || n == -1, "recv after the reset returned %zd", n);
	n = scilan_send(s, "x", 1, MSG_NOSIGNAL);
	cr_assert_eq(n, -1, "send to a dead peer succeeded");
	cr_assert(errno == EPIPE || errno == ECONNRESET, "send to a dead peer: %s", strerror(errno));
}

/* ---- blocked in recv ------------------------------------------------------------------- */

static void recv_blocked(int my_poll_us)
{
	struct setup t;
	struct killer k;
	char b;
	ssize_t n;

	tu_watchdog(WATCHDOG_SECS, "recv blocked while the peer is killed");
	start(&t, 0, -1, 0, false);
	if (my_poll_us >= 0)
		cr_assert_eq(tu_set_poll_us(t.s, my_poll_us), 0);
	kill_soon(&k, t.child.pid);
	n = scilan_recv(t.s, &b, 1, 0);
	cr_assert_eq(n, -1, "recv returned %zd after the peer was killed", n);
	cr_assert_eq(errno, ECONNRESET, "recv: %s, want ECONNRESET", strerror(errno));
	pthread_join(k.t, NULL);
	later_calls_do_not_hang(t.s);
	end(&t, true);
}

Test(peer_death, recv_blocked_interrupt_mode, .timeout = 60)
{
	recv_blocked(0);
}

Test(peer_death, recv_blocked_default_mode, .timeout = 60)
{
	recv_blocked(-1);
}

/* A long spin: the death is noticed when the spin ends (or earlier). */
Test(peer_death, recv_blocked_while_spinning, .timeout = 60)
{
	recv_blocked(500000);
}

Test(peer_death, data_before_death_is_delivered, .timeout = 60)
{
	struct setup t;
	unsigned char buf[4096];
	size_t got = 0;
	ssize_t n;
	char st[128];

	tu_watchdog(WATCHDOG_SECS, "data then death");
	start(&t, 0, -1, 3000, false);
	kill(t.child.pid, SIGKILL);
	tu_reap(&t.child);
	cr_assert(WIFSIGNALED(t.child.status), "peer %s", tu_status_str(&t.child, st, sizeof(st)));
	while (got < 3000) {
		n = scilan_recv(t.s, buf + got, sizeof(buf) - got, 0);
		cr_assert_gt(n, 0, "data sent before the death lost after %zu bytes: %zd (%s)", got, n,
			     strerror(errno));
		got += (size_t)n;
	}
	cr_assert_eq(got, 3000);
	cr_assert_eq(tu_stream_check(0x77, 0, buf, 3000), -1, "data corrupted");
	n = scilan_recv(t.s, buf, sizeof(buf), 0);
	cr_assert_eq(n, -1, "recv after the data returned %zd, want ECONNRESET", n);
	cr_assert_eq(errno, ECONNRESET, "recv: %s", strerror(errno));
	later_calls_do_not_hang(t.s);
	scilan_close(t.s);
	scilan_close(t.l);
}

/* ---- blocked in send on a full ring ------------------------------------------------------- */

static void fill_ring(int s)
{
	char buf[8192];
	ssize_t n;

	memset(buf, 'f', sizeof(buf));
	while ((n = scilan_send(s, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
	}
	cr_assert(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK), "filling the ring: %zd %s", n,
		  strerror(errno));
}

static void send_blocked(int flags, int my_poll_us)
{
	static char big[65536];
	struct setup t;
	struct killer k;
	ssize_t n = 0;
	int i;

	tu_watchdog(WATCHDOG_SECS, "send blocked on a full ring while the peer is killed");
	tu_count_sigpipe();
	start(&t, 4096, -1, 0, false);
	if (my_poll_us >= 0)
		cr_assert_eq(tu_set_poll_us(t.s, my_poll_us), 0);
	fill_ring(t.s);
	kill_soon(&k, t.child.pid);
	/* The blocked send may return a partial count; the next one fails. */
	for (i = 0; i < 100; i++) {
		n = scilan_send(t.s, big, sizeof(big), flags);
		if (n < 0)
			break;
	}
	pthread_join(k.t, NULL);
	cr_assert_eq(n, -1, "send kept succeeding after the peer was killed");
	cr_assert(errno == EPIPE || errno == ECONNRESET, "send: %s, want EPIPE or ECONNRESET", strerror(errno));
	if (flags & MSG_NOSIGNAL)
		cr_assert_eq(tu_sigpipe_count(), 0, "SIGPIPE despite MSG_NOSIGNAL");
	else if (errno == EPIPE)
		cr_assert_geq(tu_sigpipe_count(), 1, "EPIPE without SIGPIPE");
	end(&t, true);
}

Test(peer_death, send_blocked_full_ring_nosignal, .timeout = 60)
{
	send_blocked(MSG_NOSIGNAL, 0);
}

Test(peer_death, send_blocked_full_ring_default_mode, .timeout = 60)
{
	send_blocked(MSG_NOSIGNAL, -1);
}

Test(peer_death, send_blocked_full_ring_sigpipe, .timeout = 60)
{
	send_blocked(0, 0);
}

/* ---- blocked in scilan_poll ------------------------------------------------------------------ */

Test(peer_death, poll_blocked_pollin, .timeout = 60)
{
	struct setup t;
	struct killer k;
	struct pollfd pfd;
	char b;
	int r;

	tu_watchdog(WATCHDOG_SECS, "scilan_poll blocked while the peer is killed");
	start(&t, 0, -1, 0, false);
	cr_assert_eq(tu_set_poll_us(t.s, 0), 0);
	kill_soon(&k, t.child.pid);
	pfd = (struct pollfd){ .fd = t.s, .events = POLLIN };
	do
		r = scilan_poll(&pfd, 1, -1);
	while (r < 0 && errno == EINTR);
	pthread_join(k.t, NULL);
	cr_assert_eq(r, 1, "poll returned %d (%s)", r, strerror(errno));
	cr_assert(pfd.revents & (POLLIN | POLLHUP | POLLERR), "revents 0x%x after the peer died", pfd.revents);
	cr_assert_eq(scilan_recv(t.s, &b, 1, 0), -1, "recv after poll did not fail");
	cr_assert_eq(errno, ECONNRESET, "recv after poll: %s", strerror(errno));
	end(&t, true);
}

Test(peer_death, poll_blocked_pollout_full_ring, .timeout = 60)
{
	struct setup t;
	struct killer k;
	struct pollfd pfd;
	int r;

	tu_watchdog(WATCHDOG_SECS, "scilan_poll(POLLOUT) blocked while the peer is killed");
	start(&t, 4096, -1, 0, false);
	cr_assert_eq(tu_set_poll_us(t.s, 0), 0);
	fill_ring(t.s);
	kill_soon(&k, t.child.pid);
	pfd = (struct pollfd){ .fd = t.s, .events = POLLOUT };
	do
		r = scilan_poll(&pfd, 1, -1);
	while (r < 0 && errno == EINTR);
	pthread_join(k.t, NULL);
	cr_assert_eq(r, 1, "poll returned %d (%s)", r, strerror(errno));
	cr_assert(pfd.revents & (POLLOUT | POLLHUP | POLLERR), "revents 0x%x after the peer died", pfd.revents);
	cr_assert_eq(scilan_send(t.s, "x", 1, MSG_NOSIGNAL), -1, "send to a dead peer succeeded");
	cr_assert(errno == EPIPE || errno == ECONNRESET, "send: %s", strerror(errno));
	end(&t, true);
}

/* Poll on several fds, one of whose peers dies: only that one is reported. */
Test(peer_death, poll_mixed_one_dies, .timeout = 60)
{
	struct setup t;
	struct killer k;
	struct pollfd pfd[3];
	int c, s, p[2], r;

	tu_watchdog(WATCHDOG_SECS, "scilan_poll over several fds");
	start(&t, 0, -1, 0, false);
	cr_assert_eq(tu_pair(AF_INET, &c, &s), 0);
	cr_assert_eq(pipe(p), 0);
	kill_soon(&k, t.child.pid);
	pfd[0] = (struct pollfd){ .fd = s, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = t.s, .events = POLLIN };
	pfd[2] = (struct pollfd){ .fd = p[0], .events = POLLIN };
	do
		r = scilan_poll(pfd, 3, -1);
	while (r < 0 && errno == EINTR);
	pthread_join(k.t, NULL);
	cr_assert_eq(r, 1, "poll returned %d (%s)", r, strerror(errno));
	cr_assert_eq(pfd[0].revents, 0, "healthy connection reported 0x%x", pfd[0].revents);
	cr_assert_neq(pfd[1].revents, 0, "dead peer's connection not reported");
	cr_assert_eq(pfd[2].revents, 0);
	/* The healthy connection still works. */
	cr_assert_eq(tu_send_all(c, "ok", 2, 0), 2);
	{
		char b[2];

		cr_assert_eq(tu_recv_all(s, b, 2), 2);
	}
	scilan_close(c);
	scilan_close(s);
	close(p[0]);
	close(p[1]);
	end(&t, true);
}

/* ---- blocked in accept --------------------------------------------------------------------- */

struct accept_arg {
	uint16_t port;
};

/* A client that connects, sends a marker and kills itself before (or while)
 * the server accepts. */
static int doomed_client(void *p)
{
	struct accept_arg *a = p;
	int fd = tu_connect(AF_INET, a->port);

	if (fd >= 0)
		scilan_send(fd, "A", 1, MSG_NOSIGNAL);
	raise(SIGKILL);
	return 3;
}

/* Drives the scenario from outside the blocked parent: a doomed client
 * first, then (after it is dead) a good client that sends "B" and wants "ok". */
static int accept_driver(void *p)
{
	struct accept_arg *a = p;
	struct tu_child doomed;
	char b[2];
	int fd;

	tu_sleep_ms(200); /* let the parent block in accept (not required) */
	TU_CHECK(tu_spawn(&doomed, doomed_client, a) == 0, "fork doomed client");
	tu_reap(&doomed);
	TU_CHECK(WIFSIGNALED(doomed.status), "doomed client did not die: %s", doomed.output);
	fd = tu_connect(AF_INET, a->port);
	TU_CHECK(fd >= 0, "good client connect");
	TU_CHECK(tu_accelerated(fd) == 1, "good client not accelerated");
	TU_CHECK(tu_send_all(fd, "B", 1, 0) == 1, "send B");
	TU_CHECK(tu_recv_all(fd, b, 2) == 2 && memcmp(b, "ok", 2) == 0, "no ok from the server");
	TU_CHECK(scilan_close(fd) == 0, "close");
	return 0;
}

Test(peer_death, accept_survives_killed_client, .timeout = 60)
{
	struct accept_arg a;
	struct tu_child driver;
	char st[128];
	int l, fd = -1, accepted = 0;
	bool served = false;

	tu_watchdog(WATCHDOG_SECS + 10, "accept with a killed client");
	l = tu_listen(AF_INET, 8, &a.port);
	cr_assert_geq(l, 0);
	cr_assert_eq(tu_spawn(&driver, accept_driver, &a), 0);
	/* A real server's loop: an accept may fail (ECONNABORTED) or return the
	 * dead client's connection, whose recv then fails or hits EOF. */
	for (int tries = 0; tries < 5 && !served; tries++) {
		char b;
		ssize_t n;

		fd = tu_accept(l);
		if (fd < 0) {
			cr_assert(errno == ECONNABORTED || errno == ECONNRESET || errno == EPROTO,
				  "accept failed with %s", strerror(errno));
			continue;
		}
		accepted++;
		n = scilan_recv(fd, &b, 1, 0);
		if (n == 1 && b == 'B') {
			cr_assert_eq(tu_accelerated(fd), 1, "good client's connection not accelerated");
			cr_assert_eq(tu_send_all(fd, "ok", 2, 0), 2);
			served = true;
		} else if (n == 1) {
			cr_assert_eq(b, 'A', "unexpected byte %d", b);
			n = scilan_recv(fd, &b, 1, 0);
			cr_assert(n <= 0, "dead client's connection returned more data");
		}
		scilan_close(fd);
	}
	cr_assert(served, "the good client was never served (%d accepts)", accepted);
	tu_reap(&driver);
	cr_assert(tu_exited_with(&driver, 0), "driver %s\n%s", tu_status_str(&driver, st, sizeof(st)),
		  driver.output);
	scilan_close(l);
}

/* ---- orderly close is EOF --------------------------------------------------------------------- */

Test(peer_death, orderly_close_is_eof, .timeout = 60)
{
	struct setup t;
	unsigned char buf[2000];
	uint64_t v;
	ssize_t n;

	tu_watchdog(WATCHDOG_SECS, "orderly close");
	start(&t, 0, -1, 2000, true);
	cr_assert_eq(tu_sync_put(&t.a->sync, 1), 0); /* close now */
	cr_assert_eq(tu_sync_get(&t.a->sync, &v), 0);
	cr_assert_eq(tu_recv_all(t.s, buf, 2000), 2000, "data before the close: %s", strerror(errno));
	cr_assert_eq(tu_stream_check(0x77, 0, buf, 2000), -1);
	n = scilan_recv(t.s, buf, sizeof(buf), 0);
	cr_assert_eq(n, 0, "orderly close gave %zd (%s), want EOF", n, strerror(errno));
	/* Still EOF once the peer process is gone. */
	cr_assert_eq(tu_sync_put(&t.a->sync, 2), 0);
	tu_reap(&t.child);
	cr_assert(tu_exited_with(&t.child, 0), "peer:\n%s", t.child.output);
	n = scilan_recv(t.s, buf, sizeof(buf), 0);
	cr_assert_eq(n, 0, "after the closed peer exited: %zd (%s), want EOF", n, strerror(errno));
	scilan_close(t.s);
	scilan_close(t.l);
}

Test(peer_death, orderly_close_then_exit_while_blocked, .timeout = 60)
{
	struct setup t;
	char b;
	ssize_t n;
	char st[128];

	tu_watchdog(WATCHDOG_SECS, "orderly close while blocked");
	start(&t, 0, -1, 0, true);
	t.a->close_then_exit = true;
	cr_assert_eq(tu_set_poll_us(t.s, 0), 0);
	cr_assert_eq(tu_sync_put(&t.a->sync, 1), 0); /* close, then _exit at once */
	n = scilan_recv(t.s, &b, 1, 0);
	cr_assert_eq(n, 0, "peer's close + exit gave %zd (%s), want EOF", n, strerror(errno));
	n = scilan_recv(t.s, &b, 1, 0);
	cr_assert_eq(n, 0, "EOF not sticky: %zd (%s)", n, strerror(errno));
	tu_reap(&t.child);
	cr_assert(tu_exited_with(&t.child, 0), "peer %s\n%s", tu_status_str(&t.child, st, sizeof(st)),
		  t.child.output);
	scilan_close(t.s);
	scilan_close(t.l);
}

/* The peer is killed while nobody is blocked: the next send/recv see it. */
Test(peer_death, killed_while_idle, .timeout = 60)
{
	struct setup t;
	char b;
	ssize_t n;
	char st[128];

	tu_watchdog(WATCHDOG_SECS, "killed while idle");
	tu_count_sigpipe();
	start(&t, 0, -1, 0, false);
	kill(t.child.pid, SIGKILL);
	tu_reap(&t.child);
	cr_assert(WIFSIGNALED(t.child.status), "peer %s", tu_status_str(&t.child, st, sizeof(st)));
	/* Sends may be accepted into the ring until the death is noticed; then fail. */
	for (int i = 0; i < 1000; i++) {
		n = scilan_send(t.s, "x", 1, MSG_NOSIGNAL);
		if (n < 0)
			break;
		tu_sleep_ms(1);
	}
	cr_assert_eq(n, -1, "sends to a dead peer keep succeeding");
	cr_assert(errno == EPIPE || errno == ECONNRESET, "send: %s", strerror(errno));
	cr_assert_eq(tu_sigpipe_count(), 0, "SIGPIPE despite MSG_NOSIGNAL");
	n = scilan_recv(t.s, &b, 1, 0);
	cr_assert(n == 0 || (n == -1 && errno == ECONNRESET), "recv from a dead peer: %zd (%s)", n,
		  strerror(errno));
	scilan_close(t.s);
	scilan_close(t.l);
}

/* The peer is killed; this side only polls with non-blocking recv (an event
 * loop that never sleeps in scilan): it must learn of the death, not get
 * EAGAIN forever (kernel TCP reports the RST/FIN to such a loop too). */
Test(peer_death, killed_nonblocking_recv_sees_it, .timeout = 60)
{
	struct setup t;
	char b;
	ssize_t n = -1;
	char st[128];

	tu_watchdog(WATCHDOG_SECS, "non-blocking recv after death");
	start(&t, 0, -1, 0, false);
	kill(t.child.pid, SIGKILL);
	tu_reap(&t.child);
	cr_assert(WIFSIGNALED(t.child.status), "peer %s", tu_status_str(&t.child, st, sizeof(st)));
	for (int i = 0; i < 2000; i++) {
		n = scilan_recv(t.s, &b, 1, MSG_DONTWAIT);
		if (n >= 0 || errno != EAGAIN)
			break;
		tu_sleep_ms(1);
	}
	cr_assert(n == 0 || (n == -1 && errno == ECONNRESET),
		  "non-blocking recv from a dead peer still says %zd (%s) after ~2 s of retries", n, strerror(errno));
	scilan_close(t.s);
	scilan_close(t.l);
}
