/* io_general.c — every send and recv the straight line in io.c declines:
 * several buffers, a ring too full or too empty for the call, the agreement
 * still open, urgent data, the end of the stream, sleeping, kernel TCP.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "conn/agree.h"
#include "conn/conn.h"
#include "conn/promotion.h"
#include "conn/promotion_trigger.h"
#include "conn/failover.h"
#include "evq/evq.h"
#include "fabric/fabric.h"
#include "socket/idle.h"
#include "ring/segment.h"
#include "ring/urgent.h"
#include "runtime/iov_rest.h"
#include "runtime/sys.h"
#include "scilan.h"
#include "socket/io.h"
#include "socket/offer_policy.h"
#include "socket/wait.h"
#include "sync/conn_spin.h"

static bool ended(struct sl_sock *s)
{
	return (atomic_load_explicit(&s->own_ctl->peer_state, memory_order_relaxed) &
		(SL_PEER_SHUT_WR | SL_PEER_CLOSED | SL_PEER_RESET)) ||
	       atomic_load_explicit(&s->reset, memory_order_relaxed) ||
	       atomic_load_explicit(&s->shut_rd, memory_order_relaxed);
}

static bool data_arrived(struct sl_sock *s, uint64_t read)
{
	return atomic_load_explicit(s->rx.write_idx, memory_order_relaxed) != read || ended(s);
}

static bool space_freed(struct sl_sock *s, uint64_t read_seen)
{
	return atomic_load_explicit(s->tx.read_copy, memory_order_relaxed) != read_seen || ended(s) ||
	       atomic_load_explicit(&s->shut_wr, memory_order_relaxed);
}


static ssize_t broken_pipe(int flags)
{
	if (!(flags & MSG_NOSIGNAL))
		raise(SIGPIPE);
	return io_fail(EPIPE);
}

/* send_blocker: the peer has closed (orderly) and has not been told yet. */
#define SEND_TO_CLOSED (-1)

/* Why a send cannot proceed, or 0.  A reset connection reports its pending
 * error once (taking it, as the kernel's send takes sk_err), then EPIPE; the
 * error stays pending when the send returns bytes it already copied. */
static int send_blocker(struct sl_sock *s, bool sent)
{
	int err;

	/* SHUT_WR is checked under tx_lock, where it orders against shutdown. */
	if (atomic_load(&s->reset) || sl_conn_peer_died(s)) {
		if (sent)
			return EPIPE;
		sl_conn_note_error(s);
		err = atomic_exchange(&s->pending_error, 0);
		return err ? err : EPIPE;
	}
	if (atomic_load_explicit(&s->own_ctl->peer_state, memory_order_acquire) & SL_PEER_CLOSED)
		return sent ? EPIPE : SEND_TO_CLOSED;
	return 0;
}

/* A position in an iovec array, advanced as bytes are copied; or, with
 * fill set, a source that writes straight into the ring (sl_send_fill). */
struct iov_cursor {
	const struct iovec *iov;
	int cnt, i;
	size_t off;
	size_t (*fill)(const struct sl_ring_tx *tx, size_t n, void *arg);
	void *arg;
};

static void cursor_skip_empty(struct iov_cursor *c)
{
	while (c->i < c->cnt && c->off == c->iov[c->i].iov_len) {
		c->i++;
		c->off = 0;
	}
}

/* gather_into_ring's general case: a fill source, or n spread over buffers. */
static size_t gather_pieces(struct sl_ring_tx *tx, struct iov_cursor *c, size_t n)
{
	uint64_t done = 0;

	if (c->fill) {
		size_t k = c->fill(tx, n, c->arg);

		sl_ring_tx_mirror_filled(tx, k, 0);
		return k;
	}
	while (done < n) {
		size_t k;

		cursor_skip_empty(c);
		k = c->iov[c->i].iov_len - c->off;
		if (k > n - done)
			k = n - done;
		sl_ring_tx_copy(tx, (const unsigned char *)c->iov[c->i].iov_base + c->off, k, done);
		c->off += k;
		done += k;
	}
	return n;
}

