/* pass.c — scenarios of sockets handed between processes the way Node.js's
 * cluster does: connections a worker closes with syscall(SYS_close) (libuv) or
 * with a close no library sees, and listeners passed bound or listening;
 * and a connection passed to a process that runs without the hook.
 * A plain POSIX program. */
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "scen.h"

#define ROUNDS 3

/* A close made by the kernel alone, as io_uring's IORING_OP_CLOSE or a
 * program's own system call instruction: no preloaded library sees it. */
static long raw_close(int fd)
{
#if defined(__x86_64__)
	long r;

	__asm__ volatile("syscall" : "=a"(r) : "0"((long)SYS_close), "D"((long)fd) : "rcx", "r11", "memory");
	return r;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = SYS_close;
	register long x0 __asm__("x0") = fd;

	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8) : "memory");
	return x0;
#else
#error "raw_close: no system call instruction for this architecture"
#endif
}

/* ---- a dispatcher passing each connection to a worker ------------------------ */

struct worker_arg {
	int via;
	bool raw; /* close with raw_close, else with syscall() */
};

static int worker(void *p)
{
	struct worker_arg *a = p;
	int prev = -1;

	for (int i = 0; i < ROUNDS; i++) {
		char buf[8] = { 0 }, rep[8];
		int s = scen_recv_fd(a->via);

		say("round %d: received a descriptor: %d, the number of the last one: %d", i, s >= 0, s == prev);
		say("recv -> %zd '%s'", recv_all(s, buf, 4), buf);
		snprintf(rep, sizeof(rep), "rep%d", i);
		say("send -> %zd", send(s, rep, 4, MSG_NOSIGNAL));
		/* The last round closes with close_range, as some programs do. */
		if (a->raw)
			say("close -> %ld", raw_close(s));
		else if (i == ROUNDS - 1)
			say("close -> %ld", syscall(SYS_close_range, s, s, 0));
		else
			say("close -> %ld", syscall(SYS_close, s));
		prev = s;
	}
	return 0;
}

static void become_nobody(void)
{
	MUST(setgroups(0, NULL));
	MUST(setgid(65534));
	MUST(setuid(65534));
}

/* drop: become uid 65534 after the first connection was accepted as root,
 * before it is passed on. */
static int dispatch(bool raw, bool drop)
{
	uint16_t port;
	int l = tcp_listener(&port), sv[2];
	struct worker_arg arg;
	struct kid k;

	chan_open(sv);
	arg = (struct worker_arg){ sv[1], raw };
	kid_start(&k, "worker", worker, &arg);
	close(sv[1]);
	for (int i = 0; i < ROUNDS; i++) {
		char req[8], buf[8] = { 0 };
		int c = tcp_connect(port), s = MUST(accept(l, NULL, NULL));
		long r;

		snprintf(req, sizeof(req), "req%d", i);
		SHOW(send(c, req, 4, 0)); /* in flight while the descriptor moves */
		if (drop && i == 0)
			become_nobody();
		SHOW(scen_send_fd(sv[0], s));
		SHOW(close(s));
		SHOW(recv_all(c, buf, 4));
		say("reply '%s'", buf);
		/* A close the library cannot see is, to the peer, a death: a
		 * reset rather than an EOF.  Only the end is compared. */
		r = recv(c, buf, 1, 0);
		if (raw)
			say("ended: %d", r <= 0);
		else
			show("recv after the worker's close", r);
		close(c);
	}
	kid_join(&k);
	close(l);
	close(sv[0]);
	return 0;
}

static int sc_syscall_close(void)
{
	return dispatch(false, false);
}

static int sc_raw_close(void)
{
	return dispatch(true, false);
}

/* The same as an unprivileged user (Node.js run by an ordinary user): no
 * /proc/self/map_files to reopen a segment from, which is root's only. */
static int sc_syscall_close_as_nobody(void)
{
	become_nobody();
	return dispatch(false, false);
}

/* A connection set up as root (which drops the segment's memfd: it could
 * reopen it) and passed after the process gave root up: it cannot be handed
 * on, so it moves to kernel TCP with its bytes (it was reset). */
static int sc_dropped_root_before_passing(void)
{
	return dispatch(false, true);
}

/* ---- listeners passed to workers --------------------------------------------- */

static void ping(uint16_t port)
{
	char buf[8] = { 0 };
	int c = tcp_connect(port);

	SHOW(send(c, "ping", 4, 0));
	SHOW(recv_all(c, buf, 4));
	say("got '%s'", buf);
	SHOW(recv(c, buf, 1, 0));
	close(c);
}

static void pong(int l)
{
	char buf[8] = { 0 };
	int s = SHOWFD(accept(l, NULL, NULL));

	say("recv -> %zd '%s'", recv_all(s, buf, 4), buf);
	say("send -> %zd", send(s, "pong", 4, MSG_NOSIGNAL));
	close(s);
}

static int bound_socket(uint16_t *port)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int l = MUST(socket(AF_INET, SOCK_STREAM, 0));

	loop_addr(0, &a);
	MUST(bind(l, (struct sockaddr *)&a, sizeof(a)));
	MUST(getsockname(l, (struct sockaddr *)&a, &len));
	*port = ntohs(a.sin_port);
	return l;
}

/* Worker: listen on the bound socket it is given (when told to), say so,
 * answer `serve` connections, then wait for the word to leave. */
