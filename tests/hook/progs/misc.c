/* misc.c — scenarios for signals (EINTR / SA_RESTART), threads (many sockets;
 * two threads on one socket), UDP and AF_UNIX (which must stay the kernel's),
 * and a TCP connection passed over SCM_RIGHTS.  A plain POSIX program. */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "scen.h"

/* ---- signals ---------------------------------------------------------------- */

static volatile sig_atomic_t alarms;
static volatile int alarm_send_fd = -1; /* the handler's 3rd call sends here */

static void on_alarm(int sig)
{
	int e = errno;

	(void)sig;
	if (++alarms == 3 && alarm_send_fd >= 0)
		send(alarm_send_fd, "restart", 7, MSG_NOSIGNAL); /* async-signal-safe */
	errno = e;
}

/* SIGALRM every 30 ms (first after 30 ms), handler with or without SA_RESTART. */
static void alarm_every(bool restart)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = restart ? SA_RESTART : 0 };
	struct itimerval it = { { 0, 30000 }, { 0, 30000 } };

	sigemptyset(&sa.sa_mask);
	MUST(sigaction(SIGALRM, &sa, NULL));
	alarms = 0;
	MUST(setitimer(ITIMER_REAL, &it, NULL));
}

static void alarm_off(void)
{
	struct itimerval it = { { 0, 0 }, { 0, 0 } };

	MUST(setitimer(ITIMER_REAL, &it, NULL));
	scen_alarm(); /* the hang limit again (setitimer replaced it) */
}

static int late_connect(void *arg)
{
	uint16_t port = *(uint16_t *)arg;

	usleep(150000); /* only makes it likely the accept is interrupted first */
	close(tcp_connect(port));
	return 0;
}

static int sc_signals(void)
{
	int c, s, ep, r;
	char buf[16] = { 0 };
	uint16_t port;

	tcp_pair(&c, &s);
	/* No SA_RESTART: the first signal ends the call with EINTR. */
	alarm_every(false);
	SHOW(recv(s, buf, sizeof(buf), 0));
	SHOW(read(s, buf, sizeof(buf)));
	{
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

		SHOW(recvmsg(s, &m, 0));
	}
	alarm_off();
	/* SA_RESTART: recv restarts after each signal; the third handler call
	 * sends the data that completes it. */
	alarm_send_fd = c;
	alarm_every(true);
	r = SHOW(recv(s, buf, sizeof(buf) - 1, 0));
	alarm_off();
	alarm_send_fd = -1;
	buf[r > 0 ? r : 0] = '\0';
	say("restarted recv got '%s' after at least 3 signals: %d", buf, alarms >= 3);
	/* poll, epoll_wait and select are never restarted. */
	alarm_every(true);
	{
		struct pollfd pf = { .fd = s, .events = POLLIN };

		SHOW(poll(&pf, 1, -1));
	}
	ep = MUST(epoll_create1(0));
	{
		struct epoll_event ev = { .events = EPOLLIN }, out;

		MUST(epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev));
		SHOW(epoll_wait(ep, &out, 1, -1));
	}
	{
		fd_set rd;

		FD_ZERO(&rd);
		FD_SET(s, &rd);
		SHOW(select(s + 1, &rd, NULL, NULL, NULL));
	}
	/* A receive timeout makes recv interruptible even with SA_RESTART. */
	{
		struct timeval tv = { 10, 0 };

		MUST(setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
		SHOW(recv(s, buf, sizeof(buf), 0));
		tv.tv_sec = 0;
		MUST(setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	}
	alarm_off();
	close(ep);
	/* accept: EINTR without SA_RESTART, restarted with it. */
	{
		int l = tcp_listener(&port);
		struct kid k;

		alarm_every(false);
		SHOWFD(accept(l, NULL, NULL));
		alarm_off();
		kid_start(&k, "late connect", late_connect, &port);
		alarm_every(true);
		r = SHOWFD(accept(l, NULL, NULL));
		alarm_off();
		kid_join(&k);
		close(r);
		close(l);
	}
	/* The connection still works after all that. */
	SHOW(send(c, "after", 5, 0));
	SHOW(recv(s, buf, 5, MSG_WAITALL));
	close(c);
	close(s);
	return 0;
}

/* ---- threads ---------------------------------------------------------------- */

#define NTHREADS 8
static uint16_t tport;
static int tlisten;

static void *thread_server(void *arg)
{
	uint64_t *total = arg;
	int s = MUST(accept(tlisten, NULL, NULL));

	*total = echo_fd(s, s);
	close(s);
	return NULL;
}

struct tclient {
	pthread_t t;
	int i;
	bool ok;
	size_t got;
};

static void *thread_client(void *arg)
{
	struct tclient *tc = arg;
	int c = tcp_connect(tport);

	tc->ok = exchange(c, 100 + (uint64_t)tc->i, (size_t)(1 << 20) + (size_t)tc->i * 4099, NULL, &tc->got);
	shutdown(c, SHUT_WR);
	close(c);
	return NULL;
}

static int sc_threads_many(void)
{
	pthread_t srv[NTHREADS];
	uint64_t echoed[NTHREADS], total = 0, expect = 0;
	struct tclient cl[NTHREADS];

	tlisten = tcp_listener(&tport);
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&srv[i], NULL, thread_server, &echoed[i]);
	for (int i = 0; i < NTHREADS; i++) {
		cl[i].i = i;
		pthread_create(&cl[i].t, NULL, thread_client, &cl[i]);
	}
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(cl[i].t, NULL);
		say("client thread %d: %zu bytes back, intact %d", i, cl[i].got, cl[i].ok);
		expect += (uint64_t)(1 << 20) + (uint64_t)i * 4099;
	}
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(srv[i], NULL);
		total += echoed[i];
	}
	say("server threads echoed %llu bytes in all (expected %llu)", (unsigned long long)total,
	    (unsigned long long)expect);
	close(tlisten);
	return 0;
}

