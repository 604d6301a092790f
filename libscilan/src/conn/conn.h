/* conn.h — connection-level helpers shared by the data path, the wait
 * machinery and the socket calls: readiness, resets, local wake-ups.
 */
#ifndef SCILAN_CONN_H
#define SCILAN_CONN_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "evq/evq.h"
#include "socket/sock_state.h"

/* Readiness (poll bits) of a connected accelerated socket, without syscalls. */
short sl_conn_ready(struct sl_sock *s, short events);
/* The bytes waiting that make s readable: SO_RCVLOWAT (1 unless set),
 * bounded by what the ring can ever hold for us, so that a mark beyond the
 * ring, or beyond what the peer keeps in flight, never waits for bytes that
 * cannot come.  A socket from another process asks the kernel once. */
uint64_t sl_conn_rcv_mark(struct sl_sock *s);
/* Mark the connection reset and tell the peer: the peer broke the protocol
 * (a warning says why), or why is NULL, the program asked for it (a connect
 * to AF_UNSPEC). */
void sl_conn_reset(struct sl_sock *s, const char *why);
/* Wake threads of this process sleeping on s (after shutdown or close). */
void sl_conn_wake_local(struct sl_sock *s);
/* The rare halves of the two below, out of line: the peer (or an epoll
 * set of its) may have asked for our data or for room.  Out of line also
 * for the fence a write-combined publish lacks (the device fabric), which
 * TSan refuses to see inlined into the data path. */
void sl_conn_look_for_data_waiters(struct sl_sock *s, bool fenced);
bool sl_conn_peer_wants_room(struct sl_sock *s, bool published_for_room);

/* After adding data or state: wake a peer that sleeps waiting for it
 * (fenced: the publishing store was already a full fence).  Step 1-2 of
 * the stimulate side: our index store must be visible before we read the
 * peer's arm words, or both of us could miss the other. */
static inline void sl_conn_after_produce(struct sl_sock *s, bool fenced)
{
	if (!fenced || atomic_load_explicit(&s->own_ctl->wake_on_data, memory_order_relaxed) ||
	    (atomic_load_explicit(&s->own_ctl->evq_want, memory_order_relaxed) & SL_EVQ_WANT_DATA))
		sl_conn_look_for_data_waiters(s, fenced);
}

/* After freeing ring space, with rx_lock held: true if the peer sleeps
 * waiting for space and must be stimulated (after unlocking).  Only a
 * published index can unblock the sender; publishing is batched (ring.h),
 * so a sleeping sender gets the index at once.  Without a publish for room
 * the fence is skipped when nobody asked: a sender that asks after our look
 * re-reads the index we stored. */
static inline bool sl_conn_after_consume_locked(struct sl_sock *s, bool published_for_room)
{
	if (!published_for_room &&
	    !atomic_load_explicit(&s->own_ctl->wake_on_space, memory_order_relaxed) &&
	    !(atomic_load_explicit(&s->own_ctl->evq_want, memory_order_relaxed) & SL_EVQ_WANT_SPACE))
		return false;
	return sl_conn_peer_wants_room(s, published_for_room);
}
/* Under tx_lock, every few hundred sends: a peer that did not wait for our
 * data since the last review pays nothing for plain stores, so a fenced
 * connection of ours publishes unfenced again (conn.c). */
void sl_conn_fence_review_locked(struct sl_sock *s);
/* Wake the peer whatever it sleeps on (it must see our close). */
void sl_conn_wake_peer(struct sl_sock *s);
/* Ask the kernel whether the peer's end is gone (one syscall); true if it
 * just learnt so. */
bool sl_conn_check_peer(struct sl_sock *s);
/* Every fabric's peer_gone ends here: has the companion kernel connection
 * ended (EOF, an error)?  Bytes there are the peer's stream bypassing the
 * rings: never read, only noted (sl_agree_stir) for bypass.c. */
bool sl_conn_kernel_ended(struct sl_sock *s);
/* A wait saw the kernel socket of s readable or hung up: our offer out, the
 * agreement is stirred to look (false); the rings agreed, ask whether the
 * peer's end is gone (true if it just learnt so); kernel TCP, nothing (its
 * pending error is the application's). */
bool sl_conn_kernel_woke(struct sl_sock *s);
/* The peer went away without an orderly close (died, or reset us). */
bool sl_conn_peer_died(struct sl_sock *s);
/* The connection ended in a reset: set the pending error the first time
 * only, as the kernel sets sk_err once when the RST arrives; the next recv,
 * send or SO_ERROR takes it, and poll shows POLLERR until then.  The error is
 * ECONNRESET, or EPIPE when the peer's FIN came before its reset. */
void sl_conn_note_error(struct sl_sock *s);
/* The reset came after the peer's FIN (TCP: RST in CLOSE_WAIT): the pending
 * error is EPIPE and recv ends in 0, leaving it pending. */
bool sl_conn_fin_first(struct sl_sock *s);
/* The peer_state bits a reset writes for the peer (with ctl_lock held). */
uint32_t sl_conn_reset_bits(const struct sl_sock *s);
/* Bytes wait unread in our ring (taken before ctl_lock). */
bool sl_conn_unread(struct sl_sock *s);
/* The peer_state bits our last close (or exit) writes, with ctl_lock held:
 * a reset when data was unread or SO_LINGER is {1, 0}, as TCP's close sends
 * RST then; else the orderly SHUT_WR|CLOSED.  The kernel connection's urgent
 * signal bytes are consumed first (urgent.c). */
uint32_t sl_conn_close_bits(struct sl_sock *s, bool unread);

/* Counters are written only under the lock that serializes their side, so
 * a plain add suffices; the atomics keep concurrent readers well defined. */
static inline void sl_stat_add(_Atomic uint64_t *counter, uint64_t n)
{
	atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

/* A blocking call interrupted by a signal (EINTR from its wait) goes on
 * waiting only if every handler asked SA_RESTART: we cannot tell which
 * signal came, so restart only if any of them would have. */
bool sl_conn_signals_restart(void);
/* The ms a blocking call waiting for events (POLLOUT: sending) may wait:
 * the socket's SO_SNDTIMEO or SO_RCVTIMEO, -1 for none. */
int sl_conn_timeout_ms(struct sl_sock *s, short events);
/* The rings carry s from now on (a connect agreed, or a promotion): the
 * kernel socket carries only wake-up bytes, which must not wait for
 * Nagle; counted and in the statistics file. */
void sl_conn_became_connected(struct sl_sock *s);

#endif
