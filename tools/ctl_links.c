/* ctl_links.c — reads the scilan driver's links for scilan_ctl: each
 * <debugfs>/scilan/scilanN/state (driver/scilan_main.c sl_dbg_show), parsed
 * so that a missing or garbled key is unknown, never a guess; and, when
 * debugfs is unreadable, SCILAN_IOC_INFO of each /dev/scilanN.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "uapi/scilan.h" /* the driver's ABI (-Idriver) */
#include "ctl_links.h"

static const char *const keys[K_COUNT] = {
	[K_PROTO] = "proto",		[K_MW_SIZE] = "mw_size",	 [K_SLICE_SIZE] = "slice_size",
	[K_SLICES] = "slices",		[K_PEER_SLICES] = "peer_slices", [K_SLICES_BUSY] = "slices_busy",
	[K_DB_BITS] = "db_bits",	[K_GENERATION] = "generation",	 [K_DB_IRQS] = "db_irqs",
	[K_WAKEUPS] = "wakeups",	[K_STIMULI] = "stimuli",	 [K_SETS_BUSY] = "sets_busy",
	[K_SET_WAKEUPS] = "set_wakeups", [K_SET_STIMULI] = "set_stimuli", [K_CTL_RX] = "ctl_rx",
	[K_CTL_TX] = "ctl_tx",		[K_ZAPS] = "zaps",		 [K_ENDPOINTS] = "endpoints",
};

const char *ctl_key_name(enum ctl_key k)
{
	return keys[k];
}

/* "scilan" and digits only: the index, else -1. */
static int link_index(const char *name)
{
	char *end;
	long n;

	if (strncmp(name, "scilan", 6) != 0 || !isdigit((unsigned char)name[6]))
		return -1;
	errno = 0;
	n = strtol(name + 6, &end, 10);
	return *end || errno || n > 1000000 ? -1 : (int)n;
}

/* Digits only, no sign, in range: 0, else -1. */
static int parse_u64(const char *s, unsigned long long *v)
{
	char *end;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return *end || errno ? -1 : 0;
}

/* A word of letters, digits, '_' and '-', shorter than size. */
static bool is_word(const char *s, size_t size)
{
	size_t n = 0;

	for (; s[n]; n++)
		if (!isalnum((unsigned char)s[n]) && s[n] != '_' && s[n] != '-')
			return false;
	return n > 0 && n < size;
}

static void parse_port(struct ctl_link *l, int which, const char *val)
{
	unsigned long long v;

	/* -1 is the driver's "not known yet". */
	l->ports_known[which] = parse_u64(val, &v) == 0 && v <= 0x7fffffff;
	l->port[which] = l->ports_known[which] ? (long)v : -1;
}

static void parse_line(struct ctl_link *l, char *line, FILE *eps)
{
	char *key = line, *val;
	unsigned id;
	int state;

	line[strcspn(line, "\n")] = '\0';
	if (!strncmp(line, "ep ", 3) || !strncmp(line, "listener ", 9)) {
		if (eps)
			fprintf(eps, "%s\n", line);
		if (sscanf(line, "ep %u state %d ", &id, &state) == 2 && state == SCILAN_EP_CONNECTED)
			l->connected++;
		return;
	}
	val = strchr(line, ' ');
	if (!val)
		return;
	*val++ = '\0';
	if (!strcmp(key, "link")) {
		l->up = !strcmp(val, "up") ? 1 : !strcmp(val, "down") ? 0 : -1;
	} else if (!strcmp(key, "backend")) {
		snprintf(l->backend, sizeof(l->backend), "%s", is_word(val, sizeof(l->backend)) ? val : "");
	} else if (!strcmp(key, "doorbell")) {
		snprintf(l->doorbell, sizeof(l->doorbell), "%s",
			 !strcmp(val, "words") || !strcmp(val, "bits") ? val : "");
	} else if (!strcmp(key, "local_port")) {
		parse_port(l, 0, val);
	} else if (!strcmp(key, "peer_port")) {
		parse_port(l, 1, val);
	} else {
		for (int k = 0; k < K_COUNT; k++)
			if (!strcmp(key, keys[k])) {
				l->known[k] = parse_u64(val, &l->v[k]) == 0;
				return;
			}
		/* A backend's own line (ivshmem_id 0): shown as it is, if it is a word. */
		if (l->nextra < CTL_EXTRA_MAX && is_word(key, sizeof(l->extra_key[0])) &&
		    is_word(val, sizeof(l->extra_val[0]))) {
			snprintf(l->extra_key[l->nextra], sizeof(l->extra_key[0]), "%s", key);
			snprintf(l->extra_val[l->nextra], sizeof(l->extra_val[0]), "%s", val);
			l->nextra++;
		}
	}
}

