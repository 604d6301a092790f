/* own_fd.c — the descriptors libscilan keeps for itself.  A program does not
 * know they exist: it may dup2 onto their numbers (bash's `exec 5<>`), close
 * every descriptor it did not open (daemons), or close_range them.  Ours live
 * at high numbers, are marked in a bitmap, and are moved out of the way.
 */
#include "runtime/own_fd.h"
#include "fabric/shm/seg_pool.h"
#include "runtime/sock_diag.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/log.h"
#include "socket/sock_state.h"
#include "runtime/stats_file.h"
#include "runtime/sys.h"

/* Marks cover the first 2^20 numbers (the kernel's default nr_open); the
 * bitmap is zero-fill BSS, so untouched pages cost nothing. */
#define OWN_FD_LIMIT (1u << 20)
static _Atomic uint64_t own_bits[OWN_FD_LIMIT / 64];

/* Where ours live.  The program's numbers must be the ones it would have on
 * kernel TCP, and its whole RLIMIT_NOFILE must stay its own: programs size
 * tables by their connection count (redis's event loop is maxclients + 128
 * and silently ignores a client numbered past it; it sets its limit to
 * maxclients + 32), and select() users stay under FD_SETSIZE.
 *  - Above the soft limit, when the hard limit leaves room: the soft limit is
 *    raised for the one F_DUPFD and put back (the kernel checks it only when
 *    it allocates a number), so ours cost the program nothing.
 *  - Else at the top of the program's range, growing downwards: its numbers
 *    stay dense, and sl_own_fd_room keeps ours within a quarter of them
 *    and an eighth free.  The top
 *    is at most OWN_TOP_CAP: the kernel's table grows to the highest number
 *    in use (8 bytes each), and a soft limit of 2^20 should not cost every
 *    process 8 MiB.
 *  - A connection's, at first, at most at OWN_YOUNG_TOP: the kernel zeroes
 *    the whole table it grows to, so the first of ours at 19,936 (soft =
 *    hard = 20,000) cost a process's first connection some 40 us, and at
 *    the cap (a container's 2^20) over 100 us, where 4,096 costs 10 us and
 *    stays above select()'s 1,024.  Once the program's own numbers reach
 *    half-way up to ours, or it makes a thread, new ones go to the real
 *    top; a connection's open below stay until it closes (never moved
 *    under a thread that may be using them).  What lasts as long as a
 *    listener, an epoll set or the process (sl_own_fd_lasting) goes to the
 *    real top at once: made before connections, off their path. */
#define OWN_TOP_CAP 65536
#define OWN_YOUNG_TOP 4096
#define OWN_FIRST_REGION 64
#define OWN_MIN_LIMIT 128 /* below it, too few numbers to set any apart */

static pthread_mutex_t region_lock = PTHREAD_MUTEX_INITIALIZER;
/* Ours are placed in [floor, top), under region_lock: a connection's in the
 * young region while there is one, what lasts (sl_own_fd_lasting) at the
 * real top. */
struct region {
	int top, floor;
};
static struct region young_region, top_region;
static _Atomic bool grown; /* the young region is no longer used */

/* New ones of ours go to the real top from now on; the kept query socket,
 * which would stay among the program's numbers for good, goes too (the
 * connections' own go as they close).  True if it was young until now. */
static bool grow_up(void)
{
	if (atomic_load_explicit(&grown, memory_order_relaxed) || atomic_exchange(&grown, true))
		return false;
	sl_diag_drop_kept();
	return true;
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

/* The RLIMIT_NOFILE pair through the system call itself: prlimit64 swaps in
 * one step, and the library must not meet a hook's setrlimit. */
static int nofile_swap(const struct rlimit *set, struct rlimit *old)
{
	return (int)syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, set, old);
}

