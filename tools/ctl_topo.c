/* ctl_topo.c — `scilan_ctl topo`: the machine's packages, NUMA nodes, cores and
 * PUs from hwloc, for each device of the PCI scan (ctl_devices.h) its nearest
 * NUMA node and the taskset line that pins scilan processes there, then the
 * fabric's ports, peers and map entries (ctl_fabric.c).
 */
#include <getopt.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_devices.h"
#include "ctl_fabric.h"
#include "ctl_topo.h"

/* Where one device sits: its NUMA node (-1: unknown) and the CPUs near it. */
struct locality {
	int node;
	char *cpus;             /* "0-7", malloc'd */
	const char *source;     /* how we know */
};

static char *cpulist(hwloc_const_bitmap_t set)
{
	char *s = NULL;

	if (!set || hwloc_bitmap_list_asprintf(&s, set) < 0)
		return strdup("");
	return s;
}

static void locate(hwloc_topology_t topo, const struct ctl_device *d, struct locality *loc)
{
	hwloc_obj_t pci = hwloc_get_pcidev_by_busid(topo, d->domain, d->bus, d->dev, d->func);
	hwloc_obj_t anc = pci ? hwloc_get_non_io_ancestor_obj(topo, pci) : NULL;
	hwloc_obj_t node = NULL;

	loc->node = -1;
	loc->source = "hwloc";
	if (anc && hwloc_bitmap_weight(anc->nodeset) == 1)
		node = hwloc_get_numanode_obj_by_os_index(topo, (unsigned)hwloc_bitmap_first(anc->nodeset));
	if (!anc && d->numa_node >= 0) {
		node = hwloc_get_numanode_obj_by_os_index(topo, (unsigned)d->numa_node);
		loc->source = "sysfs numa_node";
	}
	if (node) {
		loc->node = (int)node->os_index;
		loc->cpus = cpulist(node->cpuset);
	} else {
		/* Several nodes under the ancestor, or hwloc does not see the
		 * device: all CPUs of the ancestor (the machine at worst). */
		if (!anc)
			loc->source = "unknown";
		loc->cpus = cpulist((anc ? anc : hwloc_get_root_obj(topo))->cpuset);
	}
}

static int nb(hwloc_topology_t topo, hwloc_obj_type_t type)
{
	int n = hwloc_get_nbobjs_by_type(topo, type);

	return n < 0 ? 0 : n;
}

static void print_text(hwloc_topology_t topo, const struct ctl_scan *scan, const struct locality *loc, bool scanned)
{
	int nodes = nb(topo, HWLOC_OBJ_NUMANODE);
	char *all = cpulist(hwloc_get_root_obj(topo)->cpuset);

	printf("machine: %d package%s, %d NUMA node%s, %d core%s, %d PU%s (CPUs %s)\n", nb(topo, HWLOC_OBJ_PACKAGE),
	       nb(topo, HWLOC_OBJ_PACKAGE) == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s", nb(topo, HWLOC_OBJ_CORE),
	       nb(topo, HWLOC_OBJ_CORE) == 1 ? "" : "s", nb(topo, HWLOC_OBJ_PU), nb(topo, HWLOC_OBJ_PU) == 1 ? "" : "s",
	       all);
	free(all);
	for (int i = 0; i < nodes; i++) {
		hwloc_obj_t n = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)i);
		char *cpus = cpulist(n->cpuset);

		printf("NUMA node %u: CPUs %s, %llu MiB\n", n->os_index, cpus,
		       (unsigned long long)(n->attr->numanode.local_memory >> 20));
		free(cpus);
	}
	if (!scanned)
		return;
	if (scan->count == 0) {
		printf("no NTB or ivshmem device (scanned %u PCI functions): no device to advise on\n", scan->scanned);
		return;
	}
	for (size_t i = 0; i < scan->count; i++) {
		const struct ctl_device *d = &scan->devs[i];
		char node[32];

		if (loc[i].node >= 0)
			snprintf(node, sizeof(node), "NUMA node %d", loc[i].node);
		else
			snprintf(node, sizeof(node), "NUMA node unknown");
		printf("%s %s: %s, CPUs %s (%s)\n", d->slot, d->kind, node, loc[i].cpus, loc[i].source);
		printf("pin scilan processes for %s to CPUs %s (%s): taskset -c %s CMD\n", d->slot, loc[i].cpus, node,
		       loc[i].cpus);
	}
}

