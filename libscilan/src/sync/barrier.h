/* barrier.h — the asymmetric fence of the shm fabric: senders publish with a
 * plain store (no fence on the fast path) when the kernel offers
 * membarrier(GLOBAL_EXPEDITED), and a side about to sleep pays instead.
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

#endif
