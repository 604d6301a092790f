/* pollq.c — poll, ppoll, select and pselect over many connections (what the
 * hook's poll queue serves): few ready among thousands, members closed, reset
 * and shut down under a sleeping poll, two threads polling the same
 * connections, signals during a large wait, and sleep/wake hand-offs under a
 * watchdog.  Plain POSIX.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include "scen.h"

#define LARGE 2000

static int *cs, *ss; /* client and server ends */

static void pairs(int n)
{
	scen_pairs(n, &cs, &ss);
}

static void unpairs(int n)
{
	scen_unpairs(n, cs, ss);
}


/* An array of the n server ends (entry i: ss[i]) asking events. */
static struct pollfd *array_of_servers(int n, short events)
{
	struct pollfd *pf = calloc((size_t)n, sizeof(*pf));

	for (int i = 0; i < n; i++)
		pf[i] = (struct pollfd){ .fd = ss[i], .events = events };
	return pf;
}

/* A poll's answer: "what: rc N i:MASK ..." for the entries with revents. */
static void report(const char *what, int rc, int err, const struct pollfd *pf, int n)
{
	char line[2048];
	int len = snprintf(line, sizeof(line), "%s: rc %d%s%s", what, rc, rc < 0 ? " " : "", rc < 0 ? en(err) : "");

	for (int i = 0; i < n && len < (int)sizeof(line) - 64; i++)
		if (pf[i].revents)
			len += snprintf(line + len, sizeof(line) - (size_t)len, " %d:%s", i, pollmask(pf[i].revents));
	say("%s", line);
}

static int pwait(const char *what, struct pollfd *pf, int n, int timeout)
{
	int rc;

	errno = 0;
	rc = poll(pf, (nfds_t)n, timeout);
	report(what, rc, errno, pf, n);
	return rc;
}

/* A waiter asleep in poll on its own copy of an array while the main thread
 * acts; its answer is printed when it is joined. */
struct waiter {
	pthread_t t;
	struct pollfd *pf;
	int n, rc, err, timeout;
	const char *what;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	errno = 0;
	w->rc = poll(w->pf, (nfds_t)w->n, w->timeout);
	w->err = errno;
	return NULL;
}

static void waiter_go(struct waiter *w, const struct pollfd *pf, int n, const char *what)
{
	w->pf = calloc((size_t)n, sizeof(*pf));
	memcpy(w->pf, pf, (size_t)n * sizeof(*pf));
	w->n = n;
	w->what = what;
	w->timeout = 10000;
	pthread_create(&w->t, NULL, waiter_main, w);
}

static void waiter_start(struct waiter *w, const struct pollfd *pf, int n, const char *what)
{
	waiter_go(w, pf, n, what);
	usleep(30000); /* only makes it likely the waiter sleeps first */
}

static void waiter_join(struct waiter *w)
{
	pthread_join(w->t, NULL);
	report(w->what, w->rc, w->err, w->pf, w->n);
	free(w->pf);
}

/* 2,000 connections and a pipe in one array, a few ready at a time: only
 * they are reported, until read; sleeping polls woken by one. */
static int sc_large(void)
{
	struct pollfd *pf;
	struct waiter w;
	int p[2], n = LARGE + 1;
	char b;

	pairs(LARGE);
	MUST(pipe(p));
	pf = realloc(array_of_servers(LARGE, POLLIN), (size_t)n * sizeof(*pf));
	pf[LARGE] = (struct pollfd){ .fd = p[0], .events = POLLIN };
	pwait("idle", pf, n, 0);
	pwait("idle, 10 ms", pf, n, 10);
	MUST(send(cs[7], "ab", 2, 0));
	MUST(send(cs[1500], "c", 1, 0));
	MUST(send(cs[1999], "d", 1, 0));
	pwait("three ready", pf, n, 0);
	pwait("three ready, no timeout", pf, n, -1);
	MUST(recv(ss[7], &b, 1, 0));
	pwait("one byte left on 7", pf, n, 0);
	scen_drain(ss[7]);
	scen_drain(ss[1500]);
	pwait("only 1999 left", pf, n, 0);
	scen_drain(ss[1999]);
	pwait("all read", pf, n, 0);
	for (int round = 0; round < 20; round++) {
		int i = (round * 733 + 11) % LARGE;

		waiter_start(&w, pf, n, "woken by one");
		MUST(send(cs[i], "x", 1, 0));
		waiter_join(&w);
		scen_drain(ss[i]);
	}
	waiter_start(&w, pf, n, "woken by the pipe");
	MUST(write(p[1], "p", 1));
	waiter_join(&w);
	MUST(send(cs[3], "y", 1, 0));
	pwait("pipe and 3", pf, n, 0);
	MUST(read(p[0], &b, 1));
	scen_drain(ss[3]);
	/* Another array over the same connections: other events, a duplicate
	 * entry, a negative descriptor, a closed one. */
	pf[3].events = POLLOUT;
	pf[4] = (struct pollfd){ .fd = ss[5], .events = POLLIN | POLLRDHUP };
	pf[6].fd = -1;
	pwait("3 writable", pf, n, 0);
	MUST(send(cs[5], "z", 1, 0));
	pwait("5 twice", pf, n, -1);
	scen_drain(ss[5]);
	close(ss[8]);
	pwait("8 closed here", pf, n, 0);
	pf[8].fd = -1;
	ss[8] = -1;
	/* Fewer entries: the rest are not reported. */
	MUST(send(cs[1900], "w", 1, 0));
	pwait("first 1000, data on 1900", pf, 1000, 0);
	pwait("all, data on 1900", pf, n, 0);
	scen_drain(ss[1900]);
	free(pf);
	close(p[0]);
	close(p[1]);
	unpairs(LARGE);
	return 0;
}

