/* rdv_msg.h — the rendezvous's one message, an offer or a carrier, and the
 * descriptors it passes (rdv_msg.c): what rendezvous.c and its stash
 * (rdv_stash.c) send and receive on a listener's queue.
 */
#ifndef SCILAN_RDV_MSG_H
#define SCILAN_RDV_MSG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "socket/sock_state.h"

#define RDV_MAGIC 0x32564452204c53ull /* "SL RDV2" */
/* The most descriptors a message carries (an offer's SL_RDV_FDS). */
#define RDV_MSG_FDS 3

enum { RDV_OFFER = 1, RDV_CARRIER = 2 };
/* In an offer's hops (a carrier's count is its own): the connector also
 * made the offer's names, which the acceptor then removes (the connector
 * does too once it sees the offer taken, and sweeps take a dead one's).
 * The connector's word: it can only spare or cost itself the tidying. */
#define RDV_NAMED 0x80000000u
/* Also in its hops: a live connection's late offer (promotion), which only
 * a look for that connection takes; an accept's scan never takes one for
 * the connection it accepted (rendezvous.h).  The flag is the connector's
 * word too, and checked where it counts: the segment itself must say late
 * to a look and not to an accept (shm_attach.c). */
#define RDV_LATE 0x40000000u
#define RDV_FLAGS (RDV_NAMED | RDV_LATE)

/* An offer: dst and src as the connector sees its connection, and the
 * connector's TCP socket (its SO_COOKIE), with the SL_RDV_FDS descriptors.
 * Made before the kernel's connect picked the connector's port, it has
 * src.port 0 and names the socket alone: the acceptor asks the kernel which
 * socket holds the other end of what it accepted.  A carrier: an offer's
 * Unix connection (one descriptor) sent back to the queue by an acceptor it
 * was not for. */
struct rdv_msg {
	uint64_t magic;
	uint32_t kind;
	uint32_t hops;
	struct sl_key dst, src;
	uint64_t cookie;
};

/* Close what fds[0..n) holds, leaving -1 in each. */
void sl_rdv_close_fds(int *fds, int n);
/* m with the descriptors fds[0..n) (SCM_RIGHTS) on conn, without waiting. */
ssize_t sl_rdv_msg_send(int conn, const struct rdv_msg *m, const int *fds, int n);
/* Receive (or with MSG_PEEK, copy) the message and exactly want descriptors:
 * 0.  With partial_ok, a whole message whose descriptors did not all fit
 * (EMFILE: the kernel installs what it can and drops the rest) is 1, with
 * those that came first in fds (the rest -1). */
int sl_rdv_msg_recv(int e, struct rdv_msg *m, int *fds, int want, int flags, bool partial_ok);
/* Entry e (ours to close) back, as a carrier, to the queue bound at `at`,
 * for the process that accepted its TCP connection: the offer's own Unix
 * connection travels, so its SO_PEERCRED (the connector) travels with it. */
void sl_rdv_requeue(const struct sockaddr_un *at, socklen_t at_len, int e, uint32_t hops);

#endif
