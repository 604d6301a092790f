/* test_offer_policy.c — unit tests of which destinations a connect offers
 * rings to (offer_policy.c): kernel TCP after a run of connections too short
 * to pay, probes that grow sparser where promotion cannot follow, none where
 * it can, rings again once one pays. */
#include <criterion/criterion.h>

#include <netinet/in.h>

#include "socket/offer_policy.h"

static const struct sl_offer_outcome one_request = { .turns = 1, .bytes = 300, .lifetime_ns = 200000 };
static const struct sl_offer_outcome chatty = { .turns = SL_OFFER_TURNS_PAID, .bytes = 300, .lifetime_ns = 200000 };

/* The clock the tests run at: every note and connect within one second. */
#define T0 5000000

static struct sl_key dest(uint16_t port)
{
	return (struct sl_key){ .family = AF_INET, .addr = { 127, 0, 0, 1 }, .port = port };
}

static void note_short(const struct sl_key *dst, int n)
{
	for (int i = 0; i < n; i++)
		sl_offer_note_at(dst, &one_request, T0);
}

/* Offers among the next n connects to dst, made where a connection kept on
 * kernel TCP cannot be promoted (the policy's probes are the only way back). */
static int offers_among(const struct sl_key *dst, int n)
{
	int offered = 0;

	for (int i = 0; i < n; i++)
		offered += sl_offer_worth_it_at(dst, false, T0);
	return offered;
}

/* The same where a connection kept plain moves onto the rings if it lasts. */
static int offers_among_promotable(const struct sl_key *dst, int n)
{
	int offered = 0;

	for (int i = 0; i < n; i++)
		offered += sl_offer_worth_it_at(dst, true, T0);
	return offered;
}

Test(offer_policy, what_pays)
{
	struct sl_offer_outcome o = one_request;

	cr_assert_not(sl_offer_paid_off(&o), "one request/response paid");
	o.turns = SL_OFFER_TURNS_PAID;
	cr_assert(sl_offer_paid_off(&o), "round trips did not pay");
	o = one_request;
	o.bytes = SL_OFFER_BYTES_PAID;
	cr_assert(sl_offer_paid_off(&o), "a bulk transfer did not pay");
	o = one_request;
	o.lifetime_ns = SL_OFFER_LIFE_PAID_NS;
	cr_assert(sl_offer_paid_off(&o), "a long-lived connection did not pay");
}

Test(offer_policy, unknown_destinations_get_offers)
{
	struct sl_key d = dest(1000);

	cr_assert_eq(offers_among(&d, 100), 100);
}

Test(offer_policy, a_short_run_below_the_threshold_keeps_offering)
{
	struct sl_key d = dest(1001);

	note_short(&d, SL_OFFER_SHORT_RUN - 1);
	cr_assert_eq(offers_among(&d, 50), 50);
}

Test(offer_policy, a_run_of_short_connections_stops_offers_but_for_sparse_probes)
{
	struct sl_key d = dest(1002);
	int offered;

	note_short(&d, SL_OFFER_SHORT_RUN);
	offered = offers_among(&d, 1000);
	cr_assert_gt(offered, 0, "never probes again");
	/* 1 + 2 + 4 ... 64, then one in 64: about 22 in 1,000 */
	cr_assert_lt(offered, 1000 / SL_OFFER_PROBE_GAP_MAX + 12, "%d offers in 1,000 connects", offered);
	/* Sparse at the end: one in SL_OFFER_PROBE_GAP_MAX. */
	cr_assert_eq(offers_among(&d, SL_OFFER_PROBE_GAP_MAX * 4), 4);
}

/* Promotion takes a connection that lasts onto the rings, and its close
 * (paid by its lifetime) brings the offers back: no connect pays a probe's
 * set-up in the meantime. */
Test(offer_policy, where_promotion_follows_a_short_run_makes_no_probe)
{
	static const struct sl_offer_outcome promoted = { .lifetime_ns = SL_OFFER_LIFE_PAID_NS };
	struct sl_key d = dest(1009);

	note_short(&d, SL_OFFER_SHORT_RUN);
	cr_assert_eq(offers_among_promotable(&d, 1000), 0, "offered at connect where promotion follows");
	/* The probes' count was not spent meanwhile: without promotion, the
	 * first connect after the run still probes. */
	cr_assert_eq(offers_among(&d, 1), 1, "the probe gap grew while promotion followed");
	sl_offer_note_at(&d, &promoted, T0);
	cr_assert_eq(offers_among_promotable(&d, 100), 100, "a promoted connection's close did not bring offers back");
}

