/* lease_lock.c — the lease lock: a futex word naming its holder's pid, in an
 * anonymous shared page, so fork is the only way to it and nothing about it
 * lives in a file or a name another process could reach.
 */
#include "sync/lease_lock.h"

#include <errno.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "socket/sock_state.h"
#include "sync/clock.h"

/* Every holder is another process that may have died holding it, or that
 * writes what it likes into the page: so no pointer in it (a robust pthread
 * mutex links its holder's robust list through the mutex itself, which a
 * hostile holder could aim anywhere in ours), only numbers we compare. */
#define BROKEN_SLOTS 8
struct sl_lease_lock {
	_Atomic uint32_t holder;  /* 0 free, else the pid that took it */
	_Atomic uint32_t waiters; /* processes in a futex wait on holder */
	_Atomic uint32_t mark;
	/* The holders whose leases were taken from them, each until it gives
	 * back (a second take-over while the first holder still scans must not
	 * hide it); given_back counts those give-backs, the word their waiters
	 * sleep on. */
	_Atomic uint32_t broken[BROKEN_SLOTS];
	_Atomic uint32_t given_back;
};

static long futex(_Atomic uint32_t *word, int op, uint32_t val, const struct timespec *timeout)
{
	/* Not FUTEX_PRIVATE_FLAG: the word is shared between processes. */
	return syscall(SYS_futex, word, op, val, timeout, NULL, 0);
}

struct sl_lease_lock *sl_lease_lock_new(void)
{
	void *page = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			  -1, 0);

	return page == MAP_FAILED ? NULL : page;
}

void sl_lease_lock_free(struct sl_lease_lock *l)
{
	if (l)
		munmap(l, (size_t)sysconf(_SC_PAGESIZE));
}

/* pid's lease was taken from it: in a free slot, else over the first
 * (which only costs a waiter the look it would have had for that one). */
static void note_broken(struct sl_lease_lock *l, uint32_t pid)
{
	for (int i = 0; i < BROKEN_SLOTS; i++) {
		uint32_t free = 0;

		if (atomic_compare_exchange_strong(&l->broken[i], &free, pid))
			return;
	}
	atomic_store(&l->broken[0], pid);
}

bool sl_lease_lock_take(struct sl_lease_lock *l, int64_t deadline_ns)
{
	uint32_t me = (uint32_t)sl_self_pid;

	for (;;) {
		uint32_t seen = 0;
		int64_t left;
		struct timespec wait;

		if (atomic_compare_exchange_strong(&l->holder, &seen, me))
			return true;
		left = deadline_ns - sl_mono_ns();
		if (left <= 0) {
			/* Its lease is up: the next waiter must not pay for it
			 * again.  A holder that comes back finds the word not
			 * its own and leaves it (sl_lease_lock_give).  Taken
			 * whatever the word says now: a compare-and-swap would
			 * wait for it to hold still, which a hostile holder
			 * that keeps rewriting it need never let happen. */
			seen = atomic_exchange(&l->holder, me);
			if (seen && seen != me)
				note_broken(l, seen);
			return false;
		}
		wait.tv_sec = (time_t)(left / 1000000000);
		wait.tv_nsec = (long)(left % 1000000000);
		/* waiters before the wait's own look at the word, holder
		 * before waiters in the giver: one of us sees the other
		 * (both sequentially consistent). */
		atomic_fetch_add(&l->waiters, 1);
		futex(&l->holder, FUTEX_WAIT, seen, &wait);
		atomic_fetch_sub(&l->waiters, 1);
	}
}

void sl_lease_lock_give(struct sl_lease_lock *l)
{
	uint32_t me = (uint32_t)sl_self_pid;

	if (!atomic_compare_exchange_strong(&l->holder, &me, 0)) {
		/* Taken from us when our lease was up: its taker, and any
		 * acceptor that found nothing since, may be waiting for what we
		 * did under it to end. */
		bool was_noted = false;

		for (int i = 0; i < BROKEN_SLOTS; i++) {
			me = (uint32_t)sl_self_pid;
			was_noted = atomic_compare_exchange_strong(&l->broken[i], &me, 0) || was_noted;
		}
		if (was_noted) {
			atomic_fetch_add(&l->given_back, 1);
			futex(&l->given_back, FUTEX_WAKE, INT32_MAX, NULL);
		}
		return;
	}
	if (atomic_load(&l->waiters))
		futex(&l->holder, FUTEX_WAKE, 1, NULL);
}

bool sl_lease_lock_broken(const struct sl_lease_lock *l)
{
	for (int i = 0; i < BROKEN_SLOTS; i++)
		if (atomic_load(&l->broken[i]))
			return true;
	return false;
}

bool sl_lease_lock_held(const struct sl_lease_lock *l)
{
	return atomic_load(&l->holder) == (uint32_t)sl_self_pid;
}

void sl_lease_lock_await_broken(struct sl_lease_lock *l, int64_t deadline_ns)
{
	uint32_t first[BROKEN_SLOTS];

	for (int i = 0; i < BROKEN_SLOTS; i++)
		first[i] = atomic_load(&l->broken[i]);
	for (;;) {
		/* Before the look: a give-back after it changes the word, and
		 * the wait returns at once. */
		uint32_t gen = atomic_load(&l->given_back);
		int64_t left;
		struct timespec wait;

		if (!sl_lease_lock_broken(l))
			return;
		left = deadline_ns - sl_mono_ns();
		if (left <= 0) {
			/* Dead, or stopped: one wait is all it costs (those
			 * noted since are the next waiter's). */
			for (int i = 0; i < BROKEN_SLOTS; i++) {
				uint32_t was = first[i];

				if (was)
					atomic_compare_exchange_strong(&l->broken[i], &was, 0);
			}
			return;
		}
		wait.tv_sec = (time_t)(left / 1000000000);
		wait.tv_nsec = (long)(left % 1000000000);
		futex(&l->given_back, FUTEX_WAIT, gen, &wait);
	}
}

void sl_lease_lock_mark(struct sl_lease_lock *l)
{
	if (atomic_load(&l->mark))
		return;
	sl_lease_lock_take(l, sl_mono_ns() + (int64_t)SL_LEASE_TERM_MS * 1000000);
	atomic_store(&l->mark, 1);
	sl_lease_lock_give(l);
}

bool sl_lease_lock_marked(const struct sl_lease_lock *l)
{
	return atomic_load(&l->mark) != 0;
}
