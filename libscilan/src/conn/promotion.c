/* promotion.c — the connection's part of promotion (issue 26 part 3): a
 * live plain connection's connector offers late, its acceptor takes the
 * offer with its switch, the connector follows, and each end reads the
 * kernel stream across the seam before its ring (ARCHITECTURE.md).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>

#include "conn/agree.h"
#include "conn/conn.h"
#include "conn/promote.h"
#include "conn/seam.h"
#include "fabric/fabric.h"
#include "ring/segment.h"
#include "runtime/endpoint_key.h"
#include "runtime/iov_rest.h"
#include "runtime/log.h"
#include "runtime/stats_file.h"
#include "runtime/sys.h"
#include "conn/promotion.h"
#include "conn/promotion_trigger.h"
#include "sync/clock.h"
#include "sync/conn_spin.h"

_Atomic unsigned sl_promote_epoch;
static _Atomic(void (*)(void)) notify_moved;

void sl_promote_on_move(void (*notify)(void))
{
	atomic_store(&notify_moved, notify);
}

static void moved_on(void)
{
	void (*notify)(void) = atomic_load(&notify_moved);

	atomic_fetch_add(&sl_promote_epoch, 1);
	if (notify)
		notify();
}

/* The rings carry the connection from here: as a connect that agreed. */
static void promoted(struct sl_sock *s, const char *role)
{
	uint8_t armed = atomic_load(&s->promote_role);

	/* Done trying (a NEVER stays): an armed socket's kernel calls go
	 * through the gate, which a later fail-over's strip would refuse for
	 * good; that fail-over arms the return itself. */
	while (sl_promote_armed(armed) && !atomic_compare_exchange_weak(&s->promote_role, &armed, SL_PROMOTE_NONE))
		;
	atomic_store(&s->promote_return, false);
	s->fb_reason = SL_FB_NONE;
	atomic_fetch_add(&sl_totals.promoted, 1);
	atomic_store(&s->was_promoted, true);
	sl_conn_became_connected(s);
	moved_on();
	sl_debug("fd %d: promoted onto the rings (%s)", s->fd, role);
}

/* The peer's marker is read: the kernel socket carries nothing more. */
static void seam_crossed(struct sl_sock *s)
{
	atomic_store(&s->seam_pending, false);
	moved_on();
}

/* The connector's late offer is over without a claim (all three locks
 * held): the segment goes, and the connection stays on kernel TCP, whole
 * (nothing of ours went into a ring).  SL_AGREE_PLAIN stays: a call of
 * ours already inside the library finishes on the kernel socket. */
static void withdrawn(struct sl_sock *s, enum sl_untaken why)
{
	atomic_store(&s->late_offer, false);
	atomic_store(&s->seam_pending, false);
	s->seam_point.x = NULL;
	s->seam_point.word = NULL;
	s->fabric->offer_withdraw(s);
	moved_on();
	sl_promote_untaken(s, why);
}

void sl_promote_drop(struct sl_sock *s)
{
	bool pending = atomic_exchange(&s->seam_pending, false);

	pending |= atomic_exchange(&s->late_offer, false);
	s->seam_point.x = NULL;
	s->seam_point.word = NULL;
	if (pending)
		moved_on();
}

/* Loud at both ends: a promotion that cannot complete once claimed.  With
 * none of our locks held (a reset takes ctl_lock).  The segment stays
 * mapped until the close; nothing tries again. */
static void promotion_failed(struct sl_sock *s, const char *why)
{
	sl_warn("fd %d: connection reset: its promotion %s", s->fd, why);
	atomic_store(&s->late_offer, false);
	atomic_store(&s->seam_pending, false);
	moved_on();
	sl_conn_reset(s, "promotion failed half-way");
	sl_sys_reset_tcp(s->fd);
}

static int publish_connector(void *arg, uint64_t x)
{
	struct sl_sock *s = arg;

	return s->fabric->late_publish(s, x);
}

/* The connector follows the acceptor's claim (all three locks held): its
 * point, its marker, its sends on the ring.  0 switched; 2 not now (no room
 * for the marker; nothing published); -1 it cannot (*why), for the caller
 * to reset once it let go of the locks. */
