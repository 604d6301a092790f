/* barrier.h — every membarrier of the library: the asymmetric fence of the
 * shm fabric (senders publish with a plain store when the kernel offers
 * membarrier(GLOBAL_EXPEDITED), and a side about to sleep pays instead), and
 * the process-private one that revokes a biased ring lock.
 */
#ifndef SCILAN_BARRIER_H
#define SCILAN_BARRIER_H

#include <stdbool.h>

/* This process is registered, so a peer's membarrier orders our stores:
 * our sends may publish without a fence.  Decided once per process. */
bool sl_barrier_unfenced_ok(void);
/* Order every registered process's earlier stores before our next load
 * (the sleeper's half of the asymmetric fence); 0, or -1 with errno. */
int sl_barrier_remote(void);

/* The process-private expedited barrier, which revokes a biased ring lock
 * (ring_lock.c): register once (false without kernel support), then issue. */
bool sl_barrier_private_register(void);
void sl_barrier_private(void);

#endif
