/* fabric.h — the interface between the socket layer and a transport fabric
 * (the shared-memory fabric, or the /dev/scilanN device fabric behind the
 * same operations): rendezvous, segment mapping and wake-ups.
 */
#ifndef SCILAN_FABRIC_H
#define SCILAN_FABRIC_H

#include <stdbool.h>
#include <stdint.h>

#include "socket/sock_state.h"

struct sl_fabric_ops {
	const char *name;
	/* Publish/withdraw a listening socket bound at local. */
	int (*listen_register)(struct sl_sock *s, const struct sl_key *local);
	void (*listen_unregister)(struct sl_sock *s);
	/* Withdraw the listener for every process holding it (we change user). */
	void (*listen_withdraw)(struct sl_sock *s);
	/* Is a live scilan listener reachable at dst?  1 yes (peer ring size in
	 * *peer_ring, 0 if unknown), 0 no.  May keep a way to it in s for offer. */
	int (*lookup)(struct sl_sock *s, const struct sl_key *dst, uint64_t *peer_ring);
	/* Connecting side, after lookup: may the offer name our socket instead
	 * of our port (its acceptor can ask the kernel which socket holds the
	 * other end)?  Then the kernel's connect picks our port, as it would
	 * without us.  NULL: never. */
	bool (*offer_by_socket)(const struct sl_sock *s);
	/* Connecting side, before the kernel connect: create the segment and
	 * publish the offer keyed by the 4-tuple (dst, src), or by our socket
	 * when src.port is 0 (offer_by_socket).  0, or -1 with errno. */
	int (*offer)(struct sl_sock *s, const struct sl_key *dst, const struct sl_key *src, uint64_t peer_ring);
	/* Optional (promotion, conn/promotion.c): connecting side of a live
	 * plain connection, after lookup: make and publish an offer flagged late,
	 * without starting the agreement (the connection stays on kernel TCP
	 * until the acceptor claims it; s->offer_word says when).  0, or -1
	 * with errno. */
	int (*offer_late)(struct sl_sock *s, const struct sl_key *dst, const struct sl_key *src, uint64_t peer_ring);
	/* Optional: accepting side of a live plain connection from listener:
	 * take a late offer for it if one waits, our switch its commitment
	 * (promote.h).  1 taken (s bound as the accepting side, our sends on
	 * the ring from now on), 0 none (still kernel TCP), -1 with errno: the
	 * switch failed half-way, the connection is reset. */
	int (*take_late)(struct sl_sock *s, struct sl_sock *listener, struct sl_key *local, struct sl_key *peer);
	/* With offer_late: where the peer's switch point of s's late move
	 * lands, SL_SEAM_UNKNOWN until it is there (side: ours, 0 the
	 * connector, 1 the acceptor); valid while the offer's segment is. */
	const _Atomic uint64_t *(*late_peer_point)(struct sl_sock *s, int side);
	/* With offer_late: the connector's switch point x, published where its
	 * acceptor reads it, as an sl_promote_publish_fn (promote.h). */
	int (*late_publish)(struct sl_sock *s, uint64_t x);
	/* Optional: a connection the fabric left (its link went down, the move
	 * to kernel TCP made, the peer's fail-over header read): its dead
	 * session goes, and it can offer or take late as one that never rode
	 * the fabric.  Under the connection's three locks; no-op otherwise. */
	void (*late_retire)(struct sl_sock *s);
	/* Optional: connecting side, just after the kernel's connect that
	 * followed an offer which confined our port (s->port_confined; taken:
	 * the connect took a port, it returned 0, EINPROGRESS or EINTR).  The
	 * confinement goes; false: the port taken is one the offer cannot
	 * stand on (its acceptor will not look for it), reason hinted, and the
	 * caller withdraws the offer. */
	bool (*offer_port_settle)(struct sl_sock *s, bool taken);
	/* The connect failed: remove the offer and the segment. */
	void (*offer_withdraw)(struct sl_sock *s);
	/* Optional: connecting side, before it takes an undecided offer back
	 * (agree.c): ask whoever else decides.  The shm fabric needs nothing
	 * (the offer word's compare-and-swap decides); on the device fabric
	 * the acceptor's driver pairs through ours, which decides.  1 revoked
	 * (no acceptor will read the ring), 0 the acceptor agreed first, -1
	 * (errno) neither can be known: the link went down; -2 (errno) the
	 * link is up and the decider refused the revoke for another reason. */
	int (*offer_revoke)(struct sl_sock *s);
	/* Connecting side, once connected: forget the offer bookkeeping we no longer need. */
	void (*offer_settle)(struct sl_sock *s);
	/* Accepting side, after the kernel accept on listener: 1 attached, 0
	 * the peer made no offer (plain TCP), -1 the offer was unusable (errno set).
	 * local and peer of family 0 are read (sl_conn_keys) only if needed:
	 * a plain client's accept should cost no more system calls than it must. */
	int (*attach)(struct sl_sock *s, struct sl_sock *listener, struct sl_key *local, struct sl_key *peer);
	/* Optional: might a connection of the accepted socket s wait here?
	 * From what the fabric holds without asking the kernel per link
	 * (the device fabric: one poll of the listener's endpoints). */
	bool (*may_attach)(struct sl_sock *listener);
	/* Wake the peer's sleeper (it armed a wake_on_* word): SL_TOKEN_DATA
	 * or SL_TOKEN_SPACE tells which. */
	void (*stimulate)(struct sl_sock *s, int token);
	/* Put a token into our own bell (a local wake-up, or one passed on). */
	void (*ring_self)(struct sl_sock *s, int token);
	/* Make our earlier stores into the peer's area visible before we re-check
	 * our own area (step 3 of the sleep protocol). */
	void (*flush_remote)(struct sl_sock *s);
	/* Consume pending stimuli before arming; returns the SL_TOKEN_* seen. */
	int (*drain)(struct sl_sock *s);
	/* The kernel connection signalled: true if the peer is gone (EOF/reset). */
	bool (*peer_gone)(struct sl_sock *s);
	/* Optional: before close reads or writes the connection's memory (the
	 * device fabric swaps out the mappings of a link that went down, which
	 * would raise SIGBUS). */
	void (*before_close)(struct sl_sock *s);
	/* Optional (the fabrics whose links fail over): why this connection
	 * may not fail over now, or NULL. */
	const char *(*fail_over_refused)(struct sl_sock *s);
	/* The socket is closed: unmap the segment. */
	void (*release)(struct sl_sock *s);
};

