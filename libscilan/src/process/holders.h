/* holders.h — which processes of our side hold a connection (fork, exec and
 * SCM_RIGHTS share one), so that only the last live holder's close is the
 * one the peer sees, even when other holders died without running our code.
 */
#ifndef SCILAN_HOLDERS_H
#define SCILAN_HOLDERS_H

#include <stdbool.h>

#include "socket/sock_state.h"

/* s->holder_slot values besides a slot index. */
#define SL_HOLDER_NONE (-1)    /* this process does not hold it (released) */
#define SL_HOLDER_UNNAMED (-2) /* counted without a slot (the table was full) */

/* How the holder table names this process (its start time and pid
 * namespace, from /proc): learnt at load, since a fresh process's first look
 * into /proc costs its first connection some 40-70 us; again after a fork,
 * at the child's first connection. */
void sl_holders_learn_self(void);
/* A new connection: our side is held by this process alone. */
void sl_holders_init(struct sl_sock *s);
/* An image adopting a connection after exec: the process (same pid) holds it
 * already; find its entry. */
void sl_holders_adopt_self(struct sl_sock *s);
/* One more process is about to hold s (a fork child, the receiver of an
 * SCM_RIGHTS message): counted now, named when it arrives; unexpect undoes
 * it when that process will never come. */
void sl_holders_expect(struct sl_sock *s);
void sl_holders_unexpect(struct sl_sock *s);
/* This process is the expected holder. */
void sl_holders_arrive(struct sl_sock *s);
/* This process holds s again (an exec that failed after releasing). */
void sl_holders_hold(struct sl_sock *s);
/* This process stops holding s.  True if it held it and no other live
 * holder remains: its close is the one the peer must see.  Idempotent (a
 * socket seen once per dup alias). */
bool sl_holders_release(struct sl_sock *s);
/* Whether another live process holds s besides this one. */
bool sl_holders_others(struct sl_sock *s);

/* pthread_atfork, prepare: every connection counts the child, and publishes
 * its exact read index so that whichever process reads next starts there.
 * Child: the child names itself for each of them. */
void sl_holders_before_fork(void);
void sl_holders_in_child(void);

#endif
