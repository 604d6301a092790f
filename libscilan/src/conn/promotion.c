/* promotion.c — the connection's part of promotion (issue 26 part 3): a
 * live plain connection's connector offers late, its acceptor takes the
 * offer with its switch, the connector follows, and each end reads the
 * kernel stream across the seam before its ring (ARCHITECTURE.md).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>

#include "conn/agree.h"
#include "conn/conn.h"
#include "conn/promote.h"
#include "conn/seam.h"
#include "fabric/fabric.h"
#include "runtime/endpoint_key.h"
#include "runtime/log.h"
#include "runtime/stats_file.h"
#include "runtime/sys.h"
#include "conn/promotion.h"
#include "sync/clock.h"

/* The rings carry the connection from here: as a connect that agreed. */
static void promoted(struct sl_sock *s, const char *role)
{
	int one = 1;

	sl_sys.setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	s->fb_reason = SL_FB_NONE;
	sl_stats_conn_open(s);
	atomic_store_explicit(&s->state, (int)SL_CONNECTED, memory_order_release);
	atomic_fetch_add_explicit(&sl_totals.accelerated, 1, memory_order_relaxed);
	sl_debug("fd %d: promoted onto the rings (%s)", s->fd, role);
}

/* The connector's late offer is over without a claim: the segment goes,
 * and the connection stays on kernel TCP, whole (nothing of ours went into
 * a ring). */
static void withdrawn(struct sl_sock *s)
{
	atomic_store(&s->late_offer, false);
	atomic_store(&s->seam_pending, false);
	s->fabric->offer_withdraw(s);
	atomic_fetch_and(&s->agree, ~SL_AGREE_PLAIN);
}

int sl_promote_offer(struct sl_sock *s)
{
	struct sl_key dst = { 0 }, src = { 0 };
	uint64_t peer_ring = 0;
	int err = 0;

	if (!s->fabric->offer_late) {
		errno = EOPNOTSUPP;
		return -1;
	}
	sl_lock(&s->tx_lock);
	sl_lock(&s->rx_lock);
	pthread_mutex_lock(&s->ctl_lock);
	if (sl_sock_state(s) != SL_PLAIN || atomic_load(&s->late_offer) || s->seg || sl_sock_maybe_shared(s) ||
	    atomic_load(&s->shut_rd) || atomic_load(&s->shut_wr)) {
		err = EALREADY;
		goto out;
	}
	errno = 0;
	if (sl_conn_keys(s->fd, &src, &dst) < 0 || s->fabric->lookup(s, &dst, &peer_ring) != 1) {
		err = errno ? errno : ENOENT;
		goto out;
	}
	/* Named by our socket where the acceptor's kernel can answer for it. */
	if (s->fabric->offer_by_socket && s->fabric->offer_by_socket(s))
		src.port = 0;
	/* Where our reads of the acceptor's stream stand, before any claim can
	 * put its marker there (no read of ours is under way: rx_lock). */
	if (sl_seam_rx_start(s->fd, &s->seam_rx) < 0 ||
	    s->fabric->offer_late(s, &dst, &src, sl_ring_cap_for(peer_ring)) < 0) {
		err = errno;
		if (s->rdv_conn >= 0)
			sl_sys.close(s->rdv_conn);
		s->rdv_conn = -1;
		goto out;
	}
	s->seam_point.x = &sl_promote_seam(s->seg)->x[1];
	s->seam_point.word = s->offer_word;
	s->agree_deadline_ns = sl_mono_ns() + (int64_t)SL_PROMOTE_WAIT_MS * 1000000;
	/* Our sends stay on the kernel socket until we follow: the data
	 * path's guard sends a connection marked plain there. */
	atomic_fetch_or(&s->agree, SL_AGREE_PLAIN);
	atomic_store(&s->seam_pending, true);
	atomic_store(&s->late_offer, true);
out:
	pthread_mutex_unlock(&s->ctl_lock);
	sl_unlock(&s->rx_lock);
	sl_unlock(&s->tx_lock);
	errno = err;
	return err ? -1 : 0;
}

/* The connector follows the acceptor's claim: its point, its marker, and
 * its sends on the ring; with tx_lock held.  false: not now (no room for
 * the marker) or reset. */
