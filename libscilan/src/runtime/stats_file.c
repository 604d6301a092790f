/* stats_file.c — publishes this process's live per-connection counters in
 * <rundir>/stats/<pid> (<pid>.<pid namespace> where a live process of
 * another pid namespace holds that name), a shared mapping kept until exit; scilan_ctl stat
 * maps it read-only.  Made at the first kernel TCP connection (fallback.c:
 * the reason why), or, for accelerated ones made in the process's first
 * 10 ms (young.h), at its first wait after them (idle.c).  The owner holds
 * an OFD read lock on it, so a file nobody locks is a dead process's.
 */
#include "runtime/stats_file.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/config.h"
#include "runtime/endpoint_key.h"
#include "runtime/log.h"
#include "runtime/own_fd.h"
#include "runtime/rundir_sweep.h"
#include "runtime/self_ns.h"
#include "runtime/sys.h"
#include "runtime/young.h"

static struct sl_stats_map *map;
/* A fork parent's file's mapping, kept in the child: the child's own file
 * is mapped over it (MAP_FIXED), so a thread racing a close never writes
 * into unmapped memory. */
static struct sl_stats_map *detached;
/* Holds the lock that tells sweepers we live (one of our own descriptors:
 * a program closing every descriptor must not drop it). */
static int map_fd = -1;
static pid_t map_pid;
static bool map_failed;
static char map_path[SL_PATH_SIZE];
static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;
/* Accelerated connections made before the file: counted in the sockets
 * (s->stats_wanted), given their slots when it is made. */
static _Atomic bool publish_wanted;
static uint64_t accelerated_before_file;

static void remove_at_exit(void)
{
	if (map && map_pid == sl_self_pid)
		unlink(map_path);
}

static int ofd_lock(int fd, short type, int cmd)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
	int r;

	while ((r = sl_sys.fcntl(fd, cmd, &fl)) < 0 && errno == EINTR) {
	}
	return r;
}

/* Our read lock, waiting out a sweeper's momentary write lock; bounded, so
 * that nothing (a stuck process of the user) can hang a connect here. */
static int read_lock(int fd)
{
	struct timespec one_ms = { 0, 1000000 };

	for (int i = 0; i < 100; i++) {
		if (ofd_lock(fd, F_RDLCK, F_OFD_SETLK) == 0)
			return 0;
		if (errno != EAGAIN && errno != EACCES)
			return -1;
		nanosleep(&one_ms, NULL);
	}
	return -1;
}

/* Create our file already locked.  A sweeper removes a file only while it
 * holds the write lock, so once our read lock is granted the file either
 * still has its name (and is safe from then on) or was removed in the gap
 * between create and lock, and we make it again.  EBUSY: a live process
 * holds the name. */
static int create_locked(const char *path)
{
	struct stat st;
	int fd;

	for (int tries = 0; tries < 3; tries++) {
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		/* A file under our pid is a dead process's (removed, and the
		 * pid is ours now), or a live one's of another pid namespace
		 * sharing the directory (a container's: its pid 1 is not ours). */
		if (fd < 0 && errno == EEXIST) {
			if (sl_stats_file_reap(path))
				continue;
			errno = EBUSY;
			return -1;
		}
		if (fd < 0)
			return -1;
		if (read_lock(fd) == 0 && fstat(fd, &st) == 0 && st.st_nlink > 0)
			return fd;
		sl_sys.close(fd);
	}
	errno = EAGAIN;
	return -1;
}

bool sl_stats_file_reap(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat held, named;
	bool gone;

	if (fd < 0)
		return false;
	gone = ofd_lock(fd, F_WRLCK, F_OFD_SETLK) == 0;
	/* The name may have been reused for a new file since we opened it. */
	if (gone && fstat(fd, &held) == 0 && lstat(path, &named) == 0 && held.st_ino == named.st_ino &&
	    held.st_dev == named.st_dev) {
		sl_debug("removing the statistics file %s of a process that is gone", path);
		unlink(path);
	}
	sl_sys.close(fd);
	return gone;
}

