/* fence_policy.h — whether a new connection's sends publish unfenced (the
 * peer's sleeper pays a membarrier instead) or fenced, learned per process
 * from whether peers keep sleeping for our data (fence_policy.c).
 */
#ifndef SCILAN_FENCE_POLICY_H
#define SCILAN_FENCE_POLICY_H

#include <stdbool.h>

/* May a new connection of this process start unfenced? */
bool sl_fence_start_unfenced(void);
/* A connection of ours is done learning: its peer slept (or waited in an
 * epoll set) for our data at least once, or never did. */
void sl_fence_note(bool peer_waited);

#endif