/* Threads on small stacks doing socket work, as MariaDB's timer thread (64
 * KiB), stunnel and varnish do: static TLS is carved out of every thread's
 * stack, so a preloaded library with large __thread data makes
 * pthread_create fail (EINVAL) before the thread runs.  The 64 KiB threads
 * connect and accept themselves; the 16 KiB ones move data (sleeping and
 * waking) on a connection made by the main thread. */
struct small {
	pthread_t t;
	size_t stack;
	int fd;        /* the connection, or -1: make it in the thread */
	int rc;        /* pthread_create's result */
	bool ok;
	size_t got;
};

static void *small_server(void *arg)
{
	struct small *sm = arg;
	int s = sm->fd >= 0 ? sm->fd : accept(tlisten, NULL, NULL);

	if (s >= 0) {
		sm->got = (size_t)echo_fd(s, s);
		close(s);
	}
	return NULL;
}

static void *small_client(void *arg)
{
	static __thread unsigned char chunk[512];
	struct small *sm = arg;
	int c = sm->fd >= 0 ? sm->fd : tcp_connect(tport);
	size_t len = 48 * 1024;

	sm->ok = true;
	for (size_t off = 0; off < len; off += sizeof(chunk)) {
		stream_fill(7, off, chunk, sizeof(chunk));
		if (send_all(c, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk))
			sm->ok = false;
		if (recv_all(c, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk) ||
		    !stream_check(7, off, chunk, sizeof(chunk)))
			sm->ok = false;
		else
			sm->got += sizeof(chunk);
	}
	shutdown(c, SHUT_WR);
	close(c);
	return NULL;
}

static void start_small(struct small *sm, size_t stack, int fd, void *(*fn)(void *))
{
	pthread_attr_t a;

	sm->stack = stack;
	sm->fd = fd;
	MUST(pthread_attr_init(&a));
	MUST(pthread_attr_setstacksize(&a, stack));
	sm->rc = pthread_create(&sm->t, &a, fn, sm);
	pthread_attr_destroy(&a);
	say("pthread_create, %zu KiB stack -> %s", stack / 1024, sm->rc ? en(sm->rc) : "0");
}

