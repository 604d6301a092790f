/* io_uring_seen.c — whether this process holds an io_uring instance, from
 * its descriptor table (/proc/self/fd: each instance is an anonymous inode
 * named "[io_uring]"), looked at no more than once a second.
 */
#include "runtime/io_uring_seen.h"

#include <dirent.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LOOK_GAP_NS 1000000000LL

static _Atomic bool seen;
static _Atomic int64_t looked_ns;

static bool table_holds_one(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	bool found = false;

	if (!d)
		return true; /* cannot tell: as if it did (the safe answer) */
	while (!found && (e = readdir(d))) {
		char path[sizeof("/proc/self/fd/") + sizeof(e->d_name)], target[32];
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		found = strcmp(target, "anon_inode:[io_uring]") == 0;
	}
	closedir(d);
	return found;
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

bool sl_io_uring_seen(void)
{
	int64_t now, last;

	if (atomic_load_explicit(&seen, memory_order_relaxed))
		return true;
	now = mono_ns();
	last = atomic_load_explicit(&looked_ns, memory_order_relaxed);
	if (last && now - last < LOOK_GAP_NS)
		return false;
	atomic_store_explicit(&looked_ns, now, memory_order_relaxed);
	if (table_holds_one())
		atomic_store_explicit(&seen, true, memory_order_relaxed);
	return atomic_load_explicit(&seen, memory_order_relaxed);
}
