/* test_kill9.c — a bounded SIGKILL campaign (either end killed while streaming, idle,
 * on a full ring, in connect, while a stream moves from kernel TCP onto the rings;
 * polling and interrupt mode): the survivor ends with EOF/ECONNRESET/EPIPE within
 * 5 s, every byte right; and the half-open case it found. */
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "socket/offer_policy.h"
#include "testutil.h"

#define HANG_SECS 5       /* a survivor not back by then counts as a hang */
#define RING 32768        /* small rings fill quickly */
#define SEED 0x6b696c6cull

enum scenario {
	STREAM_KILL_SENDER,   /* survivor reading a stream */
	STREAM_KILL_RECEIVER, /* survivor sending a stream */
	IDLE_BLOCKED_RECV,    /* survivor blocked in recv, nothing flowing */
	IDLE_THEN_SEND,       /* survivor idle at the kill, sends afterwards */
	FULL_KILL_RECEIVER,   /* survivor blocked in send on the full ring of a peer that never reads */
	FULL_KILL_SENDER,     /* the peer blocked on our full ring; survivor drains after the kill */
	CONNECT_KILL_CLIENT,  /* client killed 0-2 ms into its connect; survivor = server */
	CONNECT_KILL_SERVER,  /* server killed 0-2 ms after the client starts; survivor = client */
	MOVE_KILL_SENDER,     /* a stream on kernel TCP (short policy) promoted onto the rings: */
	MOVE_KILL_RECEIVER,   /* either end killed 0-400 ms in, before, during or after the move */
	N_SCENARIOS
};

static const char *const names[N_SCENARIOS] = {
	"stream-kill-sender", "stream-kill-receiver", "idle-blocked-recv", "idle-then-send",
	"full-kill-receiver", "full-kill-sender",     "connect-kill-client", "connect-kill-server",
	"move-kill-sender",   "move-kill-receiver",
};

enum act { ACT_SEND, ACT_RECV, ACT_IDLE, ACT_RECV_AFTER_KILL, ACT_SEND_AFTER_KILL };

/* Exit codes of an end. */
enum { END_OK = 0, END_CORRUPT = 3, END_BAD_ERRNO = 4, END_SETUP = 5 };

struct run {
	_Atomic uint16_t port;       /* the server's listener */
	_Atomic int ready;           /* ends connected and at their act */
	_Atomic bool killed;         /* the victim is dead and reaped */
	_Atomic uint64_t bytes;      /* survivor's bytes moved */
	_Atomic uint64_t corrupt;    /* bytes read that differ from the stream */
	_Atomic int end_errno;       /* how the survivor's stream ended (0: EOF) */
	_Atomic bool connected;      /* the survivor had a connection at all */
	bool interrupt;
	bool move;                   /* short connections first: the stream starts on kernel TCP */
	_Atomic bool moved;          /* ... and the survivor saw it on the rings */
};

/* A move scenario's survivor notes the stream on the rings (after a call,
 * so the move, once made, is seen at the next one). */
static void note_moved(int fd, struct run *r)
{
	if (r->move && !atomic_load_explicit(&r->moved, memory_order_relaxed) && tu_accelerated(fd) == 1)
		atomic_store(&r->moved, true);
}

/* Client, a move scenario: connections of one round trip each until the
 * offer policy keeps the next one on kernel TCP; the server takes them as
 * they come, and knows the stream's by the byte it starts with. */
#define MOVE_SHORTS (4 * SL_OFFER_SHORT_RUN)
#define STREAM_START 'R'
#define SHORT_ONE 'S'

static int move_client_conn(uint16_t port)
{
	for (int i = 0; i < MOVE_SHORTS; i++) {
		int fd = tu_connect_rcvbuf(AF_INET, port, RING);
		char start = STREAM_START, one = SHORT_ONE;

		if (fd < 0)
			return -1;
		if (i >= SL_OFFER_SHORT_RUN && tu_accelerated(fd) == 0)
			return scilan_send(fd, &start, 1, 0) == 1 ? fd : -1;
		if (scilan_send(fd, &one, 1, 0) != 1 || scilan_recv(fd, &one, 1, 0) != 1) {
			scilan_close(fd);
			return -1;
		}
		scilan_close(fd);
	}
	return -1;
}

