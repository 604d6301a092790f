/* transport.c — the six transports behind one small send/recv interface:
 * scilan (poll/hybrid/intr: native API, poll time and optionally the ring size
 * per socket), kernel TCP over 127.0.0.1, AF_UNIX stream, and the bare ring.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <scilan.h>

#include "bench.h"

const struct transport_desc bench_transports[T_COUNT] = {
	[T_POLL] = {"scilan-poll", TP_SCILAN, BENCH_POLL_FOREVER_US},
	[T_HYBRID] = {"scilan-hybrid", TP_SCILAN, BENCH_POLL_DEFAULT},
	[T_INTR] = {"scilan-intr", TP_SCILAN, 0},
	[T_TCP] = {"tcp", TP_TCP, 0},
	[T_UNIX] = {"unix", TP_UNIX, 0},
	[T_BARE] = {"bare", TP_BARE, 0},
};

#define TERR(t, what) bench_err("%s: %s: %s", (t)->name, what, strerror(errno))

int tp_prepare(struct tp_link *l, const struct transport_desc *t, uint64_t ring_cap)
{
	static unsigned serial;
	memset(l, 0, sizeof *l);
	l->t = t;
	l->ring_cap = ring_cap;
	if (t->kind == TP_BARE) {
		l->shm = bare_shm_create(ring_cap, &l->shm_len);
		if (!l->shm) {
			TERR(t, "mmap of the shared rings");
			return -1;
		}
	}
	/* Abstract names vanish with their socket: nothing is left in /tmp after a kill. */
	snprintf(l->unix_name, sizeof l->unix_name, "scilan-bench.%ld.%u", (long)getpid(), serial++);
	return 0;
}

void tp_release(struct tp_link *l)
{
	if (l->shm && munmap(l->shm, l->shm_len) != 0)
		TERR(l->t, "munmap");
	l->shm = NULL;
}

static socklen_t unix_addr(const struct tp_link *l, struct sockaddr_un *sun)
{
	memset(sun, 0, sizeof *sun);
	sun->sun_family = AF_UNIX;
	size_t n = strlen(l->unix_name);
	memcpy(sun->sun_path + 1, l->unix_name, n); /* sun_path[0] == 0: abstract */
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static void loopback(struct sockaddr_in *sin, int port)
{
	memset(sin, 0, sizeof *sin);
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin->sin_port = htons((uint16_t)port);
}

/* The library sizes a ring from the socket's SO_RCVBUF taken before
 * listen/connect (the listener's is inherited by what it accepts), which
 * overrides SCILAN_RING_KB for that socket only. */
static int set_ring(const struct tp_link *l, int fd, const char *side)
{
	if (!l->scilan_ring)
		return 0;
	int v = (int)l->scilan_ring;
	if (scilan_setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v) != 0) {
		bench_err("%s: %s: scilan_setsockopt(SO_RCVBUF=%d): %s", l->t->name, side, v, strerror(errno));
		return -1;
	}
	return 0;
}

int tp_listen(struct tp_link *l, int *lfd, int *port)
{
	const struct transport_desc *t = l->t;
	struct sockaddr_in sin;
	socklen_t slen = sizeof sin;
	int fd, one = 1;

	*lfd = -1;
	*port = 0;
	switch (t->kind) {
	case TP_BARE:
		return 0;
	case TP_UNIX: {
		struct sockaddr_un sun;
		socklen_t len = unix_addr(l, &sun);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return TERR(t, "socket"), -1;
		if (bind(fd, (struct sockaddr *)&sun, len) != 0 || listen(fd, 1) != 0) {
			TERR(t, "bind/listen");
			close(fd);
			return -1;
		}
		*lfd = fd;
		return 0;
	}
	case TP_TCP:
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return TERR(t, "socket"), -1;
		if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) {
			TERR(t, "setsockopt(SO_REUSEADDR)");
			close(fd);
			return -1;
		}
		loopback(&sin, 0);
		if (bind(fd, (struct sockaddr *)&sin, sizeof sin) != 0 || listen(fd, 1) != 0) {
			TERR(t, "bind/listen");
			close(fd);
			return -1;
		}
		break;
	case TP_SCILAN:
		fd = scilan_socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			return TERR(t, "scilan_socket"), -1;
		loopback(&sin, 0);
		if (scilan_bind(fd, (struct sockaddr *)&sin, sizeof sin) != 0) {
			TERR(t, "scilan_bind");
			scilan_close(fd);
			return -1;
		}
		if (set_ring(l, fd, "accepting end") != 0) {
			scilan_close(fd);
			return -1;
		}
		if (scilan_listen(fd, 1) != 0) {
			TERR(t, "scilan_listen");
			scilan_close(fd);
			return -1;
		}
		break;
	default:
		return -1;
	}
	/* scilan fds are real kernel TCP sockets, so plain getsockname works on both. */
	if (getsockname(fd, (struct sockaddr *)&sin, &slen) != 0) {
		TERR(t, "getsockname");
		if (t->kind == TP_SCILAN)
			scilan_close(fd);
		else
			close(fd);
		return -1;
	}
	*lfd = fd;
	*port = ntohs(sin.sin_port);
	return 0;
}

