/* rdv_lock.c — who scans a rendezvous queue: one acceptor at a time under
 * the queue's gate (and its record lock once the queue was passed on), and
 * what an acceptor whose wait for them ran out does so that nobody's offer
 * is lost to a scan beside another (rdv_lock.h, ARCHITECTURE.md).
 */
#include "fabric/shm/rdv_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <time.h>

#include "runtime/sys.h"
#include "sync/clock.h"
#include "sync/lease_lock.h"

/* The bytes of a queue's record locks: the scan lock (write), and the one
 * every acceptor that scans without it holds (read, shared) until its scan
 * ends, which says that an entry may be out of the queue in its hands. */
#define LOCK_SCAN 0
#define LOCK_UNLOCKED_SCAN 1

static int queue_lock_op(int l, short type, off_t byte)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = byte, .l_len = 1 };

	return sl_sys.fcntl(l, F_SETLK, &fl);
}

static bool record_lock(int l, int64_t deadline)
{
	long nap_ns = 10000;

	/* No timed wait for a record lock: short naps, while the holder's
	 * scan (tens of microseconds) ends. */
	while (queue_lock_op(l, F_WRLCK, LOCK_SCAN) < 0) {
		struct timespec nap = { .tv_nsec = nap_ns };

		if ((errno != EAGAIN && errno != EACCES && errno != EINTR) || sl_mono_ns() >= deadline)
			return false;
		nanosleep(&nap, NULL);
		if (nap_ns < 250000)
			nap_ns *= 2;
	}
	return true;
}


/* Each of ls[0..n) locked, in order, by the deadline, what we took set in
 * *held: true if all were. */
bool sl_rdv_queues_lock(const int *ls, struct sl_lease_lock *const *gates, int n, int64_t deadline,
			uint64_t *held)
{
	bool all = true;

	*held = 0;
	for (int i = 0; i < n; i++) {
		if (ls[i] < 0)
			continue;
		if (gates[i]) {
			/* Ours even when late: a dead holder costs one wait. */
			all = sl_lease_lock_take(gates[i], deadline) && all;
			*held |= HELD_GATE(i);
			if (!sl_lease_lock_marked(gates[i]))
				continue;
		}
		if (!all || !record_lock(ls[i], deadline))
			return false;
		*held |= HELD_RECORD(i);
	}
	return all;
}

void sl_rdv_queues_unlock(const int *ls, struct sl_lease_lock *const *gates, int n, uint64_t held)
{
	for (int i = 0; i < n; i++) {
		if (held & HELD_RECORD(i))
			queue_lock_op(ls[i], F_UNLCK, LOCK_SCAN);
		if (held & HELD_UNLOCKED_SCAN(i))
			queue_lock_op(ls[i], F_UNLCK, LOCK_UNLOCKED_SCAN);
		if (held & HELD_GATE(i))
			sl_lease_lock_give(gates[i]);
	}
}

/* Are the gates we took still ours?  A holder preempted past the term
 * loses its lease to an acceptor that then scans unlocked, which may have
 * taken the offer for our connection off the queue meanwhile. */
static bool gates_still_held(struct sl_lease_lock *const *gates, int n, uint64_t held)
{
	for (int i = 0; i < n; i++)
		if ((held & HELD_GATE(i)) && !sl_lease_lock_held(gates[i]))
			return false;
	return true;
}

/* Our scan goes on without the locks (their wait ran out): said on every
 * queue, so that an acceptor whose scan we may rob of its offer (set aside
 * by us until our scan ends) knows to wait for us and look again. */
void sl_rdv_unlocked_scan_say(const int *ls, int n, uint64_t *held)
{
	for (int i = 0; i < n; i++)
		if (ls[i] >= 0 && queue_lock_op(ls[i], F_RDLCK, LOCK_UNLOCKED_SCAN) == 0)
			*held |= HELD_UNLOCKED_SCAN(i);
}

/* Do the record locks of queue i decide who scans it (the gate is marked,
 * or there is none)?  Then an acceptor whose wait ran out scans beside
 * their holder. */
static bool record_locked_queue(struct sl_lease_lock *const *gates, int i)
{
	return !gates[i] || sl_lease_lock_marked(gates[i]);
}

/* Does an acceptor scan queue i without its locks now (unlocked_scan_say)? */
static bool unlocked_scan_on(int l)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = LOCK_UNLOCKED_SCAN, .l_len = 1 };

	return sl_sys.fcntl(l, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
}

/* Our scan found nothing: may another have held the offer for our
 * connection out of the queue meanwhile?  We scanned without the locks; or
 * our lease was taken over (its taker scanned beside us), or we took one
 * over whose holder has not given back; or an acceptor scans a queue
 * beside the record lock we hold. */
bool sl_rdv_scan_maybe_robbed(const int *ls, struct sl_lease_lock *const *gates, int n, uint64_t held,
			      bool locked)
{
	if (!locked || !gates_still_held(gates, n, held))
		return true;
	for (int i = 0; i < n; i++) {
		if (ls[i] < 0)
			continue;
		if (gates[i] && sl_lease_lock_broken(gates[i]))
			return true;
		if (record_locked_queue(gates, i) && unlocked_scan_on(ls[i]))
			return true;
	}
	return false;
}

/* Until no acceptor scans the queues without their locks (or the deadline). */
static void await_unlocked_scans(const int *ls, struct sl_lease_lock *const *gates, int n, int64_t deadline)
{
	for (int i = 0; i < n; i++) {
		long nap_ns = 10000;

		if (ls[i] < 0 || !record_locked_queue(gates, i))
			continue;
		while (unlocked_scan_on(ls[i]) && sl_mono_ns() < deadline) {
			struct timespec nap = { .tv_nsec = nap_ns };

			nanosleep(&nap, NULL);
			if (nap_ns < 250000)
				nap_ns *= 2;
		}
	}
}

/* Until the holders whose leases were taken over have given back (each
 * may still be scanning, with entries in hand, as if it held the lock), or
 * the deadline. */
static void await_taken_over(struct sl_lease_lock *const *gates, int n, int64_t deadline)
{
	for (int i = 0; i < n; i++)
		if (gates[i])
			sl_lease_lock_await_broken(gates[i], deadline);
}

void sl_rdv_await_others(const int *ls, struct sl_lease_lock *const *gates, int n, int64_t deadline)
{
	await_taken_over(gates, n, deadline);
	await_unlocked_scans(ls, gates, n, deadline);
}