static int move_server_conn(int l)
{
	for (int i = 0; i <= MOVE_SHORTS; i++) {
		struct pollfd pfd = { .fd = l, .events = POLLIN };
		char start;
		int fd;

		if (scilan_poll(&pfd, 1, 2000) != 1 || (fd = scilan_accept(l, NULL, NULL)) < 0)
			return -2;
		if (scilan_recv(fd, &start, 1, 0) == 1 && start == STREAM_START)
			return fd; /* the listener stays: the acceptor's look needs it */
		if (start == SHORT_ONE)
			scilan_send(fd, &start, 1, MSG_NOSIGNAL);
		scilan_close(fd);
	}
	return -2;
}

struct end_arg {
	struct run *run;
	bool server;
	enum act act;
	bool survivor;
};

static struct run *run_mem;

static int end_conn(struct end_arg *a)
{
	struct run *r = a->run;
	int fd;

	if (a->server) {
		uint16_t port;
		int l = tu_listen_rcvbuf(AF_INET, 4, RING, &port);
		struct pollfd pfd;

		if (l < 0)
			return -1;
		atomic_store(&r->port, port);
		/* A client killed before it connected never comes. */
		pfd = (struct pollfd){ .fd = l, .events = POLLIN };
		if (scilan_poll(&pfd, 1, 500) != 1) {
			scilan_close(l);
			return -2;
		}
		if (r->move)
			return move_server_conn(l);
		fd = scilan_accept(l, NULL, NULL);
		scilan_close(l);
	} else {
		for (int i = 0; !atomic_load(&r->port); i++) {
			if (i == 5000)
				return -1;
			tu_sleep_ms(1);
		}
		fd = r->move ? move_client_conn(atomic_load(&r->port))
			     : tu_connect_rcvbuf(AF_INET, atomic_load(&r->port), RING);
	}
	if (fd >= 0 && r->interrupt && tu_accelerated(fd) == 1 && tu_set_poll_us(fd, 0) < 0)
		return -1;
	return fd;
}

static int send_stream(int fd, struct run *r)
{
	static unsigned char buf[16384];
	uint64_t off = 0;

	for (;;) {
		size_t len = 1 + (size_t)(rand() % (int)sizeof(buf));
		ssize_t n;

		tu_stream_fill(SEED, off, buf, len);
		n = scilan_send(fd, buf, len, MSG_NOSIGNAL);
		if (n < 0) {
			atomic_store(&r->end_errno, errno);
			return errno == EPIPE || errno == ECONNRESET ? END_OK : END_BAD_ERRNO;
		}
		off += (uint64_t)n;
		atomic_store(&r->bytes, off);
		note_moved(fd, r);
	}
}

static int recv_stream(int fd, struct run *r)
{
	static unsigned char buf[16384], want[16384];
	uint64_t off = 0, bad = 0;

	for (;;) {
		ssize_t n = scilan_recv(fd, buf, 1 + (size_t)(rand() % (int)sizeof(buf)), 0);

		if (n <= 0) {
			atomic_store(&r->end_errno, n == 0 ? 0 : errno);
			atomic_store(&r->corrupt, bad);
			if (n < 0 && errno != ECONNRESET)
				return END_BAD_ERRNO;
			return bad ? END_CORRUPT : END_OK;
		}
		tu_stream_fill(SEED, off, want, (size_t)n);
		for (ssize_t i = 0; i < n; i++)
			bad += buf[i] != want[i];
		off += (uint64_t)n;
		atomic_store(&r->bytes, off);
		note_moved(fd, r);
	}
}

