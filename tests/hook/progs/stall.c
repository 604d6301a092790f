/* stall.c — scenarios of a client that sends a request and waits for the
 * answer in epoll_wait while the server end reads past the hook (a process
 * without it that received the connection, an io_uring reader): the request
 * sits in a ring nobody reads until the client's stall watch moves the
 * connection to kernel TCP.  A plain POSIX program (and liburing). */
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "scen.h"
#include "scen_uring.h"

#define REQ_LEN 4000   /* well within a ring: the send never blocks */
#define RSP_LEN 100000 /* more than one read */
#define REQ_SEED 21
#define RSP_SEED 22

/* How the client waits. */
enum wait_mode {
	LEVEL,    /* EPOLLIN, no timeout */
	EDGE,     /* EPOLLIN|EPOLLET, no timeout */
	TIMEOUTS, /* EPOLLIN, 200 ms timeouts that keep expiring */
};

/* ---- the server end: reads the request, answers its checksum and a stream -- */

typedef size_t (*io_fn)(int fd, char *buf, size_t len);

static size_t answer(int s, io_fn recv_fn, io_fn send_fn)
{
	char *req = malloc(REQ_LEN), *rsp = malloc(8 + RSP_LEN);
	size_t got = recv_fn(s, req, REQ_LEN);
	uint64_t sum = fnv(FNV_INIT, req, got);

	say("server got %zu, intact %d", got, got == REQ_LEN && stream_check(REQ_SEED, 0, req, got));
	memcpy(rsp, &sum, 8);
	stream_fill(RSP_SEED, 0, rsp + 8, RSP_LEN);
	got = send_fn(s, rsp, 8 + RSP_LEN);
	free(req);
	free(rsp);
	return got;
}

static size_t plain_recv(int fd, char *buf, size_t len)
{
	ssize_t n = recv_all(fd, buf, len);

	return n > 0 ? (size_t)n : 0;
}

static size_t plain_send(int fd, char *buf, size_t len)
{
	ssize_t n = send_all(fd, buf, len);

	return n > 0 ? (size_t)n : 0;
}

/* Exec'd without LD_PRELOAD: it reads the connection's kernel socket. */
static int sc_unhooked_answerer(void)
{
	int s;

	if (scen_argc < 1)
		fatal("usage: unhooked_answerer FD");
	s = scen_recv_fd(atoi(scen_argv[0]));
	if (s < 0)
		fatal("no connection received");
	say("answer sent %zu", answer(s, plain_recv, plain_send));
	close(s);
	return 0;
}

static int unhooked_kid(void *arg)
{
	scen_exec_unhooked(((int *)arg)[1], "unhooked_answerer");
}

/* answer()'s transport: io_uring's send, with its buffer type. */
static size_t uring_send(int fd, char *buf, size_t len)
{
	return uring_send_all(fd, buf, len);
}

/* A hooked acceptor that greets through the hook (so the client's offer is
 * decided and its epoll set queues it), then reads and answers with io_uring. */
static int uring_kid(void *arg)
{
	int l = *(int *)arg, s = MUST(accept(l, NULL, NULL));

	say("greeting %zd", send_all(s, "hi", 2));
	uring_init();
	say("answer sent %zu", answer(s, uring_recv_all, uring_send));
	close(s);
	return 0;
}

/* ---- the client: request, then the answer through epoll_wait ---------------- */

/* Read until want bytes or EOF, waiting in epoll_wait whenever the socket
 * has nothing (under EPOLLET, only then is a report due): the count. */
static size_t epoll_read(int ep, int c, enum wait_mode mode, char *buf, size_t want)
{
	struct epoll_event evs[4];
	size_t got = 0;

	while (got < want) {
		ssize_t r = recv(c, buf + got, want - got, 0);
		int n;

		if (r > 0) {
			got += (size_t)r;
			continue;
		}
		if (r == 0)
			break;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			fatal("recv");
		while ((n = epoll_wait(ep, evs, 4, mode == TIMEOUTS ? 200 : -1)) <= 0)
			if (n < 0 && errno != EINTR)
				fatal("epoll_wait");
	}
	return got;
}

/* c, non-blocking, in set ep (-1: a new one): the set. */
static int watched(int ep, int c, enum wait_mode mode)
{
	struct epoll_event ev = { .events = EPOLLIN | (mode == EDGE ? EPOLLET : 0) };

	if (ep < 0)
		ep = MUST(epoll_create1(0));
	MUST(fcntl(c, F_SETFL, O_NONBLOCK));
	MUST(epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev));
	return ep;
}

/* The request, then the answer: c is in set ep already. */
static void client(int ep, int c, enum wait_mode mode)
{
	char *req = malloc(REQ_LEN), *rsp = malloc(8 + RSP_LEN + 1);
	size_t got;
	uint64_t sum;

	stream_fill(REQ_SEED, 0, req, REQ_LEN);
	say("request sent %zd", send_all(c, req, REQ_LEN));
	got = epoll_read(ep, c, mode, rsp, 8 + RSP_LEN + 1);
	sum = fnv(FNV_INIT, req, REQ_LEN);
	say("client got %zu, checksum of the request matches %d, answer intact %d", got,
	    got >= 8 && memcmp(rsp, &sum, 8) == 0, got == 8 + RSP_LEN && stream_check(RSP_SEED, 0, rsp + 8, RSP_LEN));
	close(c);
	free(req);
	free(rsp);
}