/* Is there room for need more of ours above the soft limit (read into rl)? */
static bool room_above_limit(struct rlimit *rl, int need)
{
	rlim_t cap;

	if (nofile_swap(NULL, rl) < 0 || rl->rlim_cur == RLIM_INFINITY || rl->rlim_cur < OWN_MIN_LIMIT ||
	    rl->rlim_cur >= OWN_FD_LIMIT || rl->rlim_max <= rl->rlim_cur)
		return false;
	cap = rl->rlim_max < OWN_FD_LIMIT ? rl->rlim_max : OWN_FD_LIMIT;
	return (rlim_t)own_above((int)rl->rlim_cur) + (rlim_t)need <= cap - rl->rlim_cur;
}

/* Within the program's limit (soft = hard), every one of ours is one the
 * program cannot have: ours stay within a quarter of it, and the total
 * leaves an eighth free.  The total alone let ours grow to two thirds of a
 * limit that connections filled (two bells each beside the program's
 * socket): redis with maxclients 1,000 in a limit of 1,100 failed accept
 * with EMFILE from its ~400th client on, where kernel TCP served them all.
 * A quarter is a trade: the program keeps at least three quarters of its
 * limit, and a limit of 20,000 still carries some 2,500 connections on the
 * rings (a sixteenth kept 15/16 but only ~600 on the rings; nginx's
 * worker_rlimit_nofile sets soft = hard).  Connections only come off kernel
 * TCP's capacity entirely with bells per process instead of per connection. */
#define OWN_SHARE_IN_LIMIT 4

static bool room_within_limit(long used, long lim)
{
	return atomic_load_explicit(&own_count, memory_order_relaxed) + SL_FDS_PER_CONN <= lim / OWN_SHARE_IN_LIMIT &&
	       used <= lim - lim / 8;
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
	struct rlimit rl;
	long used, lim;

	if (newfd >= OWN_YOUNG_TOP / 2)
		grow_up();
	/* Ours go above the program's limit while the hard limit has room. */
	if (room_above_limit(&rl, SL_FDS_PER_CONN))
		return true;
	used = (long)newfd + own_above(newfd) + SL_FDS_PER_CONN;
	lim = nofile(false);
	if (room_within_limit(used, lim))
		return true;
	lim = nofile(true);
	return room_within_limit(used, lim);
}

bool sl_own_fd_is(int fd)
{
	if (fd < 0 || (unsigned)fd >= OWN_FD_LIMIT)
		return false;
	return atomic_load_explicit(&own_bits[fd / 64], memory_order_acquire) & (1ull << (fd % 64));
}

/* A copy of fd at the lowest free number at or above the soft limit; -1 if
 * the hard limit leaves no room (or need more of ours would not fit). */
static int place_above_limit(int fd, int need)
{
	struct rlimit rl, raised, seen;
	int high;

	if (!room_above_limit(&rl, need))
		return -1;
	raised = (struct rlimit){ rl.rlim_max < OWN_FD_LIMIT ? rl.rlim_max : OWN_FD_LIMIT, rl.rlim_max };
	if (nofile_swap(&raised, &rl) < 0) /* past fs.nr_open */
		return -1;
	high = sl_sys.fcntl(fd, F_DUPFD_CLOEXEC, (int)rl.rlim_cur);
	/* Put the program's limit back; had one of its threads set another
	 * meanwhile, that one stands. */
	if (nofile_swap(&rl, &seen) == 0 && (seen.rlim_cur != raised.rlim_cur || seen.rlim_max != raised.rlim_max))
		nofile_swap(&seen, NULL);
	return high;
}

/* A copy of fd at the top of the program's range, close-on-exec; -1 if
 * there is no room.  The region starts as the top OWN_FIRST_REGION numbers
 * and doubles downwards when full; a raised limit starts a new one at the
 * new top (ours already open stay where they are). */
