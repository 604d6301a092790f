/* bypass.c — after the agreement: bytes on the companion kernel socket of a
 * ring connection mean the peer's stream bypassed the hook (io_uring, a
 * program without the hook holding the fd).  Continue on kernel TCP with
 * every byte in order when that is unambiguous, else reset loudly
 * (ARCHITECTURE.md, "Bypass after agreement").
 */
#include "conn/agree.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "conn/conn.h"
#include "conn/failover.h"
#include "conn/promotion_trigger.h"
#include "fabric/fabric.h"
#include "runtime/log.h"
#include "ring/segment.h"
#include "runtime/stats_file.h"
#include "runtime/sys.h"
#include "runtime/testing.h"
#include "ring/urgent.h"

/* The peer's side claimed the move: its word follow within this.  Also how
 * long a move waits for a kernel socket that takes (or gives) nothing. */
#define PEER_MOVE_WAIT_MS 5000

/* testing.h: how long a move waits for the kernel socket (the peer to read
 * what we re-send, or to re-send what it owes us) before it resets. */
int sl_bypass_wait_ms = PEER_MOVE_WAIT_MS;

/* Send all len bytes of buf onto the kernel socket.  A peer that stops
 * reading its kernel socket (a hostile one marked the move) must not hold
 * us forever, but one that takes them, however slowly, is never cut off. */
static bool send_all(struct sl_sock *s, const unsigned char *buf, size_t len)
{
	struct pollfd pfd = { .fd = s->fd, .events = POLLOUT };
	int waited = 0;

	while (len) {
		ssize_t n = sl_sys.send(s->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			waited = 0;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (waited++ >= sl_bypass_wait_ms / 10) {
				errno = ETIMEDOUT;
				return false;
			}
			sl_sys.poll(&pfd, 1, 10);
		} else if (n < 0 && errno != EINTR) {
			return false;
		}
	}
	return true;
}

bool sl_move_resend(struct sl_sock *s, const void *head, size_t head_len, const unsigned char *ring, uint64_t from,
		    uint64_t to)
{
	if (head_len && !send_all(s, head, head_len))
		return false;
	while (from < to) {
		uint64_t off = from & (s->tx.cap - 1), piece = to - from;

		if (piece > s->tx.cap - off)
			piece = s->tx.cap - off;
		if (!send_all(s, ring + off, (size_t)piece))
			return false;
		from += piece;
	}
	if (atomic_load(&s->shut_wr))
		sl_sys.shutdown(s->fd, SHUT_WR);
	return true;
}

/* Our ring bytes did not all reach the kernel socket.  A socket error is
 * the connection's own end (the program sees it next); a peer that does not
 * take them is a reset, never a stream with a hole. */
static const char *resend_failed(struct sl_sock *s)
{
	if (errno == ETIMEDOUT)
		return "the peer does not read the kernel socket the connection moved to";
	sl_debug("fd %d: the kernel socket took only part of the ring bytes: %s", s->fd, strerror(errno));
	return NULL;
}

/* Read and drop n bytes of the kernel stream: the peer re-sent them, and we
 * had read them from the ring already. */
static bool skip_kernel(struct sl_sock *s, uint64_t n)
{
	struct pollfd pfd = { .fd = s->fd, .events = POLLIN };
	char sink[1024]; /* small: the caller may be on a 16 KiB thread stack */
	int waited = 0;

	while (n) {
		ssize_t got = sl_sys.recv(s->fd, sink, n < sizeof(sink) ? (size_t)n : sizeof(sink), MSG_DONTWAIT);

		if (got > 0) {
			n -= (uint64_t)got;
			waited = 0;
		} else if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			/* Bytes a peer owes us but never sends (a hostile
			 * plain_from) must not hold us forever either. */
			if (waited++ >= sl_bypass_wait_ms / 10)
				return false;
			sl_sys.poll(&pfd, 1, 10);
		} else if (got == 0 || errno != EINTR) {
			return false;
		}
	}
	return true;
}