/* The server's end is passed to a process without the hook. */
static void to_unhooked(int ep, enum wait_mode mode)
{
	struct kid k;
	int chan[2], c, s;

	/* Forked first: holding the connection at its exec, it would move it
	 * to kernel TCP there (the hand-over). */
	chan_open(chan);
	kid_start(&k, "answerer", unhooked_kid, chan);
	tcp_pair(&c, &s);
	MUST(scen_send_fd(chan[0], s));
	close(s);
	client(watched(ep, c, mode), c, mode);
	kid_join(&k);
	close(chan[0]);
}

static int sc_unhooked_level(void)
{
	to_unhooked(-1, LEVEL);
	return 0;
}

static int sc_unhooked_edge(void)
{
	to_unhooked(-1, EDGE);
	return 0;
}

static int sc_unhooked_timeouts(void)
{
	to_unhooked(-1, TIMEOUTS);
	return 0;
}

/* The set also holds another epoll set (which the hook scans): the wait
 * sleeps in a poll of the scanned part with the queued client beside it. */
static int sc_unhooked_beside_nested(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int ep = MUST(epoll_create1(0)), inner = MUST(epoll_create1(0));

	MUST(epoll_ctl(ep, EPOLL_CTL_ADD, inner, &ev));
	to_unhooked(ep, LEVEL);
	close(inner);
	close(ep);
	return 0;
}

/* The set was made before a fork: the child's copy scans its members, as a
 * pre-forked worker's inherited set does. */
static int forked_client(void *arg)
{
	to_unhooked(*(int *)arg, LEVEL);
	return 0;
}

static int sc_unhooked_forked_set(void)
{
	int ep = MUST(epoll_create1(0));
	struct kid k;

	kid_start(&k, "client", forked_client, &ep);
	kid_join(&k);
	return 0;
}

static int sc_uring_edge(void)
{
	uint16_t port;
	int l = tcp_listener(&port), c, ep;
	struct kid k;
	char hi[3] = { 0 };

	kid_start(&k, "uring answerer", uring_kid, &l);
	c = tcp_connect(port);
	ep = watched(-1, c, EDGE);
	say("greeting %zu '%s'", epoll_read(ep, c, EDGE, hi, 2), hi);
	client(ep, c, EDGE);
	kid_join(&k);
	close(l);
	return 0;
}

/* ---- a hooked server slow to answer: the rings stay ------------------------- */

/* Longer than SL_STALL_MS: the request it read must not look unread. */
#define SLOW_MS 3600

static int slow_kid(void *arg)
{
	int l = *(int *)arg, s = MUST(accept(l, NULL, NULL));
	char *req = malloc(REQ_LEN);

	say("first request %zd", recv_all(s, req, REQ_LEN));
	say("first answer %zd", send_all(s, "answer-1", 8));
	say("second request %zd", recv_all(s, req, REQ_LEN));
	usleep(SLOW_MS * 1000);
	say("second answer %zd", send_all(s, "answer-2", 8));
	close(s);
	free(req);
	return 0;
}

static int slow_answer(enum wait_mode mode)
{
	uint16_t port;
	int l = tcp_listener(&port), c, ep;
	char *req = malloc(REQ_LEN), rsp[9] = { 0 };
	struct kid k;

	kid_start(&k, "slow server", slow_kid, &l);
	c = tcp_connect(port);
	ep = watched(-1, c, mode);
	stream_fill(REQ_SEED, 0, req, REQ_LEN);
	for (int i = 0; i < 2; i++) {
		say("request sent %zd", send_all(c, req, REQ_LEN));
		say("answer %zu '%s'", epoll_read(ep, c, mode, rsp, 8), rsp);
	}
	say("EOF %zu", epoll_read(ep, c, mode, rsp, 1));
	close(c);
	kid_join(&k);
	close(l);
	free(req);
	return 0;
}

static int sc_slow_answer_level(void)
{
	return slow_answer(LEVEL);
}

static int sc_slow_answer_edge(void)
{
	return slow_answer(EDGE);
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "unhooked_level", sc_unhooked_level },
		{ "unhooked_edge", sc_unhooked_edge },
		{ "unhooked_timeouts", sc_unhooked_timeouts },
		{ "unhooked_forked_set", sc_unhooked_forked_set },
		{ "unhooked_beside_nested", sc_unhooked_beside_nested },
		{ "uring_edge", sc_uring_edge },
		{ "slow_answer_level", sc_slow_answer_level },
		{ "slow_answer_edge", sc_slow_answer_edge },
		{ "unhooked_answerer", sc_unhooked_answerer },
		{ NULL, NULL },
	};

	return scen_main(argc, argv, t);
}
