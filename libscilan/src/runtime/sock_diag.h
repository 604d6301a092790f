/* sock_diag.h — who owns a TCP socket of this network namespace, asked of the
 * kernel (NETLINK_SOCK_DIAG, as ss does; no privilege needed): the proof the
 * rendezvous checks an offer and a listener against (rendezvous.c).
 */
#ifndef SCILAN_SOCK_DIAG_H
#define SCILAN_SOCK_DIAG_H

#include <stdint.h>
#include <sys/types.h>

#include "socket/sock_state.h"

/* The owner uid of the TCP listener that would accept a connection from
 * remote to local, by the kernel's lookup in the network namespace of the
 * TCP socket tcp (ours): never an older connection's socket of that 4-tuple
 * (a TIME_WAIT one belongs to nobody, uid 0).  0, or -1 with errno (ENOENT:
 * no such listener). */
int sl_diag_tcp_listener_owner(int tcp, const struct sl_key *local, const struct sl_key *remote, uid_t *uid);
/* The connected socket with that 4-tuple (local its own end): its owner uid
 * and its SO_COOKIE, which socket of the namespace it is (cookies are never
 * reused while the kernel runs).  0, or -1 with errno (ENOENT: none). */
int sl_diag_tcp_identity(int tcp, const struct sl_key *local, const struct sl_key *remote, uid_t *uid,
			 uint64_t *cookie);
/* Is the connected socket with that 4-tuple (local its own end) still in
 * its listener's accept queue, held by no process?  1 or 0, or -1 with
 * errno (ENOENT: not in this network namespace, or gone). */
int sl_diag_tcp_queued(int tcp, const struct sl_key *local, const struct sl_key *remote);
/* own_fd.c, under its eviction lock: a descriptor of ours moved. */
void sl_diag_renumber(int from, int to);
/* Close the kept query socket (the next query makes another): its number
 * was placed where the library's no longer go (own_fd.c). */
void sl_diag_drop_kept(void);

#endif
