/* fabric.c — which fabric each connection rides: SCILAN_FABRIC=shm|dev forces
 * one for the process; unset, the cluster map's `dev` nodes elsewhere over the
 * device, everything else over shm.  A listener registers on both; an accept
 * tries first the fabric its client's address points to.
 */
#include "fabric/fabric.h"
#include "runtime/endpoint_key.h"

#include <errno.h>
#include <ifaddrs.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cluster_map.h"
#include "runtime/config.h"
#include "runtime/log.h"

static const struct sl_fabric_ops *forced;
static pthread_once_t forced_once = PTHREAD_ONCE_INIT;

static void read_setting(void)
{
	const char *v = getenv("SCILAN_FABRIC");

	sl_config(); /* the log level, before anything is reported */
	if (!v || !*v)
		return;
	if (strcmp(v, "dev") == 0) {
		forced = &sl_fabric_dev;
		/* The device fabric without a device accelerates nothing:
		 * every connection stays kernel TCP (said once, here). */
		if (!sl_dev_present())
			sl_err("SCILAN_FABRIC=dev but no /dev/scilanN exists; every connection uses kernel TCP");
	} else if (strcmp(v, "shm") == 0) {
		forced = &sl_fabric_shm;
	} else {
		sl_err("SCILAN_FABRIC=%s is not one of shm|dev; each destination chooses its fabric", v);
	}
	if (forced)
		sl_debug("fabric: %s for every connection", forced->name);
}

const struct sl_fabric_ops *sl_fabric_forced(void)
{
	pthread_once(&forced_once, read_setting);
	return forced;
}

/* The cluster map's dev addresses that are this host's own: a process that
 * connects to its own node's address (a map shared by every node lists it)
 * must reach its local listener over shm, which the device (a link to
 * another node) cannot.  Read once, from the interfaces as they are then:
 * an address added later reads as another node's, whose driver refuses it
 * (kernel TCP), never a wrong pairing. */
static bool *dev_here; /* per map entry */
static pthread_once_t here_once = PTHREAD_ONCE_INIT;

static bool same_addr(const struct sockaddr *sa, const struct sl_key *k)
{
	if (!sa || sa->sa_family != k->family)
		return false;
	if (k->family == AF_INET)
		return memcmp(&((const struct sockaddr_in *)sa)->sin_addr, k->addr, 4) == 0;
	return memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr, k->addr, 16) == 0;
}

static void find_dev_here(void)
{
	const struct sl_cluster_map *map = &sl_config()->map;
	struct ifaddrs *ifs = NULL;
	bool any = false;

	for (size_t i = 0; i < map->count; i++)
		any |= map->entries[i].fabric == SL_MAP_DEV;
	if (!any || !(dev_here = calloc(map->count, sizeof(*dev_here))) || getifaddrs(&ifs) < 0)
		return;
	for (size_t i = 0; i < map->count; i++)
		for (struct ifaddrs *a = ifs; a && map->entries[i].fabric == SL_MAP_DEV && !dev_here[i]; a = a->ifa_next)
			dev_here[i] = same_addr(a->ifa_addr, &map->entries[i].addr);
	freeifaddrs(ifs);
}

/* e: addr's map entry, a dev one. */
static bool dev_entry_here(const struct sl_map_entry *e, const struct sl_key *addr)
{
	const struct sl_cluster_map *map = &sl_config()->map;

	if (sl_key_is_loopback(addr))
		return true;
	pthread_once(&here_once, find_dev_here);
	return dev_here && e >= map->entries && e < map->entries + map->count && dev_here[e - map->entries];
}

bool sl_fabric_addr_here(const struct sl_key *addr)
{
	const struct sl_map_entry *e = sl_cluster_map_find(&sl_config()->map, addr);

	return sl_key_is_loopback(addr) || (e && e->fabric == SL_MAP_DEV && dev_entry_here(e, addr));
}

/* A dev node's address other than our own. */
static bool dev_elsewhere(const struct sl_key *addr)
{
	const struct sl_map_entry *e;

	if (!addr->family)
		return false;
	e = sl_cluster_map_find(&sl_config()->map, addr);
	return e && e->fabric == SL_MAP_DEV && !dev_entry_here(e, addr);
}

