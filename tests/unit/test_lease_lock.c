/* test_lease_lock.c — unit tests of the lease lock (sync/lease_lock.c)
 * between forked processes: exclusion under contention, a holder killed
 * while holding it, a page scribbled over by a hostile holder, the mark. */
#include <criterion/criterion.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sync/clock.h"
#include "sync/lease_lock.h"

#define MS 1000000ll

struct shared {
	_Atomic int inside;
	_Atomic int overlaps;
	long count; /* plain on purpose: the lock is what keeps it whole */
};

static struct shared *shared_page(void)
{
	struct shared *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	cr_assert(p != MAP_FAILED);
	memset(p, 0, sizeof(*p));
	return p;
}

static int wait_child(pid_t pid)
{
	int status;

	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return status;
}

Test(lease_lock, uncontended_take_and_give)
{
	struct sl_lease_lock *l = sl_lease_lock_new();

	cr_assert(l);
	for (int i = 0; i < 3; i++) {
		cr_assert(sl_lease_lock_take(l, sl_mono_ns() + 10 * MS));
		sl_lease_lock_give(l);
	}
	sl_lease_lock_free(l);
}

/* Four processes forked after the lock was made take it 3,000 times each;
 * no two are ever inside at once, and no increment is lost.  The deadline is
 * far: a late take would not exclude. */
Test(lease_lock, excludes_forked_processes)
{
	struct sl_lease_lock *l = sl_lease_lock_new();
	struct shared *sh = shared_page();
	pid_t kids[4];

	cr_assert(l);
	for (int k = 0; k < 4; k++) {
		kids[k] = fork();
		cr_assert(kids[k] >= 0);
		if (kids[k] == 0) {
			for (int i = 0; i < 3000; i++) {
				if (!sl_lease_lock_take(l, sl_mono_ns() + 10000 * MS))
					_exit(2);
				if (atomic_fetch_add(&sh->inside, 1) != 0)
					atomic_fetch_add(&sh->overlaps, 1);
				sh->count++;
				if (i % 64 == 0)
					sched_yield(); /* held across a switch now and then */
				atomic_fetch_sub(&sh->inside, 1);
				sl_lease_lock_give(l);
			}
			_exit(0);
		}
	}
	for (int k = 0; k < 4; k++) {
		int st = wait_child(kids[k]);

		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d: status %#x", k, st);
	}
	cr_assert_eq(atomic_load(&sh->overlaps), 0);
	cr_assert_eq(sh->count, 4 * 3000);
	sl_lease_lock_free(l);
}

/* A holder killed while holding it costs one waiter its term, once: the
 * late take still gets the lock, and the next one is at once. */
Test(lease_lock, holder_killed_costs_one_term)
{
	struct sl_lease_lock *l = sl_lease_lock_new();
	int ready[2];
	pid_t kid;
	char c;
	int64_t t0;

	cr_assert(l && pipe(ready) == 0);
	kid = fork();
	cr_assert(kid >= 0);
	if (kid == 0) {
		if (!sl_lease_lock_take(l, sl_mono_ns() + 1000 * MS))
			_exit(2);
		(void)!write(ready[1], "x", 1);
		pause();
		_exit(0);
	}
	cr_assert_eq(read(ready[0], &c, 1), 1);
	kill(kid, SIGKILL);
	cr_assert(WIFSIGNALED(wait_child(kid)));

	t0 = sl_mono_ns();
	cr_assert_not(sl_lease_lock_take(l, t0 + 30 * MS), "a dead holder's lock was taken on time");
	cr_assert_geq(sl_mono_ns(), t0 + 30 * MS);
	sl_lease_lock_give(l);
	cr_assert(sl_lease_lock_take(l, sl_mono_ns() + 30 * MS), "the lock stayed lost after its lease was up");
	sl_lease_lock_give(l);
	sl_lease_lock_free(l);
}

/* A hostile holder writes what it likes into the page: whatever the words
 * say, a take ends by its deadline holding the lock, and nothing of ours
 * is touched but the page. */
Test(lease_lock, scribbled_page_is_bounded)
{
	static const unsigned char patterns[] = { 0xff, 0x01, 0x7f, 0x80 };
	struct sl_lease_lock *l = sl_lease_lock_new();

	cr_assert(l);
	for (size_t p = 0; p < sizeof(patterns); p++) {
		int64_t t0;

		memset(l, patterns[p], 4096);
		t0 = sl_mono_ns();
		sl_lease_lock_take(l, t0 + 20 * MS);
		cr_assert_lt(sl_mono_ns(), t0 + 2000 * MS, "pattern %#x: the take outlived its deadline", patterns[p]);
		sl_lease_lock_give(l);
		cr_assert(sl_lease_lock_take(l, sl_mono_ns() + 20 * MS), "pattern %#x: not free after a give",
			  patterns[p]);
		sl_lease_lock_give(l);
	}
	sl_lease_lock_free(l);
}

/* A hostile holder that keeps rewriting the holder word while we wait: the
 * take still ends, by its deadline or soon after, however the word moves.
 * A take that waited for the word to hold still long enough for a
 * compare-and-swap could spin on for as long as the writer writes. */
Test(lease_lock, word_rewritten_all_along_is_bounded)
{
	struct sl_lease_lock *l = sl_lease_lock_new();
	_Atomic uint32_t *word = (_Atomic uint32_t *)(void *)l;
	pid_t kid;
	int64_t t0;

	cr_assert(l);
	kid = fork();
	cr_assert(kid >= 0);
	if (kid == 0) {
		for (uint32_t v = 1;; v = v % 1000003 + 1)
			atomic_store_explicit(word, v, memory_order_relaxed);
	}
	t0 = sl_mono_ns();
	sl_lease_lock_take(l, t0 + 20 * MS);
	cr_expect_lt(sl_mono_ns(), t0 + 2000 * MS, "the take outlived its deadline under a rewriting holder");
	kill(kid, SIGKILL);
	wait_child(kid);
	sl_lease_lock_give(l);
	sl_lease_lock_free(l);
}

/* The mark waits for the holder (who read it clear) to give the lock back. */
Test(lease_lock, mark_waits_for_the_holder)
{
	struct sl_lease_lock *l = sl_lease_lock_new();
	struct shared *sh = shared_page();
	int ready[2];
	pid_t kid;
	char c;

	cr_assert(l && pipe(ready) == 0);
	kid = fork();
	cr_assert(kid >= 0);
	if (kid == 0) {
		struct timespec hold = { .tv_nsec = 20 * MS };

		if (!sl_lease_lock_take(l, sl_mono_ns() + 1000 * MS) || sl_lease_lock_marked(l))
			_exit(2);
		(void)!write(ready[1], "x", 1);
		nanosleep(&hold, NULL);
		atomic_store(&sh->inside, 1); /* the holder's scan ends */
		sl_lease_lock_give(l);
		_exit(0);
	}
	cr_assert_eq(read(ready[0], &c, 1), 1);
	sl_lease_lock_mark(l);
	cr_assert_eq(atomic_load(&sh->inside), 1, "marked while the holder was still inside");
	cr_assert(sl_lease_lock_marked(l));
	cr_assert(WIFEXITED(wait_child(kid)));
	sl_lease_lock_free(l);
}
