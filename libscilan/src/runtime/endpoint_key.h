/* endpoint_key.h — the one conversion of a socket address to the key
 * (struct sl_key) the registry, the offers and the statistics file use:
 * IPv4-mapped IPv6 addresses fold to IPv4.
 */
#ifndef SCILAN_ENDPOINT_KEY_H
#define SCILAN_ENDPOINT_KEY_H

#include <stdbool.h>
#include <sys/socket.h>

#include "socket/sock_state.h"

/* 0, or -1 (key zeroed) when sa is not an AF_INET/AF_INET6 address of len bytes. */
int sl_key_from_sockaddr(const struct sockaddr *sa, socklen_t len, struct sl_key *key);
/* The key of fd's kernel name (peer: of its peer's); -1 (key zeroed) if none. */
int sl_key_of_fd(int fd, bool peer, struct sl_key *key);
/* The unspecified address (or no key at all)? */
bool sl_key_is_wildcard(const struct sl_key *key);
/* An accepted connection's keys, asked of the kernel only when first needed:
 * each of *local, *peer still of family 0 is read from fd.  0, or -1 when
 * one cannot be read. */
int sl_conn_keys(int fd, struct sl_key *local, struct sl_key *peer);

#endif
