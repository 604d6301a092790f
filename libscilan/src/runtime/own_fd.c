/* own_fd.c — the descriptors libscilan keeps for itself.  A program does not
 * know they exist: it may dup2 onto their numbers (bash's `exec 5<>`), close
 * every descriptor it did not open (daemons), or close_range them.  Ours live
 * at high numbers, are marked in a bitmap, and are moved out of the way.
 */
#include "runtime/own_fd.h"
#include "fabric/shm/seg_pool.h"
#include "fabric/shm/sock_diag.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/resource.h>

#include "runtime/log.h"
#include "socket/sock_state.h"
#include "runtime/stats_file.h"
#include "runtime/sys.h"

/* Marks cover the first 2^20 numbers (the kernel's default nr_open); the
 * bitmap is zero-fill BSS, so untouched pages cost nothing. */
#define OWN_FD_LIMIT (1u << 20)
static _Atomic uint64_t own_bits[OWN_FD_LIMIT / 64];

static pthread_once_t base_once = PTHREAD_ONCE_INIT;
static int own_base;

/* Programs allocate upwards from 0, so ours start at half the soft limit
 * (at most 1024: the kernel's descriptor table grows to the highest number in
 * use, and a select()-bound program never sees ours anyway). */
static void compute_base(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		rl.rlim_cur = 1024;
	own_base = rl.rlim_cur >= 2048 ? 1024 : (int)(rl.rlim_cur / 2);
	if (own_base < 64)
		own_base = 0; /* too few descriptors to set any apart */
}

/* How many numbers are marked: what sl_own_fd_room counts as ours. */
static _Atomic int own_count;

static void mark(int fd, bool on)
{
	uint64_t bit;

	/* Any number comes here: sys.c's close forgets whatever it closes,
	 * close(-1) included. */
	if (fd < 0 || (unsigned)fd >= OWN_FD_LIMIT)
		return;
	bit = 1ull << (fd % 64);
	if (on) {
		if (!(atomic_fetch_or_explicit(&own_bits[fd / 64], bit, memory_order_release) & bit))
			atomic_fetch_add_explicit(&own_count, 1, memory_order_relaxed);
	} else if (atomic_fetch_and_explicit(&own_bits[fd / 64], ~bit, memory_order_release) & bit) {
		atomic_fetch_sub_explicit(&own_count, 1, memory_order_relaxed);
	}
}

/* The soft limit as last read: programs raise it at start-up (nginx's
 * worker_rlimit_nofile), so a "no" reads it again before it stands. */
static _Atomic long nofile_cached;

static long nofile(bool fresh)
{
	struct rlimit rl;
	long n = atomic_load_explicit(&nofile_cached, memory_order_relaxed);

	if (n && !fresh)
		return n;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > OWN_FD_LIMIT)
		n = OWN_FD_LIMIT;
	else
		n = (long)rl.rlim_cur;
	atomic_store_explicit(&nofile_cached, n, memory_order_relaxed);
	return n;
}

/* Ours at numbers from fd up (a popcount of the bitmap below it). */
static int own_above(int fd)
{
	int below = 0;

	if (fd <= 0)
		return atomic_load_explicit(&own_count, memory_order_relaxed);
	if ((unsigned)fd > OWN_FD_LIMIT)
		fd = OWN_FD_LIMIT;
	for (int w = 0; w < fd / 64; w++)
		below += __builtin_popcountll(atomic_load_explicit(&own_bits[w], memory_order_relaxed));
	if (fd % 64)
		below += __builtin_popcountll(atomic_load_explicit(&own_bits[fd / 64], memory_order_relaxed) &
					      ((1ull << (fd % 64)) - 1));
	below = atomic_load_explicit(&own_count, memory_order_relaxed) - below;
	return below > 0 ? below : 0;
}

bool sl_own_fd_room(int newfd)
{
	/* newfd is the lowest number the kernel had free: below it every
	 * number is open (the program's and ours), above it only what was
	 * opened before lower ones were closed, ours counted.  A connection on the rings holds
	 * SL_FDS_PER_CONN more than on kernel TCP: an eighth of the limit
	 * stays the program's, and should its calls still run out, agreed
	 * offers give their segment descriptors back first
	 * (sl_reclaim_descriptors). */
	long used = (long)newfd + own_above(newfd) + SL_FDS_PER_CONN, lim;

	lim = nofile(false);
	if (used <= lim - lim / 8)
		return true;
	lim = nofile(true);
	return used <= lim - lim / 8;
}

