/* ctl_status.c — `scilan_ctl status`: one entry per /dev/scilanN link (link
 * state, window and slice sizes, busy slices, doorbell and control counters)
 * and its endpoints and listeners (owner uid, address, port, network
 * namespace), parsed from <debugfs>/scilan/<link>/state.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctl_devices.h"
#include "ctl_status.h"

#define MAX_LINKS 64

struct link_state {
	char name[64];
	char link[16];
	unsigned long long v[24];   /* numeric keys, in the order of keys[] */
	FILE *eps;                  /* the endpoint lines, kept as text */
	char *ep_text;
	size_t ep_len;
};

static const char *const keys[] = { "proto",  "mw_size", "slice_size", "slices", "peer_slices",
				    "slices_busy", "db_bits", "generation", "db_irqs", "wakeups",
				    "stimuli", "sets_busy", "set_wakeups", "set_stimuli", "ctl_rx", "ctl_tx",
				    "endpoints" };
#define NKEYS (sizeof(keys) / sizeof(keys[0]))
_Static_assert(NKEYS <= sizeof(((struct link_state *)0)->v) / sizeof(unsigned long long), "a value per key");

static const char *state_name(int s)
{
	static const char *const names[] = { "idle", "listen", "connected", "peer-closed", "reset", "set" };

	return s >= 0 && s < 6 ? names[s] : "?";
}

static int read_link(const char *dir, const char *name, struct link_state *ls)
{
	char path[4400], line[512];
	FILE *f;

	memset(ls, 0, sizeof(*ls));
	snprintf(ls->name, sizeof(ls->name), "%s", name);
	snprintf(path, sizeof(path), "%s/%s/state", dir, name);
	f = fopen(path, "re");
	if (!f)
		return -1;
	ls->eps = open_memstream(&ls->ep_text, &ls->ep_len);
	while (fgets(line, sizeof(line), f)) {
		char key[64];
		unsigned long long val;

		if (sscanf(line, "link %15s", ls->link) == 1)
			continue;
		if (!strncmp(line, "ep ", 3) || !strncmp(line, "listener ", 9)) {
			if (ls->eps)
				fputs(line, ls->eps);
			continue;
		}
		if (sscanf(line, "%63s %llu", key, &val) != 2)
			continue;
		for (size_t i = 0; i < NKEYS; i++)
			if (!strcmp(key, keys[i]))
				ls->v[i] = val;
	}
	fclose(f);
	if (ls->eps)
		fclose(ls->eps);
	return 0;
}

static unsigned long long get(const struct link_state *ls, const char *key)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (!strcmp(key, keys[i]))
			return ls->v[i];
	return 0;
}

static void print_eps(const struct link_state *ls, bool json)
{
	const char *p = ls->ep_text;
	int n = 0;

	while (p && *p) {
		unsigned id, port, tokens;
		int state, slice, peer;

		if (sscanf(p, "ep %u state %d slice %d peer_slice %d port %u tokens %x", &id, &state, &slice, &peer,
			   &port, &tokens) == 6) {
			if (json)
				printf("%s{\"id\":%u,\"state\":\"%s\",\"slice\":%d,\"peer_slice\":%d,\"port\":%u}",
				       n ? "," : "", id, state_name(state), slice, peer, port);
			else
				printf("    endpoint %-6u %-12s slice %-4d peer slice %-4d port %u\n", id,
				       state_name(state), slice, peer, port);
			n++;
		}
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
}

/* Who listens where: the owner's uid, the address, port and network
 * namespace of the listening socket the driver checked. */
static void print_listeners(const struct link_state *ls, bool json)
{
	const char *p = ls->ep_text;
	int n = 0;

	while (p && *p) {
		unsigned id, uid, port, netns, blen, bmax;
		char family[8], addr[64];

		if (sscanf(p, "listener %u uid %u family %7s addr %63s port %u netns %u backlog %u/%u", &id, &uid,
			   family, addr, &port, &netns, &blen, &bmax) == 8) {
			if (json)
				printf("%s{\"id\":%u,\"uid\":%u,\"family\":\"%s\",\"addr\":\"%s\",\"port\":%u,"
				       "\"netns\":%u,\"queued\":%u,\"backlog\":%u}",
				       n ? "," : "", id, uid, family, addr, port, netns, blen, bmax);
			else
				printf("    listener %-6u uid %-6u %s %s port %u netns %u queued %u/%u\n", id, uid, family,
				       addr, port, netns, blen, bmax);
			n++;
		}
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct link_state *)a)->name, ((const struct link_state *)b)->name);
}

