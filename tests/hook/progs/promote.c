/* promote.c — connections that start on kernel TCP and outlive the
 * short-connection policy (issue 26, promotion), as unmodified programs
 * make them: a burst of short connections teaches the client's hook to keep
 * the next ones on kernel TCP, then longer-lived ones carry checked data,
 * under the hook moving onto the rings while they do.  The transcript is the
 * same with and without the hook; SCILAN_STATS says whether they moved.
 *   pool    500 short connections, then a pool of 4 doing request-response
 *           with sizes up to 16 KiB for 3 s (thread-per-connection server)
 *   duplex  20 short ones, then one connection streaming both ways at once
 *           for 3 s, a reader and a writer thread at each end
 *   epoll   the pool, with a server whose threads wait in epoll before each
 *           request (level-triggered, blocking reads: a kernel member of a
 *           set follows its connection onto the rings)
 *   evloop  the pool, served by one edge-triggered event loop (nonblocking,
 *           EPOLLIN|EPOLLOUT|EPOLLRDHUP|EPOLLET, as nginx registers them),
 *           the client waiting in a level-triggered set of its own before
 *           each reply: both ends' sets follow the move
 *   oneshot the pool, with server threads re-arming EPOLLONESHOT (a
 *           disarming the hook cannot see: it keeps those plain)
 *   mtloop  evloop with the I/O done by a worker thread while the loop's
 *           thread sleeps in epoll_wait: a move made by the worker must
 *           still wake the sleeper for the bytes that come on the rings
 *   etwriter one connection, the server streaming 256 MiB into it from an
 *           edge-triggered loop that waits for EPOLLOUT and never reads
 *           again (its seam stays pending), the client reading only from
 *           300 ms on: the move must not cost the server the edges of its
 *           ring
 *   etidle  one connection moved while the client's bytes wait unread on
 *           the server's kernel socket, the server then waiting a second
 *           in an edge-triggered set without reading them: its waits must
 *           not return again and again (the move, one edge)
 *   uring   the pool of one connection, served by io_uring (reads the hook
 *           never sees: its process's connections stay plain)
 *   raw     the pool, served through syscall(2) (SYS_recvfrom, SYS_sendto):
 *           the hook sees those, so the connections move
 *   sendintr, pollmark, pollmarkq, waitall, shutrd, readrestart: single calls caught
 *           by the move
 *           (scen_promote_calls.c)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "scen.h"
#include "scen_promote.h"
#include "scen_uring.h"

#define POOL 4
#define RUN_NS (3 * 1000000000LL)

int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void serve_request(int c, const struct hdr *h)
{
	static _Thread_local unsigned char buf[MAX_MSG];

	if (h->len > MAX_MSG || recv_all(c, buf, h->len) != (ssize_t)h->len)
		fatal("server: short request %u", h->len);
	for (uint32_t i = 0; i < h->len; i++)
		buf[i] ^= (unsigned char)h->seq;
	if (send_all(c, h, sizeof(*h)) != (ssize_t)sizeof(*h) || send_all(c, buf, h->len) != (ssize_t)h->len)
		fatal("server: reply");
}

static void *serve_one(void *arg)
{
	int c = (int)(intptr_t)arg;
	struct hdr h;

	while (recv_all(c, &h, sizeof(h)) == (ssize_t)sizeof(h))
		serve_request(c, &h);
	close(c);
	return NULL;
}

void serve_shorts(int l, int count)
{
	for (int i = 0; i < count; i++) {
		pthread_t t;
		int c = MUST(accept(l, NULL, NULL));

		if (pthread_create(&t, NULL, serve_one, (void *)(intptr_t)c))
			fatal("pthread_create");
		pthread_detach(t);
	}
}

int connect_after_shorts(struct kid *k, int (*server)(void *), int args[4])
{
	uint16_t port;
	uint32_t seq = 1;

	args[0] = tcp_listener(&port);
	kid_start(k, "server", server, args);
	close(args[0]);
	shorts(port, 20, &seq);
	return tcp_connect(port);
}

/* All of len through syscall(2), as send_all and recv_all do through libc. */
static bool raw_all(long nr, int c, void *buf, size_t len)
{
	for (size_t done = 0; done < len;) {
		long n = syscall(nr, c, (char *)buf + done, len - done, 0, NULL, nr == SYS_recvfrom ? NULL : 0);

		if (n <= 0)
			return false;
		done += (size_t)n;
	}
	return true;
}