static int sc_small_stacks(void)
{
	const size_t stacks[] = { PTHREAD_STACK_MIN, 64 * 1024 };

	tlisten = tcp_listener(&tport);
	for (unsigned i = 0; i < sizeof(stacks) / sizeof(stacks[0]); i++) {
		struct small srv = { 0 }, cli = { 0 };
		int c = -1, s = -1;

		if (stacks[i] < 64 * 1024) {
			c = tcp_connect(tport);
			s = MUST(accept(tlisten, NULL, NULL));
		}
		start_small(&srv, stacks[i], s, small_server);
		start_small(&cli, stacks[i], c, small_client);
		if (srv.rc && !cli.rc) {
			/* No server thread: serve the client thread from here. */
			if (s < 0)
				s = MUST(accept(tlisten, NULL, NULL));
			srv.got = (size_t)echo_fd(s, s);
			close(s);
		} else if (!srv.rc && cli.rc) {
			/* The server thread must see EOF. */
			close(c >= 0 ? c : tcp_connect(tport));
		}
		if (!cli.rc)
			pthread_join(cli.t, NULL);
		if (!srv.rc)
			pthread_join(srv.t, NULL);
		if (srv.rc && cli.rc && c >= 0) {
			close(c);
			close(s);
		}
		say("%zu KiB stacks: client got %zu bytes back, intact %d; server echoed %zu", stacks[i] / 1024,
		    cli.got, cli.ok, srv.got);
	}
	close(tlisten);
	return 0;
}

/* The whole connection set-up on 16 KiB stacks: a listener thread binds,
 * listens and accepts, a client thread connects, then sends, polls, receives
 * and closes (the hook's set-up builds paths and sweeps the runtime directory
 * on the caller's stack). */
struct setup {
	int ready[2]; /* the listener thread hands its port to the client thread */
	size_t echoed, got;
	bool ok;
};

static void *setup_listener(void *arg)
{
	struct setup *st = arg;
	uint16_t port;
	int l = tcp_listener(&port), s;

	if (write(st->ready[1], &port, sizeof(port)) != (ssize_t)sizeof(port))
		return NULL;
	s = accept(l, NULL, NULL);
	if (s >= 0) {
		st->echoed = (size_t)echo_fd(s, s);
		close(s);
	}
	close(l);
	return NULL;
}

static void *setup_client(void *arg)
{
	static __thread unsigned char chunk[512];
	struct setup *st = arg;
	uint16_t port;
	int c;

	if (read(st->ready[0], &port, sizeof(port)) != (ssize_t)sizeof(port))
		return NULL;
	c = tcp_connect(port);
	st->ok = true;
	for (size_t off = 0; off < 32 * 1024; off += sizeof(chunk)) {
		struct pollfd p = { .fd = c, .events = POLLIN };

		stream_fill(9, off, chunk, sizeof(chunk));
		if (send(c, chunk, sizeof(chunk), 0) != (ssize_t)sizeof(chunk) || poll(&p, 1, -1) != 1 ||
		    recv_all(c, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk) ||
		    !stream_check(9, off, chunk, sizeof(chunk)))
			st->ok = false;
		else
			st->got += sizeof(chunk);
	}
	shutdown(c, SHUT_WR);
	close(c);
	return NULL;
}

static int sc_small_stack_setup(void)
{
	struct setup st = { 0 };
	pthread_t t[2];
	void *(*fn[2])(void *) = { setup_listener, setup_client };
	pthread_attr_t a;
	int rc[2];

	MUST(pipe(st.ready));
	MUST(pthread_attr_init(&a));
	MUST(pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN));
	for (int i = 0; i < 2; i++) {
		rc[i] = pthread_create(&t[i], &a, fn[i], &st);
		say("pthread_create, %ld KiB stack -> %s", (long)PTHREAD_STACK_MIN / 1024, rc[i] ? en(rc[i]) : "0");
	}
	pthread_attr_destroy(&a);
	for (int i = 1; i >= 0; i--)
		if (!rc[i])
			pthread_join(t[i], NULL);
	say("client got %zu bytes back, intact %d; listener thread echoed %zu", st.got, st.ok, st.echoed);
	close(st.ready[0]);
	close(st.ready[1]);
	return 0;
}

