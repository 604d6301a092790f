/* users.c — connections whose two ends run as different users, as TCP
 * allows: a client that became uid 65534 against a root listener, a
 * listener whose worker drops to 65534 after listen (nginx, php-fpm) or
 * before it (varnish), root
 * waiting in epoll for such a peer, and a client killed before its
 * connection was accepted.  Needs root. */
#include <grp.h>
#include <sys/epoll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "scen.h"

#define NOBODY 65534
#define LEN 300000 /* more than a 256 KiB ring: both ends block on it */
#define KILLED_LEN 100000 /* less: all of it is written before the accept */

static uint16_t port;
static int lfd;

static void become_nobody(void)
{
	MUST(setgroups(0, NULL));
	MUST(setgid(NOBODY));
	MUST(setuid(NOBODY));
}

static int echo_one(void)
{
	int s = MUST(accept(lfd, NULL, NULL));

	say("echoed %llu bytes", (unsigned long long)echo_fd(s, s));
	close(s);
	return 0;
}

static void client_exchange(uint64_t seed)
{
	size_t sent, got;
	int c = tcp_connect(port);
	bool ok = exchange(c, seed, LEN, &sent, &got);

	MUST(shutdown(c, SHUT_WR));
	say("sent %zu, echoed %zu, intact %d", sent, got, ok);
	close(c);
}

/* ---- a client of another user against a root listener ------------------------ */

static int nobody_client(void *arg)
{
	(void)arg;
	become_nobody();
	client_exchange(1);
	return 0;
}

static int sc_other_uid_client(void)
{
	struct kid k;

	lfd = tcp_listener(&port);
	kid_start(&k, "client as nobody", nobody_client, NULL);
	echo_one();
	kid_join(&k);
	return 0;
}

/* ---- a 4-tuple still in TIME_WAIT, reused ------------------------------------ */

/* A client bound to one port connects twice to the same listener; the
 * server closes first, so the first connection's 4-tuple waits in TIME_WAIT
 * on the server's side when the second connect reuses it (as the kernel
 * allows).  The kernel's owner lookup of that 4-tuple finds the TIME_WAIT
 * socket, which belongs to nobody (uid 0): taking it for the listener told
 * a client of uid 65534 that root listened there, and it used kernel TCP. */
static int sc_time_wait_tuple(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	uint16_t cport = 0;
	int one = 1;

	become_nobody();
	lfd = tcp_listener(&port);
	for (int round = 0; round < 2; round++) {
		int c = MUST(socket(AF_INET, SOCK_STREAM, 0)), s;
		ssize_t sent, got;
		char b = 'x';

		MUST(setsockopt(c, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
		loop_addr(cport, &a);
		MUST(bind(c, (struct sockaddr *)&a, sizeof(a)));
		MUST(getsockname(c, (struct sockaddr *)&a, &len));
		cport = ntohs(a.sin_port);
		loop_addr(port, &a);
		MUST(connect(c, (struct sockaddr *)&a, sizeof(a)));
		s = MUST(accept(lfd, NULL, NULL));
		sent = send(c, &b, 1, 0);
		got = recv(s, &b, 1, 0);
		say("round %d: send %zd, recv %zd", round, sent, got);
		close(s); /* first: TIME_WAIT is the server's */
		say("round %d: EOF %zd", round, recv(c, &b, 1, 0));
		close(c);
	}
	close(lfd);
	return 0;
}

/* ---- a root listener whose worker accepts as another user -------------------- */

static int nobody_worker(void *arg)
{
	int *chan = arg;

	become_nobody();
	chan_put(chan[1], 'r');
	for (int i = 0; i < 2; i++)
		echo_one();
	return 0;
}

static int sc_worker_drops_uid(void)
{
	struct kid k;
	int chan[2];

	lfd = tcp_listener(&port);
	chan_open(chan);
	kid_start(&k, "worker as nobody", nobody_worker, chan);
	/* Connect once the worker is nobody (as an nginx client would), and once
	 * more as another user too. */
	if (chan_get(chan[0]) != 'r')
		fatal("worker did not start");
	client_exchange(2);
	{
		struct kid c;

		kid_start(&c, "client as nobody", nobody_client, NULL);
		kid_join(&c);
	}
	kid_join(&k);
	return 0;
}

/* ---- a socket root bound, listened on by a worker that dropped root ---------- */

/* varnish's pattern: the root master binds (stepping in and out of root
 * with seteuid around it), the worker it forks gives root up for good with
 * setuid and only then calls listen.  The kernel says root owns the socket,
 * the worker's rendezvous says uid 65534: the hook gives the worker the
 * sockets root bound as it gives root up, so clients of every user find
 * the listener's owner behind the rendezvous and are accelerated. */
static int listens_after_drop(void *arg)
{
	int *chan = arg;

	become_nobody();
	MUST(listen(lfd, 64));
	chan_put(chan[1], 'r');
	for (int i = 0; i < 2; i++)
		echo_one();
	return 0;
}

static int sc_listen_after_drop(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	struct kid k;
	int chan[2];

	lfd = MUST(socket(AF_INET, SOCK_STREAM, 0));
	loop_addr(0, &a);
	MUST(bind(lfd, (struct sockaddr *)&a, sizeof(a)));
	MUST(getsockname(lfd, (struct sockaddr *)&a, &len));
	port = ntohs(a.sin_port);
	/* A step aside, not a drop: the socket stays root's until the worker's. */
	MUST(setresuid((uid_t)-1, NOBODY - 1, (uid_t)-1));
	MUST(setresuid((uid_t)-1, 0, (uid_t)-1));
	chan_open(chan);
	kid_start(&k, "worker listening as nobody", listens_after_drop, chan);
	if (chan_get(chan[0]) != 'r')
		fatal("worker did not start");
	client_exchange(3);
	{
		struct kid c;

		kid_start(&c, "client as nobody", nobody_client, NULL);
		kid_join(&c);
	}
	kid_join(&k);
	return 0;
}

/* ---- root waits in epoll for a peer of another user -------------------------- */

#define ROUNDS 3

/* ROUNDS requests and answers on c, each answer waited for in epoll (as
 * wrk and ab do); the other end answers with blocking calls. */
static void epoll_rounds(const char *who, int c, bool ask)
{
	int ep = MUST(epoll_create1(EPOLL_CLOEXEC));
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 7 };
	char buf[8];
	int n;

	MUST(epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev));
	for (int i = 0; i < ROUNDS; i++) {
		if (ask)
			MUST(send_all(c, "ping", 4));
		ev = (struct epoll_event){ 0 };
		n = epoll_wait(ep, &ev, 1, 20000);
		say("%s round %d: epoll_wait -> %d, %s, data %u", who, i, n, epmask(ev.events), ev.data.u32);
		MUST(recv_all(c, buf, 4));
		if (!ask)
			MUST(send_all(c, "pong", 4));
	}
	close(ep);
}