/* Copy n bytes from the cursor into the ring (unpublished), advancing it;
 * fewer only when a fill source ended. */
static inline size_t gather_into_ring(struct sl_ring_tx *tx, struct iov_cursor *c, size_t n)
{
	if (!c->fill && c->i < c->cnt && c->iov[c->i].iov_len - c->off >= n) { /* one buffer holds it all */
		sl_ring_tx_copy(tx, (const unsigned char *)c->iov[c->i].iov_base + c->off, n, 0);
		c->off += n;
		return n;
	}
	return gather_pieces(tx, c, n);
}

/* A send to a peer that closed in order: TCP accepts it (the bytes go out,
 * the peer's kernel answers with RST) and a later call learns of the reset,
 * with EPIPE since the peer's FIN came first.  So this one succeeds as far
 * as a send buffer (the ring) would take it, and the connection is reset
 * from here on, keeping what our ring still holds.  Nothing is copied from
 * a caller's buffer; a fill source (sendfile) is read as the kernel's would
 * be, into ring space the closed peer never reads, so the count and the
 * file position are what the kernel would report. */
__attribute__((cold, noinline))
static ssize_t send_to_closed(struct sl_sock *s, struct iov_cursor *cur, size_t len, int flags)
{
	if (atomic_load(&s->shut_wr))
		return broken_pipe(flags);
	if (len > s->tx.room)
		len = (size_t)s->tx.room;
	if (len && cur->fill) {
		sl_lock(&s->tx_lock);
		len = gather_into_ring(&s->tx, cur, len); /* never committed */
		sl_unlock(&s->tx_lock);
	}
	if (len == 0)
		return 0;
	atomic_store(&s->sent_after_close, true);
	sl_conn_note_error(s);
	sl_conn_wake_local(s);
	return (ssize_t)len;
}


/* Past n bytes of the cursor's buffers without touching them (MSG_TRUNC). */
static void cursor_advance(struct iov_cursor *c, size_t n)
{
	while (n) {
		size_t k;

		cursor_skip_empty(c);
		k = c->iov[c->i].iov_len - c->off;
		if (k > n)
			k = n;
		c->off += k;
		n -= k;
	}
}

/* scatter_from_ring's general case: n spread over several buffers. */
static void scatter_pieces(const struct sl_ring_rx *rx, struct iov_cursor *c, size_t n, uint64_t skip,
			   bool consume)
{
	struct iov_cursor at = *c;
	uint64_t done = 0;

	while (done < n) {
		size_t k;

		cursor_skip_empty(&at);
		k = at.iov[at.i].iov_len - at.off;
		if (k > n - done)
			k = n - done;
		sl_ring_rx_peek(rx, (unsigned char *)at.iov[at.i].iov_base + at.off, k, skip + done);
		at.off += k;
		done += k;
	}
	if (consume)
		*c = at;
}

/* Copy n bytes from the ring (from offset skip) into the cursor's buffers;
 * the cursor advances only if consume is set (MSG_PEEK leaves it). */
static inline void scatter_from_ring(const struct sl_ring_rx *rx, struct iov_cursor *c, size_t n, uint64_t skip,
				     bool consume)
{
	if (c->i < c->cnt && c->iov[c->i].iov_len - c->off >= n) { /* one buffer takes it all */
		sl_ring_rx_peek(rx, (unsigned char *)c->iov[c->i].iov_base + c->off, n, skip);
		if (consume)
			c->off += n;
		return;
	}
	scatter_pieces(rx, c, n, skip, consume);
}

/* Takes lock l if the connection is still the caller's to use; else the
 * call ends with *result: it moved to kernel TCP (*plain set, the rest goes
 * there) or another thread closed it. */