bool sl_own_fd_is(int fd)
{
	if (fd < 0 || (unsigned)fd >= OWN_FD_LIMIT)
		return false;
	return atomic_load_explicit(&own_bits[fd / 64], memory_order_acquire) & (1ull << (fd % 64));
}

/* A copy of fd at or above our base, close-on-exec; -1 if there is no room. */
static int move_high(int fd)
{
	int high;

	pthread_once(&base_once, compute_base);
	if (!own_base || fd >= own_base)
		return -1;
	high = sl_sys.fcntl(fd, F_DUPFD_CLOEXEC, own_base);
	if (high >= 0 && (unsigned)high >= OWN_FD_LIMIT) {
		sl_sys.close(high);
		return -1;
	}
	return high;
}

int sl_own_fd(int fd)
{
	int err = errno, high;

	if (fd < 0)
		return fd;
	high = move_high(fd);
	if (high >= 0) {
		sl_sys.close(fd);
		fd = high;
	} else {
		sl_sys.fcntl(fd, F_SETFD, FD_CLOEXEC); /* ours never leak into an exec'd image */
	}
	mark(fd, true);
	errno = err;
	return fd;
}

void sl_own_fd_forget(int fd)
{
	mark(fd, false);
}

void sl_own_fd_close(int fd)
{
	if (fd < 0)
		return;
	mark(fd, false);
	sl_sys.close(fd);
}

/* Repointing holders: sl_sock_any's callback takes no context, and evictions
 * are serialised by evict_lock. */
static pthread_mutex_t evict_lock = PTHREAD_MUTEX_INITIALIZER;
static int evict_from, evict_to;
static void (*_Atomic move_callback)(int from, int to);

void sl_own_fd_on_move(void (*fn)(int from, int to))
{
	atomic_store(&move_callback, fn);
}

static void renumber(int *slot)
{
	if (*slot == evict_from)
		*slot = evict_to;
}

static bool renumber_sock(struct sl_sock *s)
{
	renumber(&s->bell_rx);
	renumber(&s->bell_tx);
	renumber(&s->memfd);
	for (int i = 0; i < SL_MAX_REG; i++)
		renumber(&s->reg_fd[i]), renumber(&s->rdv_fd[i]);
	return false;
}

int sl_own_fd_evict(int fd)
{
	int to;

	if (!sl_own_fd_is(fd))
		return 0;
	pthread_mutex_lock(&evict_lock);
	to = move_high(fd);
	if (to < 0) /* already high, or no room there: anywhere else will do */
		to = sl_sys.fcntl(fd, F_DUPFD_CLOEXEC, fd + 1);
	if (to < 0) {
		pthread_mutex_unlock(&evict_lock);
		sl_warn("descriptor %d, which scilan uses, cannot be moved out of the program's way: %m", fd);
		return -1;
	}
	evict_from = fd;
	evict_to = to;
	mark(to, true);
	sl_sock_any(renumber_sock);
	sl_stats_file_renumber(fd, to);
	sl_seg_pool_renumber(fd, to);
	sl_diag_renumber(fd, to);
	if (atomic_load(&move_callback))
		atomic_load(&move_callback)(fd, to);
	mark(fd, false);
	pthread_mutex_unlock(&evict_lock);
	sl_debug("descriptor %d moved to %d: the program reuses its number", fd, to);
	return 0;
}

int sl_own_fd_next(unsigned first, unsigned last)
{
	for (unsigned fd = first; fd <= last && fd < OWN_FD_LIMIT; fd++) {
		uint64_t word = atomic_load_explicit(&own_bits[fd / 64], memory_order_acquire) >> (fd % 64);

		if (!word) { /* skip to the next word */
			fd |= 63;
			continue;
		}
		fd += (unsigned)__builtin_ctzll(word);
		return fd <= last ? (int)fd : -1;
	}
	return -1;
}

void sl_own_fd_fork_lock(void)
{
	pthread_mutex_lock(&evict_lock);
}

void sl_own_fd_fork_unlock(bool child)
{
	if (child) /* the locking thread is this one, under another tid */
		pthread_mutex_init(&evict_lock, NULL);
	else
		pthread_mutex_unlock(&evict_lock);
}
