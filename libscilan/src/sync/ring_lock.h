/* ring_lock.h — the lock that serializes each ring's users, biased to the
 * first thread that takes it so that the data path pays no locked
 * instruction (ring_lock.c has the slow path and the bias revocation).
 */
#ifndef SCILAN_RING_LOCK_H
#define SCILAN_RING_LOCK_H

#include <stdatomic.h>

/* A ring lock biased to the first thread that uses it: that thread enters
 * with plain stores (no locked instruction on the fast path); another
 * thread revokes the bias once, with membarrier, and from then on everyone
 * takes the spinlock.  See ring_lock.c. */
struct sl_lock {
	_Atomic int held;  /* the spinlock, once the bias is revoked */
	_Atomic int owner; /* tid the lock is biased to; 0 none yet, -1 revoked */
	_Atomic int busy;  /* tid of the owner while inside, else 0 */
};

/* Whether ring locks may be biased (membarrier registered); set at init. */
void sl_lock_init_bias(void);
/* A fork child: the lock as if no thread had used it. */
void sl_lock_reset(struct sl_lock *l);

/* The calling thread's tid once a ring lock learnt it (0 before, and in a
 * fork child).  Initial-exec: the lock's fast path reads it without calling
 * into the dynamic linker, as the general model would in a shared library. */
extern __thread int sl_lock_tid __attribute__((tls_model("initial-exec")));
/* Everything but the biased owner's re-entry (ring_lock.c). */
void sl_lock_slow(struct sl_lock *l);

/* The bias owner enters with plain stores (see struct sl_lock); inline, so
 * that the data path's lock costs no call. */
static inline void sl_lock(struct sl_lock *l)
{
	int me = sl_lock_tid;

	if (me && atomic_load_explicit(&l->owner, memory_order_relaxed) == me) {
		/* The owner's half of an asymmetric Dekker: store busy, then
		 * load owner, with only a compiler barrier between; a revoker's
		 * membarrier supplies the fence (sleep protocol, same argument). */
		atomic_store_explicit(&l->busy, me, memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst);
		if (atomic_load_explicit(&l->owner, memory_order_acquire) == me)
			return;
		atomic_store_explicit(&l->busy, 0, memory_order_release);
	}
	sl_lock_slow(l);
}

static inline void sl_unlock(struct sl_lock *l)
{
	int me = sl_lock_tid;

	if (me && atomic_load_explicit(&l->busy, memory_order_relaxed) == me)
		atomic_store_explicit(&l->busy, 0, memory_order_release);
	else
		atomic_store_explicit(&l->held, 0, memory_order_release);
}

#endif
