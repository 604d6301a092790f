/* slring.h — the ring protocol of layout.h over /dev/scilanN endpoints, by
 * hand (connect/listen/accept, both slice mappings, send/recv with the sleep
 * protocol, close), shared by the guest test programs sltest and sl2test.
 */
#ifndef SLRING_H
#define SLRING_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "guest.h"
#include "ring/layout.h"
#include "uapi/scilan.h"

static inline int info(int fd, struct scilan_info *in)
{
	return ioctl(fd, SCILAN_IOC_INFO, in);
}

/* Waits for the handshake of a link. */
static inline int wait_link(const char *node, int ms)
{
	struct scilan_info in;
	int fd, up = 0;

	for (int i = 0; i < ms / 10 && !up; i++) {
		fd = open(node, O_RDWR);
		if (fd >= 0) {
			up = info(fd, &in) == 0 && in.link_up;
			close(fd);
		}
		if (!up)
			usleep(10000);
	}
	return up;
}

/* One connected endpoint with its two mappings: the ring we receive into
 * (our slice) and the ring we send into (the peer's slice). */
struct conn {
	int fd;
	uint32_t slice;
	uint8_t *local, *peer;
	struct sl_area_ctl *lctl, *pctl;
	uint8_t *ldata, *pdata;
	uint64_t cap, w, r;
	long spin;          /* polls before sleeping; 0 = interrupt mode */
	long sleeps;
	int sock;           /* the TCP socket the driver checked (connecting side) */
};

/* Where conn_connect's companion socket connects (the driver's CONNECT
 * names it): loopback in one guest, the other guest's address in two.
 * Under GUEST_MULTI_FILE (guest.h) the program defines it, and
 * slring_lsock below, in one of its files. */
#ifdef GUEST_MULTI_FILE
extern const char *slring_dst;
#else
static const char *slring_dst = "127.0.0.1";
#endif

/* A TCP socket bound to an ephemeral port of the source address that
 * reaches slring_dst: the device connect's proof of its source. */
static inline int slring_bound_sock(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM, 0), probe = socket(AF_INET, SOCK_DGRAM, 0);

	a.sin_port = htons(9);
	inet_pton(AF_INET, slring_dst, &a.sin_addr);
	if (s < 0 || probe < 0 || connect(probe, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(probe, (struct sockaddr *)&a, &len) < 0) {
		if (s >= 0)
			close(s);
		s = -1;
	} else {
		a.sin_port = 0;
		if (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
			close(s);
			s = -1;
		}
	}
	if (probe >= 0)
		close(probe);
	return s;
}

/* A CONNECT request from socket s to slring_dst:port. */
static inline struct scilan_connect slring_connect_req(int s, unsigned port)
{
	struct scilan_connect req = { .sockfd = s, .dport = (uint16_t)port };

	req.daddr[10] = req.daddr[11] = 0xff;
	inet_pton(AF_INET, slring_dst, req.daddr + 12);
	return req;
}

static inline int conn_map(struct conn *c)
{
	struct scilan_info in;

	if (info(c->fd, &in) < 0)
		return -1;
	c->slice = in.slice_size;
	c->local = mmap(NULL, c->slice, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, SCILAN_MMAP_LOCAL);
	c->peer = mmap(NULL, c->slice, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, SCILAN_MMAP_PEER(c->slice));
	if (c->local == MAP_FAILED || c->peer == MAP_FAILED)
		return -1;
	c->lctl = (struct sl_area_ctl *)c->local;
	c->pctl = (struct sl_area_ctl *)c->peer;
	c->ldata = c->local + SL_AREA_CTL_SIZE;
	c->pdata = c->peer + SL_AREA_CTL_SIZE;
	c->cap = 1;
	while (c->cap * 2 <= c->slice - SL_AREA_CTL_SIZE)
		c->cap *= 2;
	c->w = c->r = 0;
	return 0;
}

static inline int conn_connect(struct conn *c, const char *node, unsigned port, long spin)
{
	struct scilan_connect req;

	memset(c, 0, sizeof(*c));
	c->spin = spin;
	c->sock = slring_bound_sock();
	c->fd = open(node, O_RDWR);
	req = slring_connect_req(c->sock, port);
	if (c->sock < 0 || c->fd < 0 || ioctl(c->fd, SCILAN_IOC_CONNECT, &req) < 0)
		return -1;
	return conn_map(c);
}

/* The TCP listener behind each listening endpoint (by endpoint fd). */
#ifdef GUEST_MULTI_FILE
extern int slring_lsock[1024];
#else
static int slring_lsock[1024];
#endif

/* A TCP listener on 0.0.0.0:port, SO_REUSEADDR; -1 on failure. */
static inline int tcp_listener(unsigned port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int one = 1, s = socket(AF_INET, SOCK_STREAM, 0);

	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 64) < 0) {
		if (s >= 0)
			close(s);
		return -1;
	}
	return s;
}

/* A listening endpoint on node for the TCP listener s (kept open with it). */
static inline int listen_sock(const char *node, int s, unsigned backlog)
{
	struct scilan_listen req = { .sockfd = s, .backlog = backlog };
	int fd = s < 0 ? -1 : open(node, O_RDWR);

	if (fd < 0 || fd >= 1024 || ioctl(fd, SCILAN_IOC_LISTEN, &req) < 0) {
		if (fd >= 0)
			close(fd);
		if (s >= 0)
			close(s);
		return -1;
	}
	slring_lsock[fd] = s + 1;
	return fd;
}

