/* epollq.c — epoll sets with many connections (what the hook's event queue
 * serves): a large set where few become ready, members closed, reset and
 * shut down under a sleeping waiter, nested large sets, a set shared with a
 * forked child, one connection in more sets than it has queue slots, and
 * set-level sleep/wake hand-offs under a watchdog.
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
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

static int set_of_servers(int n, uint32_t events)
{
	int ep = MUST(epoll_create1(0));

	for (int i = 0; i < n; i++) {
		struct epoll_event ev = { .events = events, .data.u64 = (uint64_t)i };

		MUST(epoll_ctl(ep, EPOLL_CTL_ADD, ss[i], &ev));
	}
	return ep;
}

static int cmp_ev(const void *a, const void *b)
{
	const struct epoll_event *x = a, *y = b;

	return x->data.u64 < y->data.u64 ? -1 : x->data.u64 > y->data.u64;
}

/* A wait's answer, its members sorted by id: "what: rc N id:MASK ...". */
static void report(const char *what, int rc, int err, struct epoll_event *ev)
{
	char line[2048];
	int len = snprintf(line, sizeof(line), "%s: rc %d%s%s", what, rc, rc < 0 ? " " : "", rc < 0 ? en(err) : "");

	if (rc > 0)
		qsort(ev, (size_t)rc, sizeof(*ev), cmp_ev);
	for (int i = 0; i < rc && len < (int)sizeof(line) - 64; i++)
		len += snprintf(line + len, sizeof(line) - (size_t)len, " %llu:%s", (unsigned long long)ev[i].data.u64,
				epmask(ev[i].events));
	say("%s", line);
}

static int ewait(const char *what, int ep, int timeout)
{
	struct epoll_event ev[64];
	int rc;

	errno = 0;
	rc = epoll_wait(ep, ev, 64, timeout);
	report(what, rc, errno, ev);
	return rc;
}


/* A waiter asleep on ep while the main thread acts; its answer is printed
 * when it is joined, so that several waiters print in a fixed order. */
struct waiter {
	pthread_t t;
	int ep, rc, err;
	const char *what;
	struct epoll_event ev[64];
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	errno = 0;
	w->rc = epoll_wait(w->ep, w->ev, 64, 10000);
	w->err = errno;
	return NULL;
}

static void waiter_go(struct waiter *w, int ep, const char *what)
{
	w->ep = ep;
	w->what = what;
	pthread_create(&w->t, NULL, waiter_main, w);
}

static void waiter_start(struct waiter *w, int ep, const char *what)
{
	waiter_go(w, ep, what);
	usleep(30000); /* only makes it likely the waiter sleeps first */
}

static void waiter_join(struct waiter *w)
{
	pthread_join(w->t, NULL);
	report(w->what, w->rc, w->err, w->ev);
}

/* 2,000 members, a few ready at a time: only they are reported,
 * level-triggered ones until read, edge-triggered ones once per arrival. */
static int sc_large(void)
{
	struct waiter w;
	int ep;
	char b;

	pairs(LARGE);
	ep = set_of_servers(LARGE, EPOLLIN);
	ewait("idle", ep, 0);
	MUST(send(cs[7], "ab", 2, 0));
	MUST(send(cs[1500], "c", 1, 0));
	MUST(send(cs[1999], "d", 1, 0));
	ewait("three ready", ep, 0);
	MUST(recv(ss[7], &b, 1, 0));
	ewait("one byte left on 7", ep, 0);
	scen_drain(ss[7]);
	scen_drain(ss[1500]);
	ewait("only 1999 left", ep, 0);
	scen_drain(ss[1999]);
	ewait("all read", ep, 0);
	for (int round = 0; round < 20; round++) {
		int i = (round * 733 + 11) % LARGE;

		waiter_start(&w, ep, "woken by one");
		MUST(send(cs[i], "x", 1, 0));
		waiter_join(&w);
		scen_drain(ss[i]);
	}
	/* Edge-triggered: reported at each arrival, not for data left. */
	{
		struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = 42 };

		SHOW(epoll_ctl(ep, EPOLL_CTL_MOD, ss[42], &ev));
	}
	MUST(send(cs[42], "ee", 2, 0));
	ewait("et arrival", ep, 0);
	ewait("et data left", ep, 0);
	MUST(send(cs[42], "e", 1, 0));
	ewait("et second arrival", ep, 0);
	scen_drain(ss[42]);
	/* Writable: every member, level-triggered. */
	{
		struct epoll_event ev = { .events = EPOLLOUT, .data.u64 = 3 };

		SHOW(epoll_ctl(ep, EPOLL_CTL_MOD, ss[3], &ev));
	}
	ewait("3 writable", ep, 0);
	ewait("3 still writable", ep, 0);
	SHOW(epoll_ctl(ep, EPOLL_CTL_DEL, ss[3], NULL));
	ewait("3 gone", ep, 0);
	close(ep);
	unpairs(LARGE);
	return 0;
}

