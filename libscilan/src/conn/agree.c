/* agree.c — the connecting side of the agreement (ARCHITECTURE.md,
 * "Agreement"): it watches the offer word, its kernel socket and the clock,
 * revokes an offer nobody took, and moves the connection to kernel TCP with
 * every byte it wrote into the ring nobody read.
 */
#include "sync/clock.h"
#include "conn/agree.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "conn/conn.h"
#include "fabric/fabric.h"
#include "runtime/endpoint_key.h"
#include "runtime/log.h"
#include "runtime/sock_diag.h"
#include "runtime/stats_file.h"
#include "runtime/sys.h"

/* Another process of our side (fork) is copying the ring out: wait for it
 * at most this long before giving the connection up as reset. */
#define OTHER_FLUSH_WAIT_MS 10000

void sl_agree_start(struct sl_sock *s, _Atomic uint32_t *word)
{
	s->offer_word = word;
	s->agree_deadline_ns = sl_mono_ns() + (int64_t)SL_AGREE_WAIT_MS * 1000000;
	atomic_store_explicit(&s->agree, SL_AGREE_PENDING, memory_order_release);
}

short sl_agree_kernel_ready(struct sl_sock *s, short events)
{
	struct pollfd pfd = { .fd = s->fd, .events = events };

	return sl_sys.poll(&pfd, 1, 0) == 1 ? pfd.revents : 0;
}

/* While the offer is out nothing but the acceptor's own bytes (a plain
 * acceptor spoke first) or its close can make the kernel socket readable. */
static bool kernel_readable(struct sl_sock *s)
{
	return sl_agree_kernel_ready(s, POLLIN) != 0;
}

/* Still in the listener's accept queue: no process holds the acceptor's
 * end yet, so no acceptor had its chance (a busy server's backlog).  Asked
 * of the kernel by sock_diag; an end it cannot see (another network
 * namespace) counts as accepted, and the second stands. */
static bool acceptor_queued(struct sl_sock *s)
{
	struct sl_key local, peer;

	return sl_key_of_fd(s->fd, false, &local) == 0 && sl_key_of_fd(s->fd, true, &peer) == 0 &&
	       sl_diag_tcp_queued(s->fd, &peer, &local) == 1;
}

static bool due(struct sl_sock *s, enum sl_agree_mode mode)
{
	int64_t now;

	if (mode == SL_AGREE_FORCE || (atomic_load(&s->agree) & SL_AGREE_STIRRED))
		return true;
	now = sl_mono_ns();
	if (now >= atomic_load_explicit(&s->agree_deadline_ns, memory_order_relaxed)) {
		if (!acceptor_queued(s))
			return true;
		atomic_store_explicit(&s->agree_deadline_ns, now + (int64_t)SL_AGREE_WAIT_MS * 1000000,
				      memory_order_relaxed);
	}
	return mode == SL_AGREE_WAIT && kernel_readable(s);
}

/* Copy what our side wrote into the acceptor's ring onto the kernel socket,
 * in order, before any later send.  Nobody consumed any of it (the acceptor
 * never attached), so the ring holds exactly bytes [0, write).  False if a
 * send of ours took the kernel's pending error (the peer reset while we
 * copied): that error is the application's, which the caller then owes it. */
static bool flush_ring(struct sl_sock *s)
{
	uint64_t end = atomic_load_explicit(s->tx.remote_write, memory_order_acquire), done = 0;
	struct pollfd pfd = { .fd = s->fd, .events = POLLOUT };

	if (end > s->tx.cap) {
		/* Only the acceptor could have written that index: it broke the
		 * protocol, and the bytes cannot be known. */
		sl_warn("fd %d: connection reset: the ring's write index was corrupted before the offer was decided",
			s->fd);
		atomic_store(&s->reset, true);
		sl_conn_note_error(s);
		sl_sys.shutdown(s->fd, SHUT_RDWR);
		return true;
	}
	/* Closed where no hook saw it (sl_sock_release_stale): its kernel
	 * socket is gone, and the number names someone else's file, so nothing
	 * may be sent on it.  Bytes written are lost; where the acceptor reads
	 * the word they ended LOST before this (settle_locked), here (the
	 * device fabric, an offer the acceptor refused) only we can say so. */
	if (s->fd < 0) {
		if (end)
			sl_warn("a connection closed where the hook could not see it (a raw system call, io_uring) had "
				"%llu bytes for the accepting side: they are lost",
				(unsigned long long)end);
		return true;
	}
	/* A connection the kernel already reset (the listener closed before
	 * accepting it) takes nothing: a send would consume the error the
	 * application must see. */
	if (sl_agree_kernel_ready(s, POLLOUT) & POLLERR)
		return true;
	while (done < end) {
		ssize_t n = sl_sys.send(s->fd, s->tx.data + done, (size_t)(end - done), MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			done += (uint64_t)n;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			sl_sys.poll(&pfd, 1, -1);
		} else if (n < 0 && errno != EINTR) {
			int err = errno;

			/* The peer is gone.  EPIPE: the kernel keeps reporting it
			 * on the next call, as it would for bytes it had queued.
			 * Anything else was the pending error, now taken. */
			sl_debug("fd %d: %llu of %llu ring bytes reached the kernel socket: %s", s->fd,
				 (unsigned long long)done, (unsigned long long)end, strerror(err));
			return err == EPIPE;
		}
	}
	/* A shutdown the application made while the offer was out. */
	if (atomic_load(&s->shut_wr))
		sl_sys.shutdown(s->fd, SHUT_WR);
	if (atomic_load(&s->shut_rd))
		sl_sys.shutdown(s->fd, SHUT_RD);
	sl_debug("fd %d: the accepting side did not take the ring offer; %llu bytes moved to kernel TCP", s->fd,
		(unsigned long long)end);
	return true;
}

