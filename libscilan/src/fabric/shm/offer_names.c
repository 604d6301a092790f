/* offer_names.c — every name the shm fabric gives in the runtime directory:
 * an endpoint's (listener entries, rendezvous), an offer's by its 4-tuple,
 * the wake-up FIFOs beside it, and the removal of an offer's files.
 */
#include "fabric/shm/offer_names.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/cluster_map.h"
#include "runtime/config.h"
#include "socket/sock_state.h"

/* The network-namespace id that keeps emulated nodes' names apart: an
 * address no cluster-map node claims is named within its namespace only. */
static unsigned long long node_id(void)
{
	static _Atomic unsigned long long cached;
	struct stat st;

	if (cached)
		return cached;
	if (stat("/proc/self/ns/net", &st) == 0)
		cached = (unsigned long long)st.st_ino;
	else
		cached = 1;
	return cached;
}

/* An address the cluster map gives to a node is named after that node, so
 * emulated nodes (network namespaces) find each other's listeners; any
 * other address only within its own namespace. */
static const struct sl_map_entry *named_by_node(const struct sl_key *key)
{
	const struct sl_map_entry *node = sl_cluster_map_find(&sl_config()->map, key);

	return node && node->fabric == SL_MAP_SHM ? node : NULL;
}

/* The address in hex, and a link-local one's interface where it means
 * something (within our namespace). */
static int addr_hex(const struct sl_key *key, bool scoped, char *buf, size_t size)
{
	int len = key->family == AF_INET ? 4 : 16, n = 0;

	for (int i = 0; i < len; i++)
		n += snprintf(buf + n, size - (size_t)n, "%02x", key->addr[i]);
	if (scoped && key->scope)
		n += snprintf(buf + n, size - (size_t)n, "%%%u", (unsigned)key->scope);
	return n;
}

void sl_key_name(const struct sl_key *key, char *buf, size_t size)
{
	const struct sl_map_entry *node = named_by_node(key);
	char hex[48];

	addr_hex(key, !node, hex, sizeof(hex));
	if (node)
		snprintf(buf, size, "n%u-%d-%s-%u", node->node, key->family == AF_INET ? 4 : 6, hex,
			 (unsigned)key->port);
	else
		snprintf(buf, size, "%llx-%d-%s-%u", node_id(), key->family == AF_INET ? 4 : 6, hex,
			 (unsigned)key->port);
}

int sl_key_path(const char *subdir, const struct sl_key *key, const char *suffix, char *path, size_t size)
{
	const char *rundir = sl_config()->rundir;
	char name[96];

	if (!*rundir) {
		errno = ENOENT;
		return -1;
	}
	sl_key_name(key, name, sizeof(name));
	if (snprintf(path, size, "%s/%s/%s%s", rundir, subdir, name, suffix) >= (int)size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* Offers are named by the TCP 4-tuple as both ends see it: the listener's
 * address and port, then the connecting side's; or, made before the
 * kernel's connect picked that port, by the connecting socket. */
int sl_shm_offer_path(const struct sl_key *dst, const struct sl_key *src, uint64_t cookie, char *path,
		      size_t size)
{
	char suffix[64];
	int n = 1;

	if (!src->port) {
		snprintf(suffix, sizeof(suffix), "-c%llx", (unsigned long long)cookie);
		return sl_key_path("offer", dst, suffix, path, size);
	}
	suffix[0] = '-';
	/* Both ends name the source as they name the destination: scoped
	 * only within a namespace. */
	n += addr_hex(src, !named_by_node(dst), suffix + n, sizeof(suffix) - (size_t)n);
	snprintf(suffix + n, sizeof(suffix) - (size_t)n, "-%u", (unsigned)src->port);
	return sl_key_path("offer", dst, suffix, path, size);
}

int sl_shm_bell_path(const char *offer_path, int which, char *buf, size_t size)
{
	if (snprintf(buf, size, "%s.bell%d", offer_path, which) >= (int)size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

void sl_shm_unlink_offer(const char *offer_path)
{
	char path[SL_BELL_PATH_SIZE];

	unlink(offer_path);
	for (int i = 0; i < 2; i++)
		if (sl_shm_bell_path(offer_path, i, path, sizeof(path)) == 0)
			unlink(path);
}
