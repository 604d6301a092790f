/* conn_spin.h — the spin before a connection's send or recv sleeps
 * (conn_spin.c): forced (SCILAN_POLL_US) or learnt per direction.
 */
#ifndef SCILAN_CONN_SPIN_H
#define SCILAN_CONN_SPIN_H

#include <stdbool.h>
#include <stdint.h>

#include "socket/sock_state.h"

/* A wait whose spin is learnt (spin_policy.c): what the sleep after a spin
 * that did not pay must report.  began == 0: nothing to report. */
struct sl_spin_wait {
	int64_t began;
	uint32_t budget_ns;
	int dir;
};

/* Is this call non-blocking (MSG_DONTWAIT, O_NONBLOCK)?  The hint when it
 * is exact (sl_sock_note_nonblock), else the kernel, which refreshes it. */
bool sl_io_nonblocking(struct sl_sock *s, int flags);
/* Spin until changed(s, seen) or the poll time is over; dir: 0 waits for
 * data, 1 for space.  true: it changed (no sleep needed). */
bool sl_conn_spin(struct sl_sock *s, int flags, int dir, bool (*changed)(struct sl_sock *s, uint64_t seen), uint64_t seen,
		  struct sl_spin_wait *w);
/* The spin did not pay: after the sleep, the whole wait teaches the policy. */
void sl_conn_slept(struct sl_sock *s, const struct sl_spin_wait *w);

#endif