static bool lock_connection(struct sl_sock *s, struct sl_lock *l, size_t done, bool *plain, ssize_t *result)
{
	sl_lock(l);
	if (sl_fell_back(s)) {
		*plain = true;
		*result = (ssize_t)done;
	} else if (!s->seg) {
		*result = done ? (ssize_t)done : io_fail(EBADF);
	} else {
		return true;
	}
	sl_unlock(l);
	return false;
}

static ssize_t send_accelerated(struct sl_sock *s, struct iov_cursor *cur, size_t len, int flags, bool *plain)
{
	size_t sent = 0;
	ssize_t ended_with;
	int64_t space;
	uint64_t read_seen = 0;
	bool check_peer;
	struct sl_spin_wait sw;
	int err, r;

	for (;;) {
		/* While our offer is out, an acceptor that refused it (or a forked
		 * holder that revoked it) must not find more bytes in the ring, and
		 * a client that keeps sending to a plain server moves there once
		 * the deadline passed, without waiting to block.  A send's first
		 * look asks the kernel socket too (one poll): a connection the
		 * kernel reset (its listener closed with it queued) fails there
		 * as on kernel TCP, instead of taking bytes into a ring its
		 * fall-back then leaves behind. */
		if (__builtin_expect(!send_clear(s), 0)) {
			if (sl_agree_plain(s, sent ? SL_AGREE_POLL : SL_AGREE_WAIT)) {
				*plain = true;
				return (ssize_t)sent;
			}
			err = send_blocker(s, sent != 0);
			if (err == SEND_TO_CLOSED)
				return send_to_closed(s, cur, len, flags);
			if (err) {
				if (sent)
					break;
				return err == EPIPE ? broken_pipe(flags) : io_fail(err);
			}
		}
		if (!lock_connection(s, &s->tx_lock, sent, plain, &ended_with))
			return ended_with;
		if (atomic_load(&s->shut_wr)) { /* shut down while we were outside the lock */
			sl_unlock(&s->tx_lock);
			if (sent)
				break;
			return broken_pipe(flags);
		}
		sl_claim_tx(s);
		space = sl_ring_tx_space(&s->tx, len - sent);
		read_seen = s->tx.read_seen; /* the index the space was measured against */
		if (space > 0) {
			size_t n = len - sent < (uint64_t)space ? len - sent : (size_t)space;

			/* Publish a large send in quarter rings so the receiver copies
			 * out while we still copy in, instead of taking turns. */
			if (n > s->tx.cap / 4)
				n = (size_t)(s->tx.cap / 4);
			if (!sl_ring_tx_reserve(&s->tx, n)) {
				sl_unlock(&s->tx_lock);
				/* Out of memory: a loud reset now, never a SIGBUS later. */
				sl_conn_reset(s, "no memory to reserve more of the ring");
				continue;
			}

			size_t put = gather_into_ring(&s->tx, cur, n);

			if (put < n) /* the fill source ended: this is the last of it */
				len = sent + put;
			n = put;
			if (flags & MSG_OOB) /* the last byte of what is sent is urgent */
				sl_urg_publish(s, s->tx.write + n);
			sl_ring_tx_commit(&s->tx, n);
			sl_stat_add(&sl_ctr(s)->tx_bytes, n);
			sl_offer_sent(s);
			sent += n;
		}
		check_peer = ++s->sends_since_check >= SENDS_PER_LIVENESS_CHECK;
		if (check_peer) {
			s->sends_since_check = 0;
			sl_conn_fence_review_locked(s);
		}
		sl_unlock(&s->tx_lock);
		/* Data for a dead peer would vanish into its ring: ask the kernel
		 * now and then, as TCP learns of it from the peer's RST. */
		if (check_peer)
			sl_conn_check_peer(s);
		if (space < 0) {
			sl_conn_reset(s, "peer published an impossible read index");
			continue;
		}
		if (space > 0)
			/* Fenced already by the xchg publish; unfenced sends leave
			 * the fence to a sleeping peer's membarrier. */
			sl_conn_after_produce(s, !s->tx.write_combining);
		if (sent == len)
			break;
		if (space > 0)
			continue; /* more may fit: the put was capped at a quarter ring */
		/* A full ring while the offer is out: maybe nobody will read it. */
		if (sl_agree_plain(s, SL_AGREE_WAIT))
			continue;
		if (sent && sl_io_nonblocking(s, flags)) {
			atomic_fetch_add_explicit(&s->tx_blocked, 1, memory_order_relaxed);
			sl_evq_notify_local(s); /* our sets ask the peer for room now */
			break;
		}
		if (sl_conn_spin(s, flags, 1, space_freed, read_seen, &sw))
			continue;
		if (sl_io_nonblocking(s, flags)) {
			if (sl_conn_check_peer(s) || sl_agree_plain(s, SL_AGREE_WAIT))
				continue;
			atomic_fetch_add_explicit(&s->tx_blocked, 1, memory_order_relaxed);
			sl_evq_notify_local(s);
			return io_fail(EAGAIN);
		}
		r = sl_wait(s, POLLOUT, false);
		sl_conn_slept(s, &sw);
		if (r < 0) {
			if (sent)
				break;
			return -1;
		}
	}
	if ((flags & MSG_OOB) && sent)
		sl_urg_signal(s);
	return (ssize_t)sent;
}

