/* stall.h — a peer that stops reading its ring while we wait on it: it may
 * read the kernel socket instead (a process without the hook that received
 * the connection with SCM_RIGHTS, io_uring), so after a bound the
 * connection moves to kernel TCP (stall.c).
 */
#ifndef SCILAN_STALL_H
#define SCILAN_STALL_H

#include <stdbool.h>
#include <stdint.h>

#include "socket/sock_state.h"

/* How long the peer may leave our bytes in its ring unread, taking none,
 * while we wait in scilan, before the connection moves to kernel TCP. */
#define SL_STALL_MS 3000
/* Sleeps are capped at this while the peer has bytes of ours unread, so
 * that the bound is seen. */
#define SL_STALL_CHECK_MS 200

/* Does the peer have bytes of ours unread in its ring (worth watching)? */
bool sl_stall_watch(const struct sl_sock *s);
/* After a sleep: note the peer's progress at now_ns; true if it took none
 * of our bytes for SL_STALL_MS, and the caller should move (sl_stall_move). */
bool sl_stall_note(struct sl_sock *s, int64_t now_ns);
/* At our last close: has the peer taken none of our bytes since it agreed,
 * with some unread?  It may be a reader past the hook, which our close
 * would leave at EOF without them: the caller moves them first. */
bool sl_stall_at_close(const struct sl_sock *s);
/* Move the connection to kernel TCP, re-sending what the peer did not take
 * (sl_bypass_leave): a hooked peer that was merely slow follows; one that
 * reads the kernel socket gets every byte. */
void sl_stall_move(struct sl_sock *s);

#endif
