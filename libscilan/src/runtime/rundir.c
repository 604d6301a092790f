/* rundir.c — creates and vets the per-user runtime directory: it must be a real
 * directory owned by us with no group/other access, since anything inside it
 * is trusted to come from the same user.
 */
#include "runtime/rundir.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/log.h"

static int check_private_dir(const char *path)
{
	struct stat st;

	if (mkdir(path, 0700) < 0 && errno != EEXIST) {
		sl_err("cannot create runtime directory %s: %s; connections use kernel TCP", path, strerror(errno));
		return -1;
	}
	if (lstat(path, &st) < 0) {
		sl_err("cannot stat runtime directory %s: %s; connections use kernel TCP", path, strerror(errno));
		return -1;
	}
	if (st.st_uid != geteuid()) {
		sl_err("runtime directory %s belongs to uid %u, not to you (uid %u; another user may have made it "
		       "first): scilan trusts nothing in it, so connections use kernel TCP; have it removed (by uid %u "
		       "or root), or set SCILAN_RUNDIR to a directory of yours with mode 0700",
		       path, (unsigned)st.st_uid, (unsigned)geteuid(), (unsigned)st.st_uid);
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		sl_err("runtime directory %s is not a directory; connections use kernel TCP", path);
		return -1;
	}
	if (st.st_mode & 077) {
		sl_err("runtime directory %s is not private (mode %03o, need 0700), so connections use kernel TCP; "
		       "chmod 700 it, or set SCILAN_RUNDIR to a directory of yours with mode 0700",
		       path, (unsigned)(st.st_mode & 0777));
		return -1;
	}
	return 0;
}

/* The login manager's per-user directory: made by root, owned by the user,
 * mode 0700, so no other uid can have created it or anything in it. */
static bool run_user_dir(char *dir, size_t size)
{
	struct stat st;

	snprintf(dir, size, "/run/user/%u", (unsigned)geteuid());
	return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 077);
}

/* Every process of the user must find the same directory, whatever its
 * environment (a login shell, a service, cron), so the choice rests on paths
 * alone: /run/user/<uid>/scilan when the login manager made /run/user/<uid>
 * (no other uid can pre-empt that name), else /dev/shm/scilan-<uid> (which
 * another uid could create first: then an error names it). */
static int default_path(char *path, size_t size)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char run_user[64];
	struct stat st;

	if (run_user_dir(run_user, sizeof(run_user)))
		return snprintf(path, size, "%s/scilan", run_user);
	if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode))
		return snprintf(path, size, "/dev/shm/scilan-%u", (unsigned)geteuid());
	if (xdg && *xdg)
		return snprintf(path, size, "%s/scilan", xdg);
	return snprintf(path, size, "/tmp/scilan-%u", (unsigned)geteuid());
}

int sl_rundir_prepare(char *path, size_t size)
{
	static const char *const subdirs[] = { "listen", "offer", "stats" };
	const char *env = getenv("SCILAN_RUNDIR");
	char *sub;
	int n, r = 0;

	if (env && *env)
		n = snprintf(path, size, "%s", env);
	else
		n = default_path(path, size);
	if (n < 0 || (size_t)n >= size - 64) {
		sl_err("runtime directory path is too long; connections use kernel TCP");
		return -1;
	}
	if (check_private_dir(path) < 0)
		return -1;
	/* Not on the stack: the first connect may come from a thread with a
	 * 16 KiB stack.  path has room for the subdirectory's name (size - 64). */
	sub = malloc(size);
	if (!sub)
		return -1;
	for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]) && r == 0; i++) {
		snprintf(sub, size, "%s/%s", path, subdirs[i]);
		r = check_private_dir(sub);
	}
	free(sub);
	return r;
}
