/* scen_promote_ev.c — progs/promote.c's edge-triggered servers: one event
 * loop serving every connection (alone, or handing each ready one to a
 * worker thread), a writer that never reads again, and one that waits
 * without reading; each moved onto the rings while it runs. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "scen.h"
#include "scen_promote.h"

/* ---- one edge-triggered event loop serving every connection ---- */

#define EV_FDS 4096

struct ev_conn {
	unsigned char in[sizeof(struct hdr) + MAX_MSG], out[sizeof(struct hdr) + MAX_MSG];
	size_t have, out_len, out_off;
};

/* Sends what is pending until done or EAGAIN (the next EPOLLOUT edge). */
static void ev_flush(int fd, struct ev_conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0)
			fatal("server: send: %s", n < 0 ? strerror(errno) : "0");
		c->out_off += (size_t)n;
	}
}

/* Reads until EAGAIN, answering each whole request; false at the end of
 * the stream. */
static bool ev_read(int fd, struct ev_conn *c)
{
	for (;;) {
		ssize_t n = recv(fd, c->in + c->have, sizeof(c->in) - c->have, 0);
		struct hdr h;

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true;
		if (n < 0)
			fatal("server: recv: %s", strerror(errno));
		if (n == 0)
			return false;
		c->have += (size_t)n;
		if (c->have < sizeof(h))
			continue;
		memcpy(&h, c->in, sizeof(h));
		if (h.len > MAX_MSG || c->out_off < c->out_len)
			fatal("server: request of %u bytes, or one before its reply went", h.len);
		if (c->have < sizeof(h) + h.len)
			continue;
		if (c->have > sizeof(h) + h.len)
			fatal("server: bytes past the request");
		memcpy(c->out, &h, sizeof(h));
		for (uint32_t i = 0; i < h.len; i++)
			c->out[sizeof(h) + i] = c->in[sizeof(h) + i] ^ (unsigned char)h.seq;
		c->out_len = sizeof(h) + h.len;
		c->out_off = 0;
		c->have = 0;
		ev_flush(fd, c);
	}
}

static struct ev_conn *conns[EV_FDS];

/* The worker of mtloop: serves each fd the loop passes it (-1: done).  It
 * alone touches a connection's state after the loop made it; the loop
 * learns of an end through the channel back. */
static void *ev_worker(void *arg)
{
	int *ch = arg, fd;

	while (recv_all(ch[0], &fd, sizeof(fd)) == (ssize_t)sizeof(fd) && fd >= 0) {
		int ended = -1;

		if (!conns[fd])
			continue;
		if (conns[fd]->out_off < conns[fd]->out_len)
			ev_flush(fd, conns[fd]);
		if (!ev_read(fd, conns[fd])) {
			free(conns[fd]);
			conns[fd] = NULL;
			close(fd);
			ended = fd;
		}
		if (send_all(ch[1], &ended, sizeof(ended)) != (ssize_t)sizeof(ended))
			fatal("worker: channel");
	}
	return NULL;
}