void ctl_link_parse(struct ctl_link *l, const char *name, FILE *f)
{
	char *line = NULL;
	size_t cap = 0, len = 0;
	FILE *eps;

	memset(l, 0, sizeof(*l));
	snprintf(l->name, sizeof(l->name), "%s", name);
	l->index = link_index(name);
	l->up = -1;
	l->port[0] = l->port[1] = -1;
	eps = open_memstream(&l->ep_text, &len);
	while (getline(&line, &cap, f) >= 0)
		parse_line(l, line, eps);
	free(line);
	if (eps)
		fclose(eps);
	/* Only the driver's count says how many endpoints there are: a file
	 * without it has no endpoint list to count connections from either. */
	if (!l->known[K_ENDPOINTS])
		l->connected = 0;
}

static struct ctl_link *grow(struct ctl_links *links)
{
	struct ctl_link *v = realloc(links->v, (links->n + 1) * sizeof(*v));

	if (!v)
		return NULL;
	links->v = v;
	return &v[links->n];
}

static int by_index(const void *a, const void *b)
{
	const struct ctl_link *x = a, *y = b;

	return (x->index > y->index) - (x->index < y->index);
}

/* qsort's base may not be NULL, even for nothing to sort. */
static void sort_links(struct ctl_links *links)
{
	if (links->n)
		qsort(links->v, links->n, sizeof(*links->v), by_index);
}

static int read_debugfs(struct ctl_links *links, DIR *d, const char *dir)
{
	struct dirent *de;

	while ((de = readdir(d))) {
		char path[4400];
		struct ctl_link *l;
		FILE *f;

		if (link_index(de->d_name) < 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s/state", dir, de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue; /* a link going away */
		l = grow(links);
		if (!l) {
			fclose(f);
			return -1;
		}
		ctl_link_parse(l, de->d_name, f);
		fclose(f);
		links->n++;
	}
	return 0;
}

/* What an endpoint of the link says; everything else stays unknown. */
static void ask_info(struct ctl_link *l, const char *dir, const char *name)
{
	struct scilan_info info;
	char path[4400];
	int fd;

	memset(l, 0, sizeof(*l));
	snprintf(l->name, sizeof(l->name), "%s", name);
	l->index = link_index(name);
	l->up = -1;
	l->port[0] = l->port[1] = -1;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return;
	if (ioctl(fd, SCILAN_IOC_INFO, &info) == 0) {
		l->up = !!info.link_up;
		l->v[K_MW_SIZE] = info.mw_size;
		l->v[K_SLICE_SIZE] = info.slice_size;
		l->v[K_SLICES] = info.nslices;
		l->v[K_PEER_SLICES] = info.peer_nslices;
		l->known[K_MW_SIZE] = l->known[K_SLICE_SIZE] = l->known[K_SLICES] = l->known[K_PEER_SLICES] = true;
		for (int i = 0; i < 2; i++) {
			int p = i ? info.peer_port : info.local_port;

			l->ports_known[i] = info.abi_version >= 6 && p >= 0;
			l->port[i] = l->ports_known[i] ? p : -1;
		}
	}
	close(fd);
}

static int read_info(struct ctl_links *links)
{
	const char *dir = getenv("SCILAN_DEV_DIR");
	struct dirent *de;
	DIR *d;

	if (!dir || !*dir)
		dir = "/dev";
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		struct ctl_link *l;

		if (link_index(de->d_name) < 0)
			continue;
		l = grow(links);
		if (!l)
			break;
		ask_info(l, dir, de->d_name);
		links->n++;
	}
	closedir(d);
	return 0;
}