static bool follow_locked(struct sl_sock *s, bool must)
{
	int r;

	/* No room for our marker: the acceptor reads its kernel stream, so
	 * room comes; a call that cannot go on without following (we read
	 * its marker, we close) waits for it, a bounded while. */
	/* The acceptor closed after its claim: nothing reads our kernel
	 * stream any more, and a marker there would only earn an RST; the
	 * ring holds what it sent, which we read as from any closed peer. */
	if (atomic_load_explicit(&s->own_ctl->peer_state, memory_order_acquire) & SL_PEER_CLOSED) {
		r = 0;
		goto switched;
	}
	while ((r = sl_promote_switch(s->fd, sl_promote_seam(s->seg), 0, NULL, NULL)) < 0 && errno == EAGAIN && must) {
		struct pollfd p = { .fd = s->fd, .events = POLLOUT };

		if (sl_sys.poll(&p, 1, SL_PROMOTE_WAIT_MS) != 1) {
			errno = ETIMEDOUT;
			break;
		}
	}
	if (r < 0) {
		if (errno == EAGAIN)
			return false;
		/* The acceptor sends on its ring already and waits at our point
		 * for our marker: loud at both ends. */
		sl_warn("fd %d: connection reset: its promotion could not send its marker (%m)", s->fd);
		sl_conn_reset(s, "promotion failed half-way");
		sl_sys_reset_tcp(s->fd);
		return false;
	}
switched:
	atomic_store(&s->late_offer, false);
	atomic_fetch_and(&s->agree, ~SL_AGREE_PLAIN);
	s->fabric->offer_settle(s);
	promoted(s, "connector");
	return true;
}

/* must: the caller cannot go on without a decision (it read the
 * acceptor's marker, or closes): an offer still out is revoked at once. */
static bool decide(struct sl_sock *s, bool must)
{
	uint32_t w, offered = SL_OFFER_OFFERED;
	bool on_rings = false;

	if (!sl_sock_promoting(s))
		return sl_sock_on_rings(s);
	w = atomic_load_explicit(s->offer_word, memory_order_acquire);
	if (w == SL_OFFER_OFFERED && !must && sl_mono_ns() < s->agree_deadline_ns)
		return false;
	sl_lock(&s->tx_lock);
	pthread_mutex_lock(&s->ctl_lock);
	if (!sl_sock_promoting(s)) {
		on_rings = sl_sock_on_rings(s);
	} else if (w == SL_OFFER_OFFERED &&
		   atomic_compare_exchange_strong(s->offer_word, &offered, SL_OFFER_REVOKED)) {
		sl_debug("fd %d: late offer not taken in time; connection stays on kernel TCP", s->fd);
		withdrawn(s);
	} else if (sl_offer_agreed(w = atomic_load_explicit(s->offer_word, memory_order_acquire))) {
		/* Claimed, and maybe moved on since (the acceptor led the
		 * connection back to kernel TCP after its claim: a close with
		 * its bytes untaken, a bypass): we follow first, and the move is
		 * then followed as on any agreed connection, after the seam. */
		on_rings = follow_locked(s, must);
	} else if (w != SL_OFFER_OFFERED) {
		/* Refused (no room for the acceptor's marker), or not ours to
		 * read any more: kernel TCP, nothing moved. */
		withdrawn(s);
	}
	pthread_mutex_unlock(&s->ctl_lock);
	sl_unlock(&s->tx_lock);
	return on_rings;
}

bool sl_promote_poll(struct sl_sock *s)
{
	return decide(s, false);
}

bool sl_promote_settle(struct sl_sock *s)
{
	return decide(s, true);
}

int sl_promote_look(struct sl_sock *s, struct sl_sock *listener)
{
	struct sl_key local = s->known_local, peer = s->known_peer;
	int r = 0, err = 0;

	if (!s->fabric->take_late)
		return 0;
	sl_lock(&s->tx_lock);
	sl_lock(&s->rx_lock);
	pthread_mutex_lock(&s->ctl_lock);
	if (sl_sock_state(s) != SL_PLAIN || s->seg || sl_sock_maybe_shared(s) || atomic_load(&s->shut_rd) ||
	    atomic_load(&s->shut_wr))
		goto out;
	/* Where our reads of the connector's stream stand, before our claim
	 * lets it write its marker. */
	if (sl_seam_rx_start(s->fd, &s->seam_rx) < 0)
		goto out;
	if (!local.family || !local.port)
		local.family = 0;
	if (!peer.family)
		peer.family = 0;
	r = s->fabric->take_late(s, listener, &local, &peer);
	err = errno;
	if (r == 1) {
		s->seam_point.x = &sl_promote_seam(s->seg)->x[0];
		s->seam_point.word = NULL; /* the connector publishes its point only when it follows */
		atomic_store(&s->seam_pending, true);
		promoted(s, "acceptor");
	} else if (r < 0) {
		atomic_store(&s->reset, true);
	}
out:
	pthread_mutex_unlock(&s->ctl_lock);
	sl_unlock(&s->rx_lock);
	sl_unlock(&s->tx_lock);
	errno = err;
	return r;
}

