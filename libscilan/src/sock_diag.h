/* sock_diag.h — who owns a TCP socket of this network namespace, asked of the
 * kernel (NETLINK_SOCK_DIAG, as ss does; no privilege needed): the proof the
 * rendezvous checks an offer and a listener against (rendezvous.c).
 */
#ifndef SCILAN_SOCK_DIAG_H
#define SCILAN_SOCK_DIAG_H

#include <sys/types.h>

#include "sock.h"

/* The owner uid of a TCP socket, by the kernel's lookup of a segment from
 * remote to local: with listener, the listener that would accept a
 * connection from remote (never an older connection's socket of that
 * 4-tuple: a TIME_WAIT one belongs to nobody, uid 0); else the connected
 * socket with that 4-tuple (local its own end).  0, or -1 with errno
 * (ENOENT: no such socket). */
int sl_diag_tcp_owner(const struct sl_key *local, const struct sl_key *remote, bool listener, uid_t *uid);

#endif