static int set_nodelay(const struct transport_desc *t, int fd)
{
	int one = 1;
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
		return TERR(t, "setsockopt(TCP_NODELAY)"), -1;
	return 0;
}

/* Both ends: the poll time is per socket, and a fallback to kernel TCP would
 * silently measure the wrong thing, so refuse it. */
static int scilan_setup(const struct tp_link *l, int fd, const char *side)
{
	const struct transport_desc *t = l->t;
	if (t->poll_us != BENCH_POLL_DEFAULT) {
		int v = t->poll_us;
		if (scilan_setsockopt(fd, SOL_SCILAN, SCILAN_SO_POLL_US, &v, sizeof v) != 0) {
			bench_err("%s: %s: scilan_setsockopt(SCILAN_SO_POLL_US=%d): %s", t->name, side, v,
				  strerror(errno));
			return -1;
		}
	}
	int acc = -1;
	socklen_t len = sizeof acc;
	if (scilan_getsockopt(fd, SOL_SCILAN, SCILAN_SO_ACCELERATED, &acc, &len) != 0) {
		bench_err("%s: %s: scilan_getsockopt(SCILAN_SO_ACCELERATED): %s", t->name, side, strerror(errno));
		return -1;
	}
	if (acc != 1) {
		bench_err("%s: %s: connection is NOT accelerated (SCILAN_SO_ACCELERATED=%d): "
			  "scilan fell back to kernel TCP; transport aborted",
			  t->name, side, acc);
		return -1;
	}
	if (l->scilan_ring) {
		/* Once connected, SCILAN_SO_RING_SIZE reports the capacity of the receive ring in use. */
		int cap = -1;
		len = sizeof cap;
		if (scilan_getsockopt(fd, SOL_SCILAN, SCILAN_SO_RING_SIZE, &cap, &len) != 0) {
			bench_err("%s: %s: scilan_getsockopt(SCILAN_SO_RING_SIZE): %s", t->name, side, strerror(errno));
			return -1;
		}
		if ((uint64_t)cap != l->scilan_ring) {
			bench_err("%s: %s: receive ring is %d bytes, asked for %llu: ring size not applied", t->name,
				  side, cap, (unsigned long long)l->scilan_ring);
			return -1;
		}
	}
	return 0;
}

int tp_accept(struct tp_link *l, int lfd, struct tp_end *e)
{
	const struct transport_desc *t = l->t;
	memset(e, 0, sizeof *e);
	e->t = t;
	e->fd = -1;
	switch (t->kind) {
	case TP_BARE:
		bare_end_init(&e->bare, l->shm, l->ring_cap, 0);
		return 0;
	case TP_UNIX:
	case TP_TCP:
		e->fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (e->fd < 0)
			return TERR(t, "accept"), -1;
		close(lfd);
		if (t->kind == TP_TCP && set_nodelay(t, e->fd) != 0)
			return -1;
		return 0;
	case TP_SCILAN:
		e->fd = scilan_accept(lfd, NULL, NULL);
		if (e->fd < 0)
			return TERR(t, "scilan_accept"), -1;
		if (scilan_close(lfd) != 0)
			TERR(t, "scilan_close(listener)");
		return scilan_setup(l, e->fd, "accepting end");
	}
	return -1;
}