void serve_evloop(int l, int count, bool worker)
{
	int ep = MUST(epoll_create1(EPOLL_CLOEXEC)), accepted = 0, open = 0, to_w[2], from_w[2], ch[2];
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.fd = l }, evs[64];
	pthread_t w;

	if (worker) {
		MUST(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, to_w));
		MUST(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, from_w));
		ch[0] = to_w[1];
		ch[1] = from_w[1];
		if (pthread_create(&w, NULL, ev_worker, ch))
			fatal("pthread_create");
		ev = (struct epoll_event){ .events = EPOLLIN, .data.fd = from_w[0] };
		MUST(epoll_ctl(ep, EPOLL_CTL_ADD, from_w[0], &ev));
		ev = (struct epoll_event){ .events = EPOLLIN | EPOLLET, .data.fd = l };
	}
	MUST(fcntl(l, F_SETFL, O_NONBLOCK));
	MUST(epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev));
	while (accepted < count || open > 0) {
		int n = epoll_wait(ep, evs, 64, -1); /* a lost wake-up hangs */

		if (n < 0 && errno != EINTR)
			fatal("server: epoll_wait: %s", strerror(errno));
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd, c;

			if (fd == l) {
				while ((c = accept4(l, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					if (c >= EV_FDS || !(conns[c] = calloc(1, sizeof(*conns[c]))))
						fatal("server: fd %d", c);
					ev = (struct epoll_event){ .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
								   .data.fd = c };
					MUST(epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev));
					accepted++;
					open++;
				}
				continue;
			}
			if (worker && fd == from_w[0]) {
				int ended;

				if (recv_all(from_w[0], &ended, sizeof(ended)) != (ssize_t)sizeof(ended))
					fatal("server: channel");
				open -= ended >= 0;
				continue;
			}
			if (worker) {
				if (send_all(to_w[0], &fd, sizeof(fd)) != (ssize_t)sizeof(fd))
					fatal("server: channel");
				continue;
			}
			if (!conns[fd])
				continue;
			if ((evs[i].events & EPOLLOUT) && conns[fd]->out_off < conns[fd]->out_len)
				ev_flush(fd, conns[fd]);
			if ((evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) && !ev_read(fd, conns[fd])) {
				free(conns[fd]);
				conns[fd] = NULL;
				close(fd);
				open--;
			}
		}
	}
	if (worker) {
		int done = -1;

		if (send_all(to_w[0], &done, sizeof(done)) != (ssize_t)sizeof(done) || pthread_join(w, NULL))
			fatal("server: worker");
	}
	close(ep);
}

/* ---- etwriter ---- */

#define ETW_BYTES (256ull << 20)

/* The server: reads the 8-byte request, then streams ETW_BYTES of stream
 * 7 from an edge-triggered loop (nonblocking, EPOLLOUT|EPOLLET only), then
 * closes. */
static int etw_server(void *arg)
{
	int *p = arg, l = p[0], count = p[1], ep = MUST(epoll_create1(EPOLL_CLOEXEC)), c = -1;
	static unsigned char buf[1 << 16];
	uint64_t off = 0, want;
	struct epoll_event ev;

	for (int i = 0; i < count; i++) {
		struct hdr h;

		c = MUST(accept(l, NULL, NULL));
		if (i < count - 1) { /* the short ones: one request each */
			if (recv_all(c, &h, sizeof(h)) == (ssize_t)sizeof(h))
				serve_request(c, &h);
			close(c);
		}
	}
	if (recv_all(c, &want, sizeof(want)) != (ssize_t)sizeof(want) || want != ETW_BYTES)
		fatal("server: request");
	MUST(fcntl(c, F_SETFL, O_NONBLOCK));
	ev = (struct epoll_event){ .events = EPOLLOUT | EPOLLET, .data.fd = c };
	MUST(epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev));
	while (off < want) {
		size_t n = sizeof(buf) < want - off ? sizeof(buf) : (size_t)(want - off);
		ssize_t k;

		stream_fill(7, off, buf, n);
		k = send(c, buf, n, MSG_NOSIGNAL);
		if (k > 0) {
			off += (uint64_t)k;
			continue;
		}
		if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			fatal("server: send: %s", strerror(errno));
		/* Full: the next EPOLLOUT edge, however long (a lost one hangs). */
		if (epoll_wait(ep, &ev, 1, -1) != 1 || !(ev.events & EPOLLOUT))
			fatal("server: epoll_wait");
	}
	close(ep);
	close(c);
	return 0;
}

int sc_etwriter(void)
{
	static unsigned char buf[1 << 16], want[1 << 16];
	uint16_t port;
	int l = tcp_listener(&port), args[4], c;
	uint64_t ask = ETW_BYTES, got = 0;
	uint32_t seq = 1;
	struct kid k;

	args[0] = l;
	args[1] = 20 + 1;
	kid_start(&k, "server", etw_server, args);
	close(l);
	shorts(port, 20, &seq);
	c = tcp_connect(port);
	if (send_all(c, &ask, sizeof(ask)) != (ssize_t)sizeof(ask))
		fatal("client: request");
	/* The server fills the kernel's buffers and waits for EPOLLOUT; the
	 * connection is due to move by the time this end reads. */
	usleep(300000);
	while (got < ask) {
		ssize_t n = recv(c, buf, sizeof(buf), 0);

		if (n <= 0)
			fatal("client: stream ended at %llu of %llu", (unsigned long long)got, (unsigned long long)ask);
		stream_fill(7, got, want, (size_t)n);
		if (memcmp(buf, want, (size_t)n))
			fatal("client: stream wrong near byte %llu", (unsigned long long)got);
		got += (uint64_t)n;
	}
	say("%llu bytes streamed, every byte right", (unsigned long long)got);
	if (recv(c, buf, 1, 0) != 0)
		fatal("client: bytes past the stream");
	close(c);
	return kid_join(&k);
}

