/* rendezvous.h — the shm fabric's rendezvous by passing descriptors: a
 * listener owns an abstract Unix socket named after its address, a connector
 * hands its segment and bells to it with SCM_RIGHTS (rendezvous.c).
 */
#ifndef SCILAN_RENDEZVOUS_H
#define SCILAN_RENDEZVOUS_H

#include "socket/sock_state.h"

struct sl_lease_lock;

#define SL_RDV_FDS 3 /* the segment, the connector's bell, the acceptor's bell */

/* The abstract names' prefix, "<family>-<address hex>-<port>" after it.  Its
 * number changes with what the two ends must agree on: 3, an offer at
 * connect comes from a port in offer_port.h's range (an acceptor of 2 would
 * look at every accept, a connector of 2 would not confine its port). */
#define SL_RDV_NAME_PREFIX "scilan-rdv3/"

/* Listening side: the Unix socket that receives offers for key (a
 * descriptor of the library's own), or -1 with errno (EADDRINUSE: another
 * listener of the network namespace has that address). */
int sl_rdv_listen(const struct sl_key *key);

/* Connecting side: a Unix connection to the listener registered at dst, or
 * -1 (none in this network namespace). */
int sl_rdv_connect(const struct sl_key *dst);

/* Connecting side, before the kernel's connect: hand fds over conn, if the
 * process behind it owns the TCP listener the kernel will connect our TCP
 * socket tcp to.  src is our end, or has port 0 when the kernel's connect
 * is to pick our port: the offer names tcp itself (its SO_COOKIE) either way;
 * the acceptor matches it by port when it has one, else by socket;
 * flags: SL_RDV_*.  0, or -1 with errno (EPERM: it does not). */
#define SL_RDV_NAMED 1u /* the offer also has names in our runtime directory */
#define SL_RDV_LATE 2u  /* a live connection's offer (promotion): only a look takes it */
int sl_rdv_send(int conn, int tcp, const struct sl_key *dst, const struct sl_key *src, const int fds[SL_RDV_FDS],
		unsigned flags);
/* The same without looking at who listens: what sl_rdv_send does once the
 * listener checked out, and all a hostile connector needs (the message is
 * no secret); the tests that play one use it. */
int sl_rdv_send_unchecked(int conn, int tcp, const struct sl_key *dst, const struct sl_key *src,
			  const int fds[SL_RDV_FDS], unsigned flags);

/* Accepting side, after the kernel accept of (local, peer), each read from
 * tcp when first needed if still of family 0 (a scan that finds no offer
 * asks the kernel nothing): the offer made
 * for exactly that connection (tcp, the accepted socket) by the owner of
 * its other end, from the listener's sockets ls[0..n).  1 with fds filled
 * (ours now) and *named (the connector says it also named the offer: its
 * word, only good for tidying), 0 if none; SL_RDV_PARTIAL if not all its
 * descriptors fit (EMFILE): fds[0] is the segment, fds[1] the connector's
 * bell or -1, fds[2] -1, for the caller to use some other way or refuse
 * (sl_segment_refuse), as it was made by the owner of the other end.  One
 * that was not (or whose maker cannot be told), and offers for other
 * connections, are never written to; the latter go back to the queue for
 * their acceptors. */
#define SL_RDV_PARTIAL 2
/* alone: no other process holds the listener, so offers for other
 * connections are kept in this process (the stash) for its later accepts
 * instead of going back to the queue. */
/* gates[i]: the lock made with queue ls[i] (sl_lease_lock_new, reaching the
 * processes forked from its maker), or NULL in a process given the queue
 * another way; then, and once the gate is marked (sl_lease_lock_mark: the
 * queue was passed on), the acceptors take a record lock as well. */
/* late: the look for a late offer (promotion) for the live connection tcp;
 * an accept takes only offers made at connect, a look only late ones. */
int sl_rdv_take(const int *ls, struct sl_lease_lock *const *gates, int n, int tcp, struct sl_key *local,
		struct sl_key *peer, int fds[SL_RDV_FDS], bool *named, bool alone, bool late);
/* An entry e taken from queue l goes back to it, for the acceptor of its
 * connection (what a scan does at its end with the offers it passed). */
void sl_rdv_send_back(int l, int e);
/* The listener's queue l closes: drop what the stash kept from it. */
void sl_rdv_forget_listener(int l);
/* fork: the stash goes back to its queues first (a child may accept). */
void sl_rdv_fork_lock(void);
void sl_rdv_fork_unlock(bool child);

#endif