int ctl_links_read(struct ctl_links *links)
{
	const char *dir = getenv("SCILAN_DRIVER_STATE");
	struct stat st;
	DIR *d;
	int rc;

	memset(links, 0, sizeof(*links));
	if (!dir || !*dir)
		dir = "/sys/kernel/debug/scilan";
	d = opendir(dir);
	if (d) {
		rc = read_debugfs(links, d, dir);
		closedir(d);
		sort_links(links);
		return rc;
	}
	/* Tell a missing module from an unreadable debugfs: the fixes differ. */
	if (stat("/sys/module/scilan", &st) < 0 && !getenv("SCILAN_DRIVER_STATE"))
		snprintf(links->why, sizeof(links->why),
			 "the scilan driver is not loaded (no /sys/module/scilan); modprobe scilan, or use the shm fabric");
	else
		snprintf(links->why, sizeof(links->why), "cannot read driver state in %s: %s (debugfs mounted? root?)",
			 dir, strerror(errno));
	read_info(links);
	links->from_info = true;
	sort_links(links);
	return links->n ? 0 : -1;
}

void ctl_links_free(struct ctl_links *links)
{
	for (size_t i = 0; i < links->n; i++)
		free(links->v[i].ep_text);
	free(links->v);
	memset(links, 0, sizeof(*links));
}

const struct ctl_link *ctl_links_find(const struct ctl_links *links, const char *name)
{
	for (size_t i = 0; i < links->n; i++)
		if (!strcmp(links->v[i].name, name))
			return &links->v[i];
	return NULL;
}

bool ctl_link_same_port(const struct ctl_link *a, const struct ctl_link *b)
{
	return !strcmp(a->backend, b->backend) && a->ports_known[0] == b->ports_known[0] && a->port[0] == b->port[0];
}

/* Groups together (backend, then this node's port), links by number inside. */
static int by_port(const void *a, const void *b)
{
	const struct ctl_link *x = *(const struct ctl_link *const *)a, *y = *(const struct ctl_link *const *)b;
	int c = strcmp(x->backend, y->backend);

	if (c)
		return c;
	if (x->port[0] != y->port[0])
		return x->port[0] < y->port[0] ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

void ctl_links_by_port(const struct ctl_link **sel, size_t n)
{
	if (n)
		qsort(sel, n, sizeof(*sel), by_port);
}

const char *ctl_link_num(const struct ctl_link *l, enum ctl_key k, char *buf, size_t size)
{
	if (!l->known[k])
		return "?";
	snprintf(buf, size, "%llu", l->v[k]);
	return buf;
}

const char *ctl_link_port(const struct ctl_link *l, int which, char *buf, size_t size)
{
	if (!l->ports_known[which])
		return "?";
	snprintf(buf, size, "%ld", l->port[which]);
	return buf;
}

const char *ctl_link_state(const struct ctl_link *l)
{
	return l->up == 1 ? "up" : l->up == 0 ? "down" : "?";
}

void ctl_json_num(FILE *out, const struct ctl_link *l, enum ctl_key k)
{
	if (l->known[k])
		fprintf(out, "%llu", l->v[k]);
	else
		fputs("null", out);
}

void ctl_json_port(FILE *out, const struct ctl_link *l, int which)
{
	if (l->ports_known[which])
		fprintf(out, "%ld", l->port[which]);
	else
		fputs("null", out);
}
