/* conn_spin.c — step 1 of the sleep protocol for one connection's send or
 * recv: busy-wait for the forced or learnt poll time before any syscall, and
 * report to the spin policy (spin_policy.c) whether the spin paid.
 */
#include "sync/conn_spin.h"

#include <fcntl.h>
#include <sys/socket.h>

#include "sync/clock.h"
#include "sync/spin.h"
#include "sync/spin_policy.h"
#include "runtime/sys.h"

_Atomic bool sl_nonblock_changes_seen;

/* Asked only when the call would block, so the fast path makes no syscall;
 * a kernel answer refreshes the hint that decides whether to spin. */
bool sl_io_nonblocking(struct sl_sock *s, int flags)
{
	bool on;
	int fl;

	if (flags & MSG_DONTWAIT)
		return true;
	/* The hint, when this process set or read it since its last fork
	 * and nobody else holds the socket: every change then came through
	 * the hook.  Else the kernel's flag, which a process sharing the
	 * socket may have changed (an event loop that blocked on a stale
	 * hint would hang).  An event loop's EAGAIN then costs no fcntl. */
	if (sl_sock_still_exact(s, atomic_load_explicit(&s->nonblock_exact_at, memory_order_acquire)))
		return atomic_load_explicit(&s->nonblock_hint, memory_order_relaxed);
	fl = sl_sys.fcntl(s->fd, F_GETFL);
	if (fl < 0)
		return false;
	on = (fl & O_NONBLOCK) != 0;
	sl_sock_note_nonblock(s, on);
	return on;
}

/* Busy-wait (step 1 of the sleep protocol) for the poll time, forced or
 * learnt, before any syscall: a reply that arrives within it costs no kernel
 * entry at all.  changed() is true when the word it watches has moved or the
 * stream ended.  dir: 0 waits for data, 1 for space. */
bool sl_conn_spin(struct sl_sock *s, int flags, int dir, bool (*changed)(struct sl_sock *s, uint64_t seen), uint64_t seen,
		  struct sl_spin_wait *w)
{
	int poll_us = atomic_load_explicit(&s->poll_us, memory_order_relaxed);
	int64_t end = 0, t;
	bool yield = false;

	w->began = 0;
	if (poll_us == 0 || (flags & MSG_DONTWAIT) || atomic_load_explicit(&s->nonblock_hint, memory_order_relaxed))
		return false;
	if (poll_us == SL_POLL_ADAPTIVE) {
		w->dir = dir;
		/* No clock yet: a reply within the first microsecond costs no
		 * clock read at all, as with a forced spin. */
		w->budget_ns = sl_spin_budget(&s->spin_learn[dir], 0, &yield);
		if (w->budget_ns == 0) {
			/* A syscall follows anyway: the clock is cheap beside it,
			 * and the sleep is timed from here. */
			w->began = sl_mono_ns();
			sl_cpus_contended(w->began);
			return false;
		}
		poll_us = -1;
	}
	for (unsigned i = 1;; i++) {
		if (changed(s, seen)) {
			/* Within the first clock interval the wait counts as 0. */
			if (poll_us < 0)
				sl_spin_note(&s->spin_learn[dir], w->budget_ns, true, w->began ? sl_mono_ns() - w->began : 0);
			return true;
		}
		/* Contended: after the first microsecond of pauses, every turn
		 * hands our CPU to whoever waits for it, the peer perhaps. */
		if (!sl_spin_turn(i, yield))
			continue;
		t = sl_mono_ns();
		if (!end && poll_us < 0) {
			/* Timed from here: a microsecond late, which the learning
			 * does not mind. */
			w->began = t;
			end = t + w->budget_ns;
			sl_cpus_contended(t);
		} else if (!end) {
			end = t + (int64_t)poll_us * 1000;
		} else if (t >= end) {
			return false;
		}
	}
}

/* The spin did not pay: the whole wait, sleep included, teaches the policy. */
void sl_conn_slept(struct sl_sock *s, const struct sl_spin_wait *w)
{
	if (w->began)
		sl_spin_note(&s->spin_learn[w->dir], w->budget_ns, false, sl_mono_ns() - w->began);
}