static int echo_kid(void *arg)
{
	int c = tcp_connect(*(uint16_t *)arg);

	say("echoed %llu bytes", (unsigned long long)echo_fd(c, c));
	close(c);
	return 0;
}

#define SHARED_BYTES (16u << 20)

static void *shared_writer(void *arg)
{
	int c = *(int *)arg;
	char *buf = malloc(100003);

	for (uint64_t off = 0; off < SHARED_BYTES;) {
		size_t n = SHARED_BYTES - off < 100003 ? SHARED_BYTES - off : 100003;

		stream_fill(20, off, buf, n);
		if (send_all(c, buf, n) != (ssize_t)n)
			fatal("shared writer");
		off += n;
	}
	shutdown(c, SHUT_WR);
	free(buf);
	return NULL;
}

struct one_byte {
	pthread_t t;
	int fd;
	ssize_t n;
	char b;
};

static void *read_one(void *arg)
{
	struct one_byte *o = arg;

	o->n = recv(o->fd, &o->b, 1, 0);
	return NULL;
}

static int drip(void *arg)
{
	int c = tcp_connect(*(uint16_t *)arg);

	usleep(50000); /* only makes it likely both readers sleep first */
	send(c, "a", 1, 0);
	usleep(20000);
	send(c, "b", 1, 0);
	/* Wait for the parent's close before closing (no reset, no early EOF). */
	{
		char x;

		recv(c, &x, 1, 0);
	}
	close(c);
	return 0;
}

static int sc_threads_shared(void)
{
	uint16_t port;
	int l = tcp_listener(&port), c;
	struct kid k;
	pthread_t w;
	char *buf = malloc(1 << 20);
	uint64_t got = 0;
	bool intact = true;
	ssize_t n;

	/* A writer thread and a reading thread on one socket. */
	kid_start(&k, "echo", echo_kid, &port);
	c = MUST(accept(l, NULL, NULL));
	pthread_create(&w, NULL, shared_writer, &c);
	while ((n = recv(c, buf, 1 << 20, 0)) > 0) {
		intact = intact && stream_check(20, got, buf, (size_t)n);
		got += (uint64_t)n;
	}
	pthread_join(w, NULL);
	say("writer thread sent %u, reader thread got %llu, intact %d", SHARED_BYTES, (unsigned long long)got, intact);
	close(c);
	kid_join(&k);
	/* Two threads blocked in recv on one socket: each gets one byte. */
	{
		struct one_byte r[2];

		kid_start(&k, "drip", drip, &port);
		c = MUST(accept(l, NULL, NULL));
		for (int i = 0; i < 2; i++) {
			r[i].fd = c;
			pthread_create(&r[i].t, NULL, read_one, &r[i]);
		}
		for (int i = 0; i < 2; i++)
			pthread_join(r[i].t, NULL);
		say("two blocked readers: %zd and %zd bytes, together '%c%c'", r[0].n, r[1].n,
		    r[0].b < r[1].b ? r[0].b : r[1].b, r[0].b < r[1].b ? r[1].b : r[0].b);
		close(c);
		kid_join(&k);
	}
	/* shutdown from another thread wakes a blocked reader with EOF. */
	{
		struct one_byte r;
		int s;

		c = tcp_connect(port);
		s = MUST(accept(l, NULL, NULL));
		r.fd = c;
		pthread_create(&r.t, NULL, read_one, &r);
		usleep(30000);
		SHOW(shutdown(c, SHUT_RDWR));
		pthread_join(r.t, NULL);
		say("blocked reader after shutdown(SHUT_RDWR): %zd", r.n);
		close(c);
		close(s);
	}
	close(l);
	free(buf);
	return 0;
}

