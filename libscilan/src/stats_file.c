/* stats_file.c — publishes this process's live per-connection counters in
 * <rundir>/stats/<pid>, a shared mapping that exists while the process has
 * accelerated connections; scilan_ctl stat maps it read-only.
 */
#include "stats_file.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "sys.h"

static struct sl_stats_map *map;
/* The last file's mapping, kept after its file was removed: the next file
 * is mapped over it (MAP_FIXED), so a thread racing a close never writes
 * into unmapped memory. */
static struct sl_stats_map *detached;
static int live_slots;
static pid_t map_pid;
static bool map_failed;
static char map_path[4200];
static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;

static void remove_at_exit(void)
{
	if (map && map_pid == getpid())
		unlink(map_path);
}

/* Under map_lock. */
static struct sl_stats_map *open_map(void)
{
	static bool exit_hook;
	const char *rundir = sl_config()->rundir;
	struct sl_stats_map *m;
	int fd;

	if (map || map_failed || !*rundir)
		return map;
	snprintf(map_path, sizeof(map_path), "%s/stats/%d", rundir, (int)getpid());
	/* A file under our pid is a dead process's: the pid is ours now. */
	unlink(map_path);
	fd = open(map_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || ftruncate(fd, sizeof(*m)) < 0) {
		sl_debug("no live statistics file %s: %s", map_path, strerror(errno));
		if (fd >= 0) {
			sl_sys.close(fd);
			unlink(map_path);
		}
		map_failed = true;
		return NULL;
	}
	m = mmap(detached, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED | (detached ? MAP_FIXED : 0), fd, 0);
	sl_sys.close(fd);
	if (m != MAP_FAILED)
		detached = NULL;
	if (m == MAP_FAILED) {
		unlink(map_path);
		map_failed = true;
		return NULL;
	}
	m->hdr.pid = getpid();
	m->hdr.slots = SL_STATS_SLOTS;
	fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = sl_sys.read(fd, m->hdr.comm, sizeof(m->hdr.comm) - 1);

		if (n > 0 && m->hdr.comm[n - 1] == '\n')
			m->hdr.comm[n - 1] = '\0';
		sl_sys.close(fd);
	}
	/* The magic last: a reader that sees it sees the header complete. */
	__atomic_store_n(&m->hdr.magic, SL_STATS_MAGIC, __ATOMIC_RELEASE);
	map = m;
	map_pid = getpid();
	if (!exit_hook) {
		exit_hook = true;
		atexit(remove_at_exit);
	}
	return map;
}

static void kernel_key(int fd, bool peer, struct sl_key *key)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	memset(key, 0, sizeof(*key));
	if ((peer ? sl_sys.getpeername : sl_sys.getsockname)(fd, (struct sockaddr *)&ss, &len) < 0)
		return;
	key->family = ss.ss_family;
	if (ss.ss_family == AF_INET) {
		memcpy(key->addr, &((struct sockaddr_in *)&ss)->sin_addr, 4);
		key->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	} else if (ss.ss_family == AF_INET6) {
		memcpy(key->addr, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
		key->port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	}
}

void sl_stats_conn_open(struct sl_sock *s)
{
	struct sl_stats_map *m;

	pthread_mutex_lock(&map_lock);
	m = open_map();
	for (int i = 0; m && i < SL_STATS_SLOTS; i++) {
		struct sl_stats_slot *slot = &m->slot[i];

		if (atomic_load(&slot->in_use))
			continue;
		slot->fd = s->fd;
		kernel_key(s->fd, false, &slot->local);
		kernel_key(s->fd, true, &slot->peer);
		atomic_store(&slot->ctr.tx_bytes, atomic_load(&s->own_ctr.tx_bytes));
		atomic_store(&slot->ctr.rx_bytes, atomic_load(&s->own_ctr.rx_bytes));
		atomic_store(&slot->ctr.sleeps, atomic_load(&s->own_ctr.sleeps));
		atomic_store(&slot->ctr.wakeups, atomic_load(&s->own_ctr.wakeups));
		atomic_store_explicit(&slot->in_use, 1, memory_order_release);
		s->stats_slot = i;
		s->ctr = &slot->ctr;
		atomic_fetch_add(&m->hdr.accelerated, 1);
		live_slots++;
		break;
	}
	pthread_mutex_unlock(&map_lock);
}

void sl_stats_conn_close(struct sl_sock *s)
{
	struct sl_counters *c = s->ctr;

	atomic_fetch_add_explicit(&sl_totals.tx_bytes, atomic_load(&c->tx_bytes), memory_order_relaxed);
	atomic_fetch_add_explicit(&sl_totals.rx_bytes, atomic_load(&c->rx_bytes), memory_order_relaxed);
	pthread_mutex_lock(&map_lock);
	if (s->stats_slot >= 0 && map) {
		atomic_store_explicit(&map->slot[s->stats_slot].in_use, 0, memory_order_release);
		/* No connection left: the runtime directory keeps nothing of ours. */
		if (--live_slots == 0) {
			unlink(map_path);
			detached = map;
			map = NULL;
		}
	}
	s->stats_slot = -1;
	s->ctr = &s->own_ctr;
	pthread_mutex_unlock(&map_lock);
	atomic_store(&s->own_ctr.tx_bytes, 0);
	atomic_store(&s->own_ctr.rx_bytes, 0);
}

static bool count_privately(struct sl_sock *s)
{
	if (s->stats_slot >= 0) {
		s->own_ctr.tx_bytes = atomic_load(&s->ctr->tx_bytes);
		s->own_ctr.rx_bytes = atomic_load(&s->ctr->rx_bytes);
		s->own_ctr.sleeps = atomic_load(&s->ctr->sleeps);
		s->own_ctr.wakeups = atomic_load(&s->ctr->wakeups);
		s->ctr = &s->own_ctr;
		s->stats_slot = -1;
	}
	return false;
}

void sl_stats_file_after_fork_child(void)
{
	/* The mapping stays (it is the parent's file); we no longer write it. */
	pthread_mutex_init(&map_lock, NULL);
	sl_sock_any(count_privately);
	if (map)
		detached = map; /* mapped over by our own first file */
	map = NULL;
	live_slots = 0;
	map_failed = false;
}