static int follow_locked(struct sl_sock *s, const char **why)
{
	int r;

	/* Nothing reads our kernel stream any more (the acceptor closed after
	 * its claim), or we have none (closed where no hook saw it): no
	 * marker, which would only earn an RST; the ring holds what the
	 * acceptor sent, read as from any closed peer. */
	if (s->fd < 0 || (atomic_load_explicit(&s->own_ctl->peer_state, memory_order_acquire) & SL_PEER_CLOSED))
		goto switched;
	r = sl_promote_switch(s->fd, 0, publish_connector, s);
	if (r == 2 && errno == EAGAIN)
		return 2;
	if (r != 0) {
		/* The acceptor sends on its ring already and waits at our point
		 * for our marker (1: its driver no longer holds the connection). */
		*why = r == 2 ? "cannot count the kernel's bytes" : r == 1 ? "lost its acceptor" : "could not publish its point and marker";
		return -1;
	}
switched:
	atomic_fetch_and(&s->agree, ~SL_AGREE_PLAIN);
	s->fabric->offer_settle(s);
	promoted(s, "connector");
	/* After the state: never plain without its offer in between, which
	 * an epoll set would take for a kernel member's (hook/epoll.c). */
	atomic_store(&s->late_offer, false);
	return 0;
}

/* The late offer taken back where it is decided: the device's drivers
 * first (the acceptor's pairs through ours), then the word.  1 revoked, 2
 * revoked after the device's link went down under it, 0 claimed first, -1
 * neither can be known (the link went down). */
static int take_back(struct sl_sock *s)
{
	uint32_t offered = SL_OFFER_OFFERED;
	bool link_lost = false;

	if (s->fabric->offer_revoke) {
		int r = s->fabric->offer_revoke(s);

		if (r == 0)
			return 0;
		/* The link went down.  Its driver stores ATTACHED only as it
		 * agrees, and LINK_DOWN only over an agreed connection: a word
		 * still OFFERED was never agreed, so no acceptor claimed, and a
		 * late offer put nothing in the ring: taken back. */
		if (r == -1 && atomic_load_explicit(s->offer_word, memory_order_acquire) != SL_OFFER_OFFERED)
			return -1;
		/* -2, the link up: refused for a reason of the endpoint's own (no
		 * connected endpoint any acceptor could pair), an untaken offer
		 * that counts toward the return's end. */
		link_lost = r == -1;
	}
	if (!atomic_compare_exchange_strong(s->offer_word, &offered, SL_OFFER_REVOKED))
		return 0;
	return link_lost ? 2 : 1;
}

/* The connector's look at its offer (must: the caller cannot go on
 * undecided, as it read the acceptor's marker or closes: an offer still out
 * is revoked now, and a claim is followed, waiting a bounded while, outside
 * the locks, for room for our marker).  The word is read under the locks:
 * a withdraw unmaps it. */
static bool decide(struct sl_sock *s, bool must)
{
	int64_t until = sl_mono_ns() + (int64_t)SL_PROMOTE_WAIT_MS * 1000000;

	for (;;) {
		struct pollfd p = { .fd = s->fd, .events = POLLOUT };
		bool on_rings = false, wait_room = false;
		uint32_t w;
		const char *failed = NULL;
		int left, polled = 0, revoked = 0;

		if (!sl_sock_promoting(s))
			return sl_sock_on_rings(s);
		sl_lock(&s->tx_lock);
		sl_lock(&s->rx_lock);
		pthread_mutex_lock(&s->ctl_lock);
		if (!sl_sock_promoting(s)) {
			on_rings = sl_sock_on_rings(s);
		} else if ((w = atomic_load_explicit(s->offer_word, memory_order_acquire)) == SL_OFFER_OFFERED &&
			   !must && sl_mono_ns() < s->agree_deadline_ns) {
			on_rings = false;
		} else if (w == SL_OFFER_OFFERED && (revoked = take_back(s)) != 0) {
			if (revoked > 0) {
				sl_debug("fd %d: late offer not taken%s; connection stays on kernel TCP", s->fd,
					 revoked == 2 ? " (its link went down)" : "");
				withdrawn(s, revoked == 2 ? SL_UNTAKEN_LINK_LOST : SL_UNTAKEN);
			} else {
				failed = "lost its link before its acceptor's answer";
			}
		} else if (sl_offer_agreed(atomic_load_explicit(s->offer_word, memory_order_acquire))) {
			/* Claimed, and maybe moved on since (the acceptor led the
			 * connection back to kernel TCP after its claim: a close
			 * with its bytes untaken, a bypass): we follow first, and
			 * the move is followed after the seam, as on any agreed
			 * connection. */
			int r = follow_locked(s, &failed);

			on_rings = r == 0;
			wait_room = r == 2 && must;
		} else {
			/* Refused (no room for the acceptor's marker), or not ours
			 * to read any more: kernel TCP, nothing moved. */
			withdrawn(s, w == SL_OFFER_REFUSED ? SL_UNTAKEN_REFUSED : SL_UNTAKEN);
		}
		pthread_mutex_unlock(&s->ctl_lock);
		sl_unlock(&s->rx_lock);
		sl_unlock(&s->tx_lock);
		if (failed) {
			promotion_failed(s, failed);
			return false;
		}
		if (!wait_room)
			return on_rings;
		/* A signal does not end this wait (a reset would be the price):
		 * it is bounded by `until` already. */
		do
			left = (int)((until - sl_mono_ns()) / 1000000);
		while (left > 0 && (polled = sl_sys.poll(&p, 1, left)) < 0 && errno == EINTR);
		if (left <= 0 || polled != 1 || (p.revents & (POLLERR | POLLHUP))) {
			promotion_failed(s, "found no room for its marker");
			return false;
		}
	}
}

