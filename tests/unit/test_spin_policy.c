/* test_spin_policy.c — unit tests of the adaptive spin's pure core
 * (spin_policy.c) fed synthetic waits: it stops spinning when spins never
 * pay, spins again when they do, hands the CPU over at every turn while
 * contended. */
#include <criterion/criterion.h>

#include "sync/spin_policy.h"

#define US 1000u

/* One wait: decide, then report a wait of waited_ns (paid if within the spin). */
static uint32_t decide(struct sl_spin_state *st, bool contended, bool *yield)
{
	return sl_spin_decide(st, contended, yield);
}

static uint32_t wait_once(struct sl_spin_state *st, bool contended, uint64_t waited_ns)
{
	bool yield;
	uint32_t budget = decide(st, contended, &yield);

	cr_assert_eq(yield, contended, "yield %d on %s CPUs", yield, contended ? "contended" : "free");

	sl_spin_observe(st, budget, budget > 0 && waited_ns <= budget, waited_ns);
	return budget;
}

Test(spin_policy, fresh_state_spins)
{
	struct sl_spin_state st = { 0 };

	cr_assert_gt(decide(&st, false, &(bool){ 0 }), 0, "a new connection must spin (polling latency as before)");
}

Test(spin_policy, fast_peer_keeps_spinning)
{
	struct sl_spin_state st = { 0 };

	for (int i = 0; i < 1000; i++)
		cr_assert_gt(wait_once(&st, false, 2 * US), 2 * US, "wait %d: a 2 us reply must be spun for", i);
}

Test(spin_policy, stops_spinning_when_spins_never_pay)
{
	struct sl_spin_state st = { 0 };
	int spins = 0;

	/* 1,000 requests/s: every reply comes a millisecond later. */
	for (int i = 0; i < 8; i++)
		wait_once(&st, false, 1000 * US);
	for (int i = 0; i < 1000; i++)
		spins += wait_once(&st, false, 1000 * US) > 0;
	/* Only the probes spin: at most one wait in SL_SPIN_PROBE_EVERY. */
	cr_assert_leq(spins, 1000 / SL_SPIN_PROBE_EVERY + 1, "spun %d times of 1000 for replies that never came", spins);
	cr_assert_geq(spins, 1000 / SL_SPIN_PROBE_EVERY - 1, "no probes (%d): a fast peer would never be noticed", spins);
}

Test(spin_policy, learns_to_stop_within_a_few_waits)
{
	struct sl_spin_state st = { 0 };
	int spinning = 0;

	for (int i = 0; i < 100; i++)
		wait_once(&st, false, 2 * US);
	for (int i = 0; i < 10; i++)
		spinning += wait_once(&st, false, 1000 * US) > 0;
	cr_assert_leq(spinning, 4, "kept spinning %d of 10 waits after the peer turned slow", spinning);
}

Test(spin_policy, one_slow_reply_does_not_stop_spinning)
{
	struct sl_spin_state st = { 0 };

	for (int i = 0; i < 100; i++)
		wait_once(&st, false, 2 * US);
	wait_once(&st, false, 5000 * US); /* a preemption, a page fault */
	cr_assert_gt(decide(&st, false, &(bool){ 0 }), 0);
}

Test(spin_policy, spins_again_when_spins_pay)
{
	struct sl_spin_state st = { 0 };
	int i, first_spin = -1;

	for (i = 0; i < 200; i++)
		wait_once(&st, false, 1000 * US);
	cr_assert_gt(st.ema_ns, SL_SPIN_MAX_NS, "1 ms replies did not teach it to stop spinning");
	/* The peer turns fast; a sleeping end sees it only through a probe. */
	for (i = 0; i < 3 * (int)SL_SPIN_PROBE_EVERY && first_spin < 0; i++)
		if (wait_once(&st, false, 3 * US) > 0)
			first_spin = i;
	cr_assert_geq(first_spin, 0, "never spun again for a peer that answers in 3 us");
	for (i = 0; i < 100; i++)
		cr_assert_gt(wait_once(&st, false, 3 * US), 0, "wait %d after the paying probe did not spin", i);
}

Test(spin_policy, sleep_that_wakes_fast_brings_spinning_back)
{
	struct sl_spin_state st = { .ema_ns = 90 * US };
	int i;

	/* No probe needed: the sleeps themselves show short waits. */
	for (i = 0; i < 30 && decide(&st, false, &(bool){ 0 }) == 0; i++)
		sl_spin_observe(&st, 0, false, 8 * US);
	cr_assert_lt(i, 30, "short sleeps never brought the spin back");
}

Test(spin_policy, yields_when_contended)
{
	struct sl_spin_state st = { 0 };

	/* The learning goes on; the spin gives the CPU away at every turn. */
	for (int i = 0; i < 1000; i++)
		cr_assert_gt(wait_once(&st, true, 2 * US), 0, "wait %d: a fast peer on another CPU is not spun for", i);
	for (int i = 0; i < 1000; i++)
		wait_once(&st, true, 1000 * US);
	cr_assert_eq(decide(&st, true, &(bool){ 0 }), 0, "spins on contended CPUs for replies that never come");
}

Test(spin_policy, budget_is_capped)
{
	struct sl_spin_state st = { 0 };

	for (int i = 0; i < 1000; i++) {
		uint32_t b = wait_once(&st, false, (uint64_t)(i % 7) * 40 * US);

		cr_assert_leq(b, SL_SPIN_MAX_NS);
	}
}

/* A database's reply, 50-150 us after the query: spinning catches it (a
 * sleep's wake-up costs as much again), contended or not (then yielding at
 * every turn: pgbench -S -c 4 on 2 CPUs ran at 1.0x kernel TCP when the
 * contended spin was at most 25 us, 2.4x at 200). */
Test(spin_policy, replies_of_a_database_are_spun_for)
{
	for (int contended = 0; contended < 2; contended++) {
		struct sl_spin_state st = { 0 };
		int caught = 0;

		for (int i = 0; i < 1000; i++) {
			uint64_t reply = (uint64_t)(50 + (i * 37) % 100) * US;
			uint32_t b = wait_once(&st, contended, reply);

			caught += i >= 100 && reply <= b;
		}
		cr_assert_geq(caught, 890, "caught %d of 900 replies of 50-150 us (%s CPUs)", caught,
			      contended ? "contended" : "free");
	}
}

Test(spin_policy, waits_longer_than_any_spin_stop_it_on_free_cpus)
{
	struct sl_spin_state st = { 0 };
	int spins = 0;

	/* Keep-alive connections that wait a millisecond for the next request. */
	for (int i = 0; i < 50; i++)
		wait_once(&st, false, 1000 * US);
	for (int i = 0; i < 1000; i++)
		spins += wait_once(&st, false, 1000 * US) > 0;
	cr_assert_leq(spins, 1000 / SL_SPIN_PROBE_EVERY + 1, "spun %d of 1000 waits of 1 ms", spins);
}

Test(spin_policy, pack_round_trips)
{
	struct sl_spin_state st = { .ema_ns = 123456, .skipped = 31, .probing = 1 }, back;

	back = sl_spin_unpack(sl_spin_pack(st));
	cr_assert_eq(back.ema_ns, st.ema_ns);
	cr_assert_eq(back.skipped, st.skipped);
	cr_assert_eq(back.probing, st.probing);
}