/* Closed where no hook saw it (sl_sock_release_stale): its bytes in the ring
 * can no longer reach the kernel socket.  0 if nothing was written. */
static uint64_t written_before_an_unseen_close(struct sl_sock *s)
{
	return s->fd >= 0 ? 0 : atomic_load_explicit(s->tx.remote_write, memory_order_acquire);
}

/* With tx_lock and ctl_lock held: take the decision the offer word allows.
 * Returns the word as it ends (ATTACHED, PLAIN, or REVOKED if another process
 * of ours never finished copying, or nothing could be decided: *lost says
 * why); *error_taken if our copy took the kernel's pending error. */
static uint32_t settle_locked(struct sl_sock *s, _Atomic uint32_t *word, bool *error_taken, const char **lost)
{
	uint32_t w = atomic_load_explicit(word, memory_order_acquire);
	uint64_t unseen;
	bool asked = false;

	for (int waited = 0;;) {
		/* Agreed, and maybe moved by a bypass since (bypass.c's business). */
		if (sl_offer_agreed(w))
			return SL_OFFER_ATTACHED;
		if (w == SL_OFFER_PLAIN)
			return w;
		if (w == SL_OFFER_LOST) {
			/* Another process of ours let it go, its bytes lost: the
			 * acceptor resets (a holder uncounted, a fork's child). */
			*lost = "another process holding it closed it where the hook could not see it, and its bytes "
				"were lost";
			return SL_OFFER_REVOKED;
		}
		if (w == SL_OFFER_REVOKED) {
			struct timespec one_ms = { 0, 1000000 };

			/* A forked holder of this connection is copying the ring out;
			 * our later bytes must follow its. */
			if (waited++ >= OTHER_FLUSH_WAIT_MS)
				return w;
			nanosleep(&one_ms, NULL);
			w = atomic_load_explicit(word, memory_order_acquire);
			continue;
		}
		/* Where another party decides (the device fabric's drivers),
		 * ask it first, once: agreed there means ATTACHED here. */
		if (s->fabric->offer_revoke && !asked) {
			int r = s->fabric->offer_revoke(s);

			asked = true;
			if (r == 0)
				return SL_OFFER_ATTACHED;
			if (r < 0) {
				*lost = r == -1 ? "the device link went down before the acceptor agreed: the ring bytes "
						  "are out of reach"
						: "the device refused to take the offer back: whether the acceptor reads "
						  "the ring bytes cannot be known";
				return SL_OFFER_REVOKED;
			}
		}
		/* Closed where no hook saw it, with bytes the acceptor was to
		 * read: they have no kernel socket to go to, so the acceptor is
		 * told to reset rather than read a clean end of stream (an shm
		 * acceptor reads the word; a device's asks its driver). */
		if (w == SL_OFFER_OFFERED && !s->fabric->offer_revoke && (unseen = written_before_an_unseen_close(s)) &&
		    atomic_compare_exchange_strong(word, &w, SL_OFFER_LOST)) {
			sl_warn("a connection closed where the hook could not see it (a raw system call, io_uring) had "
				"%llu bytes waiting for the accepting side's decision: they are lost, and its peer is "
				"told to reset",
				(unsigned long long)unseen);
			return SL_OFFER_PLAIN;
		}
		/* OFFERED, REFUSED (or garbage from the acceptor): exactly one
		 * compare-and-swap moves it on; an acceptor's ATTACHED may win. */
		if (atomic_compare_exchange_strong(word, &w, SL_OFFER_REVOKED)) {
			*error_taken = !flush_ring(s);
			atomic_store_explicit(word, SL_OFFER_PLAIN, memory_order_release);
			return SL_OFFER_PLAIN;
		}
	}
}