const struct sl_fabric_ops *sl_fabric_for(const struct sl_key *dst)
{
	const struct sl_fabric_ops *f = sl_fabric_forced();

	if (f)
		return f;
	/* Without a device, the device fabric's lookup says link-down. */
	return dev_elsewhere(dst) ? &sl_fabric_dev : &sl_fabric_shm;
}

/* Whether this process listens on the device links too: asked once. */
static bool dev_listens;
static pthread_once_t dev_once = PTHREAD_ONCE_INIT;

static void find_device(void)
{
	dev_listens = sl_dev_present();
}

int sl_fabric_listen_register(struct sl_sock *s, const struct sl_key *local)
{
	const struct sl_fabric_ops *f = sl_fabric_forced();

	if (f)
		return f->listen_register(s, local);
	int shm = sl_fabric_shm.listen_register(s, local), err = errno;

	pthread_once(&dev_once, find_device);
	/* The device's own refusals are loud, link by link (fabric_dev.c);
	 * a listener the shm fabric could not publish still takes the
	 * device's connections. */
	if (dev_listens)
		(void)sl_fabric_dev.listen_register(s, local);
	if (shm < 0 && !(s->dev_listen && s->dev_listen->count > 0)) {
		errno = err;
		return -1;
	}
	return 0;
}

/* Each fabric undoes only what it holds: the shm fabric its registry and
 * rendezvous, the device fabric s->dev_listen. */
void sl_fabric_listen_unregister(struct sl_sock *s)
{
	sl_fabric_shm.listen_unregister(s);
	sl_fabric_dev.listen_unregister(s);
}

void sl_fabric_listen_withdraw(struct sl_sock *s)
{
	sl_fabric_shm.listen_withdraw(s);
	sl_fabric_dev.listen_withdraw(s);
}

bool sl_fabric_listener_published(const struct sl_sock *s)
{
	return s->reg_fd[0] >= 0 || s->rdv_fd[0] >= 0 || (s->dev_listen && s->dev_listen->count > 0);
}

static int attach_with(const struct sl_fabric_ops *f, struct sl_sock *s, struct sl_sock *listener,
		       struct sl_key *local, struct sl_key *peer)
{
	s->fabric = f;
	return f->attach(s, listener, local, peer);
}

const struct sl_fabric_ops *sl_fabric_late_for(const struct sl_sock *listener, const struct sl_key *peer)
{
	const struct sl_fabric_ops *f = sl_fabric_forced();

	if (f)
		return f;
	if (listener->dev_listen && listener->dev_listen->count > 0 && peer->family && dev_elsewhere(peer))
		return &sl_fabric_dev;
	return &sl_fabric_shm;
}

int sl_fabric_attach(struct sl_sock *s, struct sl_sock *listener, struct sl_key *local, struct sl_key *peer)
{
	const struct sl_fabric_ops *f = sl_fabric_forced();
	bool dev = listener->dev_listen && listener->dev_listen->count > 0;
	int r;

	if (f)
		return attach_with(f, s, listener, local, peer);
	if (!dev)
		return attach_with(&sl_fabric_shm, s, listener, local, peer);
	/* A dev node's client comes over the device, unless it fell back;
	 * a client of ours whose source is a dev address of ours (a map
	 * shared by the nodes) read as another's only if it came later than
	 * we looked: the shm offer is still taken. */
	if (dev_elsewhere(peer)) {
		r = attach_with(&sl_fabric_dev, s, listener, local, peer);
		if (r != 0)
			return r;
		return attach_with(&sl_fabric_shm, s, listener, local, peer);
	}
	r = attach_with(&sl_fabric_shm, s, listener, local, peer);
	if (r != 0 || (peer->family && sl_fabric_addr_here(peer)))
		return r;
	/* A client outside our map's dev nodes that came over the device
	 * anyway (its map and ours disagree): its bytes are in the ring, and
	 * kernel TCP would wait for them forever.  One look at our endpoints'
	 * queues says whether any device connection waits at all. */
	if (!sl_fabric_dev.may_attach || !sl_fabric_dev.may_attach(listener))
		return 0;
	r = attach_with(&sl_fabric_dev, s, listener, local, peer);
	if (r > 0)
		sl_fb_take_hint(SL_FB_NONE); /* the shm fabric's reason is void */
	return r;
}
