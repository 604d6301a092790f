/* epoll.c — scenarios for epoll: create/ctl/wait/pwait/pwait2 and errors; level,
 * EPOLLET, EPOLLONESHOT, RDHUP/HUP/ERR on close and reset; mixed members; epoll
 * sets nested in epoll, poll and select.  Plain POSIX; events sorted by data. */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include "scen.h"

/* Member names by data.u64. */
static const char *names[16] = { "?", "s", "pipe", "c", "listener", "udp", "s2", "inner", "connecting", "x" };

static int cmp_ev(const void *a, const void *b)
{
	const struct epoll_event *x = a, *y = b;

	return x->data.u64 < y->data.u64 ? -1 : x->data.u64 > y->data.u64;
}

static void show_events(const char *what, int rc, struct epoll_event *ev)
{
	char line[512];
	int len = snprintf(line, sizeof(line), "%s: rc %d%s%s", what, rc, rc < 0 ? " " : "", rc < 0 ? en(errno) : "");

	if (rc > 0)
		qsort(ev, (size_t)rc, sizeof(*ev), cmp_ev);
	for (int i = 0; i < rc; i++)
		len += snprintf(line + len, sizeof(line) - (size_t)len, " %s:%s",
				ev[i].data.u64 < 16 ? names[ev[i].data.u64] : "??", epmask(ev[i].events));
	say("%s", line);
}

static int ewait(const char *what, int ep, int max, int timeout)
{
	struct epoll_event ev[16];
	int rc;

	errno = 0;
	rc = epoll_wait(ep, ev, max, timeout);
	show_events(what, rc, ev);
	return rc;
}

static int ctl(int ep, int op, int fd, uint32_t events, uint64_t id)
{
	struct epoll_event ev = { .events = events, .data.u64 = id };

	return epoll_ctl(ep, op, fd, &ev);
}

struct later {
	pthread_t t;
	int fd;
	const char *data;
};

static void *later_main(void *arg)
{
	struct later *l = arg;

	usleep(30000); /* only makes it likely the waiter sleeps first */
	if (write(l->fd, l->data, strlen(l->data)) < 0)
		fatal("later write");
	return NULL;
}

static void later(struct later *l, int fd, const char *data)
{
	l->fd = fd;
	l->data = data;
	pthread_create(&l->t, NULL, later_main, l);
}

static ssize_t drain(int fd)
{
	char buf[65536];
	ssize_t n, total = 0;

	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		total += n;
	return total;
}

static void drain_pipe(int fd)
{
	char buf[256];

	MUST(fcntl(fd, F_SETFL, O_NONBLOCK));
	while (read(fd, buf, sizeof(buf)) > 0) {
	}
	MUST(fcntl(fd, F_SETFL, 0));
}

/* Block until fd shows one of events (poll is tested in poll.c; here it only
 * orders the steps). */
static void await(int fd, short events)
{
	struct pollfd pf = { .fd = fd, .events = events };

	while (!(pf.revents & events))
		if (poll(&pf, 1, 10000) <= 0)
			fatal("await %s", pollmask(events));
}

