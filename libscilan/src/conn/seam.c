/* seam.c — the seam of a kernel TCP stream that moves onto a ring: each
 * end's switch point as its kernel socket counts it, the marker written
 * there, and the receive that stops at the peer's switch point (seam.h).
 */
#include <errno.h>
#include <linux/sock_diag.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "conn/seam.h"
#include "ring/layout.h"
#include "runtime/sys.h"

/* A kernel count that moves as segments arrive (acknowledged, received),
 * read with the queue it pairs with: the pair holds when the count did not
 * move across the queue's read.  Only the peer's segments move it, so a
 * few tries suffice even under load. */
static int stable_total(int fd, int queue_req, bool sent, uint64_t *total)
{
	for (int tries = 0; tries < 1000; tries++) {
		struct tcp_info a, b;
		socklen_t la = sizeof(a), lb = sizeof(b);
		int queued;
		uint64_t before, after;

		if (sl_sys.getsockopt(fd, IPPROTO_TCP, TCP_INFO, &a, &la) < 0 ||
		    sl_sys.ioctl(fd, (unsigned long)queue_req, &queued) < 0 ||
		    sl_sys.getsockopt(fd, IPPROTO_TCP, TCP_INFO, &b, &lb) < 0)
			return -1;
		/* A kernel older than 4.1 has neither count. */
		if (la < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(a.tcpi_bytes_received) || lb != la) {
			errno = EOPNOTSUPP;
			return -1;
		}
		before = sent ? a.tcpi_bytes_acked : a.tcpi_bytes_received;
		after = sent ? b.tcpi_bytes_acked : b.tcpi_bytes_received;
		if (before != after || queued < 0)
			continue;
		*total = sent ? before + (uint64_t)queued : before - (uint64_t)queued;
		return 0;
	}
	errno = EBUSY;
	return -1;
}

int sl_seam_sent_total(int fd, bool connector, uint64_t *total)
{
	if (stable_total(fd, SIOCOUTQ, true, total) < 0)
		return -1;
	/* tcp_ack() moves snd_una over the SYN of an active open through
	 * tcp_snd_una_update(), which counts it; the passive side sets snd_una
	 * at its handshake's end without counting, and neither side counts a
	 * SYN in bytes_received. */
	if (connector) {
		if (*total == 0) {
			errno = EPROTO; /* not an active open's count (a Fast Open one?) */
			return -1;
		}
		(*total)--;
	}
	return 0;
}

int sl_seam_read_total(int fd, uint64_t *total)
{
	return stable_total(fd, SIOCINQ, false, total);
}

/* TCP_ESTABLISHED of the kernel's tcp_states.h, which linux/tcp.h (the
 * header with tcpi_bytes_acked) does not bring. */
#define SEAM_TCP_ESTABLISHED 1

bool sl_seam_established(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	return sl_sys.getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 && ti.tcpi_state == SEAM_TCP_ESTABLISHED;
}

/* Send-buffer memory a fresh segment of one byte (the marker) may take,
 * with margin: a new skb's head and its page fragment. */
#define SEAM_MARKER_ROOM 8192

/* The socket's queued send memory and its limit (SO_MEMINFO): the kernel's
 * own test for room for another segment (sk_stream_memory_free) is queued
 * below the limit.  -1 where the kernel has no SO_MEMINFO (before 4.6). */
static int send_memory(int fd, uint64_t *queued, uint64_t *limit)
{
	uint32_t mi[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mi);

	if (sl_sys.getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mi, &len) < 0 ||
	    len < (SK_MEMINFO_WMEM_QUEUED + 1) * sizeof(mi[0]))
		return -1;
	*queued = mi[SK_MEMINFO_WMEM_QUEUED];
	*limit = mi[SK_MEMINFO_SNDBUF];
	return 0;
}

bool sl_seam_room(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	uint64_t queued, limit;
	int lowat = 0;
	socklen_t len = sizeof(lowat);

	if (sl_sys.poll(&p, 1, 0) < 0 || (p.revents & (POLLERR | POLLHUP)))
		return false;
	/* The kernel's test has a second half, unsent bytes below the
	 * socket's TCP_NOTSENT_LOWAT: where one is set, POLLOUT answers
	 * (the system-wide default is no limit). */
	if (send_memory(fd, &queued, &limit) == 0 &&
	    (sl_sys.getsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, &len) < 0 || lowat <= 0))
		return queued + SEAM_MARKER_ROOM <= limit;
	return p.revents & POLLOUT;
}

size_t sl_seam_send_allowance(int fd)
{
	uint64_t queued, limit;

	if (send_memory(fd, &queued, &limit) < 0)
		return SIZE_MAX; /* no way to know: as before, the kernel's room */
	if (queued + 2 * SEAM_MARKER_ROOM >= limit)
		return 0;
	/* Half of what is free beyond the marker's room: a segment's memory
	 * is its bytes and its head, and tiny sends are mostly head. */
	return (size_t)((limit - queued - 2 * SEAM_MARKER_ROOM) / 2);
}

int sl_seam_mark(int fd)
{
	unsigned char m = SL_SEAM_MARKER;
	ssize_t n;

	do
		n = sl_sys.send(fd, &m, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n == 1)
		return 0;
	if (n == 0)
		errno = EAGAIN;
	return -1;
}

int sl_seam_rx_start(int fd, struct sl_seam_rx *rx)
{
	rx->crossed = false;
	return sl_seam_read_total(fd, &rx->read);
}

static int fail(int err)
{
	errno = err;
	return -1;
}

