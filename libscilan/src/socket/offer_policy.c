/* offer_policy.c — which destinations a connect offers rings to, decided
 * from memory before any system call.  A ring connection's set-up and
 * teardown cost more than kernel TCP's; a client that opens one connection
 * per request (ab, nginx to php-fpm) pays that on every request and never
 * wins it back, so its next connections keep kernel TCP.  And a destination
 * with no scilan listener is not looked up again at every connect.
 */
#include "socket/offer_policy.h"

#include <stdatomic.h>

#include "sync/clock.h"

/* One word per destination, in a small direct-mapped table (a collision
 * only costs what was learnt): updated by compare-and-swap, so a fork in the
 * middle of an update leaves nothing locked in the child.
 *   bits 63..32  the destination's hash, never 0 in a used word
 *   bits 31..24  unpaid connections in a row (saturating)
 *   bits 23..16  the probe gap's log2: one connect in 2^that still offers
 *   bits 15..0   connects skipped since the last probe */
#define SLOTS 256

static _Atomic uint64_t table[SLOTS];
/* When the slot's destination last closed a short connection (ms, low 32
 * bits): beside the word, not in it, as a hint (a race only misjudges one
 * connect). */
static _Atomic uint32_t last_short_ms[SLOTS];

struct record {
	uint32_t hash;
	unsigned short_run, gap_log2, skipped;
};

static uint32_t hash_of(const struct sl_key *key)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	size_t len = key->family == AF_INET ? 4 : 16;

	h = (h ^ (uint32_t)key->family) * 16777619u;
	for (size_t i = 0; i < len; i++)
		h = (h ^ key->addr[i]) * 16777619u;
	h = (h ^ (key->port & 0xff)) * 16777619u;
	h = (h ^ (key->port >> 8)) * 16777619u;
	for (int shift = 0; shift < 32; shift += 8) /* fe80::1 on two interfaces: two destinations */
		h = (h ^ ((key->scope >> shift) & 0xff)) * 16777619u;
	return h | 1;
}

static struct record unpack(uint64_t word)
{
	return (struct record){ .hash = (uint32_t)(word >> 32),
				.short_run = (unsigned)(word >> 24) & 0xff,
				.gap_log2 = (unsigned)(word >> 16) & 0xff,
				.skipped = (unsigned)word & 0xffff };
}

static uint64_t pack(struct record r)
{
	return (uint64_t)r.hash << 32 | (uint64_t)(r.short_run & 0xff) << 24 | (uint64_t)(r.gap_log2 & 0xff) << 16 |
	       (uint64_t)(r.skipped & 0xffff);
}

/* Is this connect the one in 2^gap that still tries?  Counts it: a probe
 * widens the gap (up to SL_OFFER_PROBE_GAP_MAX), a skip adds one. */
static bool probe_turn(struct record *r)
{
	if (r->skipped + 1 < 1u << r->gap_log2) {
		r->skipped++;
		return false;
	}
	r->skipped = 0;
	if (1u << r->gap_log2 < SL_OFFER_PROBE_GAP_MAX)
		r->gap_log2++;
	return true;
}

bool sl_offer_paid_off(const struct sl_offer_outcome *outcome)
{
	return outcome->turns >= SL_OFFER_TURNS_PAID || outcome->bytes >= SL_OFFER_BYTES_PAID ||
	       outcome->lifetime_ns >= SL_OFFER_LIFE_PAID_NS;
}

bool sl_offer_worth_it_at(const struct sl_key *dst, bool promotes, int64_t now_ms)
{
	uint32_t hash = hash_of(dst);
	_Atomic uint64_t *slot = &table[hash % SLOTS];
	uint64_t old = atomic_load_explicit(slot, memory_order_relaxed), next;
	bool offer;

	do {
		struct record r = unpack(old);

		if (r.hash != hash || r.short_run < SL_OFFER_SHORT_RUN)
			return true;
		if ((uint32_t)now_ms - atomic_load_explicit(&last_short_ms[hash % SLOTS], memory_order_relaxed) >
		    SL_OFFER_SHORT_FRESH_MS)
			return true;
		/* Promotion is the way back: the probe's count stays where it
		 * is for a connect that could not be promoted. */
		if (promotes)
			return false;
		offer = probe_turn(&r);
		next = pack(r);
	} while (!atomic_compare_exchange_weak_explicit(slot, &old, next, memory_order_relaxed, memory_order_relaxed));
	return offer;
}