static int sc_lt(void)
{
	int ep, ep1, c, s, p[2], f;
	char path[] = "/tmp/hookscen-epoll-XXXXXX", buf[8];
	struct epoll_event ev[4];
	struct later lt;

	ep = SHOWFD(epoll_create(1));
	ep1 = SHOWFD(epoll_create1(EPOLL_CLOEXEC));
	say("FD_CLOEXEC: create %d, create1(EPOLL_CLOEXEC) %d", !!(fcntl(ep, F_GETFD) & FD_CLOEXEC),
	    !!(fcntl(ep1, F_GETFD) & FD_CLOEXEC));
	SHOWFD(epoll_create(0));
	SHOWFD(epoll_create1(0x1));
	close(ep1);
	tcp_pair(&c, &s);
	MUST(pipe(p));
	SHOW(ctl(ep, EPOLL_CTL_ADD, s, EPOLLIN, 1));
	SHOW(ctl(ep, EPOLL_CTL_ADD, p[0], EPOLLIN, 2));
	SHOW(ctl(ep, EPOLL_CTL_ADD, c, EPOLLOUT, 3));
	ewait("idle", ep, 16, 0);
	MUST(send(c, "data", 4, 0));
	MUST(write(p[1], "p", 1));
	ewait("socket and pipe readable", ep, 16, 0);
	ewait("level: again", ep, 16, 0);
	errno = 0;
	say("maxevents 1: rc %d", epoll_wait(ep, ev, 1, 0));
	SHOW(recv(s, buf, 2, 0));
	ewait("half read: still readable", ep, 16, 0);
	SHOW(recv(s, buf, 2, 0));
	drain_pipe(p[0]);
	ewait("all read", ep, 16, 0);
	SHOW(ctl(ep, EPOLL_CTL_MOD, c, EPOLLIN, 3));
	ewait("client now asks IN", ep, 16, 0);
	SHOW(ctl(ep, EPOLL_CTL_DEL, p[0], 0, 0));
	MUST(write(p[1], "p", 1));
	ewait("pipe removed, written", ep, 16, 0);
	drain_pipe(p[0]);
	ewait("timeout 20 ms", ep, 16, 20);
	later(&lt, c, "late");
	ewait("blocking, data later", ep, 16, -1);
	pthread_join(lt.t, NULL);
	drain(s);
	later(&lt, s, "back");
	ewait("blocking, data for the client later", ep, 16, 5000);
	pthread_join(lt.t, NULL);
	drain(c);
	/* Errors. */
	f = MUST(mkstemp(path));
	unlink(path);
	SHOW(ctl(ep, EPOLL_CTL_ADD, s, EPOLLIN, 1));
	SHOW(ctl(ep, EPOLL_CTL_MOD, p[0], EPOLLIN, 2));
	SHOW(ctl(ep, EPOLL_CTL_DEL, p[0], 0, 2));
	SHOW(ctl(ep, EPOLL_CTL_ADD, ep, EPOLLIN, 9));
	SHOW(ctl(ep, EPOLL_CTL_ADD, f, EPOLLIN, 9));
	SHOW(ctl(ep, EPOLL_CTL_ADD, 9999, EPOLLIN, 9));
	SHOW(ctl(s, EPOLL_CTL_ADD, p[0], EPOLLIN, 9));
	SHOW(ctl(ep, 99, p[0], EPOLLIN, 9));
	SHOW(epoll_wait(ep, ev, 0, 0));
	SHOW(epoll_wait(s, ev, 4, 0));
	SHOW(epoll_wait(9999, ev, 4, 0));
	/* A closed member leaves the set; its number, reused, is not a member. */
	close(s);
	close(c);
	tcp_pair(&c, &s);
	MUST(send(c, "new", 3, 0));
	MUST(send(s, "new", 3, 0));
	ewait("members closed, new sockets with data", ep, 16, 0);
	close(c);
	close(s);
	close(f);
	close(p[0]);
	close(p[1]);
	close(ep);
	return 0;
}

/* Fill c's direction until a non-blocking send would block. */
static void fill(int c)
{
	static char chunk[65536];
	long total = 0;

	for (;;) {
		ssize_t n = send(c, chunk, sizeof(chunk), MSG_DONTWAIT);

		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0)
			fatal("fill");
		total += n;
	}
	say("filled until EAGAIN (%s)", total > 0 ? "some bytes sent" : "nothing sent");
}