/* select and pselect over 300 connections (below FD_SETSIZE). */
static int sc_select(void)
{
	int n = 300, maxfd = 0;
	fd_set rd, wr;
	sigset_t none;

	sigemptyset(&none);
	pairs(n);
	for (int i = 0; i < n; i++)
		if (ss[i] > maxfd)
			maxfd = ss[i];
	if (maxfd >= FD_SETSIZE)
		fatal("descriptor %d above FD_SETSIZE", maxfd);
	for (int round = 0; round < 6; round++) {
		int i = (round * 97 + 5) % n, rc, got = -1;
		struct timeval tv = { 10, 0 };
		struct timespec ts = { 10, 0 };

		MUST(send(cs[i], "s", 1, 0));
		FD_ZERO(&rd);
		for (int k = 0; k < n; k++)
			FD_SET(ss[k], &rd);
		errno = 0;
		rc = round % 2 ? pselect(maxfd + 1, &rd, NULL, NULL, &ts, &none) : select(maxfd + 1, &rd, NULL, NULL, &tv);
		for (int k = 0; k < n; k++)
			if (FD_ISSET(ss[k], &rd))
				got = got < 0 ? k : -2;
		say("%s: rc %d, readable %d (sent on %d)", round % 2 ? "pselect" : "select", rc, got, i);
		scen_drain(ss[i]);
	}
	FD_ZERO(&rd);
	FD_ZERO(&wr);
	for (int k = 0; k < n; k++)
		FD_SET(ss[k], &rd);
	FD_SET(ss[17], &wr);
	{
		struct timeval tv = { 0, 0 };

		say("select, 17 writable: rc %d, 17 w %d", select(maxfd + 1, &rd, &wr, NULL, &tv), FD_ISSET(ss[17], &wr));
	}
	unpairs(n);
	return 0;
}

/* Connections closed, reset, shut down (by the peer or here) while a poll
 * over 500 sleeps. */
