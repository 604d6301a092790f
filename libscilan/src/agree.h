/* agree.h — the connecting side of the agreement on who carries a
 * connection: rings only once the acceptor took the offer; otherwise, kernel
 * TCP with every byte already written into the unread ring (agree.c).
 */
#ifndef SCILAN_AGREE_H
#define SCILAN_AGREE_H

#include <stdbool.h>

#include "layout.h"
#include "sock.h"

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

/* Is our offer still undecided?  One relaxed load: the data path's guard. */
static inline bool sl_agree_pending(const struct sl_sock *s)
{
	return atomic_load_explicit(&s->agree_pending, memory_order_relaxed);
}

/* Decide if mode allows: true if the connection is (now) kernel TCP, the
 * caller then redoes its call on the kernel socket; false while rings carry
 * it or the offer is still out. */
bool sl_agree_decide(struct sl_sock *s, enum sl_agree_mode mode);

/* After the agreement (bypass.c): the peer's bytes came on the kernel socket
 * (kernel_stirred), or the peer moved to kernel TCP first (SL_PEER_PLAIN).
 * true if the connection is now kernel TCP with every byte in order; false
 * if not, or if it was reset (ambiguous: ECONNRESET and a log line). */
bool sl_bypass(struct sl_sock *s);
/* This process is about to lose what the rings need (a seccomp filter, an
 * image without the hook): move the connection to kernel TCP now, the peer
 * re-sending what we have not read and dropping what it read of what we
 * re-send.  true if it is kernel TCP now; false if reset (or undecidable). */
bool sl_bypass_leave(struct sl_sock *s, enum sl_fb why);

/* Has the connection become kernel TCP (deciding what mode allows)?  The
 * guard of every would-block path, of poll, and of each send iteration. */
static inline bool sl_agree_plain(struct sl_sock *s, enum sl_agree_mode mode)
{
	if (atomic_load_explicit(&s->fell_back, memory_order_relaxed))
		return true;
	if (sl_agree_pending(s) && (sl_agree_decide(s, mode) || sl_agree_pending(s)))
		return atomic_load_explicit(&s->fell_back, memory_order_relaxed);
	if (atomic_load_explicit(&s->kernel_stirred, memory_order_relaxed) ||
	    (atomic_load_explicit(&s->own_ctl->peer_state, memory_order_relaxed) & SL_PEER_PLAIN) ||
	    (s->offer_word && atomic_load_explicit(s->offer_word, memory_order_relaxed) >= SL_OFFER_LED))
		return sl_bypass(s);
	return false;
}

/* Kernel readiness of a connection that fell back (poll bits of events). */
short sl_agree_kernel_ready(struct sl_sock *s, short events);

#endif
