/* sock_diag.h — who owns a TCP socket of this network namespace, asked of the
 * kernel (NETLINK_SOCK_DIAG, as ss does; no privilege needed): the proof the
 * rendezvous checks an offer and a listener against (rendezvous.c).
 */
#ifndef SCILAN_SOCK_DIAG_H
#define SCILAN_SOCK_DIAG_H

#include <stdint.h>
#include <sys/types.h>

#include "socket/sock_state.h"

/* The owner uid of a TCP socket, by the kernel's lookup of a segment from
 * remote to local in the network namespace of the TCP socket tcp (ours, of
 * that connection): with listener, the listener that would accept a
 * connection from remote (never an older connection's socket of that
 * 4-tuple: a TIME_WAIT one belongs to nobody, uid 0); else the connected
 * socket with that 4-tuple (local its own end).  0, or -1 with errno
 * (ENOENT: no such socket). */
int sl_diag_tcp_owner(int tcp, const struct sl_key *local, const struct sl_key *remote, bool listener, uid_t *uid);
/* The same for a connected socket, with its SO_COOKIE: which socket of the
 * namespace it is (cookies are never reused while the kernel runs). */
int sl_diag_tcp_identity(int tcp, const struct sl_key *local, const struct sl_key *remote, uid_t *uid,
			 uint64_t *cookie);
/* Is the connected socket with that 4-tuple (local its own end) still in
 * its listener's accept queue, held by no process?  1 or 0, or -1 with
 * errno (ENOENT: not in this network namespace, or gone). */
int sl_diag_tcp_queued(int tcp, const struct sl_key *local, const struct sl_key *remote);
/* own_fd.c, under its eviction lock: a descriptor of ours moved. */
void sl_diag_renumber(int from, int to);

#endif