static int sc_et(void)
{
	int ep = MUST(epoll_create1(0)), c, s;
	char buf[8];

	tcp_pair(&c, &s);
	SHOW(ctl(ep, EPOLL_CTL_ADD, s, EPOLLIN | EPOLLET, 1));
	SHOW(ctl(ep, EPOLL_CTL_ADD, c, EPOLLOUT | EPOLLET, 3));
	ewait("first wait", ep, 16, 0);
	ewait("second wait: no new edge", ep, 16, 0);
	MUST(send(c, "abcd", 4, 0));
	ewait("data arrived", ep, 16, 0);
	ewait("nothing new", ep, 16, 0);
	SHOW(recv(s, buf, 2, 0));
	ewait("partly read, nothing new", ep, 16, 0);
	MUST(send(c, "ef", 2, 0));
	ewait("more data arrived", ep, 16, 0);
	say("drained %zd", drain(s));
	ewait("drained", ep, 16, 0);
	/* EPOLLOUT edges: a full direction, then the peer reads.  The reader
	 * leaves the set first: data still queued behind the window would give
	 * it new IN edges at moments TCP does not fix.  After the first OUT
	 * edge more may follow (each freed chunk of space is one), so only the
	 * first is asserted. */
	SHOW(ctl(ep, EPOLL_CTL_DEL, s, 0, 0));
	fill(c);
	ewait("client full", ep, 16, 0);
	say("peer drained some bytes: %d", drain(s) > 0);
	ewait("space again (blocking)", ep, 16, 5000);
	close(c);
	close(s);
	/* Both directions in one registration. */
	tcp_pair(&c, &s);
	SHOW(ctl(ep, EPOLL_CTL_ADD, s, EPOLLIN | EPOLLOUT | EPOLLET, 6));
	ewait("IN|OUT|ET first wait", ep, 16, 0);
	ewait("IN|OUT|ET no new edge", ep, 16, 0);
	MUST(send(c, "x", 1, 0));
	ewait("IN|OUT|ET data arrived", ep, 16, 0);
	close(c);
	close(s);
	close(ep);
	return 0;
}

static int sc_oneshot(void)
{
	int ep = MUST(epoll_create1(0)), c, s;

	tcp_pair(&c, &s);
	SHOW(ctl(ep, EPOLL_CTL_ADD, s, EPOLLIN | EPOLLONESHOT, 1));
	ewait("idle", ep, 16, 0);
	MUST(send(c, "a", 1, 0));
	ewait("data", ep, 16, 0);
	ewait("disarmed", ep, 16, 0);
	MUST(send(c, "b", 1, 0));
	ewait("more data, still disarmed", ep, 16, 0);
	SHOW(ctl(ep, EPOLL_CTL_MOD, s, EPOLLIN | EPOLLONESHOT, 1));
	ewait("re-armed", ep, 16, 0);
	ewait("disarmed again", ep, 16, 0);
	say("drained %zd", drain(s));
	SHOW(ctl(ep, EPOLL_CTL_MOD, s, EPOLLIN | EPOLLONESHOT | EPOLLET, 1));
	ewait("re-armed ET, empty", ep, 16, 0);
	MUST(send(c, "c", 1, 0));
	ewait("data", ep, 16, 0);
	MUST(send(c, "d", 1, 0));
	ewait("disarmed", ep, 16, 0);
	/* A disarmed member can still be deleted and added again. */
	SHOW(ctl(ep, EPOLL_CTL_DEL, s, 0, 0));
	SHOW(ctl(ep, EPOLL_CTL_ADD, s, EPOLLIN, 1));
	ewait("added again, level", ep, 16, 0);
	close(c);
	close(s);
	close(ep);
	return 0;
}

static int sc_hup(void)
{
	int ep = MUST(epoll_create1(0)), c, s, e;
	socklen_t el = sizeof(e);
	char buf[8];

	/* Peer SHUT_WR: RDHUP. */
	tcp_pair(&c, &s);
	SHOW(ctl(ep, EPOLL_CTL_ADD, s, EPOLLIN | EPOLLRDHUP, 1));
	ewait("idle", ep, 16, 0);
	SHOW(shutdown(c, SHUT_WR));
	ewait("peer SHUT_WR", ep, 16, 0);
	SHOW(recv(s, buf, sizeof(buf), 0));
	/* We shut too: both directions closed is HUP. */
	SHOW(shutdown(s, SHUT_WR));
	ewait("both directions shut", ep, 16, 0);
	close(c);
	close(s);
	/* Peer close. */
	tcp_pair(&c, &s);
	SHOW(ctl(ep, EPOLL_CTL_ADD, s, EPOLLIN | EPOLLOUT | EPOLLRDHUP, 1));
	ewait("idle", ep, 16, 0);
	SHOW(close(c));
	await(s, POLLRDHUP);
	ewait("peer closed", ep, 16, 0);
	SHOW(shutdown(s, SHUT_WR));
	ewait("peer closed, we shut", ep, 16, 0);
	close(s);
	/* Reset: the peer closes with unread data. */
	tcp_pair(&c, &s);
	SHOW(ctl(ep, EPOLL_CTL_ADD, s, EPOLLIN | EPOLLOUT | EPOLLRDHUP, 1));
	SHOW(ctl(ep, EPOLL_CTL_ADD, c, 0, 3)); /* events 0: only ERR/HUP */
	MUST(send(s, "unread", 6, 0));
	await(c, POLLIN);
	ewait("before reset", ep, 16, 0);
	SHOW(close(c));
	await(s, POLLERR);
	ewait("reset", ep, 16, 0);
	SHOW(getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &el));
	say("SO_ERROR %s", en(e));
	ewait("after SO_ERROR", ep, 16, 0);
	SHOW(recv(s, buf, sizeof(buf), 0));
	close(s);
	/* events 0 sees the reset too. */
	tcp_pair(&c, &s);
	SHOW(ctl(ep, EPOLL_CTL_ADD, s, 0, 1));
	MUST(send(s, "unread", 6, 0));
	await(c, POLLIN);
	ewait("events 0, before reset", ep, 16, 0);
	close(c);
	await(s, POLLERR);
	ewait("events 0, reset", ep, 16, 0);
	close(s);
	close(ep);
	return 0;
}