static int end_main(void *p)
{
	struct end_arg *a = p;
	struct run *r = a->run;
	char b;
	int fd;

	srand((unsigned)getpid());
	fd = end_conn(a);
	if (a->survivor)
		atomic_store(&r->connected, fd >= 0);
	if (fd < 0)
		/* Killed in connect, the peer leaves no connection to check
		 * (refused, aborted accept, or none at all); elsewhere the
		 * parent finds the end missing before it kills anything. */
		return a->survivor ? END_OK : END_SETUP;
	atomic_fetch_add(&r->ready, 1);
	switch (a->act) {
	case ACT_SEND:
		return send_stream(fd, r);
	case ACT_RECV:
		return recv_stream(fd, r);
	case ACT_IDLE:
		if (!a->survivor)
			for (;;)
				pause();
		/* Blocked in recv on a connection nothing flows on. */
		switch (scilan_recv(fd, &b, 1, 0)) {
		case 0:
			return END_OK;
		case 1:
			return END_BAD_ERRNO;
		default:
			atomic_store(&r->end_errno, errno);
			return errno == ECONNRESET ? END_OK : END_BAD_ERRNO;
		}
	case ACT_RECV_AFTER_KILL:
	case ACT_SEND_AFTER_KILL:
		while (!atomic_load(&r->killed))
			tu_sleep_ms(1);
		return a->act == ACT_RECV_AFTER_KILL ? recv_stream(fd, r) : send_stream(fd, r);
	}
	return END_SETUP;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Has c exited (not yet reaped)? */
static bool exited(struct tu_child *c)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	return waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == c->pid;
}

struct tally {
	int runs, hangs, errors, no_conn, move_runs, moved;
	uint64_t corrupt, bytes;
	double slowest;
	enum scenario slowest_sc;
};