int cmd_status(int argc, char **argv, bool json)
{
	const char *dir = getenv("SCILAN_DRIVER_STATE");
	static struct link_state links[MAX_LINKS];
	struct dirent *de;
	struct stat st;
	size_t n = 0;
	DIR *d;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = true;
			continue;
		}
		fprintf(stderr, "scilan_ctl: status takes no arguments\n");
		return 2;
	}
	if (!dir || !*dir)
		dir = "/sys/kernel/debug/scilan";
	d = opendir(dir);
	if (!d) {
		/* Tell a missing module from an unreadable debugfs: the fixes differ. */
		if (stat("/sys/module/scilan", &st) < 0 && !getenv("SCILAN_DRIVER_STATE"))
			fprintf(stderr, "scilan_ctl: the scilan driver is not loaded (no /sys/module/scilan); "
					"modprobe scilan, or use the shm fabric\n");
		else
			fprintf(stderr, "scilan_ctl: cannot read driver state in %s: %s (debugfs mounted? root?)\n",
				dir, strerror(errno));
		return 1;
	}
	while ((de = readdir(d)) && n < MAX_LINKS)
		if (de->d_name[0] != '.' && read_link(dir, de->d_name, &links[n]) == 0)
			n++;
	closedir(d);
	qsort(links, n, sizeof(links[0]), by_name);
	if (json) {
		printf("{\"driver\":\"scilan\",\"links\":[");
		for (size_t i = 0; i < n; i++) {
			const struct link_state *ls = &links[i];

			printf("%s{\"name\":", i ? "," : "");
			ctl_json_str(stdout, ls->name);
			printf(",\"link\":");
			ctl_json_str(stdout, ls->link[0] ? ls->link : "unknown");
			for (size_t k = 0; k < NKEYS; k++)
				printf(",\"%s\":%llu", keys[k], ls->v[k]);
			printf(",\"endpoint_list\":[");
			print_eps(ls, true);
			printf("],\"listener_list\":[");
			print_listeners(ls, true);
			printf("]}");
		}
		printf("]}\n");
	} else if (!n) {
		printf("scilan driver loaded, no NTB link (no /dev/scilanN)\n");
	} else {
		printf("%-10s %-5s %10s %10s %7s %6s %9s %8s %8s %5s\n", "LINK", "STATE", "WINDOW", "SLICE", "SLICES",
		       "BUSY", "ENDPOINTS", "DB_IRQS", "WAKEUPS", "SETS");
		for (size_t i = 0; i < n; i++) {
			const struct link_state *ls = &links[i];

			printf("%-10s %-5s %10llu %10llu %7llu %6llu %9llu %8llu %8llu %5llu\n", ls->name,
			       ls->link[0] ? ls->link : "?", get(ls, "mw_size"), get(ls, "slice_size"),
			       get(ls, "slices"), get(ls, "slices_busy"), get(ls, "endpoints"), get(ls, "db_irqs"),
			       get(ls, "wakeups"), get(ls, "sets_busy"));
			print_eps(ls, false);
			print_listeners(ls, false);
		}
	}
	for (size_t i = 0; i < n; i++)
		free(links[i].ep_text);
	return 0;
}
