/* agree.h — the connecting side of the agreement on who carries a
 * connection: rings only once the acceptor took the offer; otherwise, kernel
 * TCP with every byte already written into the unread ring (agree.c).
 */
#ifndef SCILAN_AGREE_H
#define SCILAN_AGREE_H

#include <stdbool.h>

#include "ring/layout.h"
#include "socket/sock_state.h"

/* How hard to look before deciding (each mode includes the ones above it). */
enum sl_agree_mode {
	SL_AGREE_POLL,  /* the offer word, the deadline, a readable kernel socket a
			 * sleep saw: no syscall (sends, poll scans) */
	SL_AGREE_WAIT,  /* and ask the kernel socket (we are about to block) */
	SL_AGREE_FORCE, /* decide now: revoke an offer still out (close, exit, hand-over) */
};

/* Undecided offers wait at most this long (from the connect) for an
 * acceptor, when the connection would block on it (see ARCHITECTURE.md). */
#define SL_AGREE_WAIT_MS 1000

/* Connecting side: the offer word (OFFERED already stored) starts the clock. */
void sl_agree_start(struct sl_sock *s, _Atomic uint32_t *word);

/* s->agree: the agreement and bypass state the data path must look at,
 * in one word so that its guard is one relaxed load of private memory. */
#define SL_AGREE_PENDING 1u /* our offer is out and undecided (connecting side) */
#define SL_AGREE_STIRRED 2u /* the kernel socket was seen readable: a plain acceptor
			     * spoke, or (agreed) the peer's bytes bypassed the rings */
#define SL_AGREE_PLAIN 4u   /* the connection moved to kernel TCP (sl_fell_back) */

/* Is our offer still undecided? */
static inline bool sl_agree_pending(const struct sl_sock *s)
{
	return atomic_load_explicit(&s->agree, memory_order_relaxed) & SL_AGREE_PENDING;
}

/* The kernel socket of s turned readable while rings carry it (or the
 * offer is out): the next guard looks (agree.c, bypass.c). */
static inline void sl_agree_stir(struct sl_sock *s)
{
	atomic_fetch_or(&s->agree, SL_AGREE_STIRRED);
}

/* The connection is kernel TCP from now on (with its locks held). */
static inline void sl_agree_mark_plain(struct sl_sock *s)
{
	atomic_fetch_or(&s->agree, SL_AGREE_PLAIN);
}

/* The connection moved to kernel TCP; its segment stays mapped until close. */
static inline bool sl_fell_back(const struct sl_sock *s)
{
	return atomic_load((_Atomic uint32_t *)&s->agree) & SL_AGREE_PLAIN;
}

/* Do the rings carry s (no offer out, not moved to kernel TCP)?  Only then
 * may the library read the kernel socket itself: otherwise its pending error
 * (sk_err: ECONNRESET from a listener closed with the connection queued) is
 * the application's, and a peek would take it.  Our own word only (the
 * fall-back sets SL_AGREE_PLAIN before it clears SL_AGREE_PENDING), never
 * the offer word, which the peer may write. */
static inline bool sl_agree_on_rings(const struct sl_sock *s)
{
	return !(atomic_load_explicit((_Atomic uint32_t *)&s->agree, memory_order_acquire) &
		 (SL_AGREE_PENDING | SL_AGREE_PLAIN));
}

/* Decide if mode allows: true if the connection is (now) kernel TCP, the
 * caller then redoes its call on the kernel socket; false while rings carry
 * it or the offer is still out. */
bool sl_agree_decide(struct sl_sock *s, enum sl_agree_mode mode);

/* After the agreement (bypass.c): the peer's bytes came on the kernel socket
 * (SL_AGREE_STIRRED), or the peer moved to kernel TCP first (SL_PEER_PLAIN).
 * true if the connection is now kernel TCP with every byte in order; false
 * if not, or if it was reset (ambiguous: ECONNRESET and a log line). */
bool sl_bypass(struct sl_sock *s);
/* This process is about to lose what the rings need (a seccomp filter, an
 * image without the hook): move the connection to kernel TCP now, the peer
 * re-sending what we have not read and dropping what it read of what we
 * re-send.  true if it is kernel TCP now; false if reset (or undecidable). */
bool sl_bypass_leave(struct sl_sock *s, enum sl_fb why);

/* The rare half of sl_agree_plain (agree.c). */
bool sl_agree_plain_slow(struct sl_sock *s, enum sl_agree_mode mode);

/* Did the peer, or another process of our side, move an agreed connection
 * to kernel TCP (bypass.c)?  Two loads of words only they write. */
static inline bool sl_agree_moved(const struct sl_sock *s, uint32_t peer_state)
{
	return (peer_state & SL_PEER_PLAIN) ||
	       (s->offer_word && atomic_load_explicit(s->offer_word, memory_order_relaxed) >= SL_OFFER_LED);
}

/* Has the connection become kernel TCP (deciding what mode allows)?  The
 * guard of every would-block path, of poll, and of each send iteration:
 * one load of s->agree and the peer's words; the rest is the slow half's. */
static inline bool sl_agree_plain(struct sl_sock *s, enum sl_agree_mode mode)
{
	if (!atomic_load_explicit(&s->agree, memory_order_relaxed) &&
	    !sl_agree_moved(s, atomic_load_explicit(&s->own_ctl->peer_state, memory_order_relaxed)))
		return false;
	return sl_agree_plain_slow(s, mode);
}

/* Kernel readiness of a connection that fell back (poll bits of events). */
short sl_agree_kernel_ready(struct sl_sock *s, short events);

#endif