/* <rundir>/stats/<pid>, or with our pid namespace's inode after it, made
 * and locked in map_path. */
static int create_named(const char *rundir, bool with_ns)
{
	int n = with_ns ? snprintf(map_path, sizeof(map_path), "%s/stats/%d.%u", rundir, (int)sl_self_pid,
				   (unsigned)sl_self_pidns())
			: snprintf(map_path, sizeof(map_path), "%s/stats/%d", rundir, (int)sl_self_pid);

	if (n >= (int)sizeof(map_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return create_locked(map_path);
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
	/* Where processes come and go: clean up after those that left, at
	 * our next wait (not on the first connection's path). */
	sl_rundir_sweep_soon();
	fd = create_named(rundir, false);
	if (fd < 0 && errno == EBUSY)
		fd = create_named(rundir, true);
	fd = sl_own_fd_lasting(fd);
	if (fd < 0 || ftruncate(fd, sizeof(*m)) < 0) {
		sl_debug("no live statistics file %s: %s", map_path, strerror(errno));
		if (fd >= 0) {
			sl_own_fd_close(fd);
			unlink(map_path);
		}
		map_failed = true;
		return NULL;
	}
	m = mmap(detached, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED | (detached ? MAP_FIXED : 0), fd, 0);
	if (m != MAP_FAILED)
		detached = NULL;
	if (m == MAP_FAILED) {
		sl_own_fd_close(fd);
		unlink(map_path);
		map_failed = true;
		return NULL;
	}
	map_fd = fd;
	m->hdr.pid = sl_self_pid;
	m->hdr.slots = SL_STATS_SLOTS;
	/* The kernel's comm, as /proc/self/comm has it, without the first
	 * look into /proc/self (some 30 us in a fresh process). */
	_Static_assert(sizeof(m->hdr.comm) >= 16, "PR_GET_NAME writes 16 bytes");
	if (prctl(PR_GET_NAME, m->hdr.comm) < 0)
		m->hdr.comm[0] = '\0';
	m->hdr.accelerated = accelerated_before_file;
	m->ident.pidns = sl_self_pidns();
	m->ident.magic = SL_STATS_IDENT_MAGIC;
	/* The magic last: a reader that sees it sees the header complete. */
	__atomic_store_n(&m->hdr.magic, SL_STATS_MAGIC, __ATOMIC_RELEASE);
	map = m;
	map_pid = sl_self_pid;
	if (!exit_hook) {
		exit_hook = true;
		atexit(remove_at_exit);
	}
	return map;
}

/* Under map_lock, with the file made. */
static void fill_slot(struct sl_stats_map *m, struct sl_sock *s, bool accelerated)
{
	for (int i = 0; i < SL_STATS_SLOTS; i++) {
		struct sl_stats_slot *slot = &m->slot[i];

		if (atomic_load(&slot->in_use))
			continue;
		slot->fd = s->fd;
		slot->reason = accelerated ? SL_FB_NONE : (uint32_t)s->fb_reason;
		slot->side = (uint32_t)(accelerated ? s->own_area : (int)s->fb_side);
		/* A device connection is the one with the link's slices mapped. */
		slot->fabric = !accelerated ? SL_STATS_TCP : s->dev_map[0] ? SL_STATS_DEV : SL_STATS_SHM;
		slot->link = s->dev_map[0] ? s->dev_link : -1;
		slot->flags = accelerated && atomic_load_explicit(&s->was_promoted, memory_order_relaxed) ? SL_STATS_PROMOTED
													   : 0;
		/* A kernel TCP connection's unknown end stays unknown (shown as
		 * such; ss(8) has it): asking would cost its connect or accept
		 * a system call more than without us. */
		if (s->known_local.family)
			slot->local = s->known_local;
		else if (accelerated)
			sl_key_of_fd(s->fd, false, &slot->local);
		else
			memset(&slot->local, 0, sizeof(slot->local));
		if (s->known_peer.family)
			slot->peer = s->known_peer;
		else if (accelerated)
			sl_key_of_fd(s->fd, true, &slot->peer);
		else
			memset(&slot->peer, 0, sizeof(slot->peer));
		atomic_store_explicit(&slot->ctr.tx_bytes, 0, memory_order_relaxed);
		atomic_store_explicit(&slot->ctr.rx_bytes, 0, memory_order_relaxed);
		atomic_store_explicit(&slot->ctr.sleeps, 0, memory_order_relaxed);
		atomic_store_explicit(&slot->ctr.wakeups, 0, memory_order_relaxed);
		atomic_store_explicit(&slot->in_use, 1, memory_order_release);
		s->stats_slot = i;
		/* Another thread may be counting on s: it goes on in the slot
		 * from its next count (sl_ctr). */
		atomic_store_explicit(&s->ctr, &slot->ctr, memory_order_release);
		/* Moved after the switch: another thread's count that still went
		 * to own_ctr stays there, and joins the totals at close. */
		atomic_fetch_add(&slot->ctr.tx_bytes, atomic_exchange(&s->own_ctr.tx_bytes, 0));
		atomic_fetch_add(&slot->ctr.rx_bytes, atomic_exchange(&s->own_ctr.rx_bytes, 0));
		atomic_fetch_add(&slot->ctr.sleeps, atomic_exchange(&s->own_ctr.sleeps, 0));
		atomic_fetch_add(&slot->ctr.wakeups, atomic_exchange(&s->own_ctr.wakeups, 0));
		return;
	}
}

static bool publish_wanted_one(struct sl_sock *s)
{
	if (!atomic_load_explicit(&s->stats_wanted, memory_order_relaxed))
		return false;
	if (s->stats_slot < 0)
		fill_slot(map, s, true);
	atomic_store_explicit(&s->stats_wanted, false, memory_order_relaxed);
	return false;
}

/* Under map_lock: make the file, and give every connection that waited
 * for it its slot. */
static void publish(void)
{
	atomic_store_explicit(&publish_wanted, false, memory_order_relaxed);
	if (open_map())
		sl_sock_any(publish_wanted_one);
}

/* Under map_lock: s's slot is free again, its counts back in the socket
 * (another thread counting meanwhile counts there from its next count). */
static void give_back_slot(struct sl_sock *s)
{
	struct sl_counters *c = sl_ctr(s);

	if (s->stats_slot < 0)
		return;
	if (c != &s->own_ctr) {
		atomic_fetch_add(&s->own_ctr.tx_bytes, atomic_load(&c->tx_bytes));
		atomic_fetch_add(&s->own_ctr.rx_bytes, atomic_load(&c->rx_bytes));
		atomic_fetch_add(&s->own_ctr.sleeps, atomic_load(&c->sleeps));
		atomic_fetch_add(&s->own_ctr.wakeups, atomic_load(&c->wakeups));
		atomic_store_explicit(&s->ctr, &s->own_ctr, memory_order_release);
	}
	if (map)
		atomic_store_explicit(&map->slot[s->stats_slot].in_use, 0, memory_order_release);
	s->stats_slot = -1;
}

static void take_slot(struct sl_sock *s, bool accelerated)
{
	pthread_mutex_lock(&map_lock);
	/* Promoted: its kernel TCP row goes, the accelerated one replaces it. */
	if (accelerated)
		give_back_slot(s);
	/* Fell back before its slot: listed as what it is now. */
	if (!accelerated)
		atomic_store_explicit(&s->stats_wanted, false, memory_order_relaxed);
	if (!map && !map_failed && accelerated && sl_young()) {
		/* Making the file costs a fresh process some 50 us: not on its
		 * first connections' path (idle.c does it, young.h). */
		atomic_store_explicit(&s->stats_wanted, true, memory_order_relaxed);
		accelerated_before_file++;
		atomic_store_explicit(&publish_wanted, true, memory_order_relaxed);
	} else if (!map && !map_failed) {
		publish();
	}
	if (map && !atomic_load_explicit(&s->stats_wanted, memory_order_relaxed)) {
		fill_slot(map, s, accelerated);
		if (accelerated)
			atomic_fetch_add(&map->hdr.accelerated, 1);
	}
	pthread_mutex_unlock(&map_lock);
}

bool sl_stats_publish_pending(void)
{
	return atomic_load_explicit(&publish_wanted, memory_order_relaxed);
}

void sl_stats_publish_idle(void)
{
	if (!atomic_load_explicit(&publish_wanted, memory_order_relaxed))
		return;
	pthread_mutex_lock(&map_lock);
	if (atomic_load_explicit(&publish_wanted, memory_order_relaxed))
		publish();
	pthread_mutex_unlock(&map_lock);
}

void sl_stats_conn_open(struct sl_sock *s)
{
	take_slot(s, true);
}

void sl_stats_conn_plain(struct sl_sock *s)
{
	/* A downgraded connection's accelerated slot was given back first. */
	if (s->stats_slot < 0)
		take_slot(s, false);
}

void sl_stats_conn_close(struct sl_sock *s)
{
	struct sl_counters *c = sl_ctr(s);

	atomic_fetch_add_explicit(&sl_totals.tx_bytes, atomic_load(&c->tx_bytes), memory_order_relaxed);
	atomic_fetch_add_explicit(&sl_totals.rx_bytes, atomic_load(&c->rx_bytes), memory_order_relaxed);
	if (c != &s->own_ctr) {
		/* What another thread counted while fill_slot moved the counts. */
		atomic_fetch_add_explicit(&sl_totals.tx_bytes, atomic_load(&s->own_ctr.tx_bytes), memory_order_relaxed);
		atomic_fetch_add_explicit(&sl_totals.rx_bytes, atomic_load(&s->own_ctr.rx_bytes), memory_order_relaxed);
	}
	pthread_mutex_lock(&map_lock);
	atomic_store_explicit(&s->stats_wanted, false, memory_order_relaxed);
	if (s->stats_slot >= 0 && map) {
		atomic_store_explicit(&map->slot[s->stats_slot].in_use, 0, memory_order_release);
		/* The file stays with no connection open: a connection-per-request
		 * server would otherwise make and remove it (ten system calls) per
		 * connection.  It goes at exit; a killed process's is swept. */
	}
	s->stats_slot = -1;
	atomic_store_explicit(&s->ctr, &s->own_ctr, memory_order_release);
	pthread_mutex_unlock(&map_lock);
	atomic_store(&s->own_ctr.tx_bytes, 0);
	atomic_store(&s->own_ctr.rx_bytes, 0);
}

static bool count_privately(struct sl_sock *s)
{
	atomic_store_explicit(&s->stats_wanted, false, memory_order_relaxed);
	if (s->stats_slot >= 0) {
		s->own_ctr.tx_bytes = atomic_load(&sl_ctr(s)->tx_bytes);
		s->own_ctr.rx_bytes = atomic_load(&sl_ctr(s)->rx_bytes);
		s->own_ctr.sleeps = atomic_load(&sl_ctr(s)->sleeps);
		s->own_ctr.wakeups = atomic_load(&sl_ctr(s)->wakeups);
		atomic_store_explicit(&s->ctr, &s->own_ctr, memory_order_release);
		s->stats_slot = -1;
	}
	return false;
}

void sl_stats_file_after_fork_child(void)
{
	/* The mapping stays (it is the parent's file); we no longer write it. */
	pthread_mutex_init(&map_lock, NULL);
	sl_sock_any(count_privately);
	atomic_store(&publish_wanted, false);
	accelerated_before_file = 0;
	if (map)
		detached = map; /* mapped over by our own first file */
	map = NULL;
	/* Our copy only: the lock stays with the parent's descriptor. */
	if (map_fd >= 0)
		sl_own_fd_close(map_fd);
	map_fd = -1;
	map_failed = false;
}

void sl_stats_file_renumber(int from, int to)
{
	pthread_mutex_lock(&map_lock);
	if (map_fd == from)
		map_fd = to;
	pthread_mutex_unlock(&map_lock);
}