/* ---- UDP and AF_UNIX: the kernel's ------------------------------------------- */

static int sc_udp(void)
{
	int a = MUST(socket(AF_INET, SOCK_DGRAM, 0)), b = MUST(socket(AF_INET, SOCK_DGRAM, 0)), n, ep;
	struct sockaddr_in aa, ba, from;
	socklen_t len = sizeof(aa);
	char buf[64];
	struct pollfd pf;

	loop_addr(0, &aa);
	loop_addr(0, &ba);
	MUST(bind(a, (struct sockaddr *)&aa, sizeof(aa)));
	MUST(bind(b, (struct sockaddr *)&ba, sizeof(ba)));
	MUST(getsockname(a, (struct sockaddr *)&aa, &len));
	len = sizeof(ba);
	MUST(getsockname(b, (struct sockaddr *)&ba, &len));
	SHOW(sendto(b, "one", 3, 0, (struct sockaddr *)&aa, sizeof(aa)));
	SHOW(sendto(b, "second", 6, 0, (struct sockaddr *)&aa, sizeof(aa)));
	SHOW(sendto(b, "3", 1, 0, (struct sockaddr *)&aa, sizeof(aa)));
	pf = (struct pollfd){ .fd = a, .events = POLLIN | POLLOUT };
	SHOW(poll(&pf, 1, 1000));
	say("revents %s", pollmask(pf.revents));
	MUST(ioctl(a, FIONREAD, &n));
	say("FIONREAD (next datagram) %d", n);
	SHOW(recv(a, buf, sizeof(buf), MSG_PEEK));
	len = sizeof(from);
	SHOW(recvfrom(a, buf, sizeof(buf), 0, (struct sockaddr *)&from, &len));
	say("from the sender's port: %d", from.sin_port == ba.sin_port);
	{
		struct iovec iov = { buf, 3 };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

		SHOW(recvmsg(a, &m, 0));
		say("truncated: MSG_TRUNC %d", !!(m.msg_flags & MSG_TRUNC));
	}
	SHOW(recv(a, buf, sizeof(buf), 0));
	SHOW(recv(a, buf, sizeof(buf), MSG_DONTWAIT));
	/* Connected UDP. */
	SHOW(connect(b, (struct sockaddr *)&aa, sizeof(aa)));
	SHOW(send(b, "conn", 4, 0));
	ep = MUST(epoll_create1(0));
	{
		struct epoll_event ev = { .events = EPOLLIN }, out;

		MUST(epoll_ctl(ep, EPOLL_CTL_ADD, a, &ev));
		SHOW(epoll_wait(ep, &out, 1, 1000));
		say("epoll %s", epmask(out.events));
	}
	SHOW(recv(a, buf, sizeof(buf), 0));
	/* A connected UDP socket to a dead port learns ECONNREFUSED. */
	{
		int d = MUST(socket(AF_INET, SOCK_DGRAM, 0));
		struct sockaddr_in da;

		loop_addr(dead_port(), &da);
		MUST(connect(d, (struct sockaddr *)&da, sizeof(da)));
		SHOW(send(d, "x", 1, 0));
		pf = (struct pollfd){ .fd = d, .events = POLLIN };
		SHOW(poll(&pf, 1, 1000));
		SHOW(recv(d, buf, sizeof(buf), 0));
		close(d);
	}
	close(ep);
	close(a);
	close(b);
	return 0;
}

