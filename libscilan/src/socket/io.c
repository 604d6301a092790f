/* io.c — the data path's straight line: send and recv of one buffer on a
 * ring connection, copied into the peer's ring or out of ours with no
 * syscall; every other case is handed, untouched, to io_general.c.
 */
#include <errno.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "conn/agree.h"
#include "conn/conn.h"
#include "conn/promotion.h"
#include "conn/promotion_trigger.h"
#include "fabric/fabric.h"
#include "process/scm.h"
#include "ring/ring.h"
#include "ring/segment.h"
#include "ring/urgent.h"
#include "runtime/sys.h"
#include "scilan.h"
#include "socket/io.h"
#include "socket/offer_policy.h"

/* The straight line's answer when it left the call to the general case. */
#define DECLINED (-2)


static struct sl_sock *connecting(struct sl_sock *s);

/* The state of fd if its data goes through rings, completing a pending
 * non-blocking connect first; NULL means "let the kernel handle it". */
static inline struct sl_sock *connected(int fd)
{
	struct sl_sock *s = sl_sock_get(fd);

	if (s && sl_sock_on_rings(s))
		return s;
	return s ? connecting(s) : NULL;
}

/* Total length of an iovec array as the kernel checks it: EINVAL for a bad
 * count or a total beyond SSIZE_MAX, EFAULT for a missing buffer (unless
 * nothing will be copied: a recv with MSG_TRUNC). */
static inline ssize_t iov_total(const struct iovec *iov, int cnt, bool no_copy)
{
	size_t total = 0;

	if (cnt == 1 && iov && iov->iov_len <= (size_t)SSIZE_MAX && (iov->iov_base || !iov->iov_len || no_copy))
		return (ssize_t)iov->iov_len; /* send, recv, read, write: the checks below pass */
	if (cnt < 0 || cnt > IOV_MAX)
		return io_fail(EINVAL);
	if (cnt && !iov)
		return io_fail(EFAULT);
	for (int i = 0; i < cnt; i++) {
		if (iov[i].iov_len > (size_t)SSIZE_MAX - total)
			return io_fail(EINVAL);
		if (iov[i].iov_len && !iov[i].iov_base && !no_copy)
			return io_fail(EFAULT);
		total += iov[i].iov_len;
	}
	return (ssize_t)total;
}

/* The common send: one buffer the peer's ring has room for at once, on a
 * connection nothing rare is happening to.  Declines (having changed
 * nothing) for urgent data, MSG_ZEROCOPY, a send larger than a quarter
 * ring (published in pieces, so the receiver copies out while we copy in),
 * too little room, and every guard that send_clear and the lock's checks
 * stand for. */
static inline __attribute__((always_inline)) ssize_t send_fast(struct sl_sock *s, const void *buf, size_t len, int flags)
{
	if ((flags & (MSG_OOB | MSG_ZEROCOPY)) || len == 0 || len > s->tx.cap / 4 || !send_clear(s))
		return DECLINED;
	sl_lock(&s->tx_lock);
	if (sl_fell_back(s) || !s->seg || atomic_load(&s->shut_wr) ||
	    s->sends_since_check + 1 >= SENDS_PER_LIVENESS_CHECK)
		goto declined;
	sl_claim_tx(s);
	if (sl_ring_tx_space(&s->tx, len) < (int64_t)len || !sl_ring_tx_reserve(&s->tx, len))
		goto declined;
	sl_ring_tx_copy(&s->tx, buf, len, 0);
	sl_ring_tx_commit(&s->tx, len);
	sl_stat_add(&sl_ctr(s)->tx_bytes, len);
	sl_offer_sent(s);
	s->sends_since_check++;
	sl_unlock(&s->tx_lock);
	/* Fenced already by the xchg publish; unfenced sends leave the fence
	 * to a sleeping peer's membarrier. */
	sl_conn_after_produce(s, !s->tx.write_combining);
	return (ssize_t)len;
declined:
	sl_unlock(&s->tx_lock);
	return DECLINED;
}

/* The common recv: data waiting in our ring, no urgent byte among it, for
 * a call without MSG_PEEK or MSG_OOB (and with MSG_WAITALL, all it asks
 * for; below SO_RCVLOWAT, all it asks for or the mark).  Declines, having
 * changed nothing, in every other case. */
