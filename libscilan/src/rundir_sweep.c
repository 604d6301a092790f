/* rundir_sweep.c — the runtime directory's janitor: walks stats/, offer/ and
 * listen/ a few dozen entries at a time (a cursor file shared by all of the
 * user's processes, <rundir>/.sweep, says where the last walk stopped) and
 * removes the entries no live process holds: processes killed by a signal or
 * ended with _exit run no clean-up of their own.
 */
#include "rundir_sweep.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "registry.h"
#include "shm_linger.h"
#include "stats_file.h"
#include "sys.h"

/* Files that exist only in the middle of a connect set-up (a FIFO between
 * mkfifo and its open, an offer being written) are left alone this long: a
 * set-up that is slower still finds its name gone and falls back to kernel
 * TCP. */
#define SETUP_GRACE_S 10

static const char *const subdirs[] = { "stats", "offer", "listen" };
#define NSUB (sizeof(subdirs) / sizeof(subdirs[0]))

struct cursor {
	uint32_t sub;
	uint32_t reserved;
	uint64_t off; /* getdents position in that directory */
};

static bool ends_with(const char *name, const char *suffix)
{
	size_t n = strlen(name), s = strlen(suffix);

	return n > s && strcmp(name + n - s, suffix) == 0;
}

static bool older_than_grace(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && time(NULL) - st.st_mtime > SETUP_GRACE_S;
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

/* Names in offer/ (fabric_shm.c, shm_linger.c): <offer>, <offer>.bell0 and
 * .bell1, and <offer>.<n>.tmp while the offer is written. */
static void sweep_offer_entry(const char *path, const char *name)
{
	char bell[4300];
	bool held = false;

	if (ends_with(name, ".bell0") || ends_with(name, ".bell1")) {
		if (fifo_held(path) == 0 && older_than_grace(path))
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
		sl_shm_bell_path(path, i, bell, sizeof(bell));
		held = fifo_held(bell) == 1;
	}
	if (!held && older_than_grace(path)) {
		sl_debug("removing the offer %s of a process that is gone", path);
		sl_shm_unlink_offer(path);
	}
}

static void sweep_entry(unsigned sub, const char *dir, const char *name)
{
	char path[4400];

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
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
static unsigned sweep_dir(const char *rundir, struct cursor *c, unsigned budget)
{
	char dir[4200], buf[4096];
	int fd;
	ssize_t n;

	snprintf(dir, sizeof(dir), "%s/%s", rundir, subdirs[c->sub]);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return budget;
	/* A position another directory state handed out may no longer be
	 * valid: start over then. */
	if (lseek(fd, (off_t)c->off, SEEK_SET) < 0)
		c->off = 0;
	while (budget > 0 && (n = getdents64(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t at = 0; at < n && budget > 0;) {
			struct dirent64 *de = (struct dirent64 *)(buf + at);

			at += de->d_reclen;
			c->off = (uint64_t)de->d_off;
			if (de->d_name[0] == '.')
				continue; /* ., .., and listen/.lock */
			sweep_entry(c->sub, dir, de->d_name);
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
	char path[4200];
	int fd, saved = errno; /* a set-up path's caller need not know we swept */

	if (!*rundir)
		return;
	snprintf(path, sizeof(path), "%s/.sweep", rundir);
	/* The cursor is a hint: racing sweeps may repeat or skip a stretch,
	 * which a later round covers. */
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0 && (pread(fd, &c, sizeof(c), 0) != (ssize_t)sizeof(c) || c.sub >= NSUB))
		memset(&c, 0, sizeof(c));
	/* Each directory at most once per call, so an empty one is not walked
	 * over and over. */
	for (unsigned visited = 0; budget > 0 && visited < NSUB; visited++) {
		budget = sweep_dir(rundir, &c, budget);
		if (budget > 0) {
			c.sub = (c.sub + 1) % (uint32_t)NSUB;
			c.off = 0;
		}
	}
	if (fd >= 0) {
		if (pwrite(fd, &c, sizeof(c), 0) != (ssize_t)sizeof(c))
			sl_debug("sweep cursor %s not saved: %s", path, strerror(errno));
		sl_sys.close(fd);
	}
	errno = saved;
}

void sl_rundir_sweep_tick(void)
{
	static _Atomic int64_t last;
	static _Atomic pid_t last_pid;
	struct timespec now;
	pid_t pid = getpid();

	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	/* A fork child sweeps at once: short-lived forked workers may be all
	 * that ever sets up connections.  Racing threads may both sweep. */
	if (atomic_load_explicit(&last_pid, memory_order_relaxed) == pid &&
	    (int64_t)now.tv_sec - atomic_load_explicit(&last, memory_order_relaxed) < 1)
		return;
	atomic_store_explicit(&last, (int64_t)now.tv_sec, memory_order_relaxed);
	atomic_store_explicit(&last_pid, pid, memory_order_relaxed);
	sl_rundir_sweep(SL_SWEEP_BUDGET);
}
