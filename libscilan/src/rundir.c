/* rundir.c — creates and vets the per-user runtime directory: it must be a real
 * directory owned by us with no group/other access, since anything inside it
 * is trusted to come from the same user.
 */
#include "rundir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

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
	if (!S_ISDIR(st.st_mode)) {
		sl_err("runtime directory %s is not a directory; connections use kernel TCP", path);
		return -1;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 077)) {
		sl_err("runtime directory %s is not private (owner uid %u, mode %03o; need uid %u, mode 0700); "
		       "connections use kernel TCP",
		       path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777), (unsigned)geteuid());
		return -1;
	}
	return 0;
}

static int default_path(char *path, size_t size)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	struct stat st;

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
	char sub[4200];
	int n;

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
	for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
		snprintf(sub, sizeof(sub), "%s/%s", path, subdirs[i]);
		if (check_private_dir(sub) < 0)
			return -1;
	}
	return 0;
}

unsigned long long sl_node_id(void)
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