enum peer_end { END_NONE, END_EOF, END_RESET };

static bool rx_pending(struct sl_sock *s)
{
	int64_t avail;

	sl_lock(&s->rx_lock);
	avail = sl_rx_waiting(s);
	if (avail > 0)
		sl_urg_ready(s, &avail); /* an urgent byte at the head is not data */
	sl_unlock(&s->rx_lock);
	return avail != 0;
}

/* Has the stream ended for us?  Read before the final look at the ring:
 * the peer's data is visible once its FIN is. */
static enum peer_end stream_end(struct sl_sock *s)
{
	uint32_t ps = atomic_load_explicit(&s->own_ctl->peer_state, memory_order_acquire);

	if (atomic_load(&s->reset) || sl_conn_peer_died(s))
		return END_RESET;
	if (atomic_load(&s->shut_rd) || (ps & (SL_PEER_SHUT_WR | SL_PEER_CLOSED)) || atomic_load(&s->peer_gone))
		return END_EOF;
	return END_NONE;
}

/* The result of a recv at the end of the stream (our ring is empty): 0, or
 * the pending ECONNRESET if no poll, send or SO_ERROR took it first.  After
 * the peer's FIN the kernel's recv returns 0 (SOCK_DONE) even with an error
 * pending: a reset that followed it is left for send and SO_ERROR. */
static ssize_t end_result(struct sl_sock *s, enum peer_end end)
{
	int err;

	if (end == END_EOF)
		return 0;
	if (sl_conn_fin_first(s)) {
		sl_conn_note_error(s);
		return 0;
	}
	sl_conn_note_error(s);
	atomic_store(&s->reset, true); /* nothing more will arrive */
	err = atomic_exchange(&s->pending_error, 0);
	return err ? io_fail(err) : 0;
}

/* What a recv of len bytes waits for before it returns (kernel TCP's
 * sock_rcvlowat): all of it with MSG_WAITALL, else the low-water mark
 * (1 unless SO_RCVLOWAT) or len if less.  MSG_PEEK|MSG_WAITALL returns
 * what it found, as it always has here. */
static uint64_t recv_target(struct sl_sock *s, size_t len, int flags)
{
	uint64_t mark;

	if ((flags & (MSG_WAITALL | MSG_PEEK)) == MSG_WAITALL)
		return len;
	mark = sl_conn_rcv_mark(s);
	return mark < len ? mark : len;
}