static int place_in_range(int fd, bool lasting)
{
	bool fresh = false;
	int high = -1;

	for (;;) {
		bool young = !lasting && !atomic_load_explicit(&grown, memory_order_relaxed);
		struct region *r = young ? &young_region : &top_region;
		long lim = nofile(fresh);
		int cap = young ? OWN_YOUNG_TOP : OWN_TOP_CAP;
		int top = lim < cap ? (int)lim : cap;

		if (top < OWN_MIN_LIMIT)
			break;
		if (top != r->top) {
			r->top = top;
			r->floor = top - OWN_FIRST_REGION;
		}
		high = sl_sys.fcntl(fd, F_DUPFD_CLOEXEC, r->floor);
		if (high >= 0 && high < r->top)
			break;
		if (high >= 0) /* the program's numbers above a capped top */
			sl_sys.close(high);
		else if (errno != EMFILE && errno != EINVAL)
			break;
		high = -1;
		if (!fresh) { /* the program may have raised or lowered its limit */
			fresh = true;
			continue;
		}
		/* Full: double the region downwards, but never past half the
		 * numbers, where ours would interleave with the program's; a
		 * young region full of the program's numbers is left for the
		 * real top. */
		if (r->top - r->floor >= r->top / 2) {
			if (young && grow_up())
				continue;
			break;
		}
		r->floor = r->top - 2 * (r->top - r->floor);
		if (r->floor < r->top / 2)
			r->floor = r->top / 2;
	}
	return high;
}

/* A copy of fd where ours live (above), or -1. */
static int place_high(int fd, bool lasting)
{
	int high;

	pthread_mutex_lock(&region_lock);
	high = place_above_limit(fd, 1);
	if (high < 0)
		high = place_in_range(fd, lasting);
	pthread_mutex_unlock(&region_lock);
	return high;
}

/* The kernel grows a descriptor table when a number past its end is first
 * used, and when threads share the table it waits for an RCU grace period
 * first: tens of milliseconds here, against microseconds with one thread
 * (a threaded client's first connect took 21-53 ms, one thread's 0.5 ms).
 * Ours are the highest numbers a process has, so the table is grown to
 * hold them before the first thread is made, by one number placed where
 * ours go and closed again (a table never shrinks).  It costs a process
 * that makes threads the table the first of ours would have grown anyway,
 * whether or not it ever uses a socket: 8 bytes a number (16 KiB at the
 * usual soft limit of 1,024, as ours then start at 1,024).  A threaded
 * process has no young region: its table is grown once, here. */
void sl_own_fd_before_threads(void)
{
	static _Atomic unsigned grown_at_fork = UINT_MAX;
	unsigned forks = atomic_load_explicit(&sl_forks, memory_order_relaxed);
	int high = -1;

	if (atomic_exchange(&grown_at_fork, forks) == forks)
		return;
	/* Grown once for all: no young region in a threaded process. */
	grow_up();
	/* Any open number to copy: the standard ones are the likeliest. */
	for (int fd = 0; fd <= 2 && high < 0; fd++)
		high = place_high(fd, true);
	if (high >= 0)
		sl_sys.close(high);
}

static int own(int fd, bool lasting)
{
	int err = errno, high;

	if (fd < 0)
		return fd;
	high = place_high(fd, lasting);
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

int sl_own_fd(int fd)
{
	return own(fd, false);
}

int sl_own_fd_lasting(int fd)
{
	return own(fd, true);
}

void sl_own_fd_forget(int fd)
{
	mark(fd, false);
}

void sl_own_fd_close(int fd)
{
	if (fd >= 0)
		sl_sys.close(fd); /* sys.c's close forgets the mark first */
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
	for (int i = 0; s->dev_listen && i < s->dev_listen->count; i++)
		renumber(&s->dev_listen->at[i].fd);
	return false;
}

int sl_own_fd_evict(int fd)
{
	int to;

	if (!sl_own_fd_is(fd))
		return 0;
	pthread_mutex_lock(&evict_lock);
	to = place_high(fd, fd >= OWN_YOUNG_TOP); /* where it was: young, or not */
	if (to < 0) /* no room there: anywhere else will do */
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
	pthread_mutex_lock(&region_lock);
}

void sl_own_fd_fork_unlock(bool child)
{
	if (child) { /* the locking thread is this one, under another tid */
		pthread_mutex_init(&region_lock, NULL);
		pthread_mutex_init(&evict_lock, NULL);
	} else {
		pthread_mutex_unlock(&region_lock);
		pthread_mutex_unlock(&evict_lock);
	}
}
