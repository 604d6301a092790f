/* rdv_lock.h — the locks under which the acceptors of a rendezvous queue
 * scan it, and the signs an acceptor reads when its scan found nothing
 * (rdv_lock.c).
 */
#ifndef SCILAN_RDV_LOCK_H
#define SCILAN_RDV_LOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "sync/lease_lock.h"

/* Offers in flight.  An acceptor holds the entries it takes from the queue
 * until its scan ends (they go back as carriers then), so an acceptor
 * scanning meanwhile for the connection whose offer another holds found
 * nothing, left its connection plain (`no-offer`), and the client moved to
 * kernel TCP after its 1 s bound (`unconfirmed`): ab against pre-forked
 * gunicorn, nginx or php-fpm workers saw a 1 s stall in every run.  So the
 * acceptors of one queue scan it one at a time: under the queue's lock every
 * entry is in the queue, and the offer for our connection (sent before its
 * TCP connect) is found in one pass.
 *
 * The lock is the queue's gate (sync/lease_lock.c), made with the
 * rendezvous and reaching the processes forked from its maker, which are
 * the acceptors of a pre-forked server: no system call unless contended.
 * A process given the rendezvous any other way (SCM_RIGHTS, scm.c) has no
 * gate; its sender marks the gate first, and from then on every acceptor
 * of the queue also takes a POSIX record lock on the rendezvous socket,
 * which only a process holding that very socket can take (a socket cannot
 * be opened by name) and which the kernel drops when its holder dies.  Both
 * are per process, so threads of one process take scan_mutex first.  Their
 * wait is bounded: a holder stopped mid-scan (SIGSTOP, a debugger) costs
 * the others at most RDV_LOCK_WAIT_MS per accept, after which they scan
 * without the lock and say so (a shared record lock on the rendezvous
 * socket's byte 1, held to the end of the scan).  A scan beside another
 * can take an offer the other is looking for; so a scan that found nothing
 * where one ran beside it (it scanned unlocked; its lease was taken over;
 * a holder whose lease was taken over has not given back; a scan says it
 * runs unlocked) lets go of everything, waits for the other scans to end,
 * and looks again. */
#define RDV_LOCK_WAIT_MS SL_LEASE_TERM_MS
/* An acceptor that took a lease over and found nothing waits this much more
 * for the holder it took it from to end its scan (and send back what it
 * set aside), then looks again: on a loaded host a holder preempted past
 * the term held the offer for our connection, which stayed plain
 * (`no-offer`) while its client waited out its 1 s bound.  With both terms
 * below that bound. */
#define RDV_STRANDED_WAIT_MS 300

/* What this process holds of queue i's locks, four bits per queue. */
#define HELD_GATE(i) (1ull << (4 * (i)))
#define HELD_RECORD(i) (2ull << (4 * (i)))
#define HELD_UNLOCKED_SCAN(i) (4ull << (4 * (i)))

/* Each of ls[0..n) locked, in order, by the deadline, what we took set in
 * *held: true if all were.  The caller holds the process's scan mutex. */
bool sl_rdv_queues_lock(const int *ls, struct sl_lease_lock *const *gates, int n, int64_t deadline, uint64_t *held);
void sl_rdv_queues_unlock(const int *ls, struct sl_lease_lock *const *gates, int n, uint64_t held);
/* Our scan goes on without the locks: said on every queue (in *held). */
void sl_rdv_unlocked_scan_say(const int *ls, int n, uint64_t *held);
/* Our scan found nothing: may another acceptor have held the offer for our
 * connection out of the queue meanwhile? */
bool sl_rdv_scan_maybe_robbed(const int *ls, struct sl_lease_lock *const *gates, int n, uint64_t held,
			      bool locked);
/* Until those acceptors have ended their scans, or the deadline. */
void sl_rdv_await_others(const int *ls, struct sl_lease_lock *const *gates, int n, int64_t deadline);

#endif