bool sl_promote_poll(struct sl_sock *s)
{
	return decide(s, false);
}

bool sl_promote_settle(struct sl_sock *s)
{
	return decide(s, true);
}

/* A connection its fabric left (a device link that went down) is moved
 * onto it again as a plain one, once the dead session is gone. */
static void retire_left_session(struct sl_sock *s)
{
	if (s->seg && sl_sock_state(s) == SL_PLAIN && s->fabric->late_retire)
		s->fabric->late_retire(s);
}

int sl_promote_offer(struct sl_sock *s)
{
	struct sl_key dst = { 0 }, src = { 0 };
	uint64_t peer_ring = 0;
	int err = 0;
	bool queue_full = false;

	if (!s->fabric->offer_late) {
		errno = EOPNOTSUPP;
		return -1;
	}
	sl_lock(&s->tx_lock);
	sl_lock(&s->rx_lock);
	pthread_mutex_lock(&s->ctl_lock);
	retire_left_session(s);
	if (sl_sock_state(s) != SL_PLAIN || atomic_load(&s->late_offer) || s->seg || sl_sock_maybe_shared(s) ||
	    !sl_seam_established(s->fd)) {
		err = EALREADY;
		goto out;
	}
	errno = 0;
	if (sl_conn_keys(s->fd, &src, &dst) < 0 || s->fabric->lookup(s, &dst, &peer_ring) != 1) {
		err = errno ? errno : ENOENT;
		goto out;
	}
	/* Our marker must find room once the acceptor claims (seam.h): a full
	 * send queue offers later. */
	if (!sl_seam_send_allowance(s->fd)) {
		queue_full = true;
		goto out;
	}
	/* Named by our socket where the acceptor's kernel can answer for it. */
	if (s->fabric->offer_by_socket && s->fabric->offer_by_socket(s))
		src.port = 0;
	/* Where our reads of the acceptor's stream stand, before any claim can
	 * put its marker there (no read of ours is under way: rx_lock). */
	if (sl_seam_rx_start(s->fd, &s->seam_rx) < 0 ||
	    s->fabric->offer_late(s, &dst, &src, sl_ring_cap_for(peer_ring)) < 0) {
		err = errno ? errno : EIO;
		if (s->rdv_conn >= 0)
			sl_sys.close(s->rdv_conn);
		s->rdv_conn = -1;
		goto out;
	}
	s->seam_point.x = s->fabric->late_peer_point(s, 0);
	s->seam_point.word = s->offer_word;
	s->agree_deadline_ns = sl_mono_ns() + (int64_t)SL_PROMOTE_WAIT_MS * 1000000;
	/* Our sends stay on the kernel socket until we follow: the data
	 * path's guard sends a connection marked plain there. */
	atomic_fetch_or(&s->agree, SL_AGREE_PLAIN);
	atomic_store(&s->seam_pending, true);
	atomic_store(&s->late_offer, true);
	moved_on();
out:
	pthread_mutex_unlock(&s->ctl_lock);
	sl_unlock(&s->rx_lock);
	sl_unlock(&s->tx_lock);
	errno = err;
	return err ? -1 : queue_full ? 1 : 0;
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
	retire_left_session(s);
	if (sl_sock_state(s) != SL_PLAIN || s->seg || sl_sock_maybe_shared(s) || !sl_seam_established(s->fd))
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
		s->seam_point.x = s->fabric->late_peer_point(s, 1);
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
	const _Atomic uint64_t *x = s->seam_point.x;

	sl_debug("fd %d: seam broken: read %llu, the peer's point %llu", s->fd, (unsigned long long)s->seam_rx.read,
		 x ? (unsigned long long)atomic_load(x) : ~0ull);
	sl_conn_reset(s, "what followed the peer's switch point was not its marker alone");
	sl_sys_reset_tcp(s->fd);
	errno = ECONNRESET;
}