static int sc_nested(void)
{
	int inner = MUST(epoll_create1(0)), outer = MUST(epoll_create1(0)), c, s, p[2];
	struct later lt;
	struct pollfd pf[2];

	tcp_pair(&c, &s);
	MUST(pipe(p));
	SHOW(ctl(inner, EPOLL_CTL_ADD, s, EPOLLIN, 1));
	SHOW(ctl(outer, EPOLL_CTL_ADD, inner, EPOLLIN, 7));
	SHOW(ctl(outer, EPOLL_CTL_ADD, p[0], EPOLLIN, 2));
	SHOW(ctl(inner, EPOLL_CTL_ADD, outer, EPOLLIN, 9));
	ewait("outer idle", outer, 16, 0);
	MUST(send(c, "data", 4, 0));
	ewait("outer: inner ready", outer, 16, 0);
	ewait("inner", inner, 16, 0);
	pf[0] = (struct pollfd){ .fd = inner, .events = POLLIN };
	pf[1] = (struct pollfd){ .fd = p[0], .events = POLLIN };
	SHOW(poll(pf, 2, 0));
	say("poll: inner %s, pipe %s", pollmask(pf[0].revents), pollmask(pf[1].revents));
	{
		fd_set r;
		struct timeval tv = { 0, 0 };

		FD_ZERO(&r);
		FD_SET(inner, &r);
		SHOW(select(inner + 1, &r, NULL, NULL, &tv));
		say("select: inner readable %d", FD_ISSET(inner, &r) != 0);
	}
	drain(s);
	ewait("outer after drain", outer, 16, 0);
	SHOW(poll(pf, 2, 0));
	say("poll: inner %s, pipe %s", pollmask(pf[0].revents), pollmask(pf[1].revents));
	/* Sleeping on the outer set (or in poll) until the socket gets data. */
	later(&lt, c, "late");
	ewait("outer blocking, data later", outer, 16, -1);
	pthread_join(lt.t, NULL);
	drain(s);
	later(&lt, c, "late");
	SHOW(poll(pf, 2, -1));
	say("poll blocking: inner %s, pipe %s", pollmask(pf[0].revents), pollmask(pf[1].revents));
	pthread_join(lt.t, NULL);
	drain(s);
	/* The inner set's kernel members count too. */
	SHOW(ctl(inner, EPOLL_CTL_ADD, p[0], EPOLLIN, 2));
	MUST(write(p[1], "p", 1));
	ewait("pipe in both sets", outer, 16, 0);
	ewait("inner", inner, 16, 0);
	drain_pipe(p[0]);
	ewait("outer idle again", outer, 16, 0);
	close(c);
	close(s);
	close(p[0]);
	close(p[1]);
	close(inner);
	close(outer);
	return 0;
}

static volatile sig_atomic_t usr1;
static void on_usr1(int sig)
{
	(void)sig;
	usr1++;
}