static inline __attribute__((always_inline)) ssize_t recv_fast(struct sl_sock *s, void *buf, size_t len, int flags)
{
	int64_t avail;
	size_t n;
	bool wake_sender;

	if ((flags & ~(MSG_DONTWAIT | MSG_WAITALL | MSG_NOSIGNAL | MSG_CMSG_CLOEXEC)) || len == 0)
		return DECLINED;
	sl_lock(&s->rx_lock);
	/* seam_pending: the peer's kernel bytes before its switch point come
	 * first (promotion.c). */
	if (sl_fell_back(s) || !s->seg || atomic_load(&s->reset) ||
	    atomic_load_explicit(&s->seam_pending, memory_order_relaxed))
		goto declined;
	sl_claim_rx(s);
	avail = sl_ring_rx_avail(&s->rx);
	if (avail <= 0 || sl_urg_any(s) || ((flags & MSG_WAITALL) && (uint64_t)avail < len))
		goto declined;
	if (__builtin_expect(atomic_load_explicit(&s->rcvlowat, memory_order_relaxed) != 1, 0) &&
	    (uint64_t)avail < len && (uint64_t)avail < sl_conn_rcv_mark(s))
		goto declined;
	n = len < (uint64_t)avail ? len : (size_t)avail;
	sl_ring_rx_peek(&s->rx, buf, n, 0);
	/* Shared with a forked process: publish at once, so whichever reads
	 * next starts exactly here. */
	wake_sender = sl_conn_after_consume_locked(s, sl_ring_rx_consume(&s->rx, n, sl_side_shared(s)));
	sl_stat_add(&sl_ctr(s)->rx_bytes, n);
	sl_offer_received(s);
	sl_unlock(&s->rx_lock);
	if (wake_sender)
		s->fabric->stimulate(s, SL_TOKEN_SPACE);
	return (ssize_t)n;
declined:
	sl_unlock(&s->rx_lock);
	return DECLINED;
}

ssize_t sl_sendv(struct sl_sock *s, const struct iovec *iov, int cnt, int flags)
{
	ssize_t len = iov_total(iov, cnt, false), r;

	if (len < 0)
		return -1;
	if (cnt == 1 && (r = send_fast(s, iov->iov_base, (size_t)len, flags)) != DECLINED)
		return r;
	return sl_send_general(s, iov, cnt, (size_t)len, flags);
}

ssize_t sl_recvv(struct sl_sock *s, const struct iovec *iov, int cnt, int flags)
{
	ssize_t len = iov_total(iov, cnt, flags & MSG_TRUNC), r;

	if (len < 0)
		return -1;
	if (cnt == 1 && (r = recv_fast(s, iov->iov_base, (size_t)len, flags)) != DECLINED)
		return r;
	return sl_recv_general(s, iov, cnt, (size_t)len, flags);
}

/* One buffer: what the fast paths need checked of it is that it is one. */
ssize_t sl_send(struct sl_sock *s, const void *buf, size_t len, int flags)
{
	struct iovec iov = { (void *)buf, len };
	ssize_t r;

	if (buf && len <= (size_t)SSIZE_MAX && (r = send_fast(s, buf, len, flags)) != DECLINED)
		return r;
	return sl_sendv(s, &iov, 1, flags);
}

ssize_t sl_recv(struct sl_sock *s, void *buf, size_t len, int flags)
{
	struct iovec iov = { buf, len };
	ssize_t r;

	if (buf && len <= (size_t)SSIZE_MAX && (r = recv_fast(s, buf, len, flags)) != DECLINED)
		return r;
	return sl_recvv(s, &iov, 1, flags);
}

struct sl_sock *sl_sock_connected(int fd)
{
	return connected(fd);
}

struct sl_sock *sl_sock_route(int fd, struct sl_sock **kernel)
{
	struct sl_sock *s = sl_sock_get(fd), *lib;

	*kernel = NULL;
	if (!s || sl_sock_on_rings(s))
		return s;
	if ((lib = connecting(s)))
		return lib;
	if (!sl_promote_armed(atomic_load_explicit(&s->promote_role, memory_order_relaxed)))
		return NULL;
	if (!sl_promote_kernel_enter(s))
		return connecting(s); /* it started moving meanwhile */
	*kernel = s;
	return NULL;
}