/* The seam gave EPROTO: a byte after the peer's marker came past its hook,
 * or the peer lied about its point.  Its place is unknown: both ends reset. */
static void seam_broken(struct sl_sock *s)
{
	sl_conn_reset(s, "what followed the peer's switch point was not its marker alone");
	sl_sys_reset_tcp(s->fd);
	errno = ECONNRESET;
}

ssize_t sl_promote_recv(struct sl_sock *s, const struct iovec *iov, int cnt, int flags, bool *handled)
{
	ssize_t r;
	bool crossed;

	*handled = true;
	/* The connector follows a claim it can see before it reads: the
	 * acceptor's ring bytes wait behind its marker anyway. */
	sl_promote_poll(s);
	sl_lock(&s->rx_lock);
	if (!atomic_load(&s->seam_pending)) {
		sl_unlock(&s->rx_lock);
		*handled = false;
		return 0;
	}
	r = sl_seam_recv(s->fd, &s->seam_rx, &s->seam_point, iov, cnt, flags);
	crossed = s->seam_rx.crossed;
	if (crossed)
		atomic_store(&s->seam_pending, false);
	sl_unlock(&s->rx_lock);
	if (r < 0) {
		if (errno == EPROTO)
			seam_broken(s);
		return -1;
	}
	/* The acceptor's marker proves its claim: the connector follows now,
	 * so that what comes next is read from its ring. */
	if (crossed && sl_sock_promoting(s))
		sl_promote_settle(s);
	if (r > 0 || !crossed)
		return r;
	*handled = false;
	return 0;
}

short sl_promote_ready(struct sl_sock *s, short events)
{
	struct pollfd p = { .fd = s->fd, .events = events };
	char none;
	struct iovec iov = { &none, 0 };
	bool crossed = false;

	sl_promote_poll(s);
	sl_lock(&s->rx_lock);
	/* At the peer's point the kernel reports its marker readable: it is
	 * taken now, never waiting, and the ring's readiness counts. */
	if (atomic_load(&s->seam_pending) && !(s->seam_point.word && !sl_offer_agreed(atomic_load(s->seam_point.word))) &&
	    s->seam_point.x && atomic_load(s->seam_point.x) == s->seam_rx.read &&
	    sl_seam_recv(s->fd, &s->seam_rx, &s->seam_point, &iov, 1, MSG_DONTWAIT) == 0 && s->seam_rx.crossed) {
		atomic_store(&s->seam_pending, false);
		crossed = true;
	}
	sl_unlock(&s->rx_lock);
	if (crossed && sl_sock_promoting(s))
		sl_promote_settle(s);
	if (!atomic_load(&s->seam_pending))
		return -1; /* the ring's, as any ring connection's */
	return sl_sys.poll(&p, 1, 0) == 1 ? p.revents : 0;
}

void sl_promote_before_close(struct sl_sock *s)
{
	struct iovec none = { NULL, 0 };
	int64_t until = sl_mono_ns() + (int64_t)SL_PROMOTE_WAIT_MS * 1000000;

	if (!atomic_load(&s->seam_pending))
		return;
	sl_lock(&s->rx_lock);
	/* The peer's marker, due and unread, would make our close an RST (the
	 * kernel's answer to a close with unread bytes), which the peer would
	 * take for a reset of the stream it had sent whole.  Bytes of the
	 * program's still unread make it one anyway, as on TCP. */
	while (atomic_load(&s->seam_pending) && s->seam_point.x &&
	       !(s->seam_point.word && !sl_offer_agreed(atomic_load(s->seam_point.word))) &&
	       atomic_load(s->seam_point.x) == s->seam_rx.read && sl_mono_ns() < until) {
		struct pollfd p = { .fd = s->fd, .events = POLLIN };
		ssize_t r;

		if (sl_sys.poll(&p, 1, (int)((until - sl_mono_ns()) / 1000000) + 1) != 1)
			break;
		r = sl_seam_recv(s->fd, &s->seam_rx, &s->seam_point, &none, 1, MSG_DONTWAIT);
		if (s->seam_rx.crossed || (r < 0 && errno != EAGAIN))
			break;
	}
	if (s->seam_rx.crossed)
		atomic_store(&s->seam_pending, false);
	sl_unlock(&s->rx_lock);
}