static int sc_pwait(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigset_t blocked, open_mask;
	int ep = MUST(epoll_create1(0)), c, s, rc;
	struct epoll_event ev[4];
	struct timespec zero = { 0, 0 };
	struct later lt;

	sigemptyset(&sa.sa_mask);
	MUST(sigaction(SIGUSR1, &sa, NULL));
	sigemptyset(&blocked);
	sigaddset(&blocked, SIGUSR1);
	MUST(sigprocmask(SIG_BLOCK, &blocked, &open_mask));
	tcp_pair(&c, &s);
	SHOW(ctl(ep, EPOLL_CTL_ADD, s, EPOLLIN, 1));
	errno = 0;
	rc = epoll_pwait(ep, ev, 4, 0, &blocked);
	show_events("pwait idle", rc, ev);
	raise(SIGUSR1);
	errno = 0;
	rc = epoll_pwait(ep, ev, 4, -1, &open_mask);
	show_events("pwait, SIGUSR1 pending and admitted", rc, ev);
	say("handler ran %d", (int)usr1);
	raise(SIGUSR1);
	later(&lt, c, "x");
	errno = 0;
	rc = epoll_pwait(ep, ev, 4, -1, &blocked);
	show_events("pwait, SIGUSR1 blocked, data later", rc, ev);
	pthread_join(lt.t, NULL);
	say("handler ran %d", (int)usr1);
	errno = 0;
	rc = epoll_pwait2(ep, ev, 4, &zero, &blocked);
	show_events("pwait2 zero timeout", rc, ev);
	drain(s);
	rc = epoll_pwait2(ep, ev, 4, &zero, NULL);
	show_events("pwait2 after drain", rc, ev);
	MUST(sigprocmask(SIG_SETMASK, &open_mask, NULL));
	say("unblocked: handler ran %d", (int)usr1);
	close(c);
	close(s);
	close(ep);
	return 0;
}