static void *serve_one_raw(void *arg)
{
	static _Thread_local unsigned char buf[MAX_MSG];
	int c = (int)(intptr_t)arg;
	struct hdr h;

	while (raw_all(SYS_recvfrom, c, &h, sizeof(h))) {
		if (h.len > MAX_MSG || !raw_all(SYS_recvfrom, c, buf, h.len))
			fatal("server: short request %u", h.len);
		for (uint32_t i = 0; i < h.len; i++)
			buf[i] ^= (unsigned char)h.seq;
		if (!raw_all(SYS_sendto, c, &h, sizeof(h)) || !raw_all(SYS_sendto, c, buf, h.len))
			fatal("server: reply");
	}
	close(c);
	return NULL;
}

/* serve_one, waiting in an epoll set of the thread's own before each
 * request. */
static void *serve_one_epoll(void *arg)
{
	int c = (int)(intptr_t)arg, ep = MUST(epoll_create1(EPOLL_CLOEXEC));
	struct epoll_event ev = { .events = EPOLLIN };
	struct hdr h;

	MUST(epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev));
	while (epoll_wait(ep, &ev, 1, -1) == 1 && recv_all(c, &h, sizeof(h)) == (ssize_t)sizeof(h))
		serve_request(c, &h);
	close(ep);
	close(c);
	return NULL;
}

/* serve_one_epoll with EPOLLONESHOT, re-armed after each request. */
static void *serve_one_oneshot(void *arg)
{
	int c = (int)(intptr_t)arg, ep = MUST(epoll_create1(EPOLL_CLOEXEC));
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT };
	struct hdr h;

	MUST(epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev));
	while (epoll_wait(ep, &ev, 1, -1) == 1 && recv_all(c, &h, sizeof(h)) == (ssize_t)sizeof(h)) {
		serve_request(c, &h);
		ev.events = EPOLLIN | EPOLLONESHOT;
		MUST(epoll_ctl(ep, EPOLL_CTL_MOD, c, &ev));
	}
	close(ep);
	close(c);
	return NULL;
}

/* serve_one by io_uring, in the calling thread (the ring is the process's),
 * each request first waited for by a peek through libc, which the hook
 * sees: a program mixing both. */
static void serve_by_uring(int c)
{
	static unsigned char buf[MAX_MSG];
	struct hdr h;

	while (recv(c, &h, 1, MSG_PEEK) == 1 && uring_recv_all(c, (char *)&h, sizeof(h)) == sizeof(h)) {
		if (h.len > MAX_MSG || uring_recv_all(c, (char *)buf, h.len) != h.len)
			fatal("server: short request %u", h.len);
		for (uint32_t i = 0; i < h.len; i++)
			buf[i] ^= (unsigned char)h.seq;
		if (uring_send_all(c, (char *)&h, sizeof(h)) != sizeof(h) ||
		    uring_send_all(c, (char *)buf, h.len) != h.len)
			fatal("server: reply");
	}
	close(c);
}

enum { BY_THREADS, BY_EPOLL, BY_ONESHOT, BY_EVLOOP, BY_MTLOOP, BY_URING, BY_RAW };

/* Accepts `count` connections, a thread each (detached: short ones end at
 * once; BY_URING: the last one served here, by io_uring), then waits for
 * the last ones through the channel. */
static int server(void *arg)
{
	int *p = arg, l = p[0], count = p[1], chan = p[2], how = p[3];

	if (how == BY_URING)
		uring_init();
	if (how == BY_EVLOOP || how == BY_MTLOOP)
		serve_evloop(l, count, how == BY_MTLOOP);
	for (int i = 0; i < count && how != BY_EVLOOP && how != BY_MTLOOP; i++) {
		pthread_t t;
		int c = MUST(accept(l, NULL, NULL));

		if (how == BY_URING && i == count - 1) {
			serve_by_uring(c);
			break;
		}
		if (pthread_create(&t, NULL,
				   how == BY_EPOLL     ? serve_one_epoll
				   : how == BY_ONESHOT ? serve_one_oneshot
				   : how == BY_RAW     ? serve_one_raw
						       : serve_one,
				   (void *)(intptr_t)c))
			fatal("pthread_create");
		pthread_detach(t);
	}
	chan_get(chan); /* the client is done */
	return 0;
}

