/* dev_links.c — the device fabric's links: which /dev/scilanN nodes there
 * are, opening one, asking its driver what it offers, and the map entries
 * and addresses the driver is told about.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "uapi/scilan.h" /* the driver's ABI (-Idriver) */
#include "fabric/dev/dev_conn.h"
#include "fabric/fabric.h"
#include "ring/layout.h"
#include "runtime/config.h"
#include "runtime/log.h"
#include "runtime/own_fd.h"
#include "runtime/sys.h"

/* "scilan" followed by digits only: the driver's nodes, nothing else in /dev. */
static bool is_link_name(const char *name)
{
	if (strncmp(name, "scilan", 6) != 0 || !name[6])
		return false;
	for (const char *p = name + 6; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return strlen(name) < SL_DEV_NAME_MAX;
}

int sl_dev_link_number(const char *name)
{
	long n;

	if (!is_link_name(name))
		return -1;
	n = strtol(name + 6, NULL, 10);
	return n > SL_DEV_LINK_MAX ? -1 : (int)n;
}

static int by_number(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* The N of every /dev/scilanN, in order, into *links (malloc'd, the
 * caller's to free; NULL when none): how many.  As many as there are: a
 * node of a switched fabric has a link per peer. */
int sl_dev_link_numbers(int **links)
{
	DIR *dir = opendir("/dev");
	struct dirent *de;
	int n = 0, cap = 0, *v = NULL, *grown;

	*links = NULL;
	if (!dir)
		return 0;
	while ((de = readdir(dir))) {
		int link = sl_dev_link_number(de->d_name);

		if (link < 0)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 8;
			grown = realloc(v, (size_t)cap * sizeof(*v));
			if (!grown)
				break;
			v = grown;
		}
		v[n++] = link;
	}
	closedir(dir);
	if (n)
		qsort(v, (size_t)n, sizeof(*v), by_number);
	*links = v;
	return n;
}

/* /dev/scilanN's path. */
void sl_dev_link_path(int link, char *path, size_t size)
{
	snprintf(path, size, "/dev/scilan%d", link);
}

/* Asked by every process at its first socket: reading /dev (some 60 us
 * here, 110 entries) only where the driver is loaded; its first link's
 * node, when there, answers at once. */
bool sl_dev_present(void)
{
	struct stat st;
	int *links, n;

	if (stat("/dev/scilan0", &st) == 0 && S_ISCHR(st.st_mode))
		return true;
	if (stat("/sys/module/scilan", &st) < 0 && errno == ENOENT)
		return false;
	n = sl_dev_link_numbers(&links);
	free(links);
	return n > 0;
}

/* A key's address as the driver takes it: IPv6, IPv4 as IPv4-mapped. */
void sl_dev_addr16(const struct sl_key *k, uint8_t out[16])
{
	memset(out, 0, 16);
	if (k->family == AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, k->addr, 4);
	} else {
		memcpy(out, k->addr, 16);
	}
}

/* The map entry that sends dst over a device, or NULL. */
const struct sl_map_entry *sl_dev_entry(const struct sl_key *dst)
{
	const struct sl_map_entry *e = sl_cluster_map_find(&sl_config()->map, dst);

	return e && e->fabric == SL_MAP_DEV ? e : NULL;
}

/* The largest power-of-two ring that fits a slice after its control page
 * (0 if none does). */
uint64_t sl_dev_ring_for_slice(uint64_t slice)
{
	uint64_t cap = SL_RING_MIN;

	if (slice < SL_AREA_CTL_SIZE + SL_RING_MIN)
		return 0;
	while (cap * 2 <= slice - SL_AREA_CTL_SIZE && cap * 2 <= SL_RING_MAX)
		cap *= 2;
	return cap;
}

/* SCILAN_IOC_INFO, refusing a driver of another ABI or a slice size that
 * cannot hold a ring. */
int sl_dev_link_info(int fd, struct scilan_info *in)
{
	if (sl_sys.ioctl(fd, SCILAN_IOC_INFO, in) < 0)
		return -1;
	if (in->abi_version != SCILAN_ABI_VERSION || in->slice_size % SL_PAGE ||
	    !sl_dev_ring_for_slice(in->slice_size)) {
		sl_warn("/dev/scilan: driver ABI %u (want %u), slice size %u: not usable", in->abi_version,
			SCILAN_ABI_VERSION, in->slice_size);
		errno = EPROTO;
		return -1;
	}
	return 0;
}

int sl_dev_open_link(const char *name)
{
	char path[SL_DEV_NAME_MAX + 8];

	snprintf(path, sizeof(path), "/dev/%.*s", SL_DEV_NAME_MAX - 1, name);
	/* O_NONBLOCK: draining tokens must never block (connect does not care).
	 * One of the library's own descriptors: kept out of the program's way. */
	return sl_own_fd(open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK));
}

/* N of the /dev/scilanN the endpoint fd was opened as; -1 if not known. */
int sl_dev_link_of(int fd)
{
	char path[64], target[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return -1;
	target[n] = '\0';
	return strncmp(target, "/dev/", 5) == 0 ? sl_dev_link_number(target + 5) : -1;
}

void sl_dev_close_quietly(int fd)
{
	int err = errno;

	sl_own_fd_close(fd);
	errno = err;
}