static ssize_t recv_accelerated(struct sl_sock *s, struct iov_cursor *cur, size_t len, int flags, bool *plain)
{
	size_t got = 0;
	uint64_t target;
	ssize_t ended_with;
	int64_t avail;
	uint64_t read_seen, skip;
	bool wake_sender;
	enum peer_end end;
	struct sl_spin_wait sw;
	int r;

	if (len == 0)
		return 0;
	target = recv_target(s, len, flags);
	for (;;) {
		bool for_room = false;

		if (!lock_connection(s, &s->rx_lock, got, plain, &ended_with))
			return ended_with;
		sl_claim_rx(s);
		/* A peek looking again must see what came since: the cached
		 * index stops at what the last look saw. */
		avail = atomic_load(&s->reset) ? 0 :
			(flags & MSG_PEEK) ? sl_ring_rx_avail_fresh(&s->rx) : sl_ring_rx_avail(&s->rx);
		skip = 0;
		if (avail > 0 && sl_urg_any(s)) {
			bool stop = false;

			/* A read stops at the urgent mark; the urgent byte leaves
			 * the stream unless SO_OOBINLINE. */
			uint64_t published = s->rx.published;

			sl_urg_refresh(s); /* may consume a passed urgent byte */
			for_room = s->rx.published != published;
			avail = sl_ring_rx_avail(&s->rx);
			if (avail > 0)
				avail = (int64_t)sl_urg_clip(s, (uint64_t)avail, got != 0, &skip, &stop);
			if (stop) {
				sl_unlock(&s->rx_lock);
				break;
			}
			if (skip && !(flags & MSG_PEEK)) {
				for_room |= sl_ring_rx_consume(&s->rx, 1, sl_side_shared(s));
				sl_urg_passed(s);
				skip = 0;
			}
		}
		read_seen = s->rx.read + skip;
		if (avail > 0) {
			size_t n = len - got < (uint64_t)avail ? len - got : (size_t)avail;

			/* MSG_TRUNC: the bytes are taken (or peeked) uncopied. */
			if (!(flags & MSG_TRUNC))
				scatter_from_ring(&s->rx, cur, n, skip, !(flags & MSG_PEEK));
			else if (!(flags & MSG_PEEK))
				cursor_advance(cur, n);
			if (flags & MSG_PEEK) {
				got = n;
			} else {
				/* Shared with a forked process: publish at once, so
				 * whichever reads next starts exactly here. */
				for_room |= sl_ring_rx_consume(&s->rx, n, sl_side_shared(s));
				if (s->urg.state != SL_URG_NONE)
					sl_urg_passed(s);
				sl_stat_add(&sl_ctr(s)->rx_bytes, n);
				sl_offer_received(s);
				got += n;
			}
		}
		wake_sender = avail > 0 && !(flags & MSG_PEEK) && sl_conn_after_consume_locked(s, for_room);
		sl_unlock(&s->rx_lock);
		if (wake_sender)
			s->fabric->stimulate(s, SL_TOKEN_SPACE);
		if (avail < 0) {
			sl_conn_reset(s, "peer wrote an impossible write index");
			continue;
		}
		if (got >= target)
			break;
		if (avail > 0 && !(flags & MSG_PEEK))
			continue;
		/* A peek below the mark found all there is: it waits for more. */
		if (avail > 0)
			read_seen = s->rx.write_seen;
		end = stream_end(s);
		if (end != END_NONE) {
			if (got && (flags & MSG_PEEK))
				break;
			if (!atomic_load(&s->reset) && rx_pending(s))
				continue;
			if (got)
				break;
			return end_result(s, end);
		}
		/* An empty ring while our offer is out: a plain acceptor may have
		 * spoken on the kernel socket, or never will attach. */
		if (sl_agree_plain(s, SL_AGREE_WAIT)) {
			*plain = true;
			return (ssize_t)got;
		}
		/* Waiting (or about to say EAGAIN to an event loop): the
		 * time for the set-up work kept off the connect path (idle.c). */
		sl_about_to_wait();
		if (sl_conn_spin(s, flags, 0, data_arrived, read_seen, &sw))
			continue;
		if (sl_io_nonblocking(s, flags)) {
			if (got)
				break;
			/* An event loop that never sleeps in scilan must still see
			 * the peer die, as it would see a FIN or RST. */
			if (sl_conn_check_peer(s))
				continue;
			if (sl_agree_plain(s, SL_AGREE_WAIT)) {
				*plain = true;
				return (ssize_t)got;
			}
			return io_fail(EAGAIN);
		}
		r = sl_wait(s, POLLIN, false);
		sl_conn_slept(s, &sw);
		if (r < 0) {
			if (got)
				break;
			return -1;
		}
	}
	return (ssize_t)got;
}