/* The byte at offset k of what iov holds. */
static unsigned char byte_at(const struct iovec *iov, size_t k)
{
	while (k >= iov->iov_len)
		k -= iov++->iov_len;
	return ((const unsigned char *)iov->iov_base)[k];
}

/* Read the peer's marker, which is due now (MSG_PEEK reads it too: the
 * call that peeks goes on in the ring, and the marker is nobody's). */
static ssize_t take_marker(int fd, struct sl_seam_rx *rx, uint64_t at, int flags)
{
	unsigned char m;
	ssize_t n;

	do
		n = sl_sys.recv(fd, &m, 1, flags & ~(MSG_PEEK | MSG_WAITALL | MSG_TRUNC));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	/* Its end before its marker: the peer published a switch point it
	 * never reached (it died between the two, or lies). */
	if (n == 0 || m != SL_SEAM_MARKER)
		return fail(EPROTO);
	rx->read = at + 1;
	rx->crossed = true;
	return 0;
}

/* The peer's kernel bytes read into iov[0..cnt) (MSG_TRUNC: into scratch
 * memory, as the kernel discards them), at most room of them. */
struct seam_read {
	struct iovec stack[8], *use;
	int used;
	uint64_t asked; /* bytes the read may take */
	void *scratch;
};

static int seam_read_plan(struct seam_read *r, const struct iovec *iov, int cnt, uint64_t room, int flags)
{
	uint64_t left = room, total = 0;

	r->use = r->stack;
	r->scratch = NULL;
	if (flags & MSG_TRUNC) {
		for (int i = 0; i < cnt; i++)
			total += iov[i].iov_len;
		if (total > room)
			total = room;
		if (total > 65536)
			total = 65536; /* a short read: the caller asks again */
		if (!(r->scratch = malloc(total ? total : 1)))
			return fail(ENOMEM);
		r->stack[0] = (struct iovec){ r->scratch, total };
		r->used = 1;
		r->asked = total;
		return 0;
	}
	if (cnt > (int)(sizeof(r->stack) / sizeof(r->stack[0])) && !(r->use = malloc(sizeof(*r->use) * (size_t)cnt)))
		return fail(ENOMEM);
	for (r->used = 0; r->used < cnt && left; r->used++) {
		r->use[r->used] = iov[r->used];
		if (r->use[r->used].iov_len > left)
			r->use[r->used].iov_len = left;
		left -= r->use[r->used].iov_len;
	}
	r->asked = room - left;
	return 0;
}

static void seam_read_done(struct seam_read *r)
{
	if (r->use != r->stack)
		free(r->use);
	free(r->scratch);
}

static uint64_t point_now(const struct sl_seam_point *p)
{
	if (p->word && !sl_offer_agreed(atomic_load_explicit(p->word, memory_order_acquire)))
		return SL_SEAM_UNKNOWN;
	return atomic_load_explicit(p->x, memory_order_acquire);
}

ssize_t sl_seam_recv(int fd, struct sl_seam_rx *rx, const struct sl_seam_point *point, const struct iovec *iov,
		     int cnt, int flags)
{
	struct seam_read r;
	struct msghdr msg = { 0 };
	uint64_t at = point_now(point), room = UINT64_MAX, got, before;
	ssize_t n;
	bool bad;

	if (rx->crossed)
		return 0;
	if (at != SL_SEAM_UNKNOWN) {
		if (at < rx->read)
			return fail(EPROTO); /* behind what we read already: not the peer's count */
		if (at == rx->read)
			return take_marker(fd, rx, at, flags);
		/* Never past the switch point: the bytes there are not the
		 * program's. */
		room = at - rx->read;
	}
	if (seam_read_plan(&r, iov, cnt, room, flags) < 0)
		return -1;
	msg.msg_iov = r.use;
	msg.msg_iovlen = (size_t)r.used;
	/* Not MSG_WAITALL: the bytes the call waits for may come on the ring
	 * after the marker; the caller goes on there. */
	do
		n = sl_sys.recvmsg(fd, &msg, flags & ~(MSG_WAITALL | MSG_TRUNC));
	while (n < 0 && errno == EINTR);
	got = n > 0 ? (uint64_t)n : 0;
	/* The peer publishes its point before it writes the marker, so a read
	 * that reached the marker sees the point now. */
	if (n > 0 && at == SL_SEAM_UNKNOWN)
		at = point_now(point);
	/* The end of the stream before a point the peer published: it never
	 * reached its own point (it died between the two, or lies). */
	if (n == 0 && at != SL_SEAM_UNKNOWN && r.asked) {
		seam_read_done(&r);
		return fail(EPROTO);
	}
	if (n <= 0 || at == SL_SEAM_UNKNOWN || rx->read + got <= at) {
		seam_read_done(&r);
		if (n > 0 && !(flags & MSG_PEEK))
			rx->read += got;
		return n;
	}
	/* The read crossed the point: the marker must be its last byte.  A
	 * byte after it came past the hook (or from a lying peer), and its
	 * place among the ring's bytes cannot be known. */
	before = at - rx->read;
	bad = at < rx->read || got != before + 1 || byte_at(r.use, (size_t)before) != SL_SEAM_MARKER;
	seam_read_done(&r);
	if (bad)
		return fail(EPROTO);
	if (flags & MSG_PEEK)
		return before ? (ssize_t)before : take_marker(fd, rx, at, flags);
	rx->read = at + 1;
	rx->crossed = true;
	return (ssize_t)before;
}
