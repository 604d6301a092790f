/* ctl_status.c — `scilan_ctl status [--endpoints] [LINK...]`: the driver's
 * links (one per peer), grouped by this node's port on each backend: peer
 * port, up/down, slices busy, connections, wake-ups, doorbell interrupts,
 * then the listeners (and with --endpoints every endpoint); as JSON too.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_devices.h"
#include "ctl_links.h"
#include "ctl_status.h"

static const char *state_name(int s)
{
	static const char *const names[] = { "idle", "listen", "connected", "peer-closed", "reset", "set" };

	return s >= 0 && s < 6 ? names[s] : "?";
}

static bool conns_known(const struct ctl_link *l)
{
	return l->known[K_ENDPOINTS];
}

static void print_eps(const struct ctl_link *l, bool json)
{
	const char *p = l->ep_text;
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
static void print_listeners(const struct ctl_link *l, bool json)
{
	const char *p = l->ep_text;
	int n = 0;

	while (p && *p) {
		unsigned id, uid, port, netns, blen, bmax;
		char family[8], addr[64];

		if (sscanf(p, "listener %u uid %u family %7s addr %63s port %u netns %u backlog %u/%u", &id, &uid,
			   family, addr, &port, &netns, &blen, &bmax) == 8) {
			if (json) {
				printf("%s{\"id\":%u,\"uid\":%u,\"family\":", n ? "," : "", id, uid);
				ctl_json_str(stdout, family);
				printf(",\"addr\":");
				ctl_json_str(stdout, addr);
				printf(",\"port\":%u,\"netns\":%u,\"queued\":%u,\"backlog\":%u}", port, netns, blen, bmax);
			} else {
				printf("    listener %u uid %u %s %s port %u netns %u queued %u/%u\n", id, uid, family,
				       addr, port, netns, blen, bmax);
			}
			n++;
		}
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
}

static void print_json_link(const struct ctl_link *l)
{
	printf("{\"name\":");
	ctl_json_str(stdout, l->name);
	printf(",\"link\":%s", l->up == 1 ? "\"up\"" : l->up == 0 ? "\"down\"" : "null");
	printf(",\"backend\":");
	ctl_json_str_or_null(stdout, l->backend);
	printf(",\"local_port\":");
	ctl_json_port(stdout, l, 0);
	printf(",\"peer_port\":");
	ctl_json_port(stdout, l, 1);
	printf(",\"doorbell\":");
	ctl_json_str_or_null(stdout, l->doorbell);
	for (int k = 0; k < K_COUNT; k++) {
		printf(",\"%s\":", ctl_key_name(k));
		ctl_json_num(stdout, l, k);
	}
	/* endpoint_list right after endpoints: tests/kernel/run.sh reads them so. */
	printf(",\"endpoint_list\":[");
	print_eps(l, true);
	printf("],\"listener_list\":[");
	print_listeners(l, true);
	if (conns_known(l))
		printf("],\"connections\":%u", l->connected);
	else
		printf("],\"connections\":null");
	printf(",\"backend_info\":{");
	for (size_t i = 0; i < l->nextra; i++) {
		printf("%s", i ? "," : "");
		ctl_json_str(stdout, l->extra_key[i]);
		printf(":");
		ctl_json_str(stdout, l->extra_val[i]);
	}
	printf("}}");
}

struct tally {
	size_t links, up, down;
	unsigned long long conns;
};

static void count(struct tally *t, const struct ctl_link *l)
{
	t->links++;
	t->up += l->up == 1;
	t->down += l->up == 0;
	t->conns += conns_known(l) ? l->connected : 0;
}

static void print_json(const struct ctl_link *const *sel, size_t n, bool from_info)
{
	struct tally t = { 0 };

	printf("{\"driver\":\"scilan\",\"links\":[");
	for (size_t i = 0; i < n; i++) {
		printf("%s", i ? "," : "");
		print_json_link(sel[i]);
		count(&t, sel[i]);
	}
	printf("],\"source\":\"%s\",\"summary\":{\"links\":%zu,\"up\":%zu,\"down\":%zu,\"connections\":%llu}}\n",
	       from_info ? "info" : "debugfs", t.links, t.up, t.down, t.conns);
}

/* "ivshmem port 0: 3 links, 2 up, 1 down, 3 connections" for the group of
 * links from first on. */
