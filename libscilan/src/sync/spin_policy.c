/* spin_policy.c — the adaptive spin: learns from each wait whether spinning
 * pays (glibc adaptive-mutex style moving average of the observed wait) and
 * gives the CPU away instead of spinning when runnable threads outnumber CPUs.
 */
#include "sync/spin_policy.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "runtime/sys.h"

/* /proc/loadavg is read at most this often per process: three syscalls,
 * a few microseconds, so at most ~0.1 % of one CPU. */
#define CONTENTION_CHECK_NS 4000000
/* An unreadable /proc (chroot, sandbox) is tried again this rarely. */
#define CONTENTION_RETRY_NS 1000000000

uint64_t sl_spin_pack(struct sl_spin_state st)
{
	return (uint64_t)st.ema_ns | (uint64_t)st.skipped << 32 | (uint64_t)st.probing << 48;
}

struct sl_spin_state sl_spin_unpack(uint64_t word)
{
	return (struct sl_spin_state){ .ema_ns = (uint32_t)word,
				       .skipped = (uint16_t)(word >> 32),
				       .probing = (uint16_t)(word >> 48) };
}

uint32_t sl_spin_decide(struct sl_spin_state *st, bool contended, bool *yield)
{
	uint64_t budget;

	st->probing = 0;
	/* The peer may be waiting for this very CPU to answer: a spin must then
	 * hand it over at every turn.  Not spinning at all was measured worse:
	 * four ping-pong pairs on 2 CPUs made 26k round trips/s sleeping against
	 * 62k on kernel TCP, since a pair whose ends both run answers at once. */
	*yield = contended;
	if (st->ema_ns <= SL_SPIN_MAX_NS) {
		/* Twice the expected wait plus a floor: an average reply is caught
		 * with room to spare, a miss costs little. */
		budget = 2 * (uint64_t)st->ema_ns + SL_SPIN_FLOOR_NS;
		st->skipped = 0;
		return budget > SL_SPIN_MAX_NS ? SL_SPIN_MAX_NS : (uint32_t)budget;
	}
	/* Replies come later than a spin could wait: sleep at once, but now and
	 * then spin a little, or a peer that became fast would never be noticed
	 * (two sleeping ends each see the other's wake-up latency).  Short: a
	 * peer that became merely quicker shows in the sleeps' own samples. */
	if (++st->skipped < SL_SPIN_PROBE_EVERY)
		return 0;
	st->skipped = 0;
	st->probing = 1;
	return SL_SPIN_PROBE_NS;
}

void sl_spin_observe(struct sl_spin_state *st, uint32_t budget_ns, bool paid, uint64_t waited_ns)
{
	int64_t sample, ema = st->ema_ns;

	if (paid) {
		sample = (int64_t)(waited_ns < budget_ns ? waited_ns : budget_ns);
		/* A probe that paid is proof the answers are fast again: do not wait
		 * for the average to crawl down from a slow past. */
		if (st->probing) {
			st->ema_ns = (uint32_t)sample;
			st->probing = 0;
			return;
		}
	} else {
		/* A sleep: the wait was at least the spin, and counts at most as a
		 * few budgets so one long idle gap is forgotten after a few fast waits. */
		sample = (int64_t)(waited_ns > SL_SPIN_SLEPT_CAP_NS ? SL_SPIN_SLEPT_CAP_NS : waited_ns);
		if (sample < (int64_t)budget_ns)
			sample = budget_ns;
	}
	st->probing = 0;
	ema += (sample - ema) / 8;
	st->ema_ns = (uint32_t)(ema < 0 ? 0 : ema);
}

static int online_cpus(void)
{
	static _Atomic int cpus;
	int n = atomic_load_explicit(&cpus, memory_order_relaxed);

	if (n <= 0) {
		long v = sysconf(_SC_NPROCESSORS_ONLN);

		n = v > 0 ? (int)v : 1;
		atomic_store_explicit(&cpus, n, memory_order_relaxed);
	}
	return n;
}

/* The running count of /proc/loadavg ("0.50 0.40 0.30 R/T pid") is the
 * kernel's nr_running now, ourselves included: one cheap read covers every
 * process on the machine, which getrusage's involuntary switches (only ours,
 * and only once we were already preempted) would not.  -1 if unreadable. */
static int runnable_now(void)
{
	char buf[128];
	ssize_t n;
	int fd, running = -1;

	fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = sl_sys.read(fd, buf, sizeof(buf) - 1);
	sl_sys.close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (sscanf(buf, "%*s %*s %*s %d/", &running) != 1)
		return -1;
	return running;
}

static _Atomic bool contended;

bool sl_cpus_contended(int64_t now_ns)
{
	static _Atomic int64_t next_check;
	static _Atomic int avg16; /* runnable threads x16, moving average over ~4 samples */
	int64_t due = atomic_load_explicit(&next_check, memory_order_relaxed);
	int running, avg;

	/* One thread samples; the others use the last answer. */
	if (now_ns == 0 || now_ns < due ||
	    !atomic_compare_exchange_strong(&next_check, &due, now_ns + CONTENTION_CHECK_NS))
		return atomic_load_explicit(&contended, memory_order_relaxed);
	/* The first sample moves the average a quarter of the way from 0, too
	 * little to say contended: not read on the first wait (a process's
	 * first connection), where two pseudo-files cost some 10 us. */
	if (due == 0)
		return false;
	running = runnable_now();
	if (running < 0) {
		atomic_store_explicit(&next_check, now_ns + CONTENTION_RETRY_NS, memory_order_relaxed);
		running = 0;
	}
	/* Averaged, so a passing cron job or compiler does not stop two ends
	 * that own a CPU each from spinning; a backlog that lasts does. */
	avg = atomic_load_explicit(&avg16, memory_order_relaxed);
	avg += (running * 16 - avg) / 4;
	atomic_store_explicit(&avg16, avg, memory_order_relaxed);
	atomic_store_explicit(&contended, avg > online_cpus() * 16 + 8, memory_order_relaxed);
	return atomic_load_explicit(&contended, memory_order_relaxed);
}

uint32_t sl_spin_budget(_Atomic uint64_t *word, int64_t now_ns, bool *yield)
{
	struct sl_spin_state st = sl_spin_unpack(atomic_load_explicit(word, memory_order_relaxed));
	uint32_t budget = sl_spin_decide(&st, sl_cpus_contended(now_ns), yield);

	atomic_store_explicit(word, sl_spin_pack(st), memory_order_relaxed);
	return budget;
}

void sl_spin_note(_Atomic uint64_t *word, uint32_t budget_ns, bool paid, int64_t waited_ns)
{
	struct sl_spin_state st = sl_spin_unpack(atomic_load_explicit(word, memory_order_relaxed));

	sl_spin_observe(&st, budget_ns, paid, waited_ns < 0 ? 0 : (uint64_t)waited_ns);
	atomic_store_explicit(word, sl_spin_pack(st), memory_order_relaxed);
}