#define KERNEL SL_KERNEL_CALL

/* Urgent data on a plain connection: TCP's urgent pointer has no place in
 * the seam's counts, so the connection never moves. */
static inline void plain_flags(struct sl_sock *k, int flags)
{
	if (k && (flags & MSG_OOB))
		sl_promote_forbid(k);
}

ssize_t scilan_send(int fd, const void *buf, size_t len, int flags)
{
	struct sl_sock *k, *s = sl_sock_route(fd, &k);

	if (s)
		return sl_send(s, buf, len, flags);
	plain_flags(k, flags);
	return KERNEL(k, sl_sys.send(fd, buf, len, flags));
}

ssize_t scilan_recv(int fd, void *buf, size_t len, int flags)
{
	struct sl_sock *k, *s = sl_sock_route(fd, &k);

	if (s)
		return sl_recv(s, buf, len, flags);
	plain_flags(k, flags);
	return KERNEL(k, sl_sys.recv(fd, buf, len, flags));
}

ssize_t scilan_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct sl_sock *k, *s = sl_sock_route(fd, &k);

	if (!s) {
		plain_flags(k, flags);
		/* Descriptors passed may be ring connections (scm.c). */
		if (msg && msg->msg_control && msg->msg_controllen >= sizeof(struct cmsghdr))
			return KERNEL(k, sl_scm_sendmsg(fd, msg, flags));
		return KERNEL(k, sl_sys.sendmsg(fd, msg, flags));
	}
	if (!msg)
		return io_fail(EFAULT);
	if (msg->msg_iovlen > IOV_MAX)
		return io_fail(EMSGSIZE);
	/* Like TCP, a destination address on a connected stream is ignored;
	 * ancillary data has nothing to carry it. */
	return sl_sendv(s, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

ssize_t scilan_recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct sl_sock *k, *s = sl_sock_route(fd, &k);
	ssize_t n;

	if (!s) {
		plain_flags(k, flags);
		/* Ring connections may arrive with their rings (scm.c). */
		if (msg && msg->msg_control && msg->msg_controllen)
			return KERNEL(k, sl_scm_recvmsg(fd, msg, flags));
		return KERNEL(k, sl_sys.recvmsg(fd, msg, flags));
	}
	if (!msg)
		return io_fail(EFAULT);
	if (msg->msg_iovlen > IOV_MAX)
		return io_fail(EMSGSIZE);
	/* The error queue (zero-copy completions, timestamps) is the kernel
	 * socket's, with its control data. */
	if (flags & MSG_ERRQUEUE)
		return sl_sys.recvmsg(fd, msg, flags);
	n = sl_recvv(s, msg->msg_iov, (int)msg->msg_iovlen, flags);
	if (n >= 0) {
		/* TCP fills in no source address, and no control data but
		 * TCP_INQ's. */
		msg->msg_namelen = 0;
		msg->msg_flags = flags & MSG_OOB;
		sl_recvmsg_control(s, msg);
	}
	return n;
}

/* connected()'s rare case: s is not (yet) a ring connection. */
static struct sl_sock *connecting(struct sl_sock *s)
{
	if (sl_sock_state(s) == SL_CONNECTING)
		sl_connect_progress(s);
	/* A plain connection whose offer or look is due (promotion_trigger.c). */
	sl_promote_maybe(s);
	/* A late offer out (promotion): the connector follows a claim before
	 * the call, and until then its reads cross the seam through us. */
	if (sl_sock_promoting(s))
		sl_promote_poll(s);
	/* Failed over to kernel TCP, with the peer's header and re-sent bytes
	 * still to strip from the stream (failover.c): reads go through us
	 * until then, everything else is the kernel's. */
	/* Moved back to kernel TCP before its seam was crossed (a stall, a
	 * bypass, a close with bytes unread, while the peer's marker was still
	 * ahead): reads cross the seam through us first. */
	return sl_sock_on_rings(s) || sl_sock_strip_pending(s) || sl_sock_promoting(s) ||
			       atomic_load_explicit(&s->seam_pending, memory_order_relaxed)
		       ? s
		       : NULL;
}