bool sl_offer_worth_it(const struct sl_key *dst, bool promotes)
{
	return sl_offer_worth_it_at(dst, promotes, sl_mono_ms());
}

void sl_offer_note_at(const struct sl_key *dst, const struct sl_offer_outcome *outcome, int64_t now_ms)
{
	uint32_t hash = hash_of(dst);
	_Atomic uint64_t *slot = &table[hash % SLOTS];
	bool paid = sl_offer_paid_off(outcome);
	uint64_t old = atomic_load_explicit(slot, memory_order_relaxed), next;

	if (!paid)
		atomic_store_explicit(&last_short_ms[hash % SLOTS], (uint32_t)now_ms, memory_order_relaxed);

	do {
		struct record r = unpack(old);

		if (r.hash != hash) {
			if (paid)
				return; /* nothing to unlearn: a paid connection keeps no slot */
			r = (struct record){ .hash = hash };
		}
		if (paid) {
			/* Paid again: offer every time, and learn from scratch. */
			r.short_run = 0;
			r.gap_log2 = 0;
			r.skipped = 0;
		} else if (r.short_run < 0xff) {
			r.short_run++;
		}
		next = pack(r);
	} while (next != old &&
		 !atomic_compare_exchange_weak_explicit(slot, &old, next, memory_order_relaxed, memory_order_relaxed));
}

void sl_offer_note(const struct sl_key *dst, const struct sl_offer_outcome *outcome)
{
	sl_offer_note_at(dst, outcome, sl_mono_ms());
}

/* Destinations without a listener: the same one-word slots, in a table of
 * their own (a plain server's destination is not a short one).
 *   bits 63..32  the destination's hash
 *   bits 23..16  the look gap's log2
 *   bits 15..0   connects skipped since the last look */
static _Atomic uint64_t absent[SLOTS];
static _Atomic uint32_t absent_looked_ms[SLOTS];

bool sl_listener_absent_at(const struct sl_key *dst, int64_t now_ms)
{
	uint32_t hash = hash_of(dst);
	_Atomic uint64_t *slot = &absent[hash % SLOTS];
	uint64_t old = atomic_load_explicit(slot, memory_order_relaxed), next;
	bool look;

	do {
		struct record r = unpack(old);

		if (r.hash != hash)
			return false;
		if ((uint32_t)now_ms - atomic_load_explicit(&absent_looked_ms[hash % SLOTS], memory_order_relaxed) >=
		    SL_ABSENT_RECHECK_MS)
			return false;
		look = probe_turn(&r);
		next = pack(r);
	} while (!atomic_compare_exchange_weak_explicit(slot, &old, next, memory_order_relaxed, memory_order_relaxed));
	return !look;
}

bool sl_listener_absent(const struct sl_key *dst)
{
	return sl_listener_absent_at(dst, sl_mono_ms());
}

void sl_listener_note_at(const struct sl_key *dst, bool found, int64_t now_ms)
{
	uint32_t hash = hash_of(dst);
	_Atomic uint64_t *slot = &absent[hash % SLOTS];
	uint64_t old = atomic_load_explicit(slot, memory_order_relaxed);

	if (found) {
		/* Another destination's record in the slot stays. */
		if (unpack(old).hash == hash)
			atomic_compare_exchange_strong_explicit(slot, &old, 0, memory_order_relaxed,
								memory_order_relaxed);
		return;
	}
	atomic_store_explicit(&absent_looked_ms[hash % SLOTS], (uint32_t)now_ms, memory_order_relaxed);
	if (unpack(old).hash != hash)
		atomic_store_explicit(slot, pack((struct record){ .hash = hash }), memory_order_relaxed);
}

void sl_listener_note(const struct sl_key *dst, bool found)
{
	sl_listener_note_at(dst, found, sl_mono_ms());
}
