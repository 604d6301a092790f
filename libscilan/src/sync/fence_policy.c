/* fence_policy.c — the process's choice between unfenced sends (a plain
 * store per publish; every sleep of the peer for our data costs it a
 * membarrier(GLOBAL_EXPEDITED), an IPI to every CPU running a scilan
 * process: 0.4 us here with the other CPU idle, 9.5 us with it busy) and
 * fenced ones (a locked exchange per publish, some 10-20 ns).  Unfenced pays
 * only where peers never sleep: polling request/response and streams.
 */
#include "sync/fence_policy.h"

#include <stdatomic.h>

/* Evidence for fencing: a connection whose peer waited for our data adds
 * WAITED_WEIGHT, one whose peer never did takes one away.  New connections
 * start unfenced only at 0, so a process whose connections mostly see their
 * peers sleep fences from the start (short connections: their one or two
 * sleeps are most of what they cost), and one that stopped seeing it goes
 * back to unfenced after a few quiet connections. */
#define WAITED_WEIGHT 4
#define SCORE_MAX 64

static _Atomic int score;

bool sl_fence_start_unfenced(void)
{
	return atomic_load_explicit(&score, memory_order_relaxed) == 0;
}

void sl_fence_note(bool peer_waited)
{
	int old = atomic_load_explicit(&score, memory_order_relaxed), next;

	do
		next = peer_waited ? (old + WAITED_WEIGHT > SCORE_MAX ? SCORE_MAX : old + WAITED_WEIGHT)
				   : (old > 0 ? old - 1 : 0);
	while (next != old && !atomic_compare_exchange_weak_explicit(&score, &old, next, memory_order_relaxed,
								     memory_order_relaxed));
}