static void one_run(enum scenario sc, bool interrupt, struct tally *t)
{
	struct run *r = run_mem;
	struct end_arg va, sa;
	struct tu_child victim, survivor;
	bool victim_server = rand() % 2, in_connect = sc == CONNECT_KILL_CLIENT || sc == CONNECT_KILL_SERVER;
	struct tu_child *server, *client;
	double t0, dt;
	char st[128];

	memset(r, 0, sizeof(*r));
	r->interrupt = interrupt;
	r->move = sc == MOVE_KILL_SENDER || sc == MOVE_KILL_RECEIVER;
	if (sc == CONNECT_KILL_CLIENT)
		victim_server = false;
	if (sc == CONNECT_KILL_SERVER)
		victim_server = true;
	va = (struct end_arg){ r, victim_server, ACT_IDLE, false };
	sa = (struct end_arg){ r, !victim_server, ACT_IDLE, true };
	switch (sc) {
	case STREAM_KILL_SENDER:
	case CONNECT_KILL_CLIENT:
	case MOVE_KILL_SENDER:
		va.act = ACT_SEND;
		sa.act = ACT_RECV;
		break;
	case STREAM_KILL_RECEIVER:
	case CONNECT_KILL_SERVER:
	case MOVE_KILL_RECEIVER:
		va.act = ACT_RECV;
		sa.act = ACT_SEND;
		break;
	case IDLE_BLOCKED_RECV:
		break;
	case IDLE_THEN_SEND:
		sa.act = ACT_SEND_AFTER_KILL;
		break;
	case FULL_KILL_RECEIVER:
		sa.act = ACT_SEND;
		break;
	case FULL_KILL_SENDER:
		va.act = ACT_SEND;
		sa.act = ACT_RECV_AFTER_KILL;
		break;
	default:
		break;
	}
	/* The server first: its listener must exist before the client connects. */
	server = victim_server ? &victim : &survivor;
	client = victim_server ? &survivor : &victim;
	cr_assert_eq(tu_spawn(server, end_main, victim_server ? &va : &sa), 0);
	while (!atomic_load(&r->port) && !exited(server))
		tu_sleep_ms(1);
	cr_assert_eq(tu_spawn(client, end_main, victim_server ? &sa : &va), 0);
	if (in_connect) {
		struct timespec d = { 0, (long)(rand() % 2000) * 1000 };

		nanosleep(&d, NULL);
	} else {
		t0 = now_s();
		while (atomic_load(&r->ready) < 2 && !exited(&victim) && !exited(&survivor) && now_s() - t0 < 10)
			tu_sleep_ms(1);
		if (atomic_load(&r->ready) < 2) {
			tu_kill(&victim);
			tu_kill(&survivor);
			tu_reap(&victim);
			tu_reap(&survivor);
			cr_assert_fail("%s: the ends did not connect\nvictim:\n%s\nsurvivor:\n%s", names[sc],
				       victim.output, survivor.output);
		}
		/* A move starts 100 ms after the connect and takes a few. */
		tu_sleep_ms((unsigned)(rand() % (r->move ? 400 : 60)));
	}
	tu_kill(&victim);
	tu_reap(&victim);
	atomic_store(&r->killed, true);
	t0 = now_s();
	while (!exited(&survivor) && now_s() - t0 < HANG_SECS)
		tu_sleep_ms(1);
	dt = now_s() - t0;
	t->runs++;
	if (!exited(&survivor)) {
		t->hangs++;
		tu_kill(&survivor);
		tu_reap(&survivor);
		fprintf(stderr, "kill9: HANG %s (%s, victim %s): survivor not back after %d s, %llu bytes moved\n%s",
			names[sc], interrupt ? "interrupt" : "polling", victim_server ? "server" : "client", HANG_SECS,
			(unsigned long long)atomic_load(&r->bytes), survivor.output);
		return;
	}
	tu_reap(&survivor);
	/* A server whose client died before connecting waits out its poll:
	 * not a survivor's reaction time. */
	if (atomic_load(&r->connected) && dt > t->slowest) {
		t->slowest = dt;
		t->slowest_sc = sc;
	}
	t->corrupt += atomic_load(&r->corrupt);
	t->move_runs += r->move;
	t->moved += atomic_load(&r->moved);
	t->bytes += atomic_load(&r->bytes);
	if (!atomic_load(&r->connected))
		t->no_conn++;
	if (!tu_exited_with(&survivor, END_OK)) {
		t->errors++;
		fprintf(stderr, "kill9: %s (%s, victim %s): survivor %s, stream ended with errno %d (%s), %llu bytes, "
				"%llu corrupt\n%s",
			names[sc], interrupt ? "interrupt" : "polling", victim_server ? "server" : "client",
			tu_status_str(&survivor, st, sizeof(st)), atomic_load(&r->end_errno),
			strerror(atomic_load(&r->end_errno)), (unsigned long long)atomic_load(&r->bytes),
			(unsigned long long)atomic_load(&r->corrupt), survivor.output);
	}
}

/* Every scenario in turn until the runs are done or the time is up; for a
 * longer hunt, SCILAN_TEST_SCALE multiplies the runs and SCILAN_KILL9_SECS
 * (default 40) is the time per mode; SCILAN_KILL9_ONLY=NAME runs one scenario. */