/* finish_plain's kernel call, counted for a connection that may yet move
 * onto the rings (promotion_trigger.h); -2 when it started moving since
 * the call chose the kernel: the caller goes the library's way. */
static ssize_t kernel_msg(struct sl_sock *s, struct msghdr *msg, int flags, bool sending)
{
	struct sl_sock *k = NULL;
	ssize_t r;

	if (sl_promote_armed(atomic_load_explicit(&s->promote_role, memory_order_relaxed))) {
		if (!sl_promote_kernel_enter(s))
			return -2;
		k = s;
	}
	r = sending ? sl_sys.sendmsg(s->fd, msg, flags) : sl_sys.recvmsg(s->fd, msg, flags);
	sl_promote_kernel_leave(k);
	return r;
}

/* The rest of a call on the kernel socket, after the connection fell back
 * (agree.c); done bytes went through the ring (and were moved on).  Cold,
 * like the other rare ends of a call: inlined, its iovec array would widen
 * every send's and recv's frame. */
__attribute__((cold, noinline))
static ssize_t finish_plain(struct sl_sock *s, struct iov_cursor *cur, ssize_t done, int flags, bool sending)
{
	struct iovec stack[8], *rest = stack;
	struct msghdr msg = { 0 };
	size_t left = 0;
	int n = 0;
	ssize_t r;

	if (done < 0)
		return done;
	cursor_skip_empty(cur);
	if (cur->cnt - cur->i > (int)(sizeof(stack) / sizeof(stack[0])) &&
	    !(rest = malloc(sizeof(*rest) * (size_t)(cur->cnt - cur->i))))
		return done ? done : io_fail(ENOMEM);
	for (int i = cur->i; i < cur->cnt; i++, n++) {
		size_t off = i == cur->i ? cur->off : 0;

		rest[n].iov_base = (char *)cur->iov[i].iov_base + off;
		rest[n].iov_len = cur->iov[i].iov_len - off;
		left += rest[n].iov_len;
	}
	msg.msg_iov = rest;
	msg.msg_iovlen = (size_t)n;
	if (sending) {
		/* After a fail-over a program that only sends completes the
		 * strip here, never waiting: it takes only the peer's header and
		 * what we had read already, and it ends the move's 5 s user
		 * timeout, which would otherwise outlive the move.  An error its
		 * read takes (a reset) is the send's, as the kernel reports it. */
		if (atomic_load(&s->strip_pending) && sl_fail_over_strip(s, MSG_DONTWAIT) < 0 && errno != EAGAIN &&
		    errno != EWOULDBLOCK)
			r = -1; /* the connection's error, which the strip's read took: the program's */
		else
			r = n ? kernel_msg(s, &msg, flags, true) : 0;
	}
	else if (done && (!(flags & MSG_WAITALL) || (flags & MSG_PEEK)))
		r = 0;
	else if (atomic_load(&s->strip_pending) && sl_fail_over_strip(s, flags) < 0)
		r = -1; /* the peer's fail-over header and re-sent bytes come first */
	else
		r = kernel_msg(s, &msg, flags, false);
	if (r == -2) /* it started moving onto the rings since (promotion) */
		r = sending ? sl_send_general(s, rest, n, left, flags) : sl_recv_general(s, rest, n, left, flags);
	if (rest != stack)
		free(rest);
	if (r < 0)
		return done ? done : -1;
	return done + r;
}