/* One look across the seam, never waiting: rx_lock is a spinlock, and a
 * call that may block waits for the kernel socket outside it. */
static ssize_t seam_look(struct sl_sock *s, const struct iovec *iov, int cnt, int flags, bool *crossed)
{
	ssize_t r;

	sl_lock(&s->rx_lock);
	if (!atomic_load(&s->seam_pending)) {
		sl_unlock(&s->rx_lock);
		*crossed = true;
		return 0;
	}
	r = sl_seam_recv(s->fd, &s->seam_rx, &s->seam_point, iov, cnt, flags | MSG_DONTWAIT);
	*crossed = s->seam_rx.crossed;
	if (*crossed)
		seam_crossed(s);
	sl_unlock(&s->rx_lock);
	return r;
}

/* A blocking receive's wait for the kernel socket, with its SO_RCVTIMEO:
 * 0 when there is something to look at again (the socket is readable, or
 * the reading side was shut down: another thread's shutdown(SHUT_RD) is
 * the ring's and never reaches the kernel socket, so the wait looks at
 * shut_rd every SHUT_RD_LOOK_MS); -1 with errno (EAGAIN when the timeout
 * ran out, as the kernel's recv says). */
#define SHUT_RD_LOOK_MS 100

static int wait_kernel(struct sl_sock *s)
{
	struct pollfd p = { .fd = s->fd, .events = POLLIN };
	int timeout = sl_conn_timeout_ms(s, POLLIN), n;
	int64_t deadline = timeout < 0 ? -1 : sl_mono_ms() + timeout;

	while (!atomic_load(&s->shut_rd)) {
		int left = sl_left_ms(deadline);

		if (left == 0) {
			errno = EAGAIN;
			return -1;
		}
		n = sl_sys.poll(&p, 1, left < 0 || left > SHUT_RD_LOOK_MS ? SHUT_RD_LOOK_MS : left);
		/* Restarted after SA_RESTART handlers, as the kernel's recv
		 * (not with a timeout: EINTR then, as there). */
		if (n < 0 && errno == EINTR && timeout < 0 && sl_conn_signals_restart())
			continue;
		if (n != 0)
			return n == 1 ? 0 : -1;
	}
	return 0;
}