/* ---- etidle ---- */

#define ETI_BYTES 1000

/* The server: after the short ones, an edge-triggered set holds the last
 * connection; once the client's bytes are there and its offer out, one
 * send of ours (the acceptor's look) moves it, and the server then waits
 * a second without reading them, counting the waits that return. */
static int eti_server(void *arg)
{
	int *p = arg, l = p[0], count = p[1], chan = p[2], ep = MUST(epoll_create1(EPOLL_CLOEXEC)), c = -1;
	unsigned char buf[ETI_BYTES], want[ETI_BYTES];
	struct epoll_event ev;
	int64_t end;
	int returns = 0;

	for (int i = 0; i < count; i++) {
		struct hdr h;

		c = MUST(accept(l, NULL, NULL));
		if (i < count - 1) {
			if (recv_all(c, &h, sizeof(h)) == (ssize_t)sizeof(h))
				serve_request(c, &h);
			close(c);
		}
	}
	MUST(fcntl(c, F_SETFL, O_NONBLOCK));
	ev = (struct epoll_event){ .events = EPOLLIN | EPOLLOUT | EPOLLET, .data.fd = c };
	MUST(epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev));
	chan_get(chan); /* the client's bytes sent, its connection due to move */
	if (send(c, "s", 1, MSG_NOSIGNAL) != 1)
		fatal("server: send");
	for (end = now_ns() + 1000000000LL; now_ns() < end;) {
		int left = (int)((end - now_ns()) / 1000000);

		if (epoll_wait(ep, &ev, 1, left > 0 ? left : 0) == 1)
			returns++;
	}
	say("server: edge-triggered waits that returned while it read nothing: %s", returns <= 4 ? "few" : "MANY");
	if (returns > 4)
		say("server: %d of them", returns);
	for (size_t got = 0; got < sizeof(buf);) {
		ssize_t n = recv(c, buf + got, sizeof(buf) - got, 0);

		if (n > 0) {
			got += (size_t)n;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (epoll_wait(ep, &ev, 1, 10000) != 1)
				fatal("server: no edge for the client's bytes");
		} else {
			fatal("server: recv");
		}
	}
	stream_fill(9, 0, want, sizeof(want));
	say("server: the client's bytes %s", memcmp(buf, want, sizeof(buf)) ? "WRONG" : "right");
	MUST(fcntl(c, F_SETFL, 0));
	if (send_all(c, "d", 1) != 1)
		fatal("server: reply");
	if (recv(c, buf, 1, 0) != 0)
		fatal("server: bytes past the client's");
	close(ep);
	close(c);
	return 0;
}

int sc_etidle(void)
{
	unsigned char out[ETI_BYTES], b[2];
	uint16_t port;
	int l = tcp_listener(&port), sv[2], args[4], c;
	uint32_t seq = 1;
	struct kid k;

	chan_open(sv);
	args[0] = l;
	args[1] = 20 + 1;
	args[2] = sv[1];
	kid_start(&k, "server", eti_server, args);
	close(l);
	shorts(port, 20, &seq);
	c = tcp_connect(port);
	stream_fill(9, 0, out, sizeof(out));
	if (send_all(c, out, sizeof(out)) != (ssize_t)sizeof(out))
		fatal("client: send");
	/* Due to move by now: this call (nothing to read yet) makes the
	 * connector's late offer under the hook. */
	usleep(200000);
	if (recv(c, b, 1, MSG_DONTWAIT) != -1)
		fatal("client: a byte before the server sent one");
	chan_put(sv[0], 'x');
	if (recv_all(c, b, 2) != 2 || b[0] != 's' || b[1] != 'd')
		fatal("client: the server's bytes");
	say("client: the server's bytes right");
	close(c);
	return kid_join(&k);
}
