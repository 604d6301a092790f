/* sock_diag.h — who owns a TCP socket of this network namespace, asked of the
 * kernel (NETLINK_SOCK_DIAG, as ss does; no privilege needed): the proof the
 * rendezvous checks an offer and a listener against (rendezvous.c).
 */
#ifndef SCILAN_SOCK_DIAG_H
#define SCILAN_SOCK_DIAG_H

#include <sys/types.h>

#include "sock.h"

/* The owner uid of the TCP socket the kernel would hand a segment from
 * remote to local: the connected socket with that 4-tuple (local its own
 * end), else the listener that would accept it, in the network namespace
 * of the TCP socket tcp (ours, of that connection).  0, or -1 with errno
 * (ENOENT: no such socket). */
int sl_diag_tcp_owner(int tcp, const struct sl_key *local, const struct sl_key *remote, uid_t *uid);
/* own_fd.c, under its eviction lock: a descriptor of ours moved. */
void sl_diag_renumber(int from, int to);

#endif
