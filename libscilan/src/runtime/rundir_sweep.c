/* rundir_sweep.c — the runtime directory's janitor: walks stats/, offer/ and
 * listen/ a few dozen entries at a time (a cursor file shared by all of the
 * user's processes, <rundir>/.sweep, says where the last walk stopped) and
 * removes the entries no live process holds: processes killed by a signal or
 * ended with _exit run no clean-up of their own.
 */
#include "runtime/rundir_sweep.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/config.h"
#include "runtime/log.h"
#include "fabric/shm/offer.h"
#include "fabric/shm/registry.h"
#include "fabric/shm/offer_names.h"
#include "runtime/stats_file.h"
#include "runtime/sys.h"
#include "sync/clock.h"

/* Files that exist only in the middle of a connect set-up (a FIFO between
 * mkfifo and its open, an offer being written) are left alone this long: a
 * set-up that is slower still finds its name gone and falls back to kernel
 * TCP. */
#define SETUP_GRACE_S 10
/* An offer whose bells are held but whose memfd is not where its pid
 * points here: its connector died with the bells in flight in the
 * listener's rendezvous queue, or lives in another pid namespace sharing
 * the directory (a container's), where the pid names nothing of ours.  We
 * cannot tell which, so it goes only after a wait no acceptor makes. */
#define HELD_GRACE_S 120

static const char *const subdirs[] = { "stats", "offer", "listen" };
#define NSUB (sizeof(subdirs) / sizeof(subdirs[0]))

struct cursor {
	uint32_t sub;
	uint32_t reserved;
	uint64_t off; /* getdents position in that directory */
};

/* A sweep's buffers, allocated per sweep: it runs inside an application's
 * connect, on a stack that may be 16 KiB. */
struct walk {
	char dir[SL_PATH_SIZE];  /* the subdirectory walked */
	char path[SL_PATH_SIZE]; /* the entry looked at */
	char dents[4096];
};

static bool ends_with(const char *name, const char *suffix)
{
	size_t n = strlen(name), s = strlen(suffix);

	return n > s && strcmp(name + n - s, suffix) == 0;
}

static bool older_than(const char *path, time_t secs)
{
	struct stat st;

	return lstat(path, &st) == 0 && time(NULL) - st.st_mtime > secs;
}

static bool older_than_grace(const char *path)
{
	return older_than(path, SETUP_GRACE_S);
}

/* The connecting side opens both wake-up FIFOs O_RDWR and keeps them while
 * the offer stands (so do its fork children and exec successors): opening one
 * for writing without blocking fails with ENXIO exactly when no process has
 * it open.  1 held, 0 not held, -1 missing or unknown. */
static int fifo_held(const char *path)
{
	int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);

	if (fd >= 0) {
		sl_sys.close(fd);
		return 1;
	}
	return errno == ENXIO ? 0 : -1;
}

/* Is the memfd an offer file names gone from its process (which exited or
 * was killed)?  Not judged by the pid alone, which another process may have
 * now: by the descriptor's inode.  A process we may not look into (EACCES)
 * counts as alive. */
static bool offer_memfd_gone(const char *path)
{
	unsigned char raw[sizeof(struct offer) + 1];
	struct offer o;
	struct stat st;
	char fdpath[64];
	ssize_t got;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return false;
	got = sl_sys.read(fd, raw, sizeof(raw));
	sl_sys.close(fd);
	if (got < 0 || !sl_offer_parse(raw, (size_t)got, &o))
		return false;
	snprintf(fdpath, sizeof(fdpath), "/proc/%d/fd/%d", (int)o.pid, (int)o.memfd);
	if (stat(fdpath, &st) < 0)
		return errno == ENOENT || errno == ESRCH;
	return st.st_ino != o.ino || st.st_dev != o.dev;
}

/* Names in offer/ (fabric_shm.c, offer_names.c): <offer>, <offer>.bell0 and
 * .bell1, and <offer>.<n>.tmp while the offer is written.  A bell may be
 * held by others than its connector: its descriptor also travels with the
 * offer through the listener's rendezvous (rendezvous.c), where it waits
 * until an acceptor looks, also after the connector died.  So an offer
 * also goes when its memfd is gone from its process (HELD_GRACE_S), and a
 * bell when its offer is gone. */
static void sweep_offer_entry(const char *path, const char *name)
{
	char bell[SL_BELL_PATH_SIZE];
	bool held = false;

	if (ends_with(name, ".bell0") || ends_with(name, ".bell1")) {
		char offer[SL_BELL_PATH_SIZE];
		size_t len = strlen(path) - strlen(".bell0");
		struct stat st;

		memcpy(offer, path, len);
		offer[len] = '\0';
		if (older_than_grace(path) && (fifo_held(path) == 0 || (lstat(offer, &st) < 0 && errno == ENOENT)))
			unlink(path);
		return;
	}
	if (ends_with(name, ".tmp")) {
		if (older_than_grace(path))
			unlink(path);
		return;
	}
	if (strchr(name, '.'))
		return; /* not a name of ours */
	for (int i = 0; i < 2 && !held; i++) {
		/* A name too long for a bell was never offered: none is held. */
		held = sl_shm_bell_path(path, i, bell, sizeof(bell)) == 0 && fifo_held(bell) == 1;
	}
	if (older_than_grace(path) && (!held || (older_than(path, HELD_GRACE_S) && offer_memfd_gone(path)))) {
		sl_debug("removing the offer %s of a process that is gone", path);
		sl_shm_unlink_offer(path);
	}
}

