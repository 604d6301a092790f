/* lease_lock.h — a lock between processes that share a page by fork, taken
 * and given back without a system call when no one else wants it; a holder
 * that keeps it past a waiter's deadline (dead, stopped, or hostile) loses it.
 */
#ifndef SCILAN_LEASE_LOCK_H
#define SCILAN_LEASE_LOCK_H

#include <stdbool.h>
#include <stdint.h>

struct sl_lease_lock;

/* How long a waiter waits before the lease is up (sl_lease_lock_mark's, and
 * the callers' usual term). */
#define SL_LEASE_TERM_MS 100

/* A lock of its own in a fresh page shared with the children forked after
 * this (MAP_SHARED | MAP_ANONYMOUS), or NULL with errno. */
struct sl_lease_lock *sl_lease_lock_new(void);
void sl_lease_lock_free(struct sl_lease_lock *l);

/* Taken by this process (the caller serializes its own threads) by
 * deadline_ns (CLOCK_MONOTONIC): true.  False when it was still held then;
 * the lock is then ours all the same, taken from a holder that kept it too
 * long, but whatever that holder does meanwhile is not excluded. */
bool sl_lease_lock_take(struct sl_lease_lock *l, int64_t deadline_ns);
void sl_lease_lock_give(struct sl_lease_lock *l);
/* Was a holder's lease taken over, and has it not given back yet (any of
 * the last few)? */
bool sl_lease_lock_broken(const struct sl_lease_lock *l);
/* Does this process still hold it (its lease was not taken over)? */
bool sl_lease_lock_held(const struct sl_lease_lock *l);
/* Wait until every holder whose lease was taken over (by any process)
 * has given back, so that what it did under the lock it no longer held is
 * over, or until deadline_ns.  Past it (one is dead, stopped, or lies: the
 * words are only numbers it may write) those pending at the start are no
 * longer waited for. */
void sl_lease_lock_await_broken(struct sl_lease_lock *l, int64_t deadline_ns);

/* A flag the holders of the page keep beside the lock, set under it (taken
 * within SL_LEASE_TERM_MS) and read by its holder: once set, never cleared.
 * A holder that read it clear has given the lock back before the marking
 * returns, or lost its lease. */
void sl_lease_lock_mark(struct sl_lease_lock *l);
bool sl_lease_lock_marked(const struct sl_lease_lock *l);

#endif
