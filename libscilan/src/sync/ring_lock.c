/* ring_lock.c — the ring locks' slow path: the first thread takes the bias,
 * any other revokes it once (a process-private membarrier, barrier.c) and
 * from then on everyone takes the spinlock.
 */
#include "sync/ring_lock.h"

#include <sched.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sync/barrier.h"

static bool bias_ok;
__thread int sl_lock_tid __attribute__((tls_model("initial-exec")));

static int my_tid(void)
{
	if (!sl_lock_tid)
		sl_lock_tid = (int)syscall(SYS_gettid);
	return sl_lock_tid;
}

void sl_lock_init_bias(void)
{
	bias_ok = sl_barrier_private_register();
}

void sl_lock_slow(struct sl_lock *l)
{
	int me = my_tid(), owner = atomic_load_explicit(&l->owner, memory_order_relaxed);

	if (owner == me || (owner == 0 && bias_ok &&
			    atomic_compare_exchange_strong(&l->owner, &owner, me))) {
		/* The owner's half of an asymmetric Dekker: store busy, then
		 * load owner, with only a compiler barrier between; a revoker's
		 * membarrier supplies the fence (sleep protocol, same argument). */
		atomic_store_explicit(&l->busy, me, memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst);
		if (atomic_load_explicit(&l->owner, memory_order_acquire) == me)
			return;
		atomic_store_explicit(&l->busy, 0, memory_order_release);
	}
	for (unsigned spins = 0;; spins++) {
		if (!atomic_load_explicit(&l->held, memory_order_relaxed) &&
		    !atomic_exchange_explicit(&l->held, 1, memory_order_acquire))
			break;
		/* Ring locks are held only for a copy, never across a sleep. */
		if (spins < 256)
			__builtin_ia32_pause();
		else
			sched_yield();
	}
	if (atomic_load_explicit(&l->owner, memory_order_relaxed) != -1) {
		owner = atomic_exchange(&l->owner, -1);
		if (owner > 0 && owner != me) {
			/* After this, the owner either sees the revocation or its
			 * busy store is visible to us: wait until it has left. */
			sl_barrier_private();
			while (atomic_load_explicit(&l->busy, memory_order_acquire) != 0)
				sched_yield();
		}
	}
}

void sl_lock_reset(struct sl_lock *l)
{
	atomic_store(&l->owner, -1);
	atomic_store(&l->busy, 0);
	atomic_store(&l->held, 0);
}