extern const struct sl_fabric_ops sl_fabric_shm;
extern const struct sl_fabric_ops sl_fabric_dev;

/* Which fabric each connection rides (fabric.c).  SCILAN_FABRIC=shm|dev
 * forces one for the whole process; unset, a destination the cluster map
 * gives to a `dev` node elsewhere goes over the device fabric, any other
 * (this host, an shm node, an address outside the map) over shm.  The
 * connection's fabric is then s->fabric, the one every later call uses. */
const struct sl_fabric_ops *sl_fabric_for(const struct sl_key *dst);
/* SCILAN_FABRIC's fabric, or NULL when it is unset (each destination chooses). */
const struct sl_fabric_ops *sl_fabric_forced(void);
/* Is addr one of this host's (loopback, or assigned to an interface of our
 * network namespace as the addresses stood when first asked)?  Asked only
 * of the cluster map's dev addresses, whose answers are kept. */
bool sl_fabric_addr_here(const struct sl_key *addr);
/* A listener registers on every fabric this process uses: the shm fabric's
 * registry and rendezvous, and every device link (s->dev_listen).  0, or -1
 * with errno when it is reachable on none. */
int sl_fabric_listen_register(struct sl_sock *s, const struct sl_key *local);
void sl_fabric_listen_unregister(struct sl_sock *s);
void sl_fabric_listen_withdraw(struct sl_sock *s);
/* Does the listener hold any registration (its clients may come accelerated)? */
bool sl_fabric_listener_published(const struct sl_sock *s);
/* Accepting side: the attach of the fabric the client may have come over,
 * chosen from the peer's address without a system call (a `dev` node's
 * address: the device first; else shm first), then the other where the
 * first found nothing.  Sets s->fabric to the one that attached.  As
 * sl_fabric_ops.attach: 1, 0 plain TCP, -1 (errno) reset it. */
int sl_fabric_attach(struct sl_sock *s, struct sl_sock *listener, struct sl_key *local, struct sl_key *peer);
/* Where a late offer for a plain connection that listener accepted from
 * peer would come: over the device from a device node whose connections
 * the listener takes, else over shm. */
const struct sl_fabric_ops *sl_fabric_late_for(const struct sl_sock *listener, const struct sl_key *peer);
/* Does any /dev/scilanN exist? (fabric_dev.c; a few system calls: asked
 * once, at the first listen, by sl_fabric_listen_register) */
bool sl_dev_present(void);
/* An exec'd image takes over a device connection (handover.c): the holder
 * page's memfd and the endpoint, both inherited; 0 or -1 with errno. */
int sl_dev_adopt(struct sl_sock *s, int holders_fd, int ep_fd, int own);

#endif