static int nobody_answers(void *arg)
{
	int *chan = arg;

	become_nobody();
	chan_put(chan[1], 'r');
	echo_one();
	return 0;
}

static int nobody_asks(void *arg)
{
	char buf[8];
	int c;

	(void)arg;
	become_nobody();
	c = tcp_connect(port);
	for (int i = 0; i < ROUNDS; i++) {
		MUST(send_all(c, "ping", 4));
		MUST(recv_all(c, buf, 4));
	}
	say("asked %d times", ROUNDS);
	close(c);
	return 0;
}

/* Root is dumpable, its peer (uid 65534) may not open root's descriptors,
 * so it cannot mark root's epoll set: root's sets must look at such a
 * connection themselves, both as the client (of an nginx worker) and as
 * the server (of a client of another user). */
static int sc_epoll_waiter_other_uid(void)
{
	struct kid k;
	int chan[2], c;

	lfd = tcp_listener(&port);
	chan_open(chan);
	kid_start(&k, "worker as nobody", nobody_answers, chan);
	if (chan_get(chan[0]) != 'r')
		fatal("worker did not start");
	c = tcp_connect(port);
	epoll_rounds("root client", c, true);
	MUST(shutdown(c, SHUT_WR));
	close(c);
	kid_join(&k);
	kid_start(&k, "client as nobody", nobody_asks, NULL);
	c = MUST(accept(lfd, NULL, NULL));
	epoll_rounds("root server", c, false);
	kid_join(&k);
	close(c);
	return 0;
}

/* ---- a client killed with its connection not yet accepted -------------------- */

static int killed_client(void *arg)
{
	char *buf = malloc(KILLED_LEN);
	int c;

	(void)arg;
	stream_fill(3, 0, buf, KILLED_LEN);
	c = tcp_connect(port);
	if (send_all(c, buf, KILLED_LEN) != KILLED_LEN)
		fatal("send");
	say("sent %d", KILLED_LEN);
	kill(getpid(), SIGKILL);
	return 0;
}

static int sc_killed_before_accept(void)
{
	char *buf = malloc(KILLED_LEN + 1);
	struct kid k;
	ssize_t got;
	int s;

	lfd = tcp_listener(&port);
	kid_start(&k, "client", killed_client, NULL);
	kid_join(&k);
	/* Kernel TCP delivers what a dead process sent: so must scilan. */
	s = MUST(accept(lfd, NULL, NULL));
	got = recv_all(s, buf, KILLED_LEN + 1);
	say("received %zd, intact %d", got, got == KILLED_LEN && stream_check(3, 0, buf, KILLED_LEN));
	close(s);
	return 0;
}

/* ---- the same, the listener passed to the worker that accepts (SCM_RIGHTS) --- */

static int passed_worker(void *arg)
{
	int *chan = arg, l, s;
	char *buf = malloc(KILLED_LEN + 1);
	ssize_t got;

	l = scen_recv_fd(chan[1]);
	if (l < 0)
		fatal("no listener received");
	chan_put(chan[1], 'r');
	if (chan_get(chan[1]) != 'k')
		fatal("no go");
	s = MUST(accept(l, NULL, NULL));
	got = recv_all(s, buf, KILLED_LEN + 1);
	say("received %zd, intact %d", got, got == KILLED_LEN && stream_check(3, 0, buf, KILLED_LEN));
	close(s);
	return 0;
}

static int sc_killed_before_passed_accept(void)
{
	struct kid w, c;
	int chan[2];

	lfd = tcp_listener(&port);
	chan_open(chan);
	kid_start(&w, "worker", passed_worker, chan);
	MUST(scen_send_fd(chan[0], lfd));
	if (chan_get(chan[0]) != 'r')
		fatal("worker did not start");
	kid_start(&c, "client", killed_client, NULL);
	kid_join(&c);
	chan_put(chan[0], 'k');
	kid_join(&w);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "other_uid_client", sc_other_uid_client },
		{ "time_wait_tuple", sc_time_wait_tuple },
		{ "worker_drops_uid", sc_worker_drops_uid },
		{ "listen_after_drop", sc_listen_after_drop },
		{ "killed_before_accept", sc_killed_before_accept },
		{ "killed_before_passed_accept", sc_killed_before_passed_accept },
		{ "epoll_waiter_other_uid", sc_epoll_waiter_other_uid },
		{ NULL, NULL },
	};

	return scen_main(argc, argv, t);
}
