/* spin.h — the one turn of every busy-wait on a peer (a connection's send or
 * recv, poll over connections, an epoll set's queue): pause while the peer
 * may be running on another CPU; with CPUs contended, yield after that.
 */
#ifndef SCILAN_SPIN_H
#define SCILAN_SPIN_H

#include <sched.h>
#include <stdbool.h>

/* Pauses before a contended spin starts yielding: a peer on another CPU
 * answers within the first microsecond of them. */
#define SL_SPIN_PAUSES 64

/* Take turn `turn` (counted from 1); yield: the CPUs are contended
 * (sl_spin_budget).  True when the caller should read its clock now: every
 * 64 pauses (about a microsecond), or every 4 yields (a system call each). */
static inline bool sl_spin_turn(unsigned turn, bool yield)
{
	bool yielding = yield && turn > SL_SPIN_PAUSES;

	if (yielding)
		sched_yield();
	else
		__builtin_ia32_pause();
	return turn % (yielding ? 4 : SL_SPIN_PAUSES) == 0;
}

#endif