int tp_connect(struct tp_link *l, int port, struct tp_end *e)
{
	const struct transport_desc *t = l->t;
	struct sockaddr_in sin;
	memset(e, 0, sizeof *e);
	e->t = t;
	e->fd = -1;
	loopback(&sin, port);
	switch (t->kind) {
	case TP_BARE:
		bare_end_init(&e->bare, l->shm, l->ring_cap, 1);
		return 0;
	case TP_UNIX: {
		struct sockaddr_un sun;
		socklen_t len = unix_addr(l, &sun);
		e->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (e->fd < 0)
			return TERR(t, "socket"), -1;
		if (connect(e->fd, (struct sockaddr *)&sun, len) != 0)
			return TERR(t, "connect"), -1;
		return 0;
	}
	case TP_TCP:
		e->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (e->fd < 0)
			return TERR(t, "socket"), -1;
		if (connect(e->fd, (struct sockaddr *)&sin, sizeof sin) != 0)
			return TERR(t, "connect"), -1;
		return set_nodelay(t, e->fd);
	case TP_SCILAN:
		e->fd = scilan_socket(AF_INET, SOCK_STREAM, 0);
		if (e->fd < 0)
			return TERR(t, "scilan_socket"), -1;
		if (set_ring(l, e->fd, "connecting end") != 0)
			return -1;
		if (scilan_connect(e->fd, (struct sockaddr *)&sin, sizeof sin) != 0)
			return TERR(t, "scilan_connect"), -1;
		return scilan_setup(l, e->fd, "connecting end");
	}
	return -1;
}

ssize_t tp_send(struct tp_end *e, const void *buf, size_t len)
{
	switch (e->t->kind) {
	case TP_SCILAN:
		return scilan_send(e->fd, buf, len, 0);
	case TP_BARE:
		return bare_send(&e->bare, buf, len);
	default:
		return send(e->fd, buf, len, MSG_NOSIGNAL);
	}
}

ssize_t tp_recv(struct tp_end *e, void *buf, size_t len)
{
	switch (e->t->kind) {
	case TP_SCILAN:
		return scilan_recv(e->fd, buf, len, 0);
	case TP_BARE:
		return bare_recv(&e->bare, buf, len);
	default:
		return recv(e->fd, buf, len, 0);
	}
}

int tp_send_all(struct tp_end *e, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	while (len) {
		ssize_t n = tp_send(e, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return TERR(e->t, "send"), -1;
		}
		if (n == 0) {
			bench_err("%s: send returned 0", e->t->name);
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int tp_recv_all(struct tp_end *e, void *buf, size_t len)
{
	unsigned char *p = buf;
	size_t got = 0;
	while (got < len) {
		ssize_t n = tp_recv(e, p + got, len - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return TERR(e->t, "recv"), -1;
		}
		if (n == 0) {
			if (got == 0)
				return 1;
			bench_err("%s: EOF after %zu of %zu bytes of a message", e->t->name, got, len);
			return -1;
		}
		got += (size_t)n;
	}
	return 0;
}

int tp_shutdown_wr(struct tp_end *e)
{
	int rc;
	switch (e->t->kind) {
	case TP_BARE:
		bare_shutdown_wr(&e->bare);
		return 0;
	case TP_SCILAN:
		rc = scilan_shutdown(e->fd, SHUT_WR);
		break;
	default:
		rc = shutdown(e->fd, SHUT_WR);
		break;
	}
	if (rc != 0)
		TERR(e->t, "shutdown(SHUT_WR)");
	return rc;
}

void tp_close(struct tp_end *e)
{
	if (e->fd < 0)
		return;
	int rc = e->t->kind == TP_SCILAN ? scilan_close(e->fd) : close(e->fd);
	if (rc != 0)
		TERR(e->t, "close");
	e->fd = -1;
}