/* recv(MSG_OOB): TCP's one urgent byte; never blocks. */
__attribute__((cold, noinline))
static ssize_t recv_urgent(struct sl_sock *s, const struct iovec *iov, int cnt, size_t len, int flags)
{
	unsigned char byte;
	bool dead;
	int err;

	dead = atomic_load(&s->reset) || (sl_conn_peer_died(s) && !sl_conn_fin_first(s));
	sl_lock(&s->rx_lock);
	if (!s->seg) {
		sl_unlock(&s->rx_lock);
		return io_fail(EBADF);
	}
	sl_claim_rx(s);
	err = sl_urg_take(s, flags & MSG_PEEK, &byte, dead);
	sl_unlock(&s->rx_lock);
	if (err)
		return io_fail(err);
	if (len == 0 || (flags & MSG_TRUNC))
		return len ? 1 : 0; /* the byte is taken all the same, uncopied */
	for (int i = 0; i < cnt; i++) {
		if (iov[i].iov_len) {
			*(unsigned char *)iov[i].iov_base = byte;
			break;
		}
	}
	return 1;
}

/* A MSG_ZEROCOPY send on a socket with SO_ZEROCOPY set: its sender waits
 * for each send's completion on the error queue, which only the kernel
 * writes; so the connection moves to kernel TCP, its bytes in order, and
 * the send goes there.  Without SO_ZEROCOPY the kernel ignores the flag, as
 * the ring does. */
__attribute__((cold, noinline))
static bool moved_for_zerocopy(struct sl_sock *s)
{
	int on = 0;
	socklen_t len = sizeof(on);

	if (sl_sys.getsockopt(s->fd, SOL_SOCKET, SO_ZEROCOPY, &on, &len) < 0 || !on)
		return false;
	return sl_bypass_leave(s, SL_FB_ZEROCOPY);
}

ssize_t sl_send_general(struct sl_sock *s, const struct iovec *iov, int cnt, size_t len, int flags)
{
	struct iov_cursor cur = { .iov = iov, .cnt = cnt };
	bool plain = false;
	ssize_t r;

	if ((flags & MSG_ZEROCOPY) && moved_for_zerocopy(s))
		return finish_plain(s, &cur, 0, flags, true);
	/* Urgent data has no place in the seam's counts: a late offer out is
	 * decided first, and the connection never offers again. */
	if ((flags & MSG_OOB) && sl_promote_stop(s) && !sl_sock_on_rings(s))
		return finish_plain(s, &cur, 0, flags, true);
	if (sl_sock_promoting(s)) {
		size_t done;
		int how = sl_promote_send(s, iov, cnt, len, flags, &done);

		if (how <= 0)
			return how < 0 ? -1 : (ssize_t)done;
		cursor_advance(&cur, done);
		r = send_accelerated(s, &cur, len - done, flags, &plain);
		r = plain ? finish_plain(s, &cur, r, flags, true) : r;
		return r < 0 ? (done ? (ssize_t)done : -1) : (ssize_t)done + r;
	}
	r = send_accelerated(s, &cur, len, flags, &plain);
	return plain ? finish_plain(s, &cur, r, flags, true) : r;
}

/* MSG_WAITALL waits for all of len, as the kernel's: a read across the
 * seam stops at each arrival of the peer's kernel bytes and at its point,
 * so the call goes on, in a loop (each arrival is the peer's doing: no
 * recursion it could deepen), with more kernel bytes, then the ring's.  An
 * error, a signal or the end of the stream returns what was read, as the
 * kernel's MSG_WAITALL does. */