/* Members closed, reset, shut down (by the peer or here) while a waiter
 * sleeps on a set of 500. */
static int sc_ends(void)
{
	struct linger lg = { 1, 0 };
	struct waiter w;
	int ep, n = 500;

	pairs(n);
	ep = set_of_servers(n, EPOLLIN | EPOLLRDHUP);
	waiter_start(&w, ep, "peer closed 5");
	close(cs[5]);
	cs[5] = -1;
	waiter_join(&w);
	SHOW(epoll_ctl(ep, EPOLL_CTL_DEL, ss[5], NULL));
	waiter_start(&w, ep, "peer shut 9");
	SHOW(shutdown(cs[9], SHUT_WR));
	waiter_join(&w);
	SHOW(epoll_ctl(ep, EPOLL_CTL_DEL, ss[9], NULL));
	waiter_start(&w, ep, "peer reset 7");
	MUST(setsockopt(cs[7], SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
	close(cs[7]);
	cs[7] = -1;
	waiter_join(&w);
	SHOW(epoll_ctl(ep, EPOLL_CTL_DEL, ss[7], NULL));
	waiter_start(&w, ep, "we shut 11");
	SHOW(shutdown(ss[11], SHUT_RDWR));
	waiter_join(&w);
	SHOW(epoll_ctl(ep, EPOLL_CTL_DEL, ss[11], NULL));
	/* A member closed here leaves the set: the next wait sees only 15. */
	waiter_start(&w, ep, "13 closed, then data on 15");
	close(ss[13]);
	ss[13] = -1;
	MUST(send(cs[15], "x", 1, 0));
	waiter_join(&w);
	scen_drain(ss[15]);
	ewait("after", ep, 0);
	close(ep);
	unpairs(n);
	return 0;
}

/* A set of 300 inside another set, and in poll. */
static int sc_nested(void)
{
	struct waiter w;
	struct pollfd pf;
	int inner, outer, n = 300, p[2];
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1000 };

	pairs(n);
	MUST(pipe(p));
	inner = set_of_servers(n, EPOLLIN);
	outer = MUST(epoll_create1(0));
	SHOW(epoll_ctl(outer, EPOLL_CTL_ADD, inner, &ev));
	ev.data.u64 = 1001;
	SHOW(epoll_ctl(outer, EPOLL_CTL_ADD, p[0], &ev));
	ewait("outer idle", outer, 0);
	waiter_start(&w, outer, "outer woken by 123");
	MUST(send(cs[123], "x", 1, 0));
	waiter_join(&w);
	ewait("inner", inner, 0);
	pf = (struct pollfd){ .fd = inner, .events = POLLIN };
	say("poll on inner: %d %s", poll(&pf, 1, 0), pollmask(pf.revents));
	scen_drain(ss[123]);
	ewait("outer after read", outer, 0);
	pf.revents = 0;
	say("poll on inner after read: %d %s", poll(&pf, 1, 0), pollmask(pf.revents));
	close(outer);
	close(inner);
	close(p[0]);
	close(p[1]);
	unpairs(n);
	return 0;
}

/* One connection in six sets: four queue it, the others scan it. */
static int sc_six_sets(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct waiter w[6];
	int ep[6];
	char b;

	pairs(1);
	for (int i = 0; i < 6; i++) {
		ep[i] = MUST(epoll_create1(0));
		ev.data.u64 = (uint64_t)i;
		SHOW(epoll_ctl(ep[i], EPOLL_CTL_ADD, ss[0], &ev));
	}
	for (int i = 0; i < 6; i++) {
		char what[32];

		snprintf(what, sizeof(what), "set %d", i);
		ewait(what, ep[i], 0);
	}
	for (int i = 0; i < 6; i++)
		waiter_go(&w[i], ep[i], "a sleeping set woken");
	usleep(30000);
	MUST(send(cs[0], "x", 1, 0));
	for (int i = 0; i < 6; i++)
		waiter_join(&w[i]);
	MUST(recv(ss[0], &b, 1, 0));
	for (int i = 0; i < 6; i++)
		ewait("after the read", ep[i], 0);
	SHOW(shutdown(cs[0], SHUT_WR));
	for (int i = 0; i < 6; i++)
		ewait("after the peer's FIN", ep[i], 0);
	for (int i = 0; i < 6; i++)
		close(ep[i]);
	unpairs(1);
	return 0;
}

static void ep_set(int ep, int op, int fd, uint32_t events, uint64_t id)
{
	struct epoll_event ev = { .events = events, .data.u64 = id };

	MUST(epoll_ctl(ep, op, fd, &ev));
}

/* An event loop that deletes a connection and adds it back in one callback,
 * as redis's ae does at each request (the hook keeps the deleted member's
 * queue place for the re-add: epoll_queue.c, "parked"): each cycle's answer
 * names the new data and the new events, and a member deleted and not added
 * back, or closed, moved, duplicated, ended while out of the set, is what
 * the kernel says it is. */
static int sc_readd(void)
{
	struct epoll_event ev[8];
	int ep, n = 7, wrong = 0, d, rc;
	char b;

	pairs(n);
	ep = set_of_servers(n, EPOLLIN);
	for (int i = 0; i < 300; i++) {
		uint64_t id = 1000 + (uint64_t)i;

		/* Writable: the request goes out. */
		MUST(epoll_ctl(ep, EPOLL_CTL_DEL, ss[0], NULL));
		ep_set(ep, EPOLL_CTL_ADD, ss[0], EPOLLOUT, id);
		rc = epoll_wait(ep, ev, 8, 1000);
		wrong += rc != 1 || ev[0].data.u64 != id || ev[0].events != EPOLLOUT;
		/* Readable: the reply comes back, edge-triggered every other time. */
		MUST(epoll_ctl(ep, EPOLL_CTL_DEL, ss[0], NULL));
		ep_set(ep, EPOLL_CTL_ADD, ss[0], EPOLLIN | (i % 2 ? EPOLLET : 0u), id + 1);
		MUST(send(cs[0], "r", 1, 0));
		rc = epoll_wait(ep, ev, 8, 1000);
		wrong += rc != 1 || ev[0].data.u64 != id + 1 || ev[0].events != EPOLLIN;
		MUST(recv(ss[0], &b, 1, 0));
	}
	say("300 delete and add cycles, answers not as asked: %d", wrong);
	/* Deleted, then data: nothing, and nothing after the next wait either. */
	MUST(epoll_ctl(ep, EPOLL_CTL_DEL, ss[1], NULL));
	MUST(send(cs[1], "a", 1, 0));
	ewait("1 deleted, data came", ep, 0);
	ewait("1 deleted, a second wait", ep, 0);
	/* Data while out, added back edge-triggered: one edge, then none. */
	ep_set(ep, EPOLL_CTL_ADD, ss[1], EPOLLIN | EPOLLET, 1);
	ewait("1 back (edge)", ep, 0);
	ewait("1 back, its edge taken", ep, 0);
	scen_drain(ss[1]);
	/* The peer closes while the member is out. */
	MUST(epoll_ctl(ep, EPOLL_CTL_DEL, ss[2], NULL));
	close(cs[2]);
	cs[2] = -1;
	usleep(20000);
	ep_set(ep, EPOLL_CTL_ADD, ss[2], EPOLLIN | EPOLLRDHUP, 2);
	ewait("2 back after its peer closed", ep, 0);
	MUST(epoll_ctl(ep, EPOLL_CTL_DEL, ss[2], NULL));
	/* Closed while out (3; 6 behind the hook's back): a new file on its
	 * number is a new member. */
	for (int raw = 0; raw < 2; raw++) {
		int *slot = raw ? &ss[6] : &ss[3], old = *slot, sp[2];

		MUST(epoll_ctl(ep, EPOLL_CTL_DEL, old, NULL));
		/* The second time behind the hook's back, as a raw syscall. */
		if (raw)
			syscall(SYS_close, old);
		else
			close(old);
		/* Lower numbers that are free come first: fill them. */
		int fill[32], nfill = 0;

		for (;;) {
			MUST(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp));
			if (sp[0] == old || sp[1] == old || nfill == 32)
				break;
			fill[nfill++] = sp[0];
			fill[nfill++] = sp[1];
		}
		while (nfill)
			close(fill[--nfill]);
		say("the number came back: %d", sp[0] == old || sp[1] == old);
		ep_set(ep, EPOLL_CTL_ADD, old == sp[1] ? sp[1] : sp[0], EPOLLIN, 30 + (uint64_t)raw);
		MUST(write(old == sp[1] ? sp[0] : sp[1], "u", 1));
		ewait(raw ? "6's number reused after a raw close" : "3's number reused", ep, 1000);
		close(sp[0]);
		close(sp[1]);
		ewait("the pair closed", ep, 0);
		*slot = -1;
	}
	/* Duplicated and its first number closed while out: added back under
	 * the duplicate's number. */
	MUST(epoll_ctl(ep, EPOLL_CTL_DEL, ss[4], NULL));
	d = MUST(dup(ss[4]));
	close(ss[4]);
	ss[4] = d;
	ep_set(ep, EPOLL_CTL_ADD, ss[4], EPOLLIN, 4);
	MUST(send(cs[4], "d", 1, 0));
	ewait("4 back under its duplicate", ep, 1000);
	scen_drain(ss[4]);
	ewait("4 read", ep, 0);
	/* Deleted from one set, added to another, and back. */
	{
		int other = MUST(epoll_create1(0));

		MUST(epoll_ctl(ep, EPOLL_CTL_DEL, ss[5], NULL));
		ep_set(other, EPOLL_CTL_ADD, ss[5], EPOLLIN, 55);
		MUST(send(cs[5], "o", 1, 0));
		ewait("5 in the other set", other, 1000);
		ewait("5 not in the first", ep, 0);
		MUST(epoll_ctl(other, EPOLL_CTL_DEL, ss[5], NULL));
		ep_set(ep, EPOLL_CTL_ADD, ss[5], EPOLLIN, 5);
		ewait("5 back in the first", ep, 0);
		ewait("5 gone from the other", other, 0);
		close(other);
	}
	close(ep);
	unpairs(n);
	return 0;
}