struct listen_arg {
	int via, serve;
	bool do_listen;
};

static int listen_worker(void *p)
{
	struct listen_arg *a = p;
	int l = scen_recv_fd(a->via);

	say("received a descriptor: %d", l >= 0);
	if (a->do_listen)
		SHOW(listen(l, 16));
	chan_put(a->via, 'r');
	for (int i = 0; i < a->serve; i++)
		pong(l);
	chan_get(a->via);
	close(l);
	return 0;
}

/* Node.js cluster's SCHED_NONE: the primary binds, each worker listens on the
 * socket it receives and accepts; the primary never listens itself. */
static int sc_listen_in_worker(void)
{
	uint16_t port;
	int sv[2], l;
	struct listen_arg arg;
	struct kid k;

	chan_open(sv);
	arg = (struct listen_arg){ sv[1], 2, true };
	kid_start(&k, "worker", listen_worker, &arg);
	close(sv[1]);
	l = bound_socket(&port);
	SHOW(scen_send_fd(sv[0], l));
	say("worker ready: %d", chan_get(sv[0]) == 'r');
	ping(port);
	ping(port);
	chan_put(sv[0], 'q');
	kid_join(&k);
	close(l);
	close(sv[0]);
	return 0;
}

/* A listening socket passed on: the worker accepts, the sender keeps it open
 * (and its claim to the address) without accepting. */
static int sc_listener_passed(void)
{
	uint16_t port;
	int sv[2], l;
	struct listen_arg arg;
	struct kid k;

	chan_open(sv);
	arg = (struct listen_arg){ sv[1], 2, false };
	kid_start(&k, "worker", listen_worker, &arg);
	close(sv[1]);
	l = tcp_listener(&port);
	SHOW(scen_send_fd(sv[0], l));
	say("worker ready: %d", chan_get(sv[0]) == 'r');
	ping(port);
	ping(port);
	chan_put(sv[0], 'q');
	kid_join(&k);
	close(l);
	close(sv[0]);
	return 0;
}

/* The other way round: the worker makes the shared socket listen, and the
 * process that only bound it accepts. */
static int sc_accept_where_not_listened(void)
{
	uint16_t port;
	int sv[2], l, c, s;
	struct listen_arg arg;
	struct kid k;
	char buf[8] = { 0 };

	chan_open(sv);
	arg = (struct listen_arg){ sv[1], 0, true };
	kid_start(&k, "worker", listen_worker, &arg);
	close(sv[1]);
	l = bound_socket(&port);
	SHOW(scen_send_fd(sv[0], l));
	say("worker ready: %d", chan_get(sv[0]) == 'r');
	c = tcp_connect(port);
	s = SHOWFD(accept(l, NULL, NULL));
	SHOW(send(c, "ping", 4, 0));
	SHOW(recv_all(s, buf, 4));
	SHOW(send(s, "pong", 4, 0));
	SHOW(recv_all(c, buf, 4));
	say("got '%s'", buf);
	SHOW(close(s));
	SHOW(recv(c, buf, 1, 0));
	close(c);
	chan_put(sv[0], 'q');
	kid_join(&k);
	close(l);
	close(sv[0]);
	return 0;
}

/* ---- a connection passed to a process without the hook ---------------------- */

/* Exec'd without LD_PRELOAD: it reads the connection's kernel socket, where
 * the hook of the process that passed it can no longer see. */
static int sc_unhooked_receiver(void)
{
	char buf[8] = { 0 };
	int s;

	if (scen_argc < 1)
		fatal("usage: unhooked_receiver FD");
	s = scen_recv_fd(atoi(scen_argv[0]));
	if (s < 0)
		fatal("no connection received");
	SHOW(recv_all(s, buf, 4));
	say("receiver got '%s'", buf);
	SHOW(send(s, "pong", 4, 0));
	close(s);
	return 0;
}

static int unhooked_kid(void *arg)
{
	scen_exec_unhooked(((int *)arg)[1], "unhooked_receiver");
}

static int sc_pass_to_unhooked(void)
{
	char buf[8] = { 0 };
	struct kid k;
	int chan[2], c, s;

	/* The receiver is forked first: holding the connection at its exec,
	 * it would move it to kernel TCP there (the hand-over). */
	chan_open(chan);
	kid_start(&k, "receiver", unhooked_kid, chan);
	tcp_pair(&c, &s);
	SHOW(scen_send_fd(chan[0], s));
	close(s);
	/* The request sits unread in the ring until the peer's stall shows. */
	SHOW(send(c, "ping", 4, 0));
	SHOW(recv_all(c, buf, 4));
	say("client got '%s'", buf);
	close(c);
	kid_join(&k);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "syscall_close", sc_syscall_close },
		{ "raw_close", sc_raw_close },
		{ "syscall_close_as_nobody", sc_syscall_close_as_nobody },
		{ "dropped_root_before_passing", sc_dropped_root_before_passing },
		{ "listen_in_worker", sc_listen_in_worker },
		{ "listener_passed", sc_listener_passed },
		{ "accept_where_not_listened", sc_accept_where_not_listened },
		{ "pass_to_unhooked", sc_pass_to_unhooked },
		{ "unhooked_receiver", sc_unhooked_receiver },
		{ NULL, NULL },
	};

	return scen_main(argc, argv, t);
}