static ssize_t recv_rest_after_seam(struct sl_sock *s, const struct iovec *iov, int cnt, size_t len, int flags,
				    size_t done)
{
	while (done < len) {
		struct iovec stack[8], *rest;
		int n = sl_iov_rest(iov, cnt, done, stack, 8, &rest);
		bool handled = false;
		ssize_t more = -1;

		if (n < 0)
			break;
		if (atomic_load_explicit(&s->seam_pending, memory_order_acquire))
			more = sl_promote_recv(s, rest, n, flags, &handled);
		/* Past the seam: the ring's part, whole (sl_recv_general does
		 * not come back here once the seam is crossed). */
		if (!handled)
			more = sl_recv_general(s, rest, n, len - done, flags);
		if (rest != stack)
			free(rest);
		if (more <= 0)
			break;
		done += (size_t)more;
		if (!handled)
			break;
	}
	return (ssize_t)done;
}

ssize_t sl_recv_general(struct sl_sock *s, const struct iovec *iov, int cnt, size_t len, int flags)
{
	struct iov_cursor cur = { .iov = iov, .cnt = cnt };
	bool plain = false;
	ssize_t r;

	if (flags & MSG_ERRQUEUE) /* the kernel socket's (recvmsg passes its control data) */
		return sl_sys.recvmsg(s->fd, &(struct msghdr){ .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)cnt },
				      flags);
	if (flags & ~(MSG_OOB | MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT | MSG_WAITALL | MSG_NOSIGNAL | MSG_CMSG_CLOEXEC))
		return io_fail(EOPNOTSUPP);
	if (flags & MSG_OOB) {
		/* A plain connection's urgent byte is its kernel socket's
		 * (with a late offer out, decided first). */
		if (sl_promote_stop(s) && !sl_sock_on_rings(s))
			return sl_sys.recvmsg(s->fd, &(struct msghdr){ .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)cnt },
					      flags);
		return recv_urgent(s, iov, cnt, len, flags);
	}
	if (atomic_load_explicit(&s->seam_pending, memory_order_acquire)) {
		bool handled;

		/* A zero-length read across the seam does not wait for data. */
		if (len == 0)
			return 0;
		r = sl_promote_recv(s, iov, cnt, flags, &handled);
		if (handled)
			return r > 0 && (size_t)r < len && (flags & (MSG_WAITALL | MSG_PEEK)) == MSG_WAITALL
				       ? recv_rest_after_seam(s, iov, cnt, len, flags, (size_t)r)
				       : r;
	}
	if (len == 0) {
		/* TCP's low-water mark is at least one byte even for a zero-length
		 * read: it waits for data (EAGAIN when non-blocking), then returns 0. */
		char probe;
		struct iovec one = { &probe, 1 };
		struct iov_cursor peek = { .iov = &one, .cnt = 1 };

		r = recv_accelerated(s, &peek, 1, flags | MSG_PEEK, &plain);
		if (plain && atomic_load(&s->strip_pending) && sl_fail_over_strip(s, flags) < 0)
			return -1;
		if (plain)
			r = sl_sys.recvmsg(s->fd, &(struct msghdr){ 0 }, flags);
		return r < 0 ? -1 : 0;
	}
	r = recv_accelerated(s, &cur, len, flags, &plain);
	return plain ? finish_plain(s, &cur, r, flags, false) : r;
}

ssize_t sl_send_fill(struct sl_sock *s, size_t len, int flags,
		     size_t (*fill)(const struct sl_ring_tx *tx, size_t n, void *arg), void *arg)
{
	struct iov_cursor cur = { .fill = fill, .arg = arg };
	bool plain = false;
	ssize_t r;

	if (len > (size_t)SSIZE_MAX)
		len = (size_t)SSIZE_MAX;
	/* A late offer out (promotion): decided first, as the caller's kernel
	 * send, if it comes to that, is not one the switch can wait for. */
	if (sl_sock_promoting(s))
		sl_promote_settle(s);
	r = send_accelerated(s, &cur, len, flags, &plain);
	/* Kernel TCP now, before anything was copied: a fill source cannot go
	 * through finish_plain, so the caller sends through the kernel.  After
	 * a partial send the next call finds the socket plain. */
	if (plain && r <= 0) {
		errno = EXDEV;
		return -1;
	}
	return r;
}