static void campaign(bool interrupt)
{
	int per_scenario = (int)tu_scaled(25, 8);
	struct tally t = { 0 };
	double start = now_s(), limit = (double)tu_env_u64("SCILAN_KILL9_SECS", 40);
	const char *only = getenv("SCILAN_KILL9_ONLY"); /* one scenario, by name */

	tu_count_sigpipe();
	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	run_mem = tu_shared_alloc(sizeof(*run_mem));
	cr_assert_not_null(run_mem);
	for (int i = 0; i < per_scenario && now_s() - start < limit; i++)
		for (int sc = 0; sc < N_SCENARIOS && now_s() - start < limit; sc++)
			if (!only || !strcmp(only, names[sc]))
				one_run((enum scenario)sc, interrupt, &t);
	fprintf(stderr,
		"kill9 (%s): runs %d, hangs %d, corrupt bytes %llu, errors %d, slowest survivor %.0f ms (%s), "
		"%d runs killed before a connection, %.1f MB moved by survivors, %d of %d move runs on the rings "
		"before the kill, %.1f s\n",
		interrupt ? "interrupt, SCILAN_POLL_US=0" : "polling", t.runs, t.hangs, (unsigned long long)t.corrupt,
		t.errors, t.slowest * 1e3, names[t.slowest_sc], t.no_conn, (double)t.bytes / 1e6, t.moved, t.move_runs,
		now_s() - start);
	cr_assert_gt(t.runs, 0);
	cr_assert_eq(t.hangs, 0, "%d survivors hung", t.hangs);
	cr_assert_eq(t.corrupt, 0, "%llu corrupt bytes", (unsigned long long)t.corrupt);
	cr_assert_eq(t.errors, 0, "%d survivors ended wrongly", t.errors);
	/* The kill falls before, during and after the move: some after. */
	if (t.move_runs >= 8)
		cr_assert_gt(t.moved, 0, "no move run's stream reached the rings before its kill");
}

Test(kill9, polling, .timeout = 600)
{
	campaign(false);
}

Test(kill9, interrupt, .timeout = 600)
{
	campaign(true);
}

/* ---- the half-open connection the campaign found --------------------------------------------- */

struct half_open {
	uint16_t port;
	struct tu_sync sync;
};

static int half_open_client(void *p)
{
	struct half_open *h = p;
	static unsigned char buf[16384];
	uint64_t v;
	ssize_t n;
	int fd = tu_connect_rcvbuf(AF_INET, h->port, RING);

	TU_CHECK(fd >= 0 && tu_accelerated(fd) == 1, "accelerated connect");
	TU_CHECK(tu_sync_put_child(&h->sync, 1) == 0, "connected");
	TU_CHECK(tu_sync_get_child(&h->sync, &v) == 0, "wait until the server's socket is gone");
	do
		n = scilan_send(fd, buf, sizeof(buf), MSG_NOSIGNAL);
	while (n > 0);
	TU_CHECK(n == -1 && (errno == ECONNRESET || errno == EPIPE), "send to a vanished peer: %zd", n);
	return 0;
}

/* A listener killed just as the handshake completes can lose the accepted
 * connection without an RST (the campaign's connect-kill-server, about one
 * run in 600): made here at will by closing the accepted socket in TCP
 * repair mode, which sends nothing.  The client, which sends its data to
 * the ring and nothing on TCP, must still learn the peer is gone. */
Test(kill9, sender_to_silently_vanished_peer, .timeout = 60)
{
	struct half_open *h = tu_shared_alloc(sizeof(*h));
	struct tu_child child;
	int l, k, on = 1;
	uint64_t v;
	char st[128];

	tu_watchdog(20, "sender to a silently vanished peer");
	cr_assert_not_null(h);
	cr_assert_eq(tu_sync_init(&h->sync), 0);
	l = tu_listen_rcvbuf(AF_INET, 4, RING, &h->port);
	cr_assert_geq(l, 0);
	cr_assert_eq(tu_spawn(&child, half_open_client, h), 0);
	cr_assert_eq(tu_sync_get(&h->sync, &v), 0, "client:\n%s", (tu_reap(&child), child.output));
	k = accept(l, NULL, NULL); /* the kernel's accept only: nobody attaches */
	cr_assert_geq(k, 0);
	if (setsockopt(k, IPPROTO_TCP, TCP_REPAIR, &on, sizeof(on)) < 0) {
		tu_kill(&child);
		tu_reap(&child);
		cr_skip_test("TCP_REPAIR not permitted (%s): needs CAP_NET_ADMIN", strerror(errno));
	}
	close(k);
	scilan_close(l);
	cr_assert_eq(tu_sync_put(&h->sync, 2), 0);
	tu_reap(&child);
	cr_assert(tu_exited_with(&child, 0), "client %s\n%s", tu_status_str(&child, st, sizeof(st)), child.output);
}