static int sc_mixed(void)
{
	uint16_t port;
	int ep = MUST(epoll_create1(0)), l = tcp_listener(&port), u = MUST(socket(AF_INET, SOCK_DGRAM, 0)), c, s, p[2],
	    x, k;
	struct sockaddr_in a;

	tcp_pair(&c, &s);
	MUST(pipe(p));
	SHOW(ctl(ep, EPOLL_CTL_ADD, s, EPOLLIN, 1));
	SHOW(ctl(ep, EPOLL_CTL_ADD, p[0], EPOLLIN, 2));
	SHOW(ctl(ep, EPOLL_CTL_ADD, l, EPOLLIN, 4));
	SHOW(ctl(ep, EPOLL_CTL_ADD, u, EPOLLIN, 5));
	/* A socket registered before it connects. */
	x = MUST(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
	SHOW(ctl(ep, EPOLL_CTL_ADD, x, EPOLLIN | EPOLLOUT | EPOLLRDHUP, 8));
	ewait("idle (unconnected socket in the set)", ep, 16, 0);
	loop_addr(port, &a);
	errno = 0;
	say("connect: %s", connect(x, (struct sockaddr *)&a, sizeof(a)) == 0 ? "done" : en(errno));
	/* Let the connection finish (so the wait below has one answer). */
	await(x, POLLOUT);
	await(l, POLLIN);
	ewait("connecting socket connected, listener has it", ep, 16, 0);
	k = SHOWFD(accept(l, NULL, NULL));
	SHOW(ctl(ep, EPOLL_CTL_ADD, k, EPOLLIN, 9));
	ewait("accepted, nothing to read", ep, 16, 0);
	MUST(send(x, "hi", 2, 0));
	MUST(send(c, "hi", 2, 0));
	MUST(write(p[1], "p", 1));
	{
		struct sockaddr_in ua;
		socklen_t ul = sizeof(ua);
		int v = MUST(socket(AF_INET, SOCK_DGRAM, 0));

		loop_addr(0, &ua);
		MUST(bind(u, (struct sockaddr *)&ua, sizeof(ua)));
		MUST(getsockname(u, (struct sockaddr *)&ua, &ul));
		MUST(sendto(v, "dgram", 5, 0, (struct sockaddr *)&ua, sizeof(ua)));
		close(v);
	}
	ewait("all readable", ep, 16, 0);
	drain(k);
	drain(s);
	drain_pipe(p[0]);
	drain(u);
	ewait("drained; the connecting socket stays writable", ep, 16, 0);
	close(k);
	await(x, POLLRDHUP);
	ewait("accepted end closed: peer sees RDHUP", ep, 16, 0);
	close(x);
	close(c);
	close(s);
	close(p[0]);
	close(p[1]);
	close(l);
	close(u);
	close(ep);
	return 0;
}

/* A thread blocked in epoll_wait(-1); the main thread changes the set under it.
 * A waiter never woken fails the scenario after 5 s instead of hanging. */
struct waiter {
	pthread_t t;
	int ep, rc, err, done[2];
	struct epoll_event ev[4];
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->rc = epoll_wait(w->ep, w->ev, 4, -1);
	w->err = errno;
	if (write(w->done[1], "w", 1) < 0)
		fatal("waiter done");
	return NULL;
}

static void waiter_start(struct waiter *w, int ep)
{
	w->ep = ep;
	MUST(pipe(w->done));
	pthread_create(&w->t, NULL, waiter_main, w);
	usleep(100000); /* only makes it likely the waiter sleeps first */
}

static bool waiter_woken(struct waiter *w, int ms)
{
	struct pollfd pf = { .fd = w->done[0], .events = POLLIN };

	return poll(&pf, 1, ms) == 1;
}

/* The change alone wakes nobody in the kernel: no event to report. */
static void waiter_quiet(struct waiter *w, const char *what)
{
	say("%s: waiter still asleep %d", what, !waiter_woken(w, 200));
}

static void waiter_join(struct waiter *w, const char *what)
{
	if (!waiter_woken(w, 5000))
		fatal("%s: waiter not woken in 5 s", what);
	pthread_join(w->t, NULL);
	errno = w->err;
	show_events(what, w->rc, w->ev);
	close(w->done[0]);
	close(w->done[1]);
}

static int sc_xthread(void)
{
	int ep = MUST(epoll_create1(0)), ep2 = MUST(epoll_create1(0)), c, s, c2, s2, p[2];
	struct waiter w;
	char buf[8];

	tcp_pair(&c, &s);
	tcp_pair(&c2, &s2);
	MUST(pipe(p));
	/* The worker-pool pattern: EPOLLONESHOT fired, another thread re-arms. */
	SHOW(ctl(ep, EPOLL_CTL_ADD, s, EPOLLIN | EPOLLONESHOT, 1));
	MUST(send(c, "a", 1, 0));
	ewait("oneshot fires", ep, 16, 0);
	SHOW(recv(s, buf, sizeof(buf), 0));
	waiter_start(&w, ep);
	SHOW(ctl(ep, EPOLL_CTL_MOD, s, EPOLLIN | EPOLLONESHOT, 1));
	waiter_quiet(&w, "re-armed, no data yet");
	MUST(send(c, "b", 1, 0));
	waiter_join(&w, "re-armed by another thread, then data");
	SHOW(recv(s, buf, sizeof(buf), 0));
	/* The same with another connection in the set, idle. */
	SHOW(ctl(ep, EPOLL_CTL_ADD, s2, EPOLLIN, 6));
	waiter_start(&w, ep);
	SHOW(ctl(ep, EPOLL_CTL_MOD, s, EPOLLIN | EPOLLONESHOT, 1));
	MUST(send(c, "c", 1, 0));
	waiter_join(&w, "re-armed beside an idle connection, then data");
	SHOW(recv(s, buf, sizeof(buf), 0));
	/* A connection added by another thread: data after, data before. */
	waiter_start(&w, ep2);
	SHOW(ctl(ep2, EPOLL_CTL_ADD, s, EPOLLIN, 1));
	waiter_quiet(&w, "added, no data yet");
	MUST(send(c, "d", 1, 0));
	waiter_join(&w, "added by another thread, then data");
	SHOW(ctl(ep2, EPOLL_CTL_DEL, s, 0, 0));
	waiter_start(&w, ep2);
	SHOW(ctl(ep2, EPOLL_CTL_ADD, s, EPOLLIN, 1));
	waiter_join(&w, "added by another thread with data waiting");
	SHOW(recv(s, buf, sizeof(buf), 0));
	/* Deleted or closed by another thread: never reported (the pipe ends
	 * the wait). */
	SHOW(ctl(ep2, EPOLL_CTL_ADD, p[0], EPOLLIN, 2));
	waiter_start(&w, ep2);
	SHOW(ctl(ep2, EPOLL_CTL_DEL, s, 0, 0));
	MUST(send(c, "e", 1, 0));
	usleep(100000);
	MUST(write(p[1], "p", 1));
	waiter_join(&w, "deleted by another thread, then data");
	drain_pipe(p[0]);
	SHOW(ctl(ep2, EPOLL_CTL_ADD, s2, EPOLLIN, 6));
	waiter_start(&w, ep2);
	close(s2);
	MUST(send(c2, "f", 1, 0));
	usleep(100000);
	MUST(write(p[1], "p", 1));
	waiter_join(&w, "closed by another thread, then data");
	close(c);
	close(s);
	close(c2);
	close(p[0]);
	close(p[1]);
	close(ep);
	close(ep2);
	return 0;
}

struct poller {
	pthread_t t;
	struct pollfd pf;
	int rc;
};

static void *poller_main(void *arg)
{
	struct poller *pl = arg;

	pl->rc = poll(&pl->pf, 1, -1);
	return NULL;
}

/* The same through an outer set, and through poll, on the set changed. */
static int sc_xthread_nested(void)
{
	int inner = MUST(epoll_create1(0)), outer = MUST(epoll_create1(0)), c, s;
	struct waiter w;
	struct poller pl = { .pf = { .fd = inner, .events = POLLIN } };
	char buf[8];

	tcp_pair(&c, &s);
	SHOW(ctl(outer, EPOLL_CTL_ADD, inner, EPOLLIN, 7));
	waiter_start(&w, outer);
	SHOW(ctl(inner, EPOLL_CTL_ADD, s, EPOLLIN, 1));
	waiter_quiet(&w, "added to the inner set, no data yet");
	MUST(send(c, "a", 1, 0));
	waiter_join(&w, "outer set, connection added to the inner one, then data");
	SHOW(recv(s, buf, sizeof(buf), 0));
	SHOW(ctl(inner, EPOLL_CTL_DEL, s, 0, 0));
	pthread_create(&pl.t, NULL, poller_main, &pl);
	usleep(100000);
	SHOW(ctl(inner, EPOLL_CTL_ADD, s, EPOLLIN, 1));
	usleep(200000);
	say("added, no data yet: poll still asleep %d", !pl.rc);
	MUST(send(c, "b", 1, 0));
	for (int i = 0; i < 500 && !pl.rc; i++)
		usleep(10000);
	if (!pl.rc)
		fatal("poll on the set not woken in 5 s");
	pthread_join(pl.t, NULL);
	say("poll on the set: rc %d %s", pl.rc, pollmask(pl.pf.revents));
	close(c);
	close(s);
	close(inner);
	close(outer);
	return 0;
}

static void rearm_round(int ep, int c, int s, const char *what)
{
	struct waiter w;
	char buf[8];

	waiter_start(&w, ep);
	MUST(ctl(ep, EPOLL_CTL_MOD, s, EPOLLIN | EPOLLONESHOT, 1));
	MUST(send(c, "r", 1, 0));
	waiter_join(&w, what);
	MUST(recv(s, buf, sizeof(buf), 0));
}

static int rearm_kid(void *arg)
{
	int *v = arg;

	rearm_round(v[0], v[1], v[2], "in a forked child");
	return 0;
}

/* Re-arming still wakes after the program dup2s onto every eventfd (under the
 * hook, the set's wake-up descriptor moves away) and in a forked child. */
static int sc_xthread_fork(void)
{
	int v[3] = { MUST(epoll_create1(0)) }, p[2];
	char link[64], path[64];
	struct kid k;

	tcp_pair(&v[1], &v[2]);
	MUST(pipe(p));
	SHOW(ctl(v[0], EPOLL_CTL_ADD, v[2], EPOLLIN | EPOLLONESHOT, 1));
	rearm_round(v[0], v[1], v[2], "first");
	for (int fd = 3; fd < 4096; fd++) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, link, sizeof(link) - 1);
		if (n > 0 && (link[n] = 0, strstr(link, "eventfd")))
			MUST(dup2(p[0], fd));
	}
	rearm_round(v[0], v[1], v[2], "after dup2 onto every eventfd");
	kid_start(&k, "kid", rearm_kid, v);
	kid_join(&k);
	rearm_round(v[0], v[1], v[2], "in the parent again");
	close(v[0]);
	close(v[1]);
	close(v[2]);
	close(p[0]);
	close(p[1]);
	return 0;
}

