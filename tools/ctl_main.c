/* ctl_main.c — scilan_ctl, the administration command: `map add|del|list`
 * edits and shows the cluster map (which addresses are scilan nodes), and the
 * dispatch to `devices` (ctl_devices.c), `topo` (ctl_topo.c, ctl_fabric.c),
 * `stat` (ctl_stat.c) and `status` (ctl_status.c; links: ctl_links.c).
 */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/cluster_map.h"
#include "runtime/config.h"
#include "ctl_devices.h"
#include "ctl_stat.h"
#include "ctl_status.h"
#include "ctl_topo.h"

#ifndef SCILAN_VERSION
#define SCILAN_VERSION "(development build)"
#endif

static void usage(FILE *out)
{
	fprintf(out,
		"usage: scilan_ctl [OPTIONS] COMMAND ... [OPTIONS]\n"
		"  map list                          show the cluster map\n"
		"  map add NODE ADDRESS [--fabric F] add an address of node NODE (F: shm|dev, default shm)\n"
		"          [--device D]              with dev: the link's /dev name (default scilan0)\n"
		"  map del ADDRESS                   remove an address\n"
		"  map del --node NODE               remove every address of a node\n"
		"  devices                           list NTB and ivshmem PCI devices (BARs, NUMA node)\n"
		"  topo                              NUMA layout and CPU pinning advice per device;\n"
		"                                    the fabric: ports, peers' links, their map nodes\n"
		"  stat [--all] [--watch SECONDS]    live counters of every accelerated connection and\n"
		"                                    the link the map gives its peer (VIA);\n"
		"                                    --all: kernel TCP ones too, with the reason\n"
		"  stat --exited                     the SCILAN_STATS lines exited processes left\n"
		"                                    in the runtime directory (scilan_run --stats)\n"
		"  status [--endpoints] [LINK...]    the scilan driver's links, one per peer, grouped by\n"
		"                                    port: up/down, slices, connections, wake-ups\n"
		"options (before or after the command):\n"
		"  -j, --json     machine-readable output\n"
		"  -h, --help     this text\n"
		"  -V, --version  print the version and exit\n"
		"The map is $SCILAN_CONF, else %s.\n"
		"devices and topo read $SCILAN_SYSFS_PCI instead of /sys/bus/pci if set (tests);\n"
		"status, topo and stat read $SCILAN_DRIVER_STATE instead of /sys/kernel/debug/scilan\n"
		"and $SCILAN_DEV_DIR instead of /dev if set (tests).\n",
		SL_CLUSTER_CONF_DEFAULT);
}

static int load(struct sl_cluster_map *map, const char *path)
{
	char err[512];

	if (sl_cluster_map_load(path, map, err, sizeof(err)) < 0) {
		fprintf(stderr, "scilan_ctl: %s\n", err);
		return -1;
	}
	return 0;
}

