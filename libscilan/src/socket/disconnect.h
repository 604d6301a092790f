/* disconnect.h — a connect() to AF_UNSPEC, the program's own disconnect
 * (disconnect.c).
 */
#ifndef SCILAN_DISCONNECT_H
#define SCILAN_DISCONNECT_H

#include <stdbool.h>
#include <sys/socket.h>

#include "socket/sock_state.h"

/* Is this connect() a disconnect (an address of family AF_UNSPEC)? */
static inline bool sl_is_disconnect(const struct sockaddr *addr, socklen_t len)
{
	return addr && len >= (socklen_t)sizeof(addr->sa_family) && addr->sa_family == AF_UNSPEC;
}

/* The kernel's disconnect of fd (s's number), with ours first: a listener
 * withdraws and may listen again; a connection on the rings is reset at both
 * ends, as the kernel's RST resets a TCP peer, and what the number connects
 * to next is kernel TCP; anything armed to move the connection is disarmed. */
int sl_sock_disconnect(struct sl_sock *s, int fd, const struct sockaddr *addr, socklen_t len);

#endif