/* Several threads waiting at once: on one set, or each on its own set with
 * EPOLLEXCLUSIVE.  At least one wakes; a EPOLLONESHOT event goes to one. */
static int sc_shared(void)
{
	int ep = MUST(epoll_create1(0)), ep2 = MUST(epoll_create1(0)), c, s, p[2], eps[2], got_s;
	struct waiter w[2];

	tcp_pair(&c, &s);
	MUST(pipe(p));
	SHOW(ctl(ep, EPOLL_CTL_ADD, s, EPOLLIN | EPOLLONESHOT, 1));
	SHOW(ctl(ep, EPOLL_CTL_ADD, p[0], EPOLLIN, 2));
	for (int round = 0; round < 3; round++) {
		const char *what[] = { "one set, oneshot", "one set, level", "two sets, EPOLLEXCLUSIVE" };

		eps[0] = ep;
		eps[1] = round == 2 ? ep2 : ep;
		if (round == 1)
			SHOW(ctl(ep, EPOLL_CTL_MOD, s, EPOLLIN, 1));
		if (round == 2) {
			SHOW(ctl(ep, EPOLL_CTL_DEL, s, 0, 0));
			SHOW(ctl(ep, EPOLL_CTL_ADD, s, EPOLLIN | EPOLLEXCLUSIVE, 1));
			SHOW(ctl(ep2, EPOLL_CTL_ADD, s, EPOLLIN | EPOLLEXCLUSIVE, 1));
			SHOW(ctl(ep2, EPOLL_CTL_ADD, p[0], EPOLLIN, 2));
		}
		waiter_start(&w[0], eps[0]);
		waiter_start(&w[1], eps[1]);
		MUST(send(c, "x", 1, 0));
		{
			struct pollfd pf[2] = { { .fd = w[0].done[0], .events = POLLIN },
						{ .fd = w[1].done[0], .events = POLLIN } };

			say("%s: some waiter woken %d", what[round], poll(pf, 2, 5000) > 0);
		}
		MUST(write(p[1], "p", 1)); /* ends the other wait */
		got_s = 0;
		for (int i = 0; i < 2; i++) {
			if (!waiter_woken(&w[i], 5000))
				fatal("%s: waiter %d not woken by the pipe", what[round], i);
			pthread_join(w[i].t, NULL);
			for (int k = 0; k < w[i].rc; k++)
				got_s += w[i].ev[k].data.u64 == 1;
			close(w[i].done[0]);
			close(w[i].done[1]);
		}
		/* Level-triggered, the kernel may wake one waiter or both. */
		if (round == 0)
			say("%s: the socket reported to %d waiter(s)", what[round], got_s);
		else
			say("%s: the socket reported to at least one waiter %d", what[round], got_s >= 1);
		drain(s);
		drain_pipe(p[0]);
	}
	/* EPOLLEXCLUSIVE errors. */
	SHOW(ctl(ep, EPOLL_CTL_MOD, s, EPOLLIN, 1));
	SHOW(ctl(ep, EPOLL_CTL_MOD, p[0], EPOLLIN | EPOLLEXCLUSIVE, 2));
	SHOW(ctl(ep2, EPOLL_CTL_DEL, s, 0, 0));
	SHOW(ctl(ep2, EPOLL_CTL_ADD, s, EPOLLIN | EPOLLEXCLUSIVE | EPOLLONESHOT, 1));
	SHOW(ctl(ep2, EPOLL_CTL_ADD, ep, EPOLLIN | EPOLLEXCLUSIVE, 7));
	close(c);
	close(s);
	close(p[0]);
	close(p[1]);
	close(ep);
	close(ep2);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "lt", sc_lt },         { "et", sc_et },       { "oneshot", sc_oneshot }, { "hup", sc_hup },
		{ "nested", sc_nested }, { "pwait", sc_pwait }, { "mixed", sc_mixed },     { "xthread", sc_xthread },
		{ "xthread_nested", sc_xthread_nested }, { "xthread_fork", sc_xthread_fork },
		{ "shared", sc_shared }, { NULL, NULL },
	};

	return scen_main(argc, argv, t);
}