static int save(const struct sl_cluster_map *map, const char *path)
{
	char tmp[4200], dir[4200];
	FILE *f;

	snprintf(dir, sizeof(dir), "%s", path);
	if (mkdir(dirname(dir), 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "scilan_ctl: cannot create %s: %s\n", dir, strerror(errno));
		return -1;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	f = fopen(tmp, "we");
	if (!f) {
		fprintf(stderr, "scilan_ctl: cannot write %s: %s\n", tmp, strerror(errno));
		return -1;
	}
	sl_cluster_map_write(map, f);
	if (fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0) {
		fprintf(stderr, "scilan_ctl: cannot write %s: %s\n", tmp, strerror(errno));
		unlink(tmp);
		return -1;
	}
	/* rename: readers see the old map or the new one, never half of it. */
	if (rename(tmp, path) < 0) {
		fprintf(stderr, "scilan_ctl: cannot replace %s: %s\n", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

static void list(const struct sl_cluster_map *map, bool json)
{
	if (!json) {
		printf("%-6s %-40s %-6s %s\n", "NODE", "ADDRESS", "FABRIC", "DEVICE");
		for (size_t i = 0; i < map->count; i++)
			printf("%-6u %-40s %-6s %s\n", map->entries[i].node, map->entries[i].text,
			       sl_map_fabric_name(map->entries[i].fabric),
			       map->entries[i].fabric == SL_MAP_DEV ? map->entries[i].device : "-");
		return;
	}
	printf("{\"map\":");
	ctl_json_str(stdout, sl_cluster_map_path());
	printf(",\"entries\":[");
	for (size_t i = 0; i < map->count; i++) {
		printf("%s{\"node\":%u,\"address\":\"%s\",\"fabric\":\"%s\"", i ? "," : "", map->entries[i].node,
		       map->entries[i].text, sl_map_fabric_name(map->entries[i].fabric));
		if (map->entries[i].fabric == SL_MAP_DEV)
			printf(",\"device\":\"%s\"", map->entries[i].device);
		printf("}");
	}
	printf("]}\n");
}

static int map_add(struct sl_cluster_map *map, int argc, char **argv)
{
	static const struct option opts[] = { { "fabric", required_argument, NULL, 'f' },
					      { "device", required_argument, NULL, 'd' },
					      { 0, 0, 0, 0 } };
	struct sl_map_entry e = { .fabric = SL_MAP_SHM };
	const char *device = NULL;
	long long node;
	int c;

	optind = 0; /* 0: glibc re-initializes its scanner for this new argument list */
	while ((c = getopt_long(argc, argv, "f:d:", opts, NULL)) != -1) {
		if (c == 'd') {
			device = optarg;
			continue;
		}
		if (c != 'f')
			return 2;
		if (strcmp(optarg, "dev") == 0)
			e.fabric = SL_MAP_DEV;
		else if (strcmp(optarg, "shm") != 0) {
			fprintf(stderr, "scilan_ctl: --fabric must be shm or dev, not '%s'\n", optarg);
			return 2;
		}
	}
	if (device && e.fabric != SL_MAP_DEV) {
		fprintf(stderr, "scilan_ctl: --device goes with --fabric dev\n");
		return 2;
	}
	if (device && !sl_map_device_valid(device)) {
		fprintf(stderr, "scilan_ctl: --device '%s' is not a /dev name (like scilan0)\n", device);
		return 2;
	}
	if (e.fabric == SL_MAP_DEV)
		snprintf(e.device, sizeof(e.device), "%s", device ? device : SL_MAP_DEVICE_DEFAULT);
	if (argc - optind != 2) {
		fprintf(stderr, "scilan_ctl: map add takes NODE ADDRESS\n");
		return 2;
	}
	if (sl_parse_int(argv[optind], 1, 65535, &node) < 0) {
		fprintf(stderr, "scilan_ctl: node id '%s' is not an integer in [1, 65535]\n", argv[optind]);
		return 2;
	}
	e.node = (unsigned)node;
	if (strlen(argv[optind + 1]) >= sizeof(e.text) || sl_map_parse_addr(argv[optind + 1], &e.addr) < 0) {
		fprintf(stderr, "scilan_ctl: '%s' is not an IPv4 or IPv6 address\n", argv[optind + 1]);
		return 2;
	}
	snprintf(e.text, sizeof(e.text), "%s", argv[optind + 1]);
	if (sl_cluster_map_find(map, &e.addr)) {
		fprintf(stderr, "scilan_ctl: address %s is already in the map\n", e.text);
		return 1;
	}
	struct sl_map_entry *grown = realloc(map->entries, (map->count + 1) * sizeof(*grown));
	if (!grown) {
		fprintf(stderr, "scilan_ctl: out of memory\n");
		return 1;
	}
	map->entries = grown;
	map->entries[map->count++] = e;
	return 0;
}

static int map_del(struct sl_cluster_map *map, int argc, char **argv)
{
	static const struct option opts[] = { { "node", required_argument, NULL, 'n' }, { 0, 0, 0, 0 } };
	long long node = 0;
	struct sl_key key;
	size_t kept = 0, before = map->count;
	int c;

	optind = 0; /* 0: glibc re-initializes its scanner for this new argument list */
	while ((c = getopt_long(argc, argv, "n:", opts, NULL)) != -1) {
		if (c != 'n' || sl_parse_int(optarg, 1, 65535, &node) < 0) {
			fprintf(stderr, "scilan_ctl: --node takes an integer in [1, 65535]\n");
			return 2;
		}
	}
	if ((node && argc != optind) || (!node && argc - optind != 1)) {
		fprintf(stderr, "scilan_ctl: map del takes ADDRESS or --node NODE\n");
		return 2;
	}
	if (!node && sl_map_parse_addr(argv[optind], &key) < 0) {
		fprintf(stderr, "scilan_ctl: '%s' is not an IPv4 or IPv6 address\n", argv[optind]);
		return 2;
	}
	for (size_t i = 0; i < map->count; i++) {
		const struct sl_map_entry *e = &map->entries[i];
		bool drop = node ? e->node == (unsigned)node : e == sl_cluster_map_find(map, &key);

		if (!drop)
			map->entries[kept++] = *e;
	}
	map->count = kept;
	if (kept == before) {
		fprintf(stderr, "scilan_ctl: nothing to delete\n");
		return 1;
	}
	return 0;
}

static int cmd_map(int argc, char **argv, bool json)
{
	const char *path = sl_cluster_map_path();
	struct sl_cluster_map map;
	int rc;

	if (argc < 2) {
		fprintf(stderr, "scilan_ctl: map needs list, add or del\n");
		return 2;
	}
	if (load(&map, path) < 0)
		return 1;
	if (strcmp(argv[1], "list") == 0 && argc == 2) {
		list(&map, json);
		rc = 0;
	} else if (strcmp(argv[1], "add") == 0) {
		rc = map_add(&map, argc - 1, argv + 1);
		if (rc == 0)
			rc = save(&map, path) < 0;
	} else if (strcmp(argv[1], "del") == 0) {
		rc = map_del(&map, argc - 1, argv + 1);
		if (rc == 0)
			rc = save(&map, path) < 0;
	} else {
		fprintf(stderr, "scilan_ctl: unknown map command '%s'\n", argv[1]);
		rc = 2;
	}
	sl_cluster_map_free(&map);
	return rc;
}

/* The global options are taken out of argv wherever they stand (up to a
 * "--"), so `scilan_ctl devices --json` means `scilan_ctl --json devices`;
 * what remains is the command's own.  -1 to go on, else the exit status. */
static int global_options(int *argc, char **argv, bool *json)
{
	int kept = 1;
	bool literal = false;

	for (int i = 1; i < *argc; i++) {
		const char *a = argv[i];

		if (!literal && strcmp(a, "--") == 0)
			literal = true;
		if (!literal && (strcmp(a, "--json") == 0 || strcmp(a, "-j") == 0)) {
			*json = true;
			continue;
		}
		if (!literal && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
			usage(stdout);
			return 0;
		}
		if (!literal && (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0)) {
			printf("scilan_ctl %s\n", SCILAN_VERSION);
			return 0;
		}
		argv[kept++] = argv[i];
	}
	argv[kept] = NULL;
	*argc = kept;
	return -1;
}

int main(int argc, char **argv)
{
	bool json = false;
	int rc = global_options(&argc, argv, &json);

	if (rc >= 0)
		return rc;
	optind = 1;
	if (optind < argc && argv[optind][0] == '-' && strcmp(argv[optind], "--") != 0) {
		fprintf(stderr, "scilan_ctl: unknown option '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (optind < argc && strcmp(argv[optind], "--") == 0)
		optind++;
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[optind], "map") == 0)
		return cmd_map(argc - optind, argv + optind, json);
	if (strcmp(argv[optind], "devices") == 0)
		return cmd_devices(argc - optind, argv + optind, json);
	if (strcmp(argv[optind], "topo") == 0)
		return cmd_topo(argc - optind, argv + optind, json);
	if (strcmp(argv[optind], "stat") == 0)
		return cmd_stat(argc - optind, argv + optind, json);
	if (strcmp(argv[optind], "status") == 0)
		return cmd_status(argc - optind, argv + optind, json);
	fprintf(stderr, "scilan_ctl: unknown command '%s' (try --help)\n", argv[optind]);
	return 2;
}
