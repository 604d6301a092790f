/* urgent.h — TCP urgent data over the rings: the sender's urgent mark and the
 * receiver's view of it (reads stop at the mark, recv(MSG_OOB), SIOCATMARK,
 * POLLPRI). */
#ifndef SCILAN_URGENT_H
#define SCILAN_URGENT_H

#include <stdbool.h>
#include <stdint.h>

#include "socket/sock_state.h"

/* Sender, under tx_lock, before committing the bytes of an urgent send:
 * the byte just before index mark is urgent.  Queued in the receiver's area
 * before the write index that makes the byte visible, so a receiver that
 * sees the byte sees the mark. */
void sl_urg_publish(struct sl_sock *s, uint64_t mark);

/* Sender, after an urgent send: one urgent byte on the kernel connection,
 * whose only effect is the kernel's own SIGURG to the receiving socket's
 * owner (F_SETOWN); it never reaches the stream (not POLLIN, skipped). */
void sl_urg_signal(struct sl_sock *s);
/* The byte sl_urg_signal sends. */
#define SL_URG_CARRIER '!'
/* Before the kernel socket closes: consume such bytes, or the kernel's
 * close would find unread data and send RST instead of FIN. */
void sl_urg_drain_kernel(struct sl_sock *s);
/* Receiver: consume the peer's carrier bytes that reached the kernel stream
 * (SO_OOBINLINE, or an older urgent byte a newer one pushed into the
 * stream), so that they are never taken for a peer bypassing the rings. */
void sl_urg_drop_carriers(struct sl_sock *s);

/* Receiver, under rx_lock: is there urgent state to look at?  One load of
 * our own area on the fast path. */
static inline bool sl_urg_any(const struct sl_sock *s)
{
	return s->urg.state != SL_URG_NONE ||
	       atomic_load_explicit(&s->own_ctl->urg_count, memory_order_relaxed) != s->urg.count_seen;
}

/* Receiver, under rx_lock, owning the direction: take the new marks of our
 * area in order (each validated against the write index), dropping an old
 * urgent byte the reader sits at, as TCP does when a new urgent pointer
 * arrives. */
void sl_urg_refresh(struct sl_sock *s);

/* A normal read of avail bytes at the read index (after sl_urg_refresh):
 * how many it may copy before the mark; *skip is 1 when the urgent byte is at
 * the head and leaves the stream (not SO_OOBINLINE); *stop when the read has
 * copied bytes already and must end at the mark. */
uint64_t sl_urg_clip(struct sl_sock *s, uint64_t avail, bool copied, uint64_t *skip, bool *stop);
/* After the read index moved: forget a mark the reader has passed. */
void sl_urg_passed(struct sl_sock *s);

/* Readiness (under rx_lock): POLLPRI while an urgent byte waits for
 * recv(MSG_OOB); *readable lowered by the urgent byte at the head, which a
 * normal read does not return. */
short sl_urg_ready(struct sl_sock *s, int64_t *readable);

/* recv(MSG_OOB), under rx_lock: the urgent byte into *byte (0), or an
 * errno as TCP's: EINVAL with none pending, already taken, or SO_OOBINLINE;
 * ENOTCONN when dead (reset without the peer's FIN). */
int sl_urg_take(struct sl_sock *s, bool peek, unsigned char *byte, bool dead);

/* ioctl(SIOCATMARK): is the read index at the urgent mark? */
int sl_urg_atmark(struct sl_sock *s);

/* setsockopt(SO_OOBINLINE) seen on the way to the kernel. */
void sl_urg_set_inline(struct sl_sock *s, bool on);

#endif