static void print_json(hwloc_topology_t topo, const struct ctl_scan *scan, const struct locality *loc, bool scanned)
{
	int nodes = nb(topo, HWLOC_OBJ_NUMANODE);
	char *all = cpulist(hwloc_get_root_obj(topo)->cpuset);

	printf("{\"packages\":%d,\"cores\":%d,\"pus\":%d,\"cpus\":\"%s\",\"numa_nodes\":[", nb(topo, HWLOC_OBJ_PACKAGE),
	       nb(topo, HWLOC_OBJ_CORE), nb(topo, HWLOC_OBJ_PU), all);
	free(all);
	for (int i = 0; i < nodes; i++) {
		hwloc_obj_t n = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)i);
		char *cpus = cpulist(n->cpuset);

		printf("%s{\"node\":%u,\"cpus\":\"%s\",\"memory_bytes\":%llu}", i ? "," : "", n->os_index, cpus,
		       (unsigned long long)n->attr->numanode.local_memory);
		free(cpus);
	}
	printf("]");
	if (scanned) {
		printf(",\"scanned\":%u,\"devices\":[", scan->scanned);
		for (size_t i = 0; i < scan->count; i++) {
			const struct ctl_device *d = &scan->devs[i];

			printf("%s{\"slot\":\"%s\",\"kind\":\"%s\",\"numa_node\":%d,\"cpus\":\"%s\",\"source\":\"%s\","
			       "\"advice\":\"taskset -c %s\"}",
			       i ? "," : "", d->slot, d->kind, loc[i].node, loc[i].cpus, loc[i].source, loc[i].cpus);
		}
		printf("]");
	}
}

int cmd_topo(int argc, char **argv, bool json)
{
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' }, { 0, 0, 0, 0 } };
	struct ctl_scan scan;
	struct locality *loc = NULL;
	hwloc_topology_t topo;
	char err[512];
	bool scanned;
	int c;

	optind = 0; /* 0: glibc re-initializes its scanner for this new argument list */
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c != 'h')
			return 2;
		printf("usage: scilan_ctl [--json] topo\n"
		       "Shows the NUMA layout and, per NTB/ivshmem device, the CPUs to pin scilan processes to;\n"
		       "then the fabric: this node's ports, each peer's link (up/down, peer port) and the\n"
		       "cluster map's nodes on it, with warnings for map entries naming no existing link.\n");
		return 0;
	}
	if (optind != argc) {
		fprintf(stderr, "scilan_ctl: topo takes no arguments\n");
		return 2;
	}
	if (hwloc_topology_init(&topo) < 0) {
		fprintf(stderr, "scilan_ctl: hwloc: cannot initialize a topology\n");
		return 1;
	}
	/* Keep PCI objects so devices have a place in the tree.  IMPORTANT alone
	 * drops class 0x05xx functions such as ivshmem: keep every PCI device.
	 * PCI discovery from the linux backend (sysfs), not the libpciaccess
	 * plugin, which never frees its ~600 KB pci.ids cache (LeakSanitizer). */
	hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
	hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	hwloc_topology_set_type_filter(topo, HWLOC_OBJ_PCI_DEVICE, HWLOC_TYPE_FILTER_KEEP_ALL);
	if (hwloc_topology_load(topo) < 0) {
		fprintf(stderr, "scilan_ctl: hwloc: cannot load the topology\n");
		hwloc_topology_destroy(topo);
		return 1;
	}
	scanned = ctl_scan_devices(&scan, err, sizeof(err)) == 0;
	if (scanned && scan.count) {
		loc = calloc(scan.count, sizeof(*loc));
		if (!loc) {
			fprintf(stderr, "scilan_ctl: out of memory\n");
			ctl_scan_free(&scan);
			hwloc_topology_destroy(topo);
			return 1;
		}
		for (size_t i = 0; i < scan.count; i++)
			locate(topo, &scan.devs[i], &loc[i]);
	}
	if (json)
		print_json(topo, &scan, loc, scanned);
	else
		print_text(topo, &scan, loc, scanned);
	if (ctl_fabric_print(json) < 0)
		fprintf(stderr, "scilan_ctl: out of memory for the fabric\n");
	if (json)
		printf("}\n");
	if (!scanned)
		fprintf(stderr, "scilan_ctl: no device advice: %s\n", err);
	for (size_t i = 0; loc && i < scan.count; i++)
		free(loc[i].cpus);
	free(loc);
	if (scanned)
		ctl_scan_free(&scan);
	hwloc_topology_destroy(topo);
	return scanned ? 0 : 1;
}