Test(offer_policy, a_probe_that_pays_brings_every_offer_back)
{
	struct sl_key d = dest(1003);

	note_short(&d, SL_OFFER_SHORT_RUN * 3);
	cr_assert_lt(offers_among(&d, 200), 200);
	sl_offer_note_at(&d, &chatty, T0);
	cr_assert_eq(offers_among(&d, 100), 100);
}

Test(offer_policy, destinations_learn_apart)
{
	struct sl_key a = dest(1004), b = dest(1005);
	struct sl_key v6 = { .family = AF_INET6, .addr = { [15] = 1 }, .port = 1004 };

	note_short(&a, SL_OFFER_SHORT_RUN);
	cr_assert_lt(offers_among(&a, 100), 100);
	cr_assert_eq(offers_among(&b, 100), 100, "another port of the same host stopped offering");
	cr_assert_eq(offers_among(&v6, 100), 100, "another family stopped offering");
}

Test(offer_policy, a_paid_connection_between_short_ones_resets_the_run)
{
	struct sl_key d = dest(1006);

	note_short(&d, SL_OFFER_SHORT_RUN - 1);
	sl_offer_note_at(&d, &chatty, T0);
	note_short(&d, SL_OFFER_SHORT_RUN - 1);
	cr_assert_eq(offers_among(&d, 50), 50);
}

Test(offer_policy, short_connections_that_stopped_coming_get_offers_again)
{
	struct sl_key d = dest(1008);

	note_short(&d, 3 * SL_OFFER_SHORT_RUN);
	cr_assert_lt(offers_among(&d, 100), 100);
	/* A pool's connection a while after the last health check. */
	cr_assert(sl_offer_worth_it_at(&d, false, T0 + SL_OFFER_SHORT_FRESH_MS + 1), "kept off the rings after a pause");
	cr_assert(sl_offer_worth_it_at(&d, false, T0 + 3600 * 1000), "kept off the rings an hour later");
	/* Shorts coming again: skipping again. */
	sl_offer_note_at(&d, &one_request, T0 + 3600 * 1000);
	cr_assert_not(sl_offer_worth_it_at(&d, false, T0 + 3600 * 1000 + 10) &&
			      sl_offer_worth_it_at(&d, false, T0 + 3600 * 1000 + 10),
		      "short connections arriving again still offered twice in a row");
}

/* Lookups among the next n connects to dst with no listener there. */
static int looks_among(const struct sl_key *dst, int n, int64_t now)
{
	int looked = 0;

	for (int i = 0; i < n; i++)
		if (!sl_listener_absent_at(dst, now)) {
			looked++;
			sl_listener_note_at(dst, false, now);
		}
	return looked;
}

Test(listener_memory, unknown_destinations_are_looked_up)
{
	struct sl_key d = dest(2001);

	cr_assert_not(sl_listener_absent_at(&d, T0));
	cr_assert_not(sl_listener_absent_at(&d, T0), "a destination never looked up was skipped");
}

Test(listener_memory, a_plain_server_is_looked_up_ever_more_sparsely)
{
	struct sl_key d = dest(2002);
	int looked;

	sl_listener_note_at(&d, false, T0);
	looked = looks_among(&d, 1000, T0);
	/* 2, 4 ... 256, then one in 256: a handful, never each connect. */
	cr_assert_geq(looked, 4, "a plain server was never looked at again (%d)", looked);
	cr_assert_leq(looked, 16, "%d lookups in 1000 connects to a plain server", looked);
}

Test(listener_memory, a_listener_found_is_looked_up_at_every_connect)
{
	struct sl_key d = dest(2003);

	sl_listener_note_at(&d, false, T0);
	looks_among(&d, 100, T0);
	sl_listener_note_at(&d, true, T0);
	for (int i = 0; i < 10; i++)
		cr_assert_not(sl_listener_absent_at(&d, T0), "connect %d skipped a listener found", i);
}

Test(listener_memory, a_server_started_later_is_noticed_within_the_recheck_time)
{
	struct sl_key d = dest(2004);

	sl_listener_note_at(&d, false, T0);
	looks_among(&d, 1000, T0);
	cr_assert_not(sl_listener_absent_at(&d, T0 + SL_ABSENT_RECHECK_MS),
		      "no lookup %d ms after the last", SL_ABSENT_RECHECK_MS);
}

Test(listener_memory, destinations_are_remembered_apart)
{
	struct sl_key plain = dest(2005), other = dest(2006);

	sl_listener_note_at(&plain, false, T0);
	looks_among(&plain, 100, T0);
	cr_assert_not(sl_listener_absent_at(&other, T0), "another port of the same host skipped");
}
