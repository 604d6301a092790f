/* scen_promote_calls.c — single calls of a connection caught by its move
 * (progs/promote.c's scenarios that check one call's result):
 *   sendintr one connection old enough to offer, a blocking send of 64 MiB
 *           to a server that reads nothing for 3 s, and a signal whose
 *           handler does not ask SA_RESTART at 300 ms: the send returns
 *           what it sent, as the kernel's does, and the server gets it all
 *   pollmark one connection offering at its request, the server taking the
 *           offer at a read after the request (its marker out then) and
 *           answering 500 ms later, the client in poll(POLLIN) meanwhile:
 *           readable means the answer is there, not the marker
 *   pollmarkq the same poll naming 8 idle listeners too (the hook's
 *           queued poll)
 *   waitall one connection streaming 32 MiB in 10,000-byte writes to a
 *           server reading 64 KiB at a time with MSG_WAITALL while the
 *           connection moves: every read is whole, the one across the
 *           seam too
 *   shutrd  the server taking the offer at its read of a request, then
 *           reading again (its seam pending: the client, idle, has not
 *           followed) while another thread shuts the reading side down:
 *           the blocked read ends with 0, as the kernel's does, and
 *           poll and a read that does not wait say the end too
 *   readrestart the same blocked read, a signal whose handler asks
 *           SA_RESTART, then the client's bytes: the read goes on after
 *           the handler and returns them, as the kernel's does
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "scen.h"
#include "scen_promote.h"

#define INTR_BYTES (64 << 20)

static void on_usr1(int sig)
{
	(void)sig;
}

/* Counts what the connection brings after 3 s of not reading. */
static int intr_server(void *arg)
{
	int *p = arg, l = p[0], chan = p[2], c;
	static char buf[1 << 16];
	uint64_t got = 0;
	ssize_t n;

	serve_shorts(l, 20);
	c = MUST(accept(l, NULL, NULL));
	usleep(3000000);
	while ((n = read(c, buf, sizeof(buf))) > 0)
		got += (uint64_t)n;
	if (n < 0)
		fatal("read");
	if (send_all(chan, &got, sizeof(got)) != (ssize_t)sizeof(got))
		fatal("chan");
	close(c);
	return 0;
}

static void *interrupt_later(void *arg)
{
	usleep(300000);
	pthread_kill(*(pthread_t *)arg, SIGUSR1);
	return NULL;
}

int sc_sendintr(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 }; /* no SA_RESTART */
	int sv[2], args[4], c;
	pthread_t self = pthread_self(), t;
	uint64_t peer_got = 0;
	char *buf = calloc(1, INTR_BYTES);
	struct kid k;
	ssize_t n;

	if (!buf)
		fatal("calloc");
	chan_open(sv);
	args[2] = sv[1];
	c = connect_after_shorts(&k, intr_server, args);
	usleep(300000); /* past the short-connection policy: this send offers */
	MUST(sigaction(SIGUSR1, &sa, NULL));
	if (pthread_create(&t, NULL, interrupt_later, &self))
		fatal("pthread_create");
	n = send(c, buf, INTR_BYTES, 0);
	pthread_join(t, NULL);
	say("the interrupted send returned %s", n > 0 && n < INTR_BYTES ? "a part" : n < 0 ? en(errno) : "all of it");
	close(c);
	if (recv_all(sv[0], &peer_got, sizeof(peer_got)) != (ssize_t)sizeof(peer_got))
		fatal("chan");
	say("the server got what the send said: %s", n >= 0 && peer_got == (uint64_t)n ? "yes" : "NO");
	free(buf);
	return kid_join(&k);
}