/* The client's set (evloop): it waits there for each reply. */
static int client_ep = -1;

/* Until c is readable in client_ep (level-triggered); readable means a
 * byte of the reply is there (never the peer's switch marker alone). */
static void await_reply(int c)
{
	struct epoll_event ev;
	char b;

	if (client_ep < 0)
		return;
	if (epoll_wait(client_ep, &ev, 1, 10000) != 1 || ev.data.fd != c || !(ev.events & EPOLLIN))
		fatal("client: no reply on fd %d in its epoll set", c);
	if (recv(c, &b, 1, MSG_PEEK | MSG_DONTWAIT) != 1)
		fatal("client: fd %d reported readable, nothing to read (%s)", c, strerror(errno));
}

/* One request-response of n bytes on c; true if the reply is right. */
static bool round_trip(int c, uint32_t seq, uint32_t n)
{
	static unsigned char out[MAX_MSG], in[MAX_MSG];
	struct hdr h = { n, seq }, r;

	stream_fill(seq, 0, out, n);
	if (send_all(c, &h, sizeof(h)) != (ssize_t)sizeof(h) || send_all(c, out, n) != (ssize_t)n)
		return false;
	await_reply(c);
	if (recv_all(c, &r, sizeof(r)) != (ssize_t)sizeof(r) || r.len != n || r.seq != seq ||
	    recv_all(c, in, n) != (ssize_t)n)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if ((in[i] ^ (unsigned char)seq) != out[i])
			return false;
	return true;
}

void shorts(uint16_t port, int count, uint32_t *seq)
{
	for (int i = 0; i < count; i++) {
		int c = tcp_connect(port);

		if (!round_trip(c, (*seq)++, 16))
			fatal("short connection %d", i);
		close(c);
	}
	say("%d short connections: ok", count);
}

static int pool_of(int size, int how)
{
	uint16_t port;
	int l = tcp_listener(&port), sv[2], args[4], pool[POOL];
	uint32_t seq = 1, rounds = 0;
	int64_t end;
	struct kid k;

	chan_open(sv);
	args[0] = l;
	args[1] = 500 + size;
	args[2] = sv[1];
	args[3] = how;
	kid_start(&k, "server", server, args);
	close(l);
	shorts(port, 500, &seq);
	for (int i = 0; i < size; i++)
		pool[i] = tcp_connect(port);
	if (how == BY_EVLOOP || how == BY_MTLOOP) {
		client_ep = MUST(epoll_create1(EPOLL_CLOEXEC));
		for (int i = 0; i < size; i++) {
			struct epoll_event ev = { .events = EPOLLIN, .data.fd = pool[i] };

			MUST(epoll_ctl(client_ep, EPOLL_CTL_ADD, pool[i], &ev));
		}
	}
	for (end = now_ns() + RUN_NS; now_ns() < end; rounds++) {
		unsigned char pick;

		stream_fill(seq, 0, &pick, 1);
		if (!round_trip(pool[rounds % (uint32_t)size], seq, 1 + (uint32_t)pick * (MAX_MSG / 256)))
			fatal("pool connection %u: round %u wrong", rounds % (uint32_t)size, rounds);
		seq++;
		if (rounds % 8 == 0)
			usleep(500);
	}
	say("pool of %d: every reply right", size);
	for (int i = 0; i < size; i++)
		close(pool[i]);
	chan_put(sv[0], 'x');
	return kid_join(&k);
}

static int sc_pool(void)
{
	return pool_of(POOL, BY_THREADS);
}

static int sc_epoll(void)
{
	return pool_of(POOL, BY_EPOLL);
}

static int sc_oneshot(void)
{
	return pool_of(POOL, BY_ONESHOT);
}

static int sc_evloop(void)
{
	return pool_of(POOL, BY_EVLOOP);
}

static int sc_mtloop(void)
{
	return pool_of(POOL, BY_MTLOOP);
}

static int sc_uring(void)
{
	return pool_of(1, BY_URING);
}

