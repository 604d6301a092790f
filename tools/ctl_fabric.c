/* ctl_fabric.c — the fabric part of `scilan_ctl topo`: this node's ports and,
 * per peer, its link and the cluster map's nodes on that link (so that an
 * operator can write the map of a 3- or 8-node fabric), with warnings for map
 * entries naming a link that does not exist or several nodes on one link.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/cluster_map.h"
#include "ctl_devices.h"
#include "ctl_fabric.h"
#include "ctl_links.h"

struct fabric {
	struct ctl_links links;
	bool have_links;                /* the driver could be asked */
	const struct ctl_link **sel;    /* the links, each port's together */
	struct sl_cluster_map map;
	char map_err[512];              /* "" if the map loaded */
};

static bool load(struct fabric *f)
{
	memset(f, 0, sizeof(*f));
	f->have_links = ctl_links_read(&f->links) == 0;
	if (sl_cluster_map_load(sl_cluster_map_path(), &f->map, f->map_err, sizeof(f->map_err)) == 0)
		f->map_err[0] = '\0';
	f->sel = calloc(f->links.n + 1, sizeof(*f->sel));
	if (!f->sel)
		return false;
	for (size_t i = 0; i < f->links.n; i++)
		f->sel[i] = &f->links.v[i];
	ctl_links_by_port(f->sel, f->links.n);
	return true;
}

static void unload(struct fabric *f)
{
	free(f->sel);
	sl_cluster_map_free(&f->map);
	ctl_links_free(&f->links);
}

static bool on_link(const struct sl_map_entry *e, const char *link)
{
	return e->fabric == SL_MAP_DEV && !strcmp(e->device, link);
}

/* The distinct nodes the map puts on link, at most max, in map order. */
static size_t nodes_on(const struct fabric *f, const char *link, unsigned *nodes, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < f->map.count; i++) {
		const struct sl_map_entry *e = &f->map.entries[i];
		bool seen = false;

		if (!on_link(e, link))
			continue;
		for (size_t k = 0; k < n; k++)
			seen |= nodes[k] == e->node;
		if (!seen && n < max)
			nodes[n++] = e->node;
	}
	return n;
}

/* "node 2 (10.0.0.2, fd00::2)" for each node the map puts on the link. */
static void print_map_of(const struct fabric *f, const char *link)
{
	unsigned nodes[16];
	size_t n = nodes_on(f, link, nodes, 16);

	if (!n) {
		printf("no map entry: scilan_ctl map add NODE ADDRESS --fabric dev --device %s\n", link);
		return;
	}
	for (size_t k = 0; k < n; k++) {
		bool first = true;

		printf("%snode %u (", k ? "; " : "", nodes[k]);
		for (size_t i = 0; i < f->map.count; i++)
			if (on_link(&f->map.entries[i], link) && f->map.entries[i].node == nodes[k]) {
				printf("%s%s", first ? "" : ", ", f->map.entries[i].text);
				first = false;
			}
		printf(")");
	}
	printf("\n");
}

static void print_warnings(const struct fabric *f)
{
	if (*f->map_err)
		printf("warning: cluster map: %s\n", f->map_err);
	for (size_t i = 0; f->have_links && i < f->map.count; i++) {
		const struct sl_map_entry *e = &f->map.entries[i];

		if (e->fabric == SL_MAP_DEV && !ctl_links_find(&f->links, e->device))
			printf("warning: the cluster map names dev %s (node %u, %s), which does not exist\n", e->device,
			       e->node, e->text);
	}
	for (size_t i = 0; i < f->links.n; i++) {
		unsigned nodes[16];
		size_t n = nodes_on(f, f->links.v[i].name, nodes, 16);

		if (n < 2)
			continue;
		printf("warning: the cluster map puts nodes");
		for (size_t k = 0; k < n; k++)
			printf("%s%u", k == 0 ? " " : k + 1 == n ? " and " : ", ", nodes[k]);
		printf(" on %s, a link to one peer\n", f->links.v[i].name);
	}
}