static bool kernel_bytes(struct sl_sock *s)
{
	char b;

	sl_urg_drop_carriers(s);
	return sl_sys.recv(s->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 1;
}

/* We saw the peer's bytes on the kernel socket first.  Unambiguous when the
 * peer never wrote into our ring (the kernel bytes start its stream) and it
 * consumed none of what we wrote into its ring (published read index 0: the
 * first consume publishes at once) or all of it.  Returns why not, or NULL
 * when the connection may go plain. */
/* lead() found the word moved by someone else meanwhile: look again. */
static const char again[] = "";

static const char *lead(struct sl_sock *s, _Atomic uint32_t *word)
{
	uint32_t attached = SL_OFFER_ATTACHED;
	uint64_t rx_w = atomic_load_explicit(s->rx.write_idx, memory_order_acquire);
	uint64_t v = atomic_load_explicit(s->tx.read_copy, memory_order_acquire);
	uint64_t w = atomic_load_explicit(s->tx.remote_write, memory_order_acquire);

	if (rx_w != 0)
		return "the peer wrote both into the ring and onto the kernel socket (a program bypassing scilan "
		       "shares its end): the order of its bytes is lost";
	if (w - v > s->tx.cap)
		return "the peer published an impossible read index when it bypassed the ring";
	if (v != 0 && v != w)
		return "the peer bypassed scilan after reading part of our ring: where its kernel stream resumes "
		       "is unknown";
	/* Claim the move for our side (forked holders, or the peer bypassing
	 * too at the same moment, must not move it twice). */
	if (word && !atomic_compare_exchange_strong(word, &attached, SL_OFFER_LED + (uint32_t)s->own_area))
		return again;
	/* Tell the peer's hook first, so that it stops using the rings and
	 * drops what it read from its ring beyond v; then re-send from v. */
	atomic_store_explicit(&s->peer_ctl->plain_from, v, memory_order_relaxed);
	sl_segment_set_state(s, SL_PEER_PLAIN);
	/* A locked operation: PLAIN is visible before we look at rx_write
	 * again (a full fence on x86, and TSan understands it). */
	atomic_fetch_or(&s->peer_ctl->peer_state, 0);
	if (atomic_load(s->rx.write_idx) != 0)
		return "the peer wrote into the ring while its bytes arrived on the kernel socket";
	sl_conn_wake_peer(s);
	if (!sl_move_resend(s, NULL, 0, s->tx.data, v, w))
		return resend_failed(s);
	return NULL;
}

/* The peer went plain first (lead() on its side, or a leave): it re-sends
 * our ring from plain_from, which we read up to rx.read already; what we
 * wrote into its ring beyond the read index it published we re-send. */
static const char *follow(struct sl_sock *s)
{
	uint64_t v = atomic_load_explicit(&s->own_ctl->plain_from, memory_order_acquire);
	uint64_t w, r, u;

	sl_claim_rx(s);
	sl_claim_tx(s);
	r = s->rx.read;
	w = atomic_load_explicit(s->tx.remote_write, memory_order_acquire);
	if (v > r || r - v > s->rx.cap)
		return "the peer moved to kernel TCP from an impossible point of our stream";
	/* The leader read our ring up to the index it published before PLAIN:
	 * 0 after a bypass (it had nothing to read), anything after a leave
	 * (sl_bypass_leave), which publishes it exactly.  The rest we re-send. */
	u = atomic_load_explicit(s->tx.read_copy, memory_order_acquire);
	if (u > w || w - u > s->tx.cap)
		return "the peer moved to kernel TCP from an impossible point of what we wrote into its ring";
	if (!skip_kernel(s, r - v))
		return "the peer's kernel stream ended before the bytes it re-sent";
	if (!sl_move_resend(s, NULL, 0, s->tx.data, u, w))
		return resend_failed(s);
	return NULL;
}

/* Our process is about to lose what the rings need (a seccomp filter):
 * we lead the move without kernel bytes to explain it.  Unlike lead(), our
 * receive ring may hold unread bytes: our read index, published exactly
 * before PLAIN, tells the follower where to re-send its ring from; and the
 * follower drops from our re-sent bytes what it had read already, so its
 * reads racing with us are fine.  The peer is hooked (it used the rings),
 * so it follows at its next call, which our wake-up brings about. */
static const char *leave(struct sl_sock *s, _Atomic uint32_t *word, enum sl_fb why)
{
	uint32_t attached = SL_OFFER_ATTACHED;
	uint64_t v, w;

	if (word && !atomic_compare_exchange_strong(word, &attached, SL_OFFER_LED + (uint32_t)s->own_area))
		return again;
	sl_claim_rx(s);
	sl_claim_tx(s);
	sl_ring_rx_publish(&s->rx);
	v = atomic_load_explicit(s->tx.read_copy, memory_order_acquire);
	w = s->tx.write;
	if (w < v || w - v > s->tx.cap)
		return "the peer published an impossible read index";
	atomic_store_explicit(&s->peer_ctl->plain_from, v, memory_order_relaxed);
	sl_segment_set_state(s, SL_PEER_PLAIN | (why == SL_FB_CLOSED_UNREAD ? SL_PEER_PLAIN_AT_CLOSE : 0));
	atomic_fetch_or(&s->peer_ctl->peer_state, 0);
	sl_conn_wake_peer(s);
	if (!sl_move_resend(s, NULL, 0, s->tx.data, v, w))
		return resend_failed(s);
	return NULL;
}

/* Tell both ends: the peer's hook sees RESET in the ring, and whatever
 * reads the peer's kernel socket gets an RST (a connect to AF_UNSPEC
 * disconnects the socket, which resets an established connection). */
static void reset_both(struct sl_sock *s, const char *why)
{
	sl_conn_reset(s, why);
	sl_sys_reset_tcp(s->fd);
}

/* The peer's side claimed the move (LED): its PLAIN and plain_from follow
 * at once; wait for them (or its reset). */
static bool wait_plain_bit(struct sl_sock *s)
{
	struct timespec one_ms = { 0, 1000000 };

	for (int i = 0; i < PEER_MOVE_WAIT_MS; i++) {
		uint32_t ps = atomic_load_explicit(&s->own_ctl->peer_state, memory_order_acquire);

		if (ps & SL_PEER_PLAIN)
			return true;
		if (ps & SL_PEER_RESET)
			return false;
		nanosleep(&one_ms, NULL);
	}
	return false;
}

/* Decide with the three locks held; why the connection must be reset, or
 * NULL; *plain when it is kernel TCP now.  leaving: move it even with no
 * bytes on the kernel socket (sl_bypass_leave). */
static const char *decide_locked(struct sl_sock *s, bool *plain, bool leaving, enum sl_fb *fb)
{
	_Atomic uint32_t *word = s->offer_word;
	uint32_t ps, w, led;
	const char *why;

	/* Our link went down (link_down.c): our own decision,
	 * never a word the peer could write. */
	if (atomic_load(&s->fail_over_due)) {
		/* A fork (or a descriptor passed on) since the decision: the
		 * other process would re-send and strip too. */
		if (s->fabric->fail_over_refused && (why = s->fabric->fail_over_refused(s)))
			return why;
		*fb = SL_FB_LINK_DOWN;
		why = sl_fail_over(s);
		*plain = !why;
		return why;
	}
	for (;;) {
		/* The bit before the word: the leader claims the word first. */
		ps = atomic_load_explicit(&s->own_ctl->peer_state, memory_order_acquire);
		w = word ? atomic_load_explicit(word, memory_order_acquire) : SL_OFFER_ATTACHED;
		led = SL_OFFER_LED + (uint32_t)s->own_area;
		/* The peer can write the word (it is in memory both ends map):
		 * a value no move leaves there would make the claims below spin. */
		if (w != SL_OFFER_ATTACHED && w != SL_OFFER_FOLLOWED && w != led && w != (led ^ 1u))
			return "the connection's agreement word was corrupted";
		if (w == SL_OFFER_FOLLOWED || w == led) {
			/* Another process of ours already moved what was ours to move. */
			*plain = true;
			return NULL;
		}
		if (w == (led ^ 1u) || (ps & SL_PEER_PLAIN)) {
			if (!(ps & SL_PEER_PLAIN)) {
				if (!wait_plain_bit(s))
					return "the peer claimed to move the connection to kernel TCP and never did";
				ps = atomic_load_explicit(&s->own_ctl->peer_state, memory_order_acquire);
			}
			/* The first of our processes follows, the others just go plain. */
			if (word && !atomic_compare_exchange_strong(word, &w, SL_OFFER_FOLLOWED)) {
				*plain = true;
				return NULL;
			}
			*fb = (ps & SL_PEER_PLAIN_AT_CLOSE) ? SL_FB_CLOSED_UNREAD : SL_FB_PEER_MOVED;
			why = follow(s);
		} else if (!leaving && atomic_load(&s->seam_pending)) {
			/* Promoted, the peer's bytes before its switch point are
			 * still to be read from the kernel socket: the seam's,
			 * not a bypass (promotion.c reads them). */
			return NULL;
		} else if (kernel_bytes(s)) {
			/* A device peer whose link went down before ours did
			 * fails over first: its header starts its kernel stream. */
			int h = s->fabric == &sl_fabric_dev ? sl_fail_over_seen(s) : 0;

			if (h < 0) {
				sl_agree_stir(s); /* the rest of the header is on its way */
				return NULL;
			}
			if (h > 0 && !s->tx.mirror)
				return "the peer failed over to kernel TCP, and this end keeps no copy of what it sent "
				       "(SCILAN_FAIL_OVER=off here): the bytes in flight cannot be re-sent";
			if (h > 0 && s->fabric->fail_over_refused && (why = s->fabric->fail_over_refused(s)))
				return why;
			if (h > 0) {
				atomic_store(&s->fail_over_due, true);
				*fb = SL_FB_LINK_DOWN;
				why = sl_fail_over(s);
				*plain = !why;
				return why;
			}
			*fb = SL_FB_BYPASS;
			why = lead(s, word);
			if (why == again)
				continue;
		} else if (leaving) {
			why = leave(s, word, *fb);
			if (why == again)
				continue;
		} else {
			return NULL; /* the end of the stream: the peer-death path's business */
		}
		*plain = !why;
		return why;
	}
}

/* leave: SL_FB_NONE for a bypass, else why this process leaves the rings. */
static bool move(struct sl_sock *s, enum sl_fb leave)
{
	bool leaving = leave != SL_FB_NONE;
	enum sl_fb fb = leaving ? leave : SL_FB_PEER_MOVED;
	const char *why = NULL;
	bool plain = false;

	/* The device driver marked the link down: every move (a bypass, a
	 * leave, a stall) first lets the fabric look at the link, outside our
	 * locks, so that it fails over rather than decide on a dead ring. */
	if (s->offer_word && atomic_load(s->offer_word) == SL_OFFER_LINK_DOWN && !atomic_load(&s->fail_over_due) &&
	    s->fabric->before_close)
		s->fabric->before_close(s);
	sl_lock(&s->tx_lock);
	sl_lock(&s->rx_lock);
	pthread_mutex_lock(&s->ctl_lock);
	atomic_fetch_and(&s->agree, ~SL_AGREE_STIRRED);
	if (sl_fell_back(s) || !s->seg || atomic_load(&s->reset)) {
		plain = sl_fell_back(s);
		goto out;
	}
	why = decide_locked(s, &plain, leaving, &fb);
	if (plain && fb == SL_FB_CLOSED_UNREAD) {
		/* Only the tail nobody had read moves, at one end's close: the
		 * connection was the rings' to the end, not a fallback (its
		 * stats slot closes with the socket). */
		sl_agree_mark_plain(s);
		atomic_store_explicit(&s->state, (int)SL_PLAIN, memory_order_release);
		sl_debug("fd %d: %s; that tail goes by kernel TCP", s->fd, sl_fb_text(fb));
	} else if (plain) {
		sl_agree_mark_plain(s);
		sl_stats_conn_close(s);
		/* Not below 0: a forked child counts from 0 what its parent accelerated. */
		for (uint64_t a = atomic_load(&sl_totals.accelerated);
		     a && !atomic_compare_exchange_weak(&sl_totals.accelerated, &a, a - 1);)
			;
		sl_fallback(s, fb, (enum sl_fb_side)s->own_area);
		atomic_store_explicit(&s->state, (int)SL_PLAIN, memory_order_release);
		if (fb == SL_FB_LINK_DOWN)
			sl_promote_arm_return(s); /* failover.c said it */
		else if (leaving)
			/* Debug only: a sandboxed process's stderr may be a file
			 * it may no longer grow (OpenSSH sets RLIMIT_FSIZE 0:
			 * the write would kill it with SIGXFSZ). */
			sl_debug("fd %d: %s; the connection continues on kernel TCP", s->fd, sl_fb_text(fb));
		else
			sl_debug("fd %d: the peer bypassed the rings (its bytes came on the kernel socket); the "
				"connection continues on kernel TCP",
				s->fd);
	}
out:
	pthread_mutex_unlock(&s->ctl_lock);
	sl_unlock(&s->rx_lock);
	sl_unlock(&s->tx_lock);
	if (why)
		reset_both(s, why);
	if (plain)
		sl_conn_wake_local(s);
	return plain;
}

bool sl_bypass(struct sl_sock *s)
{
	return move(s, SL_FB_NONE);
}

bool sl_bypass_leave(struct sl_sock *s, enum sl_fb why)
{
	/* An offer still out is decided first: revoked, it is kernel TCP already. */
	if (sl_agree_pending(s) && sl_agree_decide(s, SL_AGREE_FORCE))
		return true;
	if (sl_agree_pending(s))
		return false;
	return move(s, why);
}