static int sc_unix(void)
{
	int sv[2], l, c, s, p[2], got;
	char buf[64], path[108];
	struct sockaddr_un ua = { .sun_family = AF_UNIX };
	struct stat st;

	MUST(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	SHOW(send(sv[0], "pair", 4, 0));
	SHOW(recv(sv[1], buf, sizeof(buf), 0));
	SHOW(shutdown(sv[0], SHUT_WR));
	SHOW(recv(sv[1], buf, sizeof(buf), 0));
	close(sv[0]);
	close(sv[1]);
	/* A listener on a path. */
	snprintf(path, sizeof(path), "/tmp/hookscen-unix-%d", (int)getpid());
	unlink(path);
	strcpy(ua.sun_path, path);
	l = MUST(socket(AF_UNIX, SOCK_STREAM, 0));
	SHOW(bind(l, (struct sockaddr *)&ua, sizeof(ua)));
	SHOW(listen(l, 4));
	c = MUST(socket(AF_UNIX, SOCK_STREAM, 0));
	SHOW(connect(c, (struct sockaddr *)&ua, sizeof(ua)));
	s = SHOWFD(accept(l, NULL, NULL));
	say("fstat socket %d", fstat(s, &st) == 0 && S_ISSOCK(st.st_mode));
	SHOW(send(c, "stream", 6, 0));
	SHOW(recv(s, buf, sizeof(buf), 0));
	/* Pass a pipe with SCM_RIGHTS. */
	MUST(pipe(p));
	SHOW(scen_send_fd(c, p[1]));
	got = scen_recv_fd(s);
	say("received a descriptor %d", got >= 0);
	SHOW(write(got, "via", 3));
	SHOW(read(p[0], buf, sizeof(buf)));
	close(got);
	close(c);
	close(s);
	close(l);
	unlink(path);
	/* Datagram and seqpacket pairs keep message boundaries. */
	MUST(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
	SHOW(send(sv[0], "ab", 2, 0));
	SHOW(send(sv[0], "cde", 3, 0));
	SHOW(recv(sv[1], buf, sizeof(buf), 0));
	SHOW(recv(sv[1], buf, sizeof(buf), 0));
	close(sv[0]);
	close(sv[1]);
	MUST(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv));
	SHOW(send(sv[0], "ab", 2, 0));
	SHOW(send(sv[0], "cde", 3, 0));
	SHOW(recv(sv[1], buf, sizeof(buf), 0));
	SHOW(recv(sv[1], buf, sizeof(buf), 0));
	SHOW(close(sv[0]));
	SHOW(recv(sv[1], buf, sizeof(buf), 0));
	close(sv[1]);
	close(p[0]);
	close(p[1]);
	return 0;
}

/* ---- a TCP connection passed over AF_UNIX ------------------------------------ */

/* Kid: serve the connection it is handed (a worker behind a dispatcher). */
static int fd_receiver(void *arg)
{
	int via = ((int *)arg)[1], s = scen_recv_fd(via);
	char buf[16] = { 0 };

	say("received a descriptor: %d", s >= 0);
	say("recv -> %zd '%s'", recv(s, buf, 5, MSG_WAITALL), buf);
	say("send -> %zd", send(s, "reply", 5, MSG_NOSIGNAL));
	close(s);
	return 0;
}

static int sc_scm_tcp(void)
{
	uint16_t port;
	int l = tcp_listener(&port), c, s, sv[2];
	char buf[8] = { 0 };
	struct kid k;

	chan_open(sv);
	kid_start(&k, "worker", fd_receiver, sv);
	close(sv[1]);
	c = tcp_connect(port);
	s = MUST(accept(l, NULL, NULL));
	SHOW(send(c, "early", 5, 0)); /* already in flight when the fd moves */
	SHOW(scen_send_fd(sv[0], s));
	SHOW(close(s));
	SHOW(recv(c, buf, 5, MSG_WAITALL));
	say("reply '%s'", buf);
	SHOW(recv(c, buf, 1, 0));
	kid_join(&k);
	close(c);
	close(l);
	close(sv[0]);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "signals", sc_signals },
		{ "threads_many", sc_threads_many },
		{ "threads_shared", sc_threads_shared },
		{ "small_stacks", sc_small_stacks },
		{ "small_stack_setup", sc_small_stack_setup },
		{ "udp", sc_udp },
		{ "unix", sc_unix },
		{ "scm_tcp", sc_scm_tcp },
		{ NULL, NULL },
	};

	return scen_main(argc, argv, t);
}