static int sc_ends(void)
{
	struct linger lg = { 1, 0 };
	struct waiter w;
	struct pollfd *pf;
	int n = 500;

	pairs(n);
	pf = array_of_servers(n, POLLIN | POLLRDHUP);
	waiter_start(&w, pf, n, "peer closed 5");
	close(cs[5]);
	cs[5] = -1;
	waiter_join(&w);
	pf[5].fd = -1;
	waiter_start(&w, pf, n, "peer shut 9");
	SHOW(shutdown(cs[9], SHUT_WR));
	waiter_join(&w);
	pf[9].fd = -1;
	waiter_start(&w, pf, n, "peer reset 7");
	MUST(setsockopt(cs[7], SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
	close(cs[7]);
	cs[7] = -1;
	waiter_join(&w);
	pf[7].fd = -1;
	waiter_start(&w, pf, n, "we shut 11");
	SHOW(shutdown(ss[11], SHUT_RDWR));
	waiter_join(&w);
	pf[11].fd = -1;
	/* Closed here under the sleep: poll sees it closed when it looks again
	 * (woken by 15, whose data follows the close). */
	waiter_start(&w, pf, n, "13 closed, then data on 15");
	close(ss[13]);
	ss[13] = -1;
	MUST(send(cs[15], "x", 1, 0));
	waiter_join(&w);
	pf[13].fd = -1;
	scen_drain(ss[15]);
	pwait("after", pf, n, 0);
	free(pf);
	unpairs(n);
	return 0;
}

/* Two threads poll the same 300 connections: both see what arrives. */
static int sc_threads(void)
{
	struct waiter w[2];
	struct pollfd *pf;
	int n = 300;

	pairs(n);
	pf = array_of_servers(n, POLLIN);
	for (int round = 0; round < 5; round++) {
		int i = (round * 61 + 2) % n;

		waiter_go(&w[0], pf, n, "thread A");
		waiter_go(&w[1], pf, n, "thread B");
		usleep(30000);
		MUST(send(cs[i], "t", 1, 0));
		waiter_join(&w[0]);
		waiter_join(&w[1]);
		scen_drain(ss[i]);
	}
	/* One reads what it was woken for; the other still waits, and is woken
	 * by the next arrival. */
	waiter_go(&w[0], pf, n, "A, first");
	usleep(30000);
	MUST(send(cs[40], "1", 1, 0));
	waiter_join(&w[0]);
	waiter_go(&w[1], pf, n, "B, 40 unread");
	waiter_join(&w[1]);
	scen_drain(ss[40]);
	waiter_go(&w[1], pf, n, "B, after the read");
	usleep(30000);
	MUST(send(cs[41], "2", 1, 0));
	waiter_join(&w[1]);
	scen_drain(ss[41]);
	free(pf);
	unpairs(n);
	return 0;
}

static volatile sig_atomic_t usr1, handler_polls_bad;
static struct pollfd *handler_pf;
static int handler_n;

/* poll is async-signal-safe: a handler polls the same idle connections
 * while its thread is asleep in a poll of them. */
static void on_usr1(int sig)
{
	int e = errno;

	(void)sig;
	usr1++;
	if (handler_pf && poll(handler_pf, (nfds_t)handler_n, 0) != 0)
		handler_polls_bad++;
	errno = e;
}

struct sigwaiter {
	pthread_t t;
	int kind, rc, err, n;
	_Atomic bool done;
	struct pollfd *pf;
};

static void *sigwaiter_main(void *arg)
{
	struct sigwaiter *w = arg;
	sigset_t blocked, open_mask;
	struct timespec ts = { 10, 0 };
	fd_set rd;
	int maxfd = 0;

	/* ppoll and pselect: SIGUSR1 blocked but for the call, so one sent
	 * early is taken at the call, as the kernel does. */
	sigemptyset(&blocked);
	sigaddset(&blocked, SIGUSR1);
	pthread_sigmask(w->kind ? SIG_BLOCK : SIG_UNBLOCK, &blocked, &open_mask);
	sigdelset(&open_mask, SIGUSR1);
	errno = 0;
	if (w->kind == 0) {
		w->rc = poll(w->pf, (nfds_t)w->n, 10000);
	} else if (w->kind == 1) {
		w->rc = ppoll(w->pf, (nfds_t)w->n, &ts, &open_mask);
	} else {
		FD_ZERO(&rd);
		for (int i = 0; i < w->n; i++) {
			FD_SET(w->pf[i].fd, &rd);
			if (w->pf[i].fd > maxfd)
				maxfd = w->pf[i].fd;
		}
		w->rc = pselect(maxfd + 1, &rd, NULL, NULL, &ts, &open_mask);
	}
	w->err = errno;
	atomic_store(&w->done, true);
	return NULL;
}

/* A signal during a poll, ppoll or pselect over 300 idle connections:
 * EINTR, as the kernel's (poll is never restarted). */
static int sc_signal(void)
{
	static const char *const names[] = { "poll", "ppoll", "pselect" };
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	int n = 300;

	pairs(n);
	handler_n = n;
	handler_pf = array_of_servers(n, POLLIN);
	sigemptyset(&sa.sa_mask);
	MUST(sigaction(SIGUSR1, &sa, NULL));
	for (int kind = 0; kind < 3; kind++) {
		struct sigwaiter w = { .kind = kind, .n = n, .pf = array_of_servers(n, POLLIN) };

		pthread_create(&w.t, NULL, sigwaiter_main, &w);
		usleep(30000);
		/* poll has no mask: a signal taken before it sleeps is missed,
		 * so send until it returns. */
		do {
			pthread_kill(w.t, SIGUSR1);
			usleep(20000);
		} while (!atomic_load(&w.done));
		pthread_join(w.t, NULL);
		say("%s interrupted: rc %d %s", names[kind], w.rc, en(w.err));
		free(w.pf);
	}
	say("polls in the handler found nothing: %s", handler_polls_bad ? "no" : "yes");
	/* Still working afterwards. */
	MUST(send(cs[100], "a", 1, 0));
	{
		struct pollfd *pf = array_of_servers(n, POLLIN);

		pwait("after the signals", pf, n, 10000);
		free(pf);
	}
	unpairs(n);
	return 0;
}

static void *send_later(void *arg)
{
	usleep(30000); /* only makes it likely the poll sleeps first */
	if (send(*(int *)arg, "o", 1, 0) != 1)
		fatal("send");
	return NULL;
}

/* A poll over connections whose offers are still out (connected, not yet
 * accepted), then, accepted, polls woken by one: the first poll cannot
 * queue them yet, the later ones must. */
static int sc_offers_out(void)
{
	int n = 40;
	uint16_t port;
	int l = tcp_listener(&port);
	struct pollfd *pf;

	cs = calloc((size_t)n, sizeof(*cs));
	ss = calloc((size_t)n, sizeof(*ss));
	pf = calloc((size_t)n, sizeof(*pf));
	for (int i = 0; i < n; i++) {
		cs[i] = tcp_connect(port);
		pf[i] = (struct pollfd){ .fd = cs[i], .events = POLLIN };
	}
	pwait("not accepted yet", pf, n, 0);
	for (int i = 0; i < n; i++)
		ss[i] = MUST(accept(l, NULL, NULL));
	close(l);
	/* This thread polls (its queue is the one that must come to hold
	 * them); another sends. */
	for (int round = 0; round < 20; round++) {
		int i = (round * 7 + 3) % n;
		pthread_t t;

		pthread_create(&t, NULL, send_later, &ss[i]);
		pwait("woken by one", pf, n, 10000);
		pthread_join(t, NULL);
		scen_drain(cs[i]);
	}
	free(pf);
	unpairs(n);
	return 0;
}

static struct pollfd *fork_pf;
static int fork_n;

static int child_polls(void *arg)
{
	(void)arg;
	pwait("child woken", fork_pf, fork_n, 10000);
	scen_drain(ss[42]);
	pwait("child, read", fork_pf, fork_n, 0);
	return 0;
}

static void *thread_polls(void *arg)
{
	(void)arg;
	pwait("a thread that then ends", fork_pf, fork_n, 0);
	return NULL;
}

/* A poll's queue across fork (the child polls the same connections) and
 * across the end of a thread that polled. */
static int sc_fork(void)
{
	struct kid k;
	pthread_t t;

	fork_n = 200;
	pairs(fork_n);
	fork_pf = array_of_servers(fork_n, POLLIN);
	MUST(send(cs[3], "a", 1, 0));
	pwait("parent, before", fork_pf, fork_n, 0);
	scen_drain(ss[3]);
	for (int round = 0; round < 3; round++) {
		pthread_create(&t, NULL, thread_polls, NULL);
		pthread_join(t, NULL);
	}
	kid_start(&k, "child", child_polls, NULL);
	usleep(30000);
	MUST(send(cs[42], "x", 1, 0));
	kid_join(&k);
	pwait("parent, after the child read", fork_pf, fork_n, 0);
	MUST(send(cs[43], "y", 1, 0));
	pwait("parent, 43", fork_pf, fork_n, 10000);
	scen_drain(ss[43]);
	free(fork_pf);
	unpairs(fork_n);
	return 0;
}

static uint16_t spin_port;

static void *connector(void *arg)
{
	int *c = arg;

	for (int i = 0; i < 5; i++) {
		usleep(10000);
		c[i] = tcp_connect(spin_port);
	}
	return NULL;
}

/* A listener and a connection in one poll under a forced 10 s spin (the
 * program runs itself with SCILAN_POLL_US=10000000): each connect is
 * seen while the poll spins on the ring, not when the spin ends (five of
 * them would outlast the scenario's limit). */
static int sc_spin_sees_kernel(void)
{
	pthread_t t;
	int c[5], a[5], l = tcp_listener(&spin_port), got = 0;
	struct pollfd pf[2];

	pairs(1);
	pf[0] = (struct pollfd){ .fd = l, .events = POLLIN };
	pf[1] = (struct pollfd){ .fd = ss[0], .events = POLLIN };
	pthread_create(&t, NULL, connector, c);
	while (got < 5) {
		int rc = poll(pf, 2, -1);

		if (rc != 1 || pf[0].revents != POLLIN)
			fatal("poll: rc %d", rc);
		a[got++] = MUST(accept(l, NULL, NULL));
	}
	pthread_join(t, NULL);
	say("accepted %d while polling a connection", got);
	for (int i = 0; i < 5; i++) {
		close(c[i]);
		close(a[i]);
	}
	close(l);
	unpairs(1);
	return 0;
}

/* Hand-offs between two threads, each asleep in poll over its own 101
 * connections (one the other writes, 100 idle); a lost wake-up stops the
 * count and the watchdog says so. */
static _Atomic long handed;
static long handoffs;

static void *watchdog(void *arg)
{
	long last = -1;

	(void)arg;
	for (;;) {
		long now;

		sleep(10);
		now = atomic_load(&handed);
		if (now >= handoffs)
			return NULL;
		if (now == last) {
			say("lost wake-up: no hand-off for 10 s after %ld", now);
			exit(1);
		}
		last = now;
	}
}

struct side {
	struct pollfd pf[101];
	int in, out;
	bool first;
};

static void *side_main(void *arg)
{
	struct side *sd = arg;
	char b = 'h';

	if (sd->first && send(sd->out, &b, 1, 0) != 1)
		fatal("first send");
	for (;;) {
		int rc = poll(sd->pf, 101, -1);

		if (rc < 0 && errno == EINTR)
			continue;
		if (rc != 1 || sd->pf[0].revents != POLLIN)
			fatal("hand-off poll: rc %d", rc);
		if (recv(sd->in, &b, 1, 0) != 1)
			fatal("hand-off recv");
		if (atomic_fetch_add(&handed, 1) + 1 >= handoffs) {
			b = 'q';
			send(sd->out, &b, 1, 0);
			return NULL;
		}
		if (b == 'q')
			return NULL;
		if (send(sd->out, &b, 1, 0) != 1)
			fatal("hand-off send");
	}
}

static int sc_handoff(void)
{
	const char *v = getenv("SCEN_HANDOFFS");
	int n = 2 + 2 * 100; /* pair 0: A<-B, pair 1: B<-A, the rest idle */
	struct side *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	pthread_t ta, tb, wd;

	handoffs = v ? atol(v) : 20000;
	pairs(n);
	*a = (struct side){ .in = ss[0], .out = cs[1], .first = true };
	*b = (struct side){ .in = ss[1], .out = cs[0] };
	a->pf[0] = (struct pollfd){ .fd = ss[0], .events = POLLIN };
	b->pf[0] = (struct pollfd){ .fd = ss[1], .events = POLLIN };
	for (int i = 2; i < n; i++) {
		struct side *sd = i % 2 ? a : b;

		sd->pf[1 + (i - 2) / 2] = (struct pollfd){ .fd = ss[i], .events = POLLIN };
	}
	pthread_create(&wd, NULL, watchdog, NULL);
	pthread_detach(wd);
	pthread_create(&ta, NULL, side_main, a);
	pthread_create(&tb, NULL, side_main, b);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	say("hand-offs done: %d", atomic_load(&handed) >= handoffs);
	unpairs(n);
	free(a);
	free(b);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "large", sc_large },	 { "select", sc_select }, { "ends", sc_ends },	     { "threads", sc_threads },
		{ "signal", sc_signal }, { "handoff", sc_handoff }, { "fork", sc_fork },
		{ "spin_sees_kernel", sc_spin_sees_kernel }, { "offers_out", sc_offers_out }, { NULL, NULL },
	};

	/* Interrupt mode, so that every hand-off is a sleep and a wake-up: the
	 * accelerator reads its settings when it loads, so the program runs
	 * itself again with the setting (plain: no effect). */
	if (argc > 1 && strcmp(argv[1], "spin_sees_kernel") == 0 && !getenv("SCILAN_POLL_US")) {
		setenv("SCILAN_POLL_US", "10000000", 1);
		execv("/proc/self/exe", argv);
		fatal("exec self");
	}
	if (argc > 1 && strcmp(argv[1], "handoff") == 0 && !getenv("SCILAN_POLL_US")) {
		setenv("SCILAN_POLL_US", "0", 1);
		execv("/proc/self/exe", argv);
		fatal("exec self");
	}
	return scen_main(argc, argv, t);
}
