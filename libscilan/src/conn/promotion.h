/* promotion.h — a live plain connection moving onto the rings, as the
 * socket layer drives it (promotion.c): the connector's late offer and its
 * follow, the acceptor's look and take, and the reads and readiness across
 * the seam while one end's receive side still reads its kernel stream.
 */
#ifndef SCILAN_PROMOTION_H
#define SCILAN_PROMOTION_H

#include <stdbool.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "socket/sock_state.h"

/* Bumped (after the change) whenever a promotion changes what carries a
 * connection or where its readiness lives: an offer out or withdrawn, a
 * take, a follow, a seam crossed, a failure.  The hook's epoll sets compare
 * it at each wait: a kernel member may have to move to the emulated side,
 * or back, and a kernel event for it may be the peer's marker. */
extern _Atomic unsigned sl_promote_epoch;
static inline unsigned sl_promote_epoch_now(void)
{
	return atomic_load_explicit(&sl_promote_epoch, memory_order_acquire);
}
/* Called after each bump (socket locks may be held: it must take none):
 * the hook rings the bell its epoll sets hold, so that a thread asleep in
 * one learns of a move another thread made (hook/epoll.c). */
void sl_promote_on_move(void (*notify)(void));

/* Between kernel TCP and the rings: a late offer out, or a seam not yet
 * crossed (the kernel socket still carries bytes or the peer's marker). */
static inline bool sl_promote_window(const struct sl_sock *s)
{
	return atomic_load_explicit(&s->seam_pending, memory_order_acquire) || sl_sock_promoting(s);
}

/* An acceptor has this long to take a late offer; then the connector
 * revokes it (nothing moved: it never left kernel TCP). */
#define SL_PROMOTE_WAIT_MS 2000

/* Connector, a plain connection with no call of ours in flight on it:
 * look up the listener and offer the rings late.  0: offered (our sends
 * stay on kernel TCP, our reads go across the seam, until the acceptor's
 * claim); 1: not now, our send queue leaves no room for the marker;
 * -1 with errno: nothing changed. */
int sl_promote_offer(struct sl_sock *s);
/* Connector, at each call while the offer is out: follow a claim (our
 * point, our marker, our sends on the ring), or revoke an offer past its
 * time, or drop a refused one.  true when the rings carry our sends now. */
bool sl_promote_poll(struct sl_sock *s);
/* The same where the caller cannot go on undecided (it closes, or read the
 * acceptor's marker): an offer still out is revoked now, a claim followed
 * (waiting a bounded while for room for our marker).  true: on the rings. */
bool sl_promote_settle(struct sl_sock *s);
/* Connector, a send while its late offer is out: the kernel's, under
 * tx_lock and never waiting, so that none lands between the follow's point
 * and its marker.  0: the call is over, *done bytes sent; 1: *done sent and
 * the offer decided meanwhile (or, for a blocking call that found the
 * kernel socket full, now): the rest goes the usual way; -1 with errno,
 * nothing sent. */
int sl_promote_send(struct sl_sock *s, const struct iovec *iov, int cnt, size_t len, int flags, size_t *done);
/* Acceptor, a plain connection accepted from listener, no call of ours in
 * flight on it: take a late offer for it if one waits.  1 taken (our
 * sends on the ring, our reads across the seam), 0 none, -1 with errno:
 * reset. */
int sl_promote_look(struct sl_sock *s, struct sl_sock *listener);
/* A receive while s->seam_pending: the peer's kernel bytes up to its
 * point (*handled, their count; 0 at the end of its stream), or, past it
 * (*handled false), the caller reads the ring.  -1 with errno: the
 * kernel's, or ECONNRESET when the seam was broken (both ends reset). */
ssize_t sl_promote_recv(struct sl_sock *s, const struct iovec *iov, int cnt, int flags, bool *handled);
/* Before the kernel close of a connection whose seam is pending: the
 * peer's marker, when it is the next byte, is read first (waiting a bounded
 * while for it), so that the close is a FIN, not an RST. */
void sl_promote_before_close(struct sl_sock *s);
/* A use the switch cannot follow (urgent data, a kernel epoll set, a stdio
 * stream): the connection never offers or looks again, and a late offer
 * out is decided now (revoked, or followed if claimed).  true when one was
 * out. */
bool sl_promote_stop(struct sl_sock *s);
/* The connection is gone (the program disconnected it; rx_lock held): its
 * seam is never crossed, nothing of it is read through us again. */
void sl_promote_drop(struct sl_sock *s);
/* What a read could take now without waiting (FIONREAD, TCP_INQ; rx_lock
 * held): the ring's, or while the seam is pending the kernel's bytes before
 * the peer's point, and the ring's too once its marker is here. */
int64_t sl_promote_rx_waiting(struct sl_sock *s);
/* While s->seam_pending: the peer's kernel bytes that arrived so far (read
 * or waiting), which grows with each arrival (an edge-triggered epoll
 * member's edge, where no ring index moves).  rx_lock held. */
uint64_t sl_promote_kernel_arrived(struct sl_sock *s);
/* The peer's marker taken if it is due and here, never waiting (the seam
 * crossed then); false: what is there is not the marker, and the
 * connection was reset. */
bool sl_promote_cross_due(struct sl_sock *s);

/* poll's readiness while s->seam_pending: the kernel's, but the peer's
 * marker is taken (never waiting) rather than reported; -1 when the seam is
 * crossed and the ring's readiness is the answer. */
short sl_promote_ready(struct sl_sock *s, short events);

#endif
