/* endpoint_key.c — the one conversion of a socket address, or of a
 * socket's kernel name, to the key the registry, the offers and the
 * statistics file use (IPv4-mapped IPv6 addresses fold to IPv4; an IPv6
 * link-local address keeps its interface), and their comparison.
 */
#include "runtime/endpoint_key.h"

#include <netinet/in.h>
#include <string.h>

#include "runtime/sys.h"

static const unsigned char v4_mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

/* Registry key of a socket address; IPv4-mapped IPv6 addresses fold to IPv4. */
int sl_key_from_sockaddr(const struct sockaddr *sa, socklen_t len, struct sl_key *key)
{
	memset(key, 0, sizeof(*key));
	if (!sa)
		return -1;
	if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		key->family = AF_INET;
		memcpy(key->addr, &in->sin_addr, 4);
		key->port = ntohs(in->sin_port);
		return 0;
	}
	if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		key->port = ntohs(in6->sin6_port);
		if (memcmp(&in6->sin6_addr, v4_mapped_prefix, 12) == 0) {
			key->family = AF_INET;
			memcpy(key->addr, (const unsigned char *)&in6->sin6_addr + 12, 4);
		} else {
			key->family = AF_INET6;
			memcpy(key->addr, &in6->sin6_addr, 16);
			/* The kernel reads a scope only for link-local addresses
			 * (and names one only for them): elsewhere it is noise. */
			if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr))
				key->scope = in6->sin6_scope_id;
		}
		return 0;
	}
	return -1;
}

int sl_key_of_fd(int fd, bool peer, struct sl_key *key)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int r = peer ? sl_sys.getpeername(fd, (struct sockaddr *)&ss, &len) : sl_sys.getsockname(fd, (struct sockaddr *)&ss, &len);

	if (r < 0) {
		memset(key, 0, sizeof(*key));
		return -1;
	}
	return sl_key_from_sockaddr((struct sockaddr *)&ss, len, key);
}

int sl_conn_keys(int fd, struct sl_key *local, struct sl_key *peer)
{
	if (!local->family && sl_key_of_fd(fd, false, local) < 0)
		return -1;
	if (!peer->family && sl_key_of_fd(fd, true, peer) < 0)
		return -1;
	return 0;
}

bool sl_key_is_wildcard(const struct sl_key *key)
{
	static const unsigned char zero[16];

	return !key->family || memcmp(key->addr, zero, key->family == AF_INET ? 4 : 16) == 0;
}

void sl_key_scope_from_fd(int fd, struct sl_key *key)
{
	int ifindex = 0;
	socklen_t len = sizeof(ifindex);

	if (key->family != AF_INET6 || key->scope || !IN6_IS_ADDR_LINKLOCAL((const struct in6_addr *)key->addr))
		return;
	if (sl_sys.getsockopt(fd, SOL_SOCKET, SO_BINDTOIFINDEX, &ifindex, &len) == 0 && ifindex > 0)
		key->scope = (uint32_t)ifindex;
}

bool sl_key_same_addr(const struct sl_key *a, const struct sl_key *b)
{
	return a->family == b->family && a->scope == b->scope &&
	       memcmp(a->addr, b->addr, a->family == AF_INET ? 4 : 16) == 0;
}

bool sl_key_is_loopback(const struct sl_key *k)
{
	static const unsigned char v6_loopback[16] = { [15] = 1 };

	return k->family == AF_INET ? k->addr[0] == 127 : k->family == AF_INET6 && memcmp(k->addr, v6_loopback, 16) == 0;
}

bool sl_key_same(const struct sl_key *a, const struct sl_key *b)
{
	return a->port == b->port && sl_key_same_addr(a, b);
}