static void print_text(const struct fabric *f)
{
	size_t dev_entries = 0;

	for (size_t i = 0; i < f->map.count; i++)
		dev_entries += f->map.entries[i].fabric == SL_MAP_DEV;
	if (!f->have_links || !f->links.n) {
		printf("fabric: no scilan link%s%s\n", *f->links.why ? ": " : "", f->links.why);
		if (dev_entries)
			printf("warning: the cluster map's %zu dev entr%s cannot be checked without links\n", dev_entries,
			       dev_entries == 1 ? "y" : "ies");
		if (*f->map_err)
			printf("warning: cluster map: %s\n", f->map_err);
		return;
	}
	if (f->links.from_info)
		printf("fabric (from SCILAN_IOC_INFO: %s)\n", f->links.why);
	for (size_t i = 0; i < f->links.n; i++) {
		const struct ctl_link *l = f->sel[i];
		char port[24];

		if (i == 0 || !ctl_link_same_port(f->sel[i - 1], l)) {
			size_t peers = 0, up = 0;

			for (size_t k = i; k < f->links.n && ctl_link_same_port(l, f->sel[k]); k++) {
				peers++;
				up += f->sel[k]->up == 1;
			}
			printf("fabric: %s port %s (this node): %zu peer%s, %zu up\n", *l->backend ? l->backend : "?",
			       ctl_link_port(l, 0, port, sizeof(port)), peers, peers == 1 ? "" : "s", up);
		}
		printf("  %s -> port %s  %-4s  ", l->name, ctl_link_port(l, 1, port, sizeof(port)), ctl_link_state(l));
		print_map_of(f, l->name);
	}
	print_warnings(f);
}

static void json_entry(const struct sl_map_entry *e, bool device)
{
	if (device) {
		printf("{\"device\":");
		ctl_json_str(stdout, e->device);
		printf(",\"node\":%u,\"address\":", e->node);
	} else {
		printf("{\"node\":%u,\"address\":", e->node);
	}
	ctl_json_str(stdout, e->text);
	printf("}");
}

static void print_json(const struct fabric *f)
{
	bool first;

	printf(",\"fabric\":{\"source\":%s,\"ports\":[",
	       !f->have_links ? "null" : f->links.from_info ? "\"info\"" : "\"debugfs\"");
	for (size_t i = 0; i < f->links.n; i++) {
		const struct ctl_link *l = f->sel[i];

		if (i == 0 || !ctl_link_same_port(f->sel[i - 1], l)) {
			printf("%s{\"backend\":", i ? "]}," : "");
			ctl_json_str_or_null(stdout, l->backend);
			printf(",\"local_port\":");
			ctl_json_port(stdout, l, 0);
			printf(",\"peers\":[");
		} else {
			printf(",");
		}
		printf("{\"device\":");
		ctl_json_str(stdout, l->name);
		printf(",\"peer_port\":");
		ctl_json_port(stdout, l, 1);
		printf(",\"link\":%s,\"map\":[", l->up == 1 ? "\"up\"" : l->up == 0 ? "\"down\"" : "null");
		first = true;
		for (size_t k = 0; k < f->map.count; k++)
			if (on_link(&f->map.entries[k], l->name)) {
				printf("%s", first ? "" : ",");
				json_entry(&f->map.entries[k], false);
				first = false;
			}
		printf("]}");
	}
	printf("%s],\"missing_devices\":[", f->links.n ? "]}" : "");
	first = true;
	for (size_t k = 0; f->have_links && k < f->map.count; k++) {
		const struct sl_map_entry *e = &f->map.entries[k];

		if (e->fabric == SL_MAP_DEV && !ctl_links_find(&f->links, e->device)) {
			printf("%s", first ? "" : ",");
			json_entry(e, true);
			first = false;
		}
	}
	printf("],\"shared_links\":[");
	first = true;
	for (size_t i = 0; i < f->links.n; i++) {
		unsigned nodes[16];
		size_t n = nodes_on(f, f->links.v[i].name, nodes, 16);

		if (n < 2)
			continue;
		printf("%s{\"device\":", first ? "" : ",");
		ctl_json_str(stdout, f->links.v[i].name);
		printf(",\"nodes\":[");
		for (size_t k = 0; k < n; k++)
			printf("%s%u", k ? "," : "", nodes[k]);
		printf("]}");
		first = false;
	}
	printf("],\"map_error\":");
	ctl_json_str_or_null(stdout, f->map_err);
	printf("}");
}

int ctl_fabric_print(bool json)
{
	struct fabric f;
	bool ok = load(&f);

	if (ok) {
		if (json)
			print_json(&f);
		else
			print_text(&f);
	}
	unload(&f);
	return ok ? 0 : -1;
}
