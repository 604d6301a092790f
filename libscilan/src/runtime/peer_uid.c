/* peer_uid.c — what a uid the kernel reports for another process tells: in
 * a user namespace that does not map every uid, two strangers both read as
 * the overflow uid, which then proves nothing about who owns what.
 */
#include "runtime/peer_uid.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "runtime/sys.h"

#define DEFAULT_OVERFLOW_UID 65534u
#define EVERY_UID 4294967295ull /* the initial namespace's map: "0 0 4294967295" */

/* The kernel's overflow uid (a sysctl for the whole host, 0 to 65535),
 * read once: an administrator's change after that is not seen.  UINT32_MAX
 * until then, which no overflow uid is. */
static _Atomic uint32_t overflow_uid = UINT32_MAX;

static uid_t read_overflow_uid(void)
{
	uint32_t known = atomic_load_explicit(&overflow_uid, memory_order_relaxed);
	char buf[16], *end;
	unsigned long v;
	ssize_t n;
	int fd;

	if (known != UINT32_MAX)
		return known;
	known = DEFAULT_OVERFLOW_UID;
	fd = open("/proc/sys/kernel/overflowuid", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = sl_sys.read(fd, buf, sizeof(buf) - 1);
		if (n > 0) {
			buf[n] = '\0';
			v = strtoul(buf, &end, 10);
			if (end != buf && v < UINT32_MAX)
				known = (uint32_t)v;
		}
		sl_sys.close(fd);
	}
	atomic_store_explicit(&overflow_uid, known, memory_order_relaxed);
	return known;
}

/* Read at each ask, not kept: the process may enter another user namespace
 * (unshare, setns) at any time, and only an overflow uid asks.  Unreadable:
 * not every uid, which costs acceleration and never trust. */
static bool every_uid_mapped(void)
{
	unsigned long long inner, outer, count, total = 0;
	FILE *f = fopen("/proc/self/uid_map", "re");

	if (!f)
		return false;
	while (fscanf(f, "%llu %llu %llu", &inner, &outer, &count) == 3)
		total += count;
	fclose(f);
	return total >= EVERY_UID;
}

bool sl_uids_name_users(uid_t a, uid_t b)
{
	uid_t overflow = read_overflow_uid();

	return (a != overflow && b != overflow) || every_uid_mapped();
}

bool sl_uid_may_speak_for(uid_t speaker, uid_t owner)
{
	return speaker == owner || speaker == 0;
}
