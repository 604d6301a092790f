/* spin_policy.h — how long a waiting side spins before it arms the wake word
 * and sleeps: a forced SCILAN_POLL_US, or a budget learned per connection and
 * direction (per thread for a poll set) that yields the CPU at every turn
 * while the CPUs are contended.  The learning core is pure (no clock, no I/O) and unit-tested.
 */
#ifndef SCILAN_SPIN_POLICY_H
#define SCILAN_SPIN_POLICY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* poll_us value meaning "learn the spin" (the default). */
#define SL_POLL_ADAPTIVE (-1)
/* The most an adaptive side spins: the latency profile's forced spin.  A
 * reply that takes a server 50-150 us to make (a database query) is then
 * caught without a sleep, whose wake-up costs as much again on a virtual
 * machine.  While runnable threads outnumber CPUs the spin yields at every
 * turn, so it burns only a CPU nobody else asked for.  (It was 25 us: pgbench
 * -S slept on nearly every query, at 1.0x kernel TCP and below.) */
#define SL_SPIN_MAX_NS 200000u
/* What a spin lasts beyond twice the expected wait. */
#define SL_SPIN_FLOOR_NS 6250u
/* A side that learnt not to spin probes with a short spin every this many
 * waits, for a peer that became fast. */
#define SL_SPIN_PROBE_EVERY 32u
#define SL_SPIN_PROBE_NS 25000u
/* A wait that ended in a sleep counts as at most this long: above the
 * longest spin, so waits that no spin catches stop the spinning. */
#define SL_SPIN_SLEPT_CAP_NS (4 * SL_SPIN_MAX_NS)

/* Learnt state; packs into one 64-bit word so racing threads lose samples,
 * never tear it. */
struct sl_spin_state {
	uint32_t ema_ns;   /* moving average (1/8) of the observed wait */
	uint16_t skipped;  /* waits without a spin since the last probe */
	uint16_t probing;  /* the budget last handed out was a probe */
};

/* The budget in ns for the next wait; 0 = do not spin.  *yield: spin with
 * sched_yield instead of pause (contended: more threads runnable than CPUs). */
uint32_t sl_spin_decide(struct sl_spin_state *st, bool contended, bool *yield);
/* The wait that followed: it ended during a spin of budget_ns (paid) or in a
 * sleep, waited_ns after it began. */
void sl_spin_observe(struct sl_spin_state *st, uint32_t budget_ns, bool paid, uint64_t waited_ns);

uint64_t sl_spin_pack(struct sl_spin_state st);
struct sl_spin_state sl_spin_unpack(uint64_t word);

/* More threads runnable than CPUs online, on average over the last samples of
 * /proc/loadavg, taken at most every few ms per process.  now_ns:
 * CLOCK_MONOTONIC, or 0 for the last answer without sampling. */
bool sl_cpus_contended(int64_t now_ns);

/* The spin for one wait on a learnt word (now_ns 0: no clock at hand, the
 * contention answer is the last one) (a connection's direction, or a
 * thread's poll-set word): the budget, then what the wait showed.  Only for
 * sockets whose poll_us is SL_POLL_ADAPTIVE; a forced value is spun as is. */
uint32_t sl_spin_budget(_Atomic uint64_t *word, int64_t now_ns, bool *yield);
void sl_spin_note(_Atomic uint64_t *word, uint32_t budget_ns, bool paid, int64_t waited_ns);

#endif