static void print_group_head(const struct ctl_link *const *sel, size_t n, size_t first)
{
	struct tally t = { 0 };
	char port[24];

	for (size_t i = first; i < n && ctl_link_same_port(sel[first], sel[i]); i++)
		count(&t, sel[i]);
	printf("%s%s port %s: %zu link%s, %zu up, %zu down, %llu connections\n", first ? "\n" : "",
	       *sel[first]->backend ? sel[first]->backend : "?", ctl_link_port(sel[first], 0, port, sizeof(port)),
	       t.links, t.links == 1 ? "" : "s", t.up, t.down, t.conns);
	printf("  %-10s %5s %-5s %11s %6s %10s %10s\n", "LINK", "PEER", "STATE", "SLICES", "CONNS", "WAKEUPS",
	       "DB_IRQS");
}

static void print_text(const struct ctl_link **sel, size_t n, bool endpoints)
{
	struct tally all = { 0 };
	size_t groups = 0;

	ctl_links_by_port(sel, n);
	for (size_t i = 0; i < n; i++) {
		const struct ctl_link *l = sel[i];
		char peer[24], busy[24], total[24], slices[50], conns[24], wake[24], irqs[24];

		if (i == 0 || !ctl_link_same_port(sel[i - 1], l)) {
			print_group_head(sel, n, i);
			groups++;
		}
		snprintf(slices, sizeof(slices), "%s/%s", ctl_link_num(l, K_SLICES_BUSY, busy, sizeof(busy)),
			 ctl_link_num(l, K_SLICES, total, sizeof(total)));
		if (conns_known(l))
			snprintf(conns, sizeof(conns), "%u", l->connected);
		else
			snprintf(conns, sizeof(conns), "?");
		printf("  %-10s %5s %-5s %11s %6s %10s %10s\n", l->name, ctl_link_port(l, 1, peer, sizeof(peer)),
		       ctl_link_state(l), slices, conns, ctl_link_num(l, K_WAKEUPS, wake, sizeof(wake)),
		       ctl_link_num(l, K_DB_IRQS, irqs, sizeof(irqs)));
		if (endpoints)
			print_eps(l, false);
		print_listeners(l, false);
		count(&all, l);
	}
	if (groups > 1)
		printf("\n%zu links: %zu up, %zu down, %llu connections\n", all.links, all.up, all.down, all.conns);
}

static void usage(FILE *out)
{
	fprintf(out, "usage: scilan_ctl [--json] status [--endpoints] [LINK...]\n"
		     "The scilan driver's links (one per peer), grouped by this node's port: peer port,\n"
		     "up/down, slices busy/total, connections, wake-ups, doorbell interrupts, listeners.\n"
		     "  -e, --endpoints  every endpoint of each link too (JSON always has them)\n"
		     "Reads $SCILAN_DRIVER_STATE (tests) or /sys/kernel/debug/scilan; without it, what\n"
		     "SCILAN_IOC_INFO of each scilanN in $SCILAN_DEV_DIR (tests) or /dev says.\n");
}

int cmd_status(int argc, char **argv, bool json)
{
	static const struct option opts[] = { { "endpoints", no_argument, NULL, 'e' },
					      { "help", no_argument, NULL, 'h' },
					      { 0, 0, 0, 0 } };
	const struct ctl_link **sel;
	struct ctl_links links;
	bool endpoints = false;
	size_t n = 0;
	int c, rc = 0;

	optind = 0; /* 0: glibc re-initializes its scanner for this new argument list */
	while ((c = getopt_long(argc, argv, "eh", opts, NULL)) != -1) {
		if (c == 'e') {
			endpoints = true;
			continue;
		}
		if (c != 'h')
			return 2;
		usage(stdout);
		return 0;
	}
	if (ctl_links_read(&links) < 0) {
		fprintf(stderr, "scilan_ctl: %s\n", links.why);
		ctl_links_free(&links);
		return 1;
	}
	if (links.from_info)
		fprintf(stderr, "scilan_ctl: %s; showing what SCILAN_IOC_INFO of each /dev/scilanN says "
				"(no counters, endpoints or listeners)\n", links.why);
	sel = calloc(links.n + 1, sizeof(*sel));
	if (!sel) {
		fprintf(stderr, "scilan_ctl: out of memory\n");
		ctl_links_free(&links);
		return 1;
	}
	if (optind == argc)
		for (size_t i = 0; i < links.n; i++)
			sel[n++] = &links.v[i];
	for (int a = optind; a < argc; a++) {
		const struct ctl_link *l = ctl_links_find(&links, argv[a]);

		if (!l) {
			fprintf(stderr, "scilan_ctl: no link %s (see scilan_ctl status)\n", argv[a]);
			rc = 1;
		} else if (n < links.n) {
			sel[n++] = l;
		}
	}
	if (rc == 0) {
		if (json)
			print_json(sel, n, links.from_info);
		else if (!links.n)
			printf("scilan driver loaded, no link (no /dev/scilanN)\n");
		else
			print_text(sel, n, endpoints);
	}
	free(sel);
	ctl_links_free(&links);
	return rc;
}