static inline int listen_on(const char *node, unsigned port)
{
	return listen_sock(node, tcp_listener(port), 0);
}

/* Closes a listening endpoint and its TCP listener. */
static inline void listen_close(int fd)
{
	if (fd < 0)
		return;
	if (fd < 1024 && slring_lsock[fd]) {
		close(slring_lsock[fd] - 1);
		slring_lsock[fd] = 0;
	}
	close(fd);
}

static inline int conn_accept(struct conn *c, const char *node, int lfd, long spin)
{
	memset(c, 0, sizeof(*c));
	c->spin = spin;
	c->sock = -1;
	c->fd = open(node, O_RDWR);
	if (c->fd < 0 || ioctl(c->fd, SCILAN_IOC_ACCEPT, &lfd) < 0)
		return -1;
	return conn_map(c);
}

/* Step 3 of the sleep protocol: the arm store reaches the peer's memory
 * before we re-check ours.  On NTB a read through the peer mapping (PCIe
 * completions do not pass posted writes); on the mock a full fence. */
static inline void flush_remote(struct conn *c)
{
	atomic_thread_fence(memory_order_seq_cst);
	(void)atomic_load_explicit(&c->pctl->peer_state, memory_order_acquire);
}

/* How long a sleeper waits for a token before it calls the peer lost: a
 * hang guard; a program of many processes on a slow guest gives more. */
#ifndef SLRING_WAIT_MS
#define SLRING_WAIT_MS 5000
#endif

/* Sleep on the endpoint until a token (or EOF/reset): -1 on error. */
static inline int wait_token(struct conn *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	uint32_t tok;
	ssize_t n;

	c->sleeps++;
	if (poll(&p, 1, SLRING_WAIT_MS) <= 0)
		return -1;
	n = read(c->fd, &tok, sizeof(tok));
	return n == sizeof(tok) ? 0 : -1;
}

static inline void stimulate(struct conn *c, _Atomic uint32_t *arm, uint32_t token)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(arm, memory_order_relaxed) && atomic_exchange(arm, 0))
		ioctl(c->fd, SCILAN_IOC_STIMULATE, &token);
}

static inline int conn_send(struct conn *c, const void *buf, size_t n)
{
	const uint8_t *p = buf;

	while (n) {
		uint64_t rd = atomic_load_explicit(&c->lctl->peer_read, memory_order_acquire);
		uint64_t room = c->cap - (c->w - rd);
		size_t k, off, first;

		if (c->w - rd > c->cap)
			return -1; /* garbage from the peer */
		if (!room) {
			for (long i = 0; i < c->spin && !room; i++)
				room = c->cap - (c->w - atomic_load_explicit(&c->lctl->peer_read, memory_order_acquire));
			if (room)
				continue;
			atomic_store(&c->pctl->wake_on_space, 1);
			flush_remote(c);
			if (c->cap - (c->w - atomic_load(&c->lctl->peer_read)) == 0 && wait_token(c) < 0)
				return -1;
			atomic_store(&c->pctl->wake_on_space, 0);
			continue;
		}
		k = n < room ? n : room;
		off = c->w & (c->cap - 1);
		first = k < c->cap - off ? k : c->cap - off;
		memcpy(c->pdata + off, p, first);
		memcpy(c->pdata, p + first, k - first);
		c->w += k;
		atomic_store_explicit(&c->pctl->rx_write, c->w, memory_order_release);
		stimulate(c, &c->lctl->wake_on_data, SCILAN_TOKEN_DATA);
		p += k;
		n -= k;
	}
	return 0;
}

static inline int conn_recv(struct conn *c, void *buf, size_t n)
{
	uint8_t *p = buf;

	while (n) {
		uint64_t w = atomic_load_explicit(&c->lctl->rx_write, memory_order_acquire);
		size_t k, off, first;

		if (w - c->r > c->cap)
			return -1;
		if (w == c->r) {
			for (long i = 0; i < c->spin && w == c->r; i++)
				w = atomic_load_explicit(&c->lctl->rx_write, memory_order_acquire);
			if (w != c->r)
				continue;
			atomic_store(&c->pctl->wake_on_data, 1);
			flush_remote(c);
			if (atomic_load(&c->lctl->rx_write) == c->r && wait_token(c) < 0)
				return -1;
			atomic_store(&c->pctl->wake_on_data, 0);
			continue;
		}
		k = n < w - c->r ? n : w - c->r;
		off = c->r & (c->cap - 1);
		first = k < c->cap - off ? k : c->cap - off;
		memcpy(p, c->ldata + off, first);
		memcpy(p + first, c->ldata, k - first);
		c->r += k;
		atomic_store_explicit(&c->pctl->peer_read, c->r, memory_order_release);
		stimulate(c, &c->lctl->wake_on_space, SCILAN_TOKEN_SPACE);
		p += k;
		n -= k;
	}
	return 0;
}

/* Closing is unmapping too: a mapping holds the endpoint open. */
static inline void conn_close(struct conn *c)
{
	if (c->local && c->local != MAP_FAILED)
		munmap(c->local, c->slice);
	if (c->peer && c->peer != MAP_FAILED)
		munmap(c->peer, c->slice);
	if (c->fd >= 0)
		close(c->fd);
	if (c->sock > 0)
		close(c->sock);
	c->local = c->peer = NULL;
	c->fd = c->sock = -1;
}

#endif
