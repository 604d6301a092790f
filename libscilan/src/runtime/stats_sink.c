/* stats_sink.c — where a process's SCILAN_STATS line goes at exit: never into
 * the program's own stderr unless asked (or that is a terminal, where the
 * user typed the command); else a log in the runtime directory that
 * `scilan_ctl stat --exited` reads, or a file the user names.  One append each.
 */
#include "runtime/stats_sink.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/config.h"
#include "runtime/log.h"
#include "runtime/stats.h"
#include "runtime/sys.h"

/* A runtime directory's log past this size starts again (the last one kept
 * as .old): it is tmpfs, memory, and a test harness runs many processes. */
#define RUNDIR_LOG_MAX (1 << 20)

static enum sl_stats_dest dest = SL_STATS_OFF;
static char file[PATH_MAX];

enum sl_stats_dest sl_stats_sink_parse(const char *v, char *path, size_t size)
{
	if (!v || !*v || strcmp(v, "0") == 0)
		return SL_STATS_OFF;
	if (strcmp(v, "1") == 0)
		return SL_STATS_DEFAULT;
	if (strcmp(v, "stderr") == 0)
		return SL_STATS_STDERR;
	if (strcmp(v, "rundir") == 0)
		return SL_STATS_RUNDIR;
	if (v[0] == '/' && strlen(v) < size) {
		memcpy(path, v, strlen(v) + 1);
		return SL_STATS_FILE;
	}
	return SL_STATS_BAD;
}

bool sl_stats_sink_init(const char *v)
{
	dest = sl_stats_sink_parse(v, file, sizeof(file));
	if (dest == SL_STATS_BAD) {
		sl_err("SCILAN_STATS=%s is not one of 0|1|stderr|rundir|/absolute/file; using 1", v);
		dest = SL_STATS_DEFAULT;
	}
	return dest != SL_STATS_OFF;
}

int sl_stats_log_path(char *path, size_t size, bool old)
{
	const char *rundir = sl_config()->rundir;

	if (!*rundir) {
		errno = ENOENT;
		return -1;
	}
	if (snprintf(path, size, "%s/stats.log%s", rundir, old ? ".old" : "") >= (int)size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* The user's own file, named in the user's own environment: trusted, but a
 * symbolic link is followed only if it is ours (a link planted by another
 * user in a shared directory does not take our lines elsewhere).
 * O_NONBLOCK: a FIFO without a reader fails instead of holding the exit. */
static int open_named(const char *path)
{
	int flags = O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
	int fd = open(path, flags | O_NOFOLLOW, 0666);
	struct stat st;

	if (fd < 0 && errno == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && st.st_uid == geteuid())
		fd = open(path, flags, 0666);
	return fd;
}

/* Our private directory's log: never a link; started again when full.  The
 * two names on the heap: the stack may be a small thread's (frames stay
 * under 2 KiB, tests/frames). */
static int open_rundir_log(void)
{
	char *path = malloc(2 * PATH_MAX), *old;
	int flags = O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK;
	struct stat st;
	int fd;

	if (!path || sl_stats_log_path(path, PATH_MAX, false) < 0) {
		free(path);
		return -1;
	}
	old = path + PATH_MAX;
	fd = open(path, flags, 0600);
	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > RUNDIR_LOG_MAX &&
	    sl_stats_log_path(old, PATH_MAX, true) == 0) {
		/* Processes exiting together may both rename: one log is lost
		 * to the other's, never a line split. */
		sl_sys.close(fd);
		rename(path, old);
		fd = open(path, flags, 0600);
	}
	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
		sl_sys.close(fd);
		fd = -1;
	}
	free(path);
	return fd;
}

void sl_stats_report(void)
{
	enum sl_stats_dest to = dest;
	int fd;

	if (to == SL_STATS_OFF)
		return;
	/* A sandbox may kill for an open, or a file may not grow (SIGXFSZ):
	 * only the stderr a sandboxed process already had, if asked for. */
	if (sl_log_sandboxed() && to != SL_STATS_STDERR)
		return;
	if (to == SL_STATS_DEFAULT)
		to = isatty(STDERR_FILENO) ? SL_STATS_STDERR : SL_STATS_RUNDIR;
	if (to == SL_STATS_STDERR) {
		sl_stats_print(STDERR_FILENO);
		return;
	}
	fd = to == SL_STATS_FILE ? open_named(file) : open_rundir_log();
	if (fd < 0)
		return; /* nowhere of ours to put it: not the program's stderr */
	sl_stats_print(fd);
	sl_sys.close(fd);
}
