/* offer_policy.h — whether a connect offers rings to its destination, learnt
 * per destination from what this process's earlier connections to it
 * carried: connection-per-request clients keep kernel TCP (offer_policy.c).
 */
#ifndef SCILAN_OFFER_POLICY_H
#define SCILAN_OFFER_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "socket/sock_state.h"

/* What a connection carried, as its connecting side saw it at close. */
struct sl_offer_outcome {
	uint32_t turns;       /* replies: receives that found data after a send of ours */
	uint64_t bytes;       /* sent and received */
	int64_t lifetime_ns;  /* from the connect to the close */
};

/* Thresholds: a connection paid for its set-up (some 35 us more than kernel
 * TCP's on this class of machine, and three times the CPU under load) when it
 * carried SL_OFFER_TURNS_PAID round trips (each some 10 us cheaper than
 * kernel TCP's), or SL_OFFER_BYTES_PAID bytes, or lived SL_OFFER_LIFE_PAID_NS
 * (a low-rate stream: each of its wake-ups is the rings' to win). */
#define SL_OFFER_TURNS_PAID 4
#define SL_OFFER_BYTES_PAID (256u << 10)
#define SL_OFFER_LIFE_PAID_NS 100000000LL
/* Unpaid connections in a row to one destination, the last of them closed
 * within SL_OFFER_SHORT_FRESH_MS, before its next ones keep kernel TCP.  The
 * way back: where promotion follows a connection kept plain, one that lasts
 * moves onto the rings and its close (paid by its lifetime) brings the
 * offers back, so no connect pays a probe; elsewhere one in 2, 4 ...
 * SL_OFFER_PROBE_GAP_MAX still offers, to notice when they pay again.  The
 * freshness: short connections that come seldom (a health check every few
 * seconds) cost little, and a connection made after them (a pool's, which
 * may live for hours) must not wait for promotion. */
#define SL_OFFER_SHORT_RUN 8
#define SL_OFFER_SHORT_FRESH_MS 1000
#define SL_OFFER_PROBE_GAP_MAX 256 /* a power of two */

bool sl_offer_paid_off(const struct sl_offer_outcome *outcome);

/* The data path's part (io.c): only a connection we offered counts its
 * round trips, and only until it reaches SL_OFFER_TURNS_PAID, so that every
 * other send and receive reads one private flag, and a full-duplex stream's
 * two threads do not trade a written line at every call. */
static inline void sl_offer_sent(struct sl_sock *s)
{
	if (atomic_load_explicit(&s->counting_turns, memory_order_relaxed) &&
	    !atomic_load_explicit(&s->sent_unanswered, memory_order_relaxed))
		atomic_store_explicit(&s->sent_unanswered, true, memory_order_relaxed);
}

/* With rx_lock held, after data was taken. */
static inline void sl_offer_received(struct sl_sock *s)
{
	uint32_t turns;

	if (!atomic_load_explicit(&s->counting_turns, memory_order_relaxed) ||
	    !atomic_load_explicit(&s->sent_unanswered, memory_order_relaxed))
		return;
	atomic_store_explicit(&s->sent_unanswered, false, memory_order_relaxed);
	turns = atomic_load_explicit(&s->turns, memory_order_relaxed) + 1;
	atomic_store_explicit(&s->turns, turns, memory_order_relaxed);
	if (turns >= SL_OFFER_TURNS_PAID)
		atomic_store_explicit(&s->counting_turns, false, memory_order_relaxed);
}
/* Destinations where the last lookup found no scilan listener (a plain
 * server): their next connects skip the lookup (some 8 system calls, where
 * kernel TCP's connect is one), but for one in 2, 4 ... SL_OFFER_PROBE_GAP_MAX
 * and any connect SL_ABSENT_RECHECK_MS after the last look, which notice a
 * listener that came since.  Either end decides nothing alone: the acceptor
 * sees a plain client (`no-offer`). */
#define SL_ABSENT_RECHECK_MS 1000
/* Skip the lookup for dst (fallback reason no-listener)?  Counts the skip,
 * or the look it lets through. */
bool sl_listener_absent(const struct sl_key *dst);
/* What a lookup for dst found: a listener (forgets dst) or none. */
void sl_listener_note(const struct sl_key *dst, bool found);
bool sl_listener_absent_at(const struct sl_key *dst, int64_t now_ms);
void sl_listener_note_at(const struct sl_key *dst, bool found, int64_t now_ms);

/* Offer rings to dst on this connect?  false: connect on kernel TCP (fallback
 * reason short).  promotes: a connection kept plain will offer late if it
 * lasts (promotion_trigger.c), and no probe is made; else counts the skip, or
 * the probe it lets through. */
bool sl_offer_worth_it(const struct sl_key *dst, bool promotes);
/* A connection this process connected to dst, offered or kept plain as
 * short, is closed. */
void sl_offer_note(const struct sl_key *dst, const struct sl_offer_outcome *outcome);
/* The same at a given CLOCK_MONOTONIC time in ms (tests). */
bool sl_offer_worth_it_at(const struct sl_key *dst, bool promotes, int64_t now_ms);
void sl_offer_note_at(const struct sl_key *dst, const struct sl_offer_outcome *outcome, int64_t now_ms);

#endif
