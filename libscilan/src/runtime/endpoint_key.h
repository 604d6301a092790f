/* endpoint_key.h — the one conversion of a socket address to the key
 * (struct sl_key) the registry, the offers and the statistics file use:
 * IPv4-mapped IPv6 addresses fold to IPv4, and an IPv6 link-local address
 * keeps its interface (scope id), which is part of the address.
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
/* A link-local destination given without a scope: the kernel connects
 * through the device fd is bound to (SO_BINDTODEVICE, or a bind to a
 * link-local address), so that is its scope. */
void sl_key_scope_from_fd(int fd, struct sl_key *key);
/* The same address (family, address, scope), ports aside. */
bool sl_key_same_addr(const struct sl_key *a, const struct sl_key *b);
/* 127.0.0.0/8 or ::1. */
bool sl_key_is_loopback(const struct sl_key *k);
/* The same endpoint: the same address and port. */
bool sl_key_same(const struct sl_key *a, const struct sl_key *b);

#endif