static int ep_forked;

static int child_waits(void *arg)
{
	(void)arg;
	ewait("child woken", ep_forked, 10000);
	return 0;
}

/* A set shared with a forked child: both see a level-triggered member. */
static int sc_fork(void)
{
	struct kid k;
	int n = 200;

	pairs(n);
	ep_forked = set_of_servers(n, EPOLLIN);
	kid_start(&k, "child", child_waits, NULL);
	usleep(30000);
	MUST(send(cs[42], "x", 1, 0));
	kid_join(&k);
	ewait("parent, unread", ep_forked, 0);
	scen_drain(ss[42]);
	ewait("parent, read", ep_forked, 0);
	MUST(send(cs[43], "y", 1, 0));
	ewait("parent, 43", ep_forked, 1000);
	scen_drain(ss[43]);
	close(ep_forked);
	unpairs(n);
	return 0;
}

/* Hand-offs between two threads, each asleep in its own set of idle
 * members plus the one connection the other writes; a lost wake-up stops
 * the count and the watchdog says where. */
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
	int ep, in, out;
	bool first;
};

static void *side_main(void *arg)
{
	struct side *sd = arg;
	struct epoll_event ev[8];
	char b = 'h';

	if (sd->first && send(sd->out, &b, 1, 0) != 1)
		fatal("first send");
	for (;;) {
		int rc = epoll_wait(sd->ep, ev, 8, -1);

		if (rc < 0 && errno == EINTR)
			continue;
		if (rc != 1 || ev[0].data.u64 != 0)
			fatal("hand-off wait: rc %d", rc);
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
	struct side a, b;
	pthread_t ta, tb, wd;
	struct epoll_event ev = { .events = EPOLLIN };

	handoffs = v ? atol(v) : 20000;
	pairs(n);
	a = (struct side){ .ep = MUST(epoll_create1(0)), .in = ss[0], .out = cs[1], .first = true };
	b = (struct side){ .ep = MUST(epoll_create1(0)), .in = ss[1], .out = cs[0] };
	ev.data.u64 = 0;
	MUST(epoll_ctl(a.ep, EPOLL_CTL_ADD, ss[0], &ev));
	MUST(epoll_ctl(b.ep, EPOLL_CTL_ADD, ss[1], &ev));
	for (int i = 2; i < n; i++) {
		ev.data.u64 = (uint64_t)i;
		MUST(epoll_ctl(i % 2 ? a.ep : b.ep, EPOLL_CTL_ADD, ss[i], &ev));
	}
	pthread_create(&wd, NULL, watchdog, NULL);
	pthread_detach(wd);
	pthread_create(&ta, NULL, side_main, &a);
	pthread_create(&tb, NULL, side_main, &b);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	say("hand-offs done: %d", atomic_load(&handed) >= handoffs);
	close(a.ep);
	close(b.ep);
	unpairs(n);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "large", sc_large }, { "ends", sc_ends },       { "nested", sc_nested },
		{ "fork", sc_fork },   { "handoff", sc_handoff }, { "six_sets", sc_six_sets },
		{ "readd", sc_readd }, { NULL, NULL },
	};

	/* Interrupt mode, so that every hand-off is a set-level sleep and
	 * wake-up: the accelerator reads its settings when it loads, so the
	 * program runs itself again with the setting (plain: no effect). */
	if (argc > 1 && strcmp(argv[1], "handoff") == 0 && !getenv("SCILAN_POLL_US")) {
		setenv("SCILAN_POLL_US", "0", 1);
		execv("/proc/self/exe", argv);
		fatal("exec self");
	}
	return scen_main(argc, argv, t);
}