static void sweep_entry(unsigned sub, struct walk *w, const char *name)
{
	char *path = w->path;

	if (snprintf(path, sizeof(w->path), "%s/%s", w->dir, name) >= (int)sizeof(w->path))
		return;
	if (sub == 0)
		sl_stats_file_reap(path);
	else if (sub == 1)
		sweep_offer_entry(path, name);
	else
		sl_registry_reap(path);
}

/* Walk one directory from c->off; returns the budget left (0: stopped in
 * the middle, c->off says where). */
static unsigned sweep_dir(const char *rundir, struct walk *w, struct cursor *c, unsigned budget)
{
	char *buf = w->dents;
	int fd;
	ssize_t n;

	if (snprintf(w->dir, sizeof(w->dir), "%s/%s", rundir, subdirs[c->sub]) >= (int)sizeof(w->dir))
		return budget;
	fd = open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return budget;
	/* A position another directory state handed out may no longer be
	 * valid: start over then. */
	if (lseek(fd, (off_t)c->off, SEEK_SET) < 0)
		c->off = 0;
	while (budget > 0 && (n = getdents64(fd, buf, sizeof(w->dents))) > 0) {
		for (ssize_t at = 0; at < n && budget > 0;) {
			struct dirent64 *de = (struct dirent64 *)(buf + at);

			at += de->d_reclen;
			c->off = (uint64_t)de->d_off;
			if (de->d_name[0] == '.')
				continue; /* ., .., and listen/.lock */
			sweep_entry(c->sub, w, de->d_name);
			budget--;
		}
	}
	sl_sys.close(fd);
	return budget;
}

void sl_rundir_sweep(unsigned budget)
{
	const char *rundir = sl_config()->rundir;
	struct cursor c = { 0 };
	struct walk *w;
	int fd, saved = errno; /* a set-up path's caller need not know we swept */

	if (!*rundir || !(w = malloc(sizeof(*w))))
		return;
	if (snprintf(w->path, sizeof(w->path), "%s/.sweep", rundir) >= (int)sizeof(w->path)) {
		free(w);
		return;
	}
	/* The cursor is a hint: racing sweeps may repeat or skip a stretch,
	 * which a later round covers. */
	fd = open(w->path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0 && (pread(fd, &c, sizeof(c), 0) != (ssize_t)sizeof(c) || c.sub >= NSUB))
		memset(&c, 0, sizeof(c));
	/* Each directory at most once per call, so an empty one is not walked
	 * over and over. */
	for (unsigned visited = 0; budget > 0 && visited < NSUB; visited++) {
		budget = sweep_dir(rundir, w, &c, budget);
		if (budget > 0) {
			c.sub = (c.sub + 1) % (uint32_t)NSUB;
			c.off = 0;
		}
	}
	if (fd >= 0) {
		if (pwrite(fd, &c, sizeof(c), 0) != (ssize_t)sizeof(c))
			sl_debug("sweep cursor %s/.sweep not saved: %s", rundir, strerror(errno));
		sl_sys.close(fd);
	}
	free(w);
	errno = saved;
}

static _Atomic bool sweep_wanted;

void sl_rundir_sweep_soon(void)
{
	if (!atomic_load_explicit(&sweep_wanted, memory_order_relaxed))
		atomic_store_explicit(&sweep_wanted, true, memory_order_relaxed);
}

void sl_rundir_sweep_idle(void)
{
	if (atomic_load_explicit(&sweep_wanted, memory_order_relaxed) &&
	    atomic_exchange_explicit(&sweep_wanted, false, memory_order_relaxed))
		sl_rundir_sweep_tick();
}

void sl_rundir_sweep_tick(void)
{
	static _Atomic int64_t last;
	static _Atomic pid_t last_pid;
	/* Coarse: a once-a-second tick needs no precise clock. */
	int64_t now_s = sl_clock_ns(CLOCK_MONOTONIC_COARSE) / 1000000000;
	pid_t pid = sl_self_pid;

	/* A fork child sweeps at once: short-lived forked workers may be all
	 * that ever sets up connections.  Racing threads may both sweep. */
	if (atomic_load_explicit(&last_pid, memory_order_relaxed) == pid &&
	    now_s - atomic_load_explicit(&last, memory_order_relaxed) < 1)
		return;
	atomic_store_explicit(&last, now_s, memory_order_relaxed);
	atomic_store_explicit(&last_pid, pid, memory_order_relaxed);
	sl_rundir_sweep(SL_SWEEP_BUDGET);
}