ssize_t sl_promote_recv(struct sl_sock *s, const struct iovec *iov, int cnt, int flags, bool *handled)
{
	bool may_block = !sl_io_nonblocking(s, flags), crossed;
	ssize_t r;

	*handled = true;
	for (;;) {
		/* The connector follows a claim it can see before it reads:
		 * the acceptor's ring bytes wait behind its marker anyway. */
		sl_promote_poll(s);
		r = seam_look(s, iov, cnt, flags, &crossed);
		/* Shut down for reading, nothing there: the end, as the kernel's. */
		if (r < 0 && errno == EAGAIN && !crossed && atomic_load(&s->shut_rd))
			return 0;
		if (r < 0 && errno == EAGAIN && may_block && !crossed) {
			if (wait_kernel(s) < 0)
				return -1;
			continue;
		}
		break;
	}
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

/* A blocking send's wait for room while the late offer is out, a slice at a
 * time. */
#define SEND_ROOM_SLICE_MS 10

/* rest[0..n) cut to at most max bytes (n >= 1; max >= 1): its new count. */
static int iov_cap(struct iovec *rest, int n, size_t max)
{
	for (int i = 0; i < n; i++) {
		if (rest[i].iov_len >= max) {
			rest[i].iov_len = max;
			return i + 1;
		}
		max -= rest[i].iov_len;
	}
	return n;
}

int sl_promote_send(struct sl_sock *s, const struct iovec *iov, int cnt, size_t len, int flags, size_t *done)
{
	bool may_block = !sl_io_nonblocking(s, flags);

	*done = 0;
	while (*done < len) {
		struct iovec stack[8], *rest;
		int n = sl_iov_rest(iov, cnt, *done, stack, 8, &rest), err;
		ssize_t r = -1;
		bool out, held;

		if (n < 0)
			return *done ? 0 : (errno = ENOMEM, -1);
		/* Under tx_lock, never waiting: the connector's follow takes its
		 * point under the same lock, so no byte of ours can land in the
		 * kernel between its point and its marker. */
		sl_lock(&s->tx_lock);
		out = sl_sock_promoting(s);
		held = false;
		if (out) {
			size_t allow = sl_seam_send_allowance(s->fd);

			held = !allow;
			if (held)
				errno = EAGAIN;
			else
				r = sl_sys.sendmsg(s->fd,
						   &(struct msghdr){ .msg_iov = rest,
								     .msg_iovlen = (size_t)iov_cap(rest, n, allow) },
						   flags | MSG_DONTWAIT);
		}
		err = errno;
		sl_unlock(&s->tx_lock);
		if (rest != stack)
			free(rest);
		if (!out)
			return 1; /* decided meanwhile: the rest the usual way */
		/* Held for the marker's room while the kernel would take the
		 * bytes: no EAGAIN of ours, which no kernel wake-up would follow
		 * (an edge-triggered writer would wait for good); the offer is
		 * decided now instead.  Where the kernel would say EAGAIN too,
		 * its poll has asked for the wake-up. */
		if (held && (sl_agree_kernel_ready(s, POLLOUT) & POLLOUT)) {
			sl_promote_settle(s);
			return 1;
		}
		if (r > 0) {
			*done += (size_t)r;
			if (!may_block)
				return 0;
			continue;
		}
		if ((err != EAGAIN && err != EWOULDBLOCK) || !may_block)
			return *done ? 0 : (errno = err, -1);
		/* Full (a stream at speed): room is waited for outside the lock,
		 * a slice at a time, the offer decided at each (followed once
		 * claimed, revoked at its deadline).  A send timeout the offer's
		 * window would stretch: decided now instead. */
		if (sl_conn_timeout_ms(s, POLLOUT) >= 0) {
			sl_promote_settle(s);
			return 1;
		}
		/* A signal ends the call as it ends the kernel's blocking send:
		 * with what was sent, or EINTR (restarted after an SA_RESTART
		 * handler when nothing was sent). */
		if (sl_sys.poll(&(struct pollfd){ .fd = s->fd, .events = POLLOUT }, 1, SEND_ROOM_SLICE_MS) < 0 &&
		    errno == EINTR && (*done || !sl_conn_signals_restart()))
			return *done ? 0 : (errno = EINTR, -1);
		sl_promote_poll(s);
	}
	return 0;
}

/* The peer's point is known and our reads reached it: its marker is the
 * next byte (rx_lock held). */
static bool marker_due(const struct sl_sock *s)
{
	const struct sl_seam_point *p = &s->seam_point;

	return atomic_load(&s->seam_pending) && p->x && !(p->word && !sl_offer_agreed(atomic_load(p->word))) &&
	       atomic_load(p->x) == s->seam_rx.read;
}

/* Take the marker if it is due and here, never waiting (rx_lock held):
 * false only when what is there is not the marker. */
static bool take_due_marker(struct sl_sock *s)
{
	struct iovec none = { NULL, 0 };

	if (!marker_due(s))
		return true;
	if (sl_seam_recv(s->fd, &s->seam_rx, &s->seam_point, &none, 1, MSG_DONTWAIT) < 0 && errno == EPROTO)
		return false;
	if (s->seam_rx.crossed)
		seam_crossed(s);
	return true;
}

bool sl_promote_stop(struct sl_sock *s)
{
	bool was = sl_sock_promoting(s);

	sl_promote_forbid(s);
	if (was)
		sl_promote_settle(s);
	return was;
}

int64_t sl_promote_rx_waiting(struct sl_sock *s)
{
	const struct sl_seam_point *p = &s->seam_point;
	uint64_t x, before;
	int inq = 0;

	if (!atomic_load(&s->seam_pending))
		return sl_rx_waiting(s);
	if (sl_sys.ioctl(s->fd, SIOCINQ, &inq) < 0 || inq < 0)
		inq = 0;
	/* No point yet, or not one to trust yet (the connector's view before
	 * the claim): the marker is not here, and every kernel byte is data. */
	x = p->x && !(p->word && !sl_offer_agreed(atomic_load(p->word))) ? atomic_load(p->x) : SL_SEAM_UNKNOWN;
	if (x == SL_SEAM_UNKNOWN || x < s->seam_rx.read)
		return inq;
	before = x - s->seam_rx.read;
	if ((uint64_t)inq <= before)
		return inq;
	/* The marker is here: the ring's bytes are next, without a wait
	 * (after a fail-over, the peer's header instead: none yet). */
	return (int64_t)before + (s->seg && !atomic_load(&s->strip_pending) ? sl_rx_waiting(s) : 0);
}

uint64_t sl_promote_kernel_arrived(struct sl_sock *s)
{
	int inq = 0;

	if (sl_sys.ioctl(s->fd, SIOCINQ, &inq) < 0 || inq < 0)
		inq = 0;
	return s->seam_rx.read + (uint64_t)inq;
}

bool sl_promote_cross_due(struct sl_sock *s)
{
	bool whole;

	sl_lock(&s->rx_lock);
	whole = take_due_marker(s);
	sl_unlock(&s->rx_lock);
	if (!whole)
		seam_broken(s);
	return whole;
}

short sl_promote_ready(struct sl_sock *s, short events)
{
	struct pollfd p = { .fd = s->fd, .events = events & (POLLIN | POLLRDNORM | POLLRDHUP) };

	sl_promote_poll(s);
	/* At the peer's point the kernel reports its marker readable: it is
	 * taken now, and the ring's readiness counts. */
	if (!sl_promote_cross_due(s))
		return -1; /* reset: the connection's readiness says so */
	if (sl_sock_promoting(s) && !atomic_load(&s->seam_pending))
		sl_promote_settle(s);
	if (!atomic_load(&s->seam_pending))
		return -1; /* the ring's, as any ring connection's */
	/* Only the reading side is the kernel's: our sends go to the ring. */
	if (sl_sys.poll(&p, 1, 0) != 1)
		return 0;
	/* What made it readable may be the marker, arrived since the look
	 * above: taken now (and followed, as above), the readiness is the
	 * ring's. */
	if (p.revents & (POLLIN | POLLRDNORM)) {
		if (!sl_promote_cross_due(s))
			return -1;
		if (!atomic_load(&s->seam_pending)) {
			if (sl_sock_promoting(s))
				sl_promote_settle(s);
			return -1;
		}
	}
	return (short)(p.revents & (POLLIN | POLLRDNORM | POLLRDHUP | POLLHUP | POLLERR));
}

void sl_promote_before_close(struct sl_sock *s)
{
	int64_t until = sl_mono_ns() + (int64_t)SL_PROMOTE_WAIT_MS * 1000000;

	if (!atomic_load(&s->seam_pending) || s->fd < 0)
		return;
	/* The peer's marker, due and unread, would make our close an RST (the
	 * kernel's answer to a close with unread bytes), which the peer would
	 * take for a reset of the stream it had sent whole.  Bytes of the
	 * program's still unread make it one anyway, as on TCP.  Waited for
	 * outside rx_lock. */
	for (;;) {
		struct pollfd p = { .fd = s->fd, .events = POLLIN };
		bool due;
		int left;

		sl_lock(&s->rx_lock);
		take_due_marker(s);
		due = marker_due(s);
		sl_unlock(&s->rx_lock);
		left = (int)((until - sl_mono_ns()) / 1000000);
		if (!due || left <= 0 || sl_sys.poll(&p, 1, left) != 1)
			return;
	}
}