/* Takes the offer at its read of the request, answers 500 ms later. */
static int slow_answer_server(void *arg)
{
	int *p = arg, l = p[0], c;
	char req[16], buf[64];

	serve_shorts(l, 20);
	c = MUST(accept(l, NULL, NULL));
	if (recv_all(c, req, sizeof(req)) != (ssize_t)sizeof(req))
		fatal("request");
	/* A read that finds nothing: under the hook, the look that takes the
	 * offer (its marker goes out now, the answer 500 ms later). */
	if (recv(c, buf, sizeof(buf), MSG_DONTWAIT) >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
		fatal("a read before the answer");
	usleep(500000);
	if (send_all(c, req, sizeof(req)) != (ssize_t)sizeof(req))
		fatal("answer");
	while (read(c, buf, sizeof(buf)) > 0)
		;
	close(c);
	return 0;
}

/* The client's poll names its connection and `idle` listeners (none
 * readable): with 8 or more the hook's queued poll serves it. */
static int pollmark_with(int idle)
{
	int args[4], c, r, l[8];
	char req[16] = "a request, 16 B", ans[32];
	struct pollfd pfd[9];
	struct kid k;
	uint16_t port;
	ssize_t n;

	c = connect_after_shorts(&k, slow_answer_server, args);
	usleep(300000); /* past the short-connection policy: this send offers */
	MUST(send(c, req, sizeof(req), 0));
	pfd[0] = (struct pollfd){ .fd = c, .events = POLLIN };
	for (int i = 0; i < idle; i++) {
		l[i] = tcp_listener(&port);
		pfd[1 + i] = (struct pollfd){ .fd = l[i], .events = POLLIN };
	}
	r = poll(pfd, (nfds_t)(1 + idle), 5000);
	n = recv(c, ans, sizeof(ans), MSG_DONTWAIT);
	say("poll: %d %s; then a recv that does not wait: %s", r,
	    r > 0 && (pfd[0].revents & POLLIN) ? "readable" : "not readable",
	    n == (ssize_t)sizeof(req) && !memcmp(ans, req, sizeof(req)) ? "the answer" : n < 0 ? en(errno) : "something else");
	for (int i = 0; i < idle; i++)
		close(l[i]);
	close(c);
	return kid_join(&k);
}

int sc_pollmark(void)
{
	return pollmark_with(0);
}

int sc_pollmarkq(void)
{
	return pollmark_with(8);
}

#define WAITALL_READ (64 << 10)
#define WAITALL_READS 512

static uint8_t stream_byte(uint64_t at)
{
	return (uint8_t)(at * 131 + (at >> 13));
}

/* Reads the stream 64 KiB at a time with MSG_WAITALL, checking each byte. */
static int waitall_server(void *arg)
{
	int *p = arg, l = p[0], c, short_reads = 0;
	static uint8_t buf[WAITALL_READ];
	uint64_t at = 0, bad = 0;
	ssize_t n;

	serve_shorts(l, 20);
	c = MUST(accept(l, NULL, NULL));
	for (int i = 0; i < WAITALL_READS; i++) {
		n = recv(c, buf, sizeof(buf), MSG_WAITALL);
		if (n < 0)
			fatal("recv");
		short_reads += n != (ssize_t)sizeof(buf);
		for (ssize_t k = 0; k < n; k++)
			bad += buf[k] != stream_byte(at + (uint64_t)k);
		at += (uint64_t)n;
	}
	n = recv(c, buf, sizeof(buf), MSG_WAITALL);
	say("MSG_WAITALL reads that came back short: %d; bytes wrong: %llu; then %s", short_reads,
	    (unsigned long long)bad, n == 0 ? "the end" : "more");
	close(c);
	return 0;
}

int sc_waitall(void)
{
	int args[4], c;
	static uint8_t piece[10000];
	uint64_t total = (uint64_t)WAITALL_READ * WAITALL_READS, at = 0;
	struct kid k;

	c = connect_after_shorts(&k, waitall_server, args);
	while (at < total) {
		size_t n = total - at < sizeof(piece) ? (size_t)(total - at) : sizeof(piece);

		for (size_t i = 0; i < n; i++)
			piece[i] = stream_byte(at + i);
		if (send_all(c, piece, n) != (ssize_t)n)
			fatal("send");
		at += n;
		if (at % (1 << 20) < sizeof(piece))
			usleep(20000); /* about 0.7 s in all: the move happens mid-stream */
	}
	MUST(shutdown(c, SHUT_WR));
	say("sent %llu bytes", (unsigned long long)at);
	close(c);
	return kid_join(&k);
}

/* A read of the server's, blocked across its pending seam: the client,
 * idle after its request, has not followed the server's take. */
struct seam_reader {
	int c;
	ssize_t n;
	int err;
	pthread_t t;
};

static void *read_once(void *arg)
{
	struct seam_reader *r = arg;
	char buf[64];

	r->n = recv(r->c, buf, sizeof(buf), 0);
	r->err = errno;
	return NULL;
}

/* Serves the short connections, accepts the next, reads its request (the
 * take), then reads again in a thread, started after 300 ms. */
static void start_seam_reader(int l, struct seam_reader *r)
{
	char req[16];

	serve_shorts(l, 20);
	r->c = MUST(accept(l, NULL, NULL));
	if (recv_all(r->c, req, sizeof(req)) != (ssize_t)sizeof(req))
		fatal("request");
	if (pthread_create(&r->t, NULL, read_once, r))
		fatal("pthread_create");
	usleep(300000); /* only makes it likely the reader blocks first */
}

/* The client: a request that offers, then no call on the connection until
 * the server says so through the channel (a hang fails there); then a
 * second message if `second`, and the close. */
static int seam_reader_client(int (*server)(void *), bool second)
{
	int sv[2], args[4], c;
	char req[16] = "a request, 16 B", go;
	struct kid k;

	chan_open(sv);
	args[2] = sv[1];
	c = connect_after_shorts(&k, server, args);
	usleep(300000); /* past the short-connection policy: this send offers */
	MUST(send(c, req, sizeof(req), 0));
	if (recv_all(sv[0], &go, 1) != 1)
		fatal("chan");
	if (second) {
		MUST(send(c, req, sizeof(req), 0));
		usleep(200000);
	}
	close(c);
	return kid_join(&k);
}

static int shutrd_server(void *arg)
{
	int *p = arg, chan = p[2];
	struct seam_reader r = { 0 };
	struct pollfd pfd;
	char buf[16], done = 1;
	ssize_t n;
	int ready;

	start_seam_reader(p[0], &r);
	SHOW(shutdown(r.c, SHUT_RD));
	pthread_join(r.t, NULL);
	say("the blocked read returned %s", r.n == 0 ? "0" : r.n < 0 ? en(r.err) : "bytes");
	pfd = (struct pollfd){ .fd = r.c, .events = POLLIN | POLLRDHUP };
	ready = poll(&pfd, 1, 0);
	n = recv(r.c, buf, sizeof(buf), MSG_DONTWAIT);
	say("then poll: %d%s%s; a recv that does not wait: %s", ready, pfd.revents & POLLIN ? " IN" : "",
	    pfd.revents & POLLRDHUP ? " RDHUP" : "", n == 0 ? "0" : n < 0 ? en(errno) : "bytes");
	if (send_all(chan, &done, 1) != 1)
		fatal("chan");
	close(r.c);
	return 0;
}

int sc_shutrd(void)
{
	return seam_reader_client(shutrd_server, false);
}

/* The reader interrupted by a signal whose handler asks SA_RESTART, before
 * the client's second message comes. */
static int restart_server(void *arg)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	int *p = arg, chan = p[2];
	struct seam_reader r = { 0 };
	char go = 1;

	MUST(sigaction(SIGUSR1, &sa, NULL));
	start_seam_reader(p[0], &r);
	pthread_kill(r.t, SIGUSR1);
	usleep(100000);
	if (send_all(chan, &go, 1) != 1) /* the client's second message, now */
		fatal("chan");
	pthread_join(r.t, NULL);
	say("the interrupted read returned %s",
	    r.n == 16 ? "the second message" : r.n < 0 ? en(r.err) : "something else");
	close(r.c);
	return 0;
}

int sc_readrestart(void)
{
	return seam_reader_client(restart_server, true);
}