static int sc_raw(void)
{
	return pool_of(POOL, BY_RAW);
}

/* ---- duplex ---- */

struct half {
	int fd;
	uint64_t seed;
	uint64_t bytes;
	bool ok;
};

static void *stream_out(void *arg)
{
	struct half *h = arg;
	static _Thread_local unsigned char buf[65536];
	int64_t end = now_ns() + RUN_NS;

	while (now_ns() < end) {
		size_t n = 1 + (size_t)(h->bytes * 2654435761u % sizeof(buf));

		stream_fill(h->seed, h->bytes, buf, n);
		if (send_all(h->fd, buf, n) != (ssize_t)n) {
			h->ok = false;
			return NULL;
		}
		h->bytes += n;
	}
	shutdown(h->fd, SHUT_WR);
	h->ok = true;
	return NULL;
}

static void *stream_in(void *arg)
{
	struct half *h = arg;
	static _Thread_local unsigned char buf[65536];
	ssize_t n;

	h->ok = true;
	while ((n = recv(h->fd, buf, sizeof(buf), 0)) > 0) {
		if (!stream_check(h->seed, h->bytes, buf, (size_t)n))
			h->ok = false;
		h->bytes += (uint64_t)n;
	}
	if (n < 0)
		h->ok = false;
	return NULL;
}

/* Both directions at once on c: ours out with seed `out`, the peer's in. */
static bool both_ways(int c, uint64_t out, uint64_t in, uint64_t *sent, uint64_t *got)
{
	struct half w = { c, out, 0, false }, r = { c, in, 0, false };
	pthread_t tw, tr;

	if (pthread_create(&tw, NULL, stream_out, &w) || pthread_create(&tr, NULL, stream_in, &r))
		fatal("pthread_create");
	pthread_join(tw, NULL);
	pthread_join(tr, NULL);
	*sent = w.bytes;
	*got = r.bytes;
	return w.ok && r.ok;
}

static int duplex_server(void *arg)
{
	int *p = arg, l = p[0], chan = p[2];
	uint64_t sent, got;
	bool ok;
	int c;

	serve_shorts(l, 20);
	c = MUST(accept(l, NULL, NULL));
	ok = both_ways(c, 2, 1, &sent, &got);
	/* The counts go through the channel: they differ from run to run. */
	if (send_all(chan, &got, sizeof(got)) != (ssize_t)sizeof(got) ||
	    send_all(chan, &sent, sizeof(sent)) != (ssize_t)sizeof(sent))
		fatal("chan");
	say("streams %s", ok ? "intact" : "BROKEN");
	close(c);
	return ok ? 0 : 1;
}

static int sc_duplex(void)
{
	int sv[2], args[4], c;
	uint64_t sent, got, peer_got, peer_sent;
	struct kid k;
	bool ok;

	chan_open(sv);
	args[2] = sv[1];
	c = connect_after_shorts(&k, duplex_server, args);
	ok = both_ways(c, 1, 2, &sent, &got);
	if (recv_all(sv[0], &peer_got, sizeof(peer_got)) != (ssize_t)sizeof(peer_got) ||
	    recv_all(sv[0], &peer_sent, sizeof(peer_sent)) != (ssize_t)sizeof(peer_sent))
		fatal("chan");
	say("streams %s, every byte there: %s", ok ? "intact" : "BROKEN",
	    peer_got == sent && got == peer_sent ? "yes" : "NO");
	close(c);
	return kid_join(&k);
}

int main(int argc, char **argv)
{
	static const struct scenario table[] = {
		{ "pool", sc_pool },
		{ "duplex", sc_duplex },
		{ "epoll", sc_epoll },
		{ "evloop", sc_evloop },
		{ "oneshot", sc_oneshot },
		{ "mtloop", sc_mtloop },
		{ "etwriter", sc_etwriter },
		{ "etidle", sc_etidle },
		{ "uring", sc_uring },
		{ "raw", sc_raw },
		{ "sendintr", sc_sendintr },
		{ "pollmark", sc_pollmark },
		{ "pollmarkq", sc_pollmarkq },
		{ "waitall", sc_waitall },
		{ "shutrd", sc_shutrd },
		{ "readrestart", sc_readrestart },
		{ NULL, NULL },
	};

	return scen_main(argc, argv, table);
}