static bool fall_back(struct sl_sock *s, enum sl_fb why)
{
	_Atomic uint32_t *word;
	uint32_t w;
	bool plain, error_taken = false;
	const char *lost = NULL;

	sl_lock(&s->tx_lock);
	pthread_mutex_lock(&s->ctl_lock);
	word = s->offer_word;
	if (!(atomic_load(&s->agree) & SL_AGREE_PENDING) || !word || !s->seg) {
		plain = sl_fell_back(s);
		goto out;
	}
	w = settle_locked(s, word, &error_taken, &lost);
	plain = w != SL_OFFER_ATTACHED;
	if (w == SL_OFFER_REVOKED) {
		sl_warn("fd %d: connection reset: %s", s->fd,
			lost ? lost : "another process holding it never finished moving it to kernel TCP");
		atomic_store(&s->reset, true);
		sl_conn_note_error(s);
		if (lost) {
			/* The acceptor, hooked or not, must not wait for bytes
			 * that will never come: an RST (connect to AF_UNSPEC). */
			sl_sys_reset_tcp(s->fd);
		}
		plain = false;
	} else if (error_taken) {
		/* The kernel socket would now say EOF where kernel TCP says
		 * ECONNRESET: the connection stays ours, reset, and says it
		 * (as a peer's reset on the rings does), to the end. */
		sl_warn("fd %d: connection reset by the peer while its bytes moved to kernel TCP", s->fd);
		atomic_store(&s->reset, true);
		sl_conn_note_error(s);
		s->fabric->offer_settle(s);
		plain = false;
	}
	if (plain) {
		sl_agree_mark_plain(s);
		s->fabric->offer_settle(s);
		sl_stats_conn_close(s);
		atomic_fetch_sub_explicit(&sl_totals.accelerated, 1, memory_order_relaxed);
		sl_fallback(s, why, SL_FB_CONNECTOR);
		atomic_store_explicit(&s->state, (int)SL_PLAIN, memory_order_release);
	} else if (w == SL_OFFER_ATTACHED) {
		s->fabric->offer_settle(s);
	}
	/* Last: on its way to kernel TCP a connection shows SL_AGREE_PLAIN
	 * before it stops showing SL_AGREE_PENDING (sl_agree_on_rings reads
	 * both in one load). */
	atomic_fetch_and(&s->agree, ~SL_AGREE_PENDING);
out:
	pthread_mutex_unlock(&s->ctl_lock);
	sl_unlock(&s->tx_lock);
	/* Our other threads sleeping on the rings must redo their call on the
	 * kernel socket. */
	if (plain)
		sl_conn_wake_local(s);
	return plain;
}

bool sl_agree_decide(struct sl_sock *s, enum sl_agree_mode mode)
{
	_Atomic uint32_t *word;
	uint32_t w;

	if (!(atomic_load_explicit(&s->agree, memory_order_acquire) & SL_AGREE_PENDING))
		return sl_fell_back(s);
	word = s->offer_word;
	if (!word)
		return sl_fell_back(s);
	w = atomic_load_explicit(word, memory_order_acquire);
	if (sl_offer_agreed(w)) {
		/* Agreed: the offer's memfd and names go now, not at the first
		 * sleep, which a busy connection may never reach (a descriptor
		 * per connection is what thousands of clients run out of). */
		if (atomic_fetch_and(&s->agree, ~SL_AGREE_PENDING) & SL_AGREE_PENDING) {
			pthread_mutex_lock(&s->ctl_lock);
			s->fabric->offer_settle(s);
			pthread_mutex_unlock(&s->ctl_lock);
		}
		return false;
	}
	if (w == SL_OFFER_OFFERED && !due(s, mode))
		return false;
	/* Forced before the acceptor had its chance (the deadline) is ours. */
	return fall_back(s, w == SL_OFFER_REFUSED                          ? SL_FB_REFUSED
			    : mode != SL_AGREE_FORCE || due(s, SL_AGREE_WAIT) ? SL_FB_UNCONFIRMED
									   : SL_FB_UNDECIDED);
}

bool sl_agree_plain_slow(struct sl_sock *s, enum sl_agree_mode mode)
{
	uint32_t a = atomic_load_explicit(&s->agree, memory_order_acquire);

	if (a & SL_AGREE_PLAIN)
		return true;
	if ((a & SL_AGREE_PENDING) && (sl_agree_decide(s, mode) || sl_agree_pending(s)))
		return sl_fell_back(s);
	if ((atomic_load_explicit(&s->agree, memory_order_relaxed) & SL_AGREE_STIRRED) ||
	    sl_agree_moved(s, atomic_load_explicit(&s->own_ctl->peer_state, memory_order_relaxed)))
		return sl_bypass(s);
	return false;
}
