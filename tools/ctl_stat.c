/* ctl_stat.c — `scilan_ctl stat [--all] [--watch SECONDS] [--exited]`: every accelerated
 * connection of every live scilan process of this user that our /proc shows
 * (pid, program, fd, endpoints, fabric, bytes each way, sleeps, wake-ups; a
 * container's process also its pid there and its container: ctl_procs.c)
 * and, with --all, every kernel
 * TCP one with the reason why (fallback.h), like smcss; once, as JSON, or
 * refreshed with rates until interrupted.  Files of dead processes (no live
 * process holds their lock) are removed, and each run sweeps some of what dead
 * processes left elsewhere in the runtime directory.  --exited: the
 * SCILAN_STATS lines exited processes left in the runtime directory's log.
 * VIA: the fabric the cluster map gives the peer's address, and for a device
 * peer its link and fabric port (the statistics file does not say which).
 */
#include "ctl_stat.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/config.h"
#include "ctl_devices.h"
#include "ctl_links.h"
#include "ctl_procs.h"
#include "runtime/cluster_map.h"
#include "runtime/fallback.h"
#include "runtime/rundir_sweep.h"
#include "runtime/stats_file.h"
#include "runtime/stats_sink.h"

struct conn_row {
	int pid, fd;           /* pid: as our /proc numbers the process */
	int ns_pid;            /* the pid in its own pid namespace */
	uint32_t pidns, netns; /* their inodes; 0 not known (an older library's file) */
	char container[80];    /* what its control group names (ctl_procs.h), or "" */
	unsigned reason, side; /* fallback.h: SL_FB_NONE accelerated */
	unsigned fabric;       /* stats_file.h: SL_STATS_TCP, _SHM, _DEV */
	int link;              /* SL_STATS_DEV: N of its /dev/scilanN, -1 not known */
	bool promoted;         /* began on kernel TCP, moved onto the rings */
	char comm[16], local[64], peer[64];
	uint64_t tx, rx, sleeps, wakeups;
	long peer_port;        /* SL_STATS_DEV: its link's peer fabric port, -1 unknown */
};

struct table {
	struct conn_row *rows;
	size_t n, cap;
};

static void endpoint(const struct sl_key *k, char *out, size_t size)
{
	char addr[INET6_ADDRSTRLEN] = "?", scope[16] = "";

	if (k->family != AF_INET && k->family != AF_INET6) {
		snprintf(out, size, "?"); /* a kernel TCP connection's end the library did not ask for */
		return;
	}
	inet_ntop(k->family, k->addr, addr, sizeof(addr));
	/* The interface's number: its name is the writer's namespace's. */
	if (k->scope)
		snprintf(scope, sizeof(scope), "%%%u", (unsigned)k->scope);
	snprintf(out, size, k->family == AF_INET6 ? "[%s%s]:%u" : "%s%s:%u", addr, scope, (unsigned)k->port);
}

static int add_row(struct table *t, const struct conn_row *r)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct conn_row *rows = realloc(t->rows, cap * sizeof(*rows));

		if (!rows)
			return -1;
		t->rows = rows;
		t->cap = cap;
	}
	t->rows[t->n++] = *r;
	return 0;
}

/* Who wrote the file, as we see it (ctl_procs.c): false if it is a process
 * of another pid namespace our /proc does not show (another container's,
 * seen from inside one), whose connections are not ours to list. */
static bool writer_of(const struct sl_stats_map *m, size_t size, struct conn_row *who)
{
	struct ctl_proc p;

	*who = (struct conn_row){ .pid = m->hdr.pid, .ns_pid = m->hdr.pid };
	if (size < sizeof(*m) || m->ident.magic != SL_STATS_IDENT_MAGIC || !m->ident.pidns)
		return true; /* an older library's file: its pid as it says */
	who->pidns = m->ident.pidns;
	if (ctl_proc_find(m->ident.pidns, m->hdr.pid, &p)) {
		who->pid = p.pid;
		who->netns = p.netns;
		snprintf(who->container, sizeof(who->container), "%s", p.container);
		return true;
	}
	/* Not found where it should be: ours but hidden (hidepid), or gone. */
	return m->ident.pidns == ctl_own_pidns();
}

/* Read one process's file; a dead process's file is removed. */
static void read_file(const char *dir, const char *name, struct table *t, bool all)
{
	char path[4200 + 256];
	struct sl_stats_map *m;
	struct conn_row who;
	struct stat st;
	size_t size;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	if (fstat(fd, &st) < 0 || (size_t)st.st_size < SL_STATS_MAP_V6_SIZE) {
		close(fd);
		return;
	}
	/* No further than the file goes: an older library's ends at its slots. */
	size = (size_t)st.st_size < sizeof(*m) ? SL_STATS_MAP_V6_SIZE : sizeof(*m);
	m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return;
	if (m->hdr.magic != SL_STATS_MAGIC || m->hdr.pid <= 0 || m->hdr.slots != SL_STATS_SLOTS) {
		munmap(m, size);
		return;
	}
	/* Not kill(pid, 0): the pid may be another process's by now. */
	if (sl_stats_file_reap(path) || !writer_of(m, size, &who)) {
		munmap(m, size);
		return;
	}
	for (unsigned i = 0; i < SL_STATS_SLOTS; i++) {
		const struct sl_stats_slot *s = &m->slot[i];
		struct conn_row r = who;

		if (!atomic_load_explicit(&s->in_use, memory_order_acquire))
			continue;
		/* Read after in_use: the owner writes them before it. */
		r.fd = s->fd;
		r.reason = s->reason;
		r.side = s->side;
		r.fabric = s->fabric;
		r.link = s->link;
		r.promoted = (s->flags & SL_STATS_PROMOTED) != 0;
		if (r.reason != SL_FB_NONE && !all)
			continue;
		memcpy(r.comm, m->hdr.comm, sizeof(r.comm) - 1);
		endpoint(&s->local, r.local, sizeof(r.local));
		endpoint(&s->peer, r.peer, sizeof(r.peer));
		r.tx = atomic_load(&s->ctr.tx_bytes);
		r.rx = atomic_load(&s->ctr.rx_bytes);
		r.sleeps = atomic_load(&s->ctr.sleeps);
		r.wakeups = atomic_load(&s->ctr.wakeups);
		if (add_row(t, &r) < 0)
			break;
	}
	munmap(m, size);
}

/* A device connection's peer port, from the driver's state of its link. */
static void find_peer_ports(struct table *t)
{
	struct ctl_links links;
	char name[32];
	bool any = false;

	for (size_t i = 0; i < t->n; i++) {
		t->rows[i].peer_port = -1;
		any |= t->rows[i].fabric == SL_STATS_DEV && t->rows[i].link >= 0;
	}
	if (!any || ctl_links_read(&links) < 0)
		return;
	for (size_t i = 0; i < t->n; i++) {
		const struct ctl_link *l;

		if (t->rows[i].fabric != SL_STATS_DEV || t->rows[i].link < 0)
			continue;
		snprintf(name, sizeof(name), "scilan%d", t->rows[i].link);
		l = ctl_links_find(&links, name);
		if (l && l->ports_known[1])
			t->rows[i].peer_port = l->port[1];
	}
	ctl_links_free(&links);
}

static int collect(struct table *t, bool all)
{
	char dir[4200];
	struct dirent *de;
	DIR *d;

	t->n = 0;
	if (!*sl_config()->rundir) {
		fprintf(stderr, "scilan_ctl: no usable runtime directory (SCILAN_RUNDIR)\n");
		return -1;
	}
	sl_rundir_sweep(SL_SWEEP_BUDGET);
	snprintf(dir, sizeof(dir), "%s/stats", sl_config()->rundir);
	d = opendir(dir);
	if (!d)
		return 0; /* no scilan process has run yet */
	ctl_procs_forget(); /* each look reads /proc afresh */
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			read_file(dir, de->d_name, t, all);
	closedir(d);
	find_peer_ports(t);
	return 0;
}

/* What carries the connection: "tcp" (kernel TCP), "shm", or "dev". */
static const char *fabric_name(const struct conn_row *r)
{
	return r->fabric == SL_STATS_SHM ? "shm" : r->fabric == SL_STATS_DEV ? "dev" : "tcp";
}

/* The FABRIC column: the device connection's link by its name, and
 * whether the connection moved there from kernel TCP. */
static const char *fabric_column(const struct conn_row *r, char *buf, size_t size)
{
	const char *moved = r->promoted ? ", promoted" : "";

	if (r->fabric == SL_STATS_DEV && r->link >= 0 && r->peer_port >= 0)
		snprintf(buf, size, "scilan%d (port %ld)%s", r->link, r->peer_port, moved);
	else if (r->fabric == SL_STATS_DEV && r->link >= 0)
		snprintf(buf, size, "scilan%d%s", r->link, moved);
	else
		snprintf(buf, size, "%s%s", fabric_name(r), moved);
	return buf;
}

static void print_json(const struct table *t)
{
	printf("{\"rundir\":");
	ctl_json_str(stdout, sl_config()->rundir);
	printf(",\"connections\":[");
	for (size_t i = 0; i < t->n; i++) {
		const struct conn_row *r = &t->rows[i];

		printf("%s{\"pid\":%d,\"comm\":", i ? "," : "", r->pid);
		ctl_json_str(stdout, r->comm);
		printf(",\"ns_pid\":%d", r->ns_pid);
		if (r->pidns)
			printf(",\"pid_namespace\":%u", (unsigned)r->pidns);
		else
			printf(",\"pid_namespace\":null");
		if (r->netns)
			printf(",\"net_namespace\":%u", (unsigned)r->netns);
		else
			printf(",\"net_namespace\":null");
		printf(",\"container\":");
		ctl_json_str(stdout, r->container);
		printf(",\"fd\":%d,\"local\":", r->fd);
		ctl_json_str(stdout, r->local);
		printf(",\"peer\":");
		ctl_json_str(stdout, r->peer);
		printf(",\"accelerated\":%s,\"reason\":\"%s\",\"downgraded\":%s,\"side\":\"%s\"",
		       r->reason == SL_FB_NONE ? "true" : "false", r->reason == SL_FB_NONE ? "" : sl_fb_name(r->reason),
		       sl_fb_downgrade(r->reason) ? "true" : "false", r->side ? "accept" : "connect");
		printf(",\"fabric\":\"%s\",\"promoted\":%s", fabric_name(r), r->promoted ? "true" : "false");
		if (r->fabric == SL_STATS_DEV && r->link >= 0)
			printf(",\"link\":\"scilan%d\"", r->link);
		if (r->peer_port >= 0)
			printf(",\"peer_port\":%ld", r->peer_port);
		printf(",\"tx_bytes\":%llu,\"rx_bytes\":%llu,\"sleeps\":%llu,\"wakeups\":%llu}",
		       (unsigned long long)r->tx, (unsigned long long)r->rx, (unsigned long long)r->sleeps,
		       (unsigned long long)r->wakeups);
	}
	printf("]}\n");
}

/* prev: the previous sample (for rates), NULL for a single listing. */
static void print_table(const struct table *t, const struct table *prev, double secs, bool all)
{
	if (!t->n) {
		printf(all ? "no connections\n" : "no accelerated connections\n");
		return;
	}
	/* Containers' processes among them: which container each is. */
	bool where = false;
	uint32_t own_ns = ctl_own_pidns();

	for (size_t i = 0; i < t->n; i++)
		where |= t->rows[i].container[0] || (t->rows[i].pidns && t->rows[i].pidns != own_ns);
	printf("%7s %-15s %4s %-22s %-22s %-18s", "PID", "COMMAND", "FD", "LOCAL", "PEER", "FABRIC");
	if (all)
		printf(" %-7s %-12s", "SIDE", "MODE");
	printf(" %14s %14s %9s %9s%s%s\n", "TX bytes", "RX bytes", "sleeps", "wakeups",
	       prev ? "      TX MB/s      RX MB/s" : "", where ? "  CONTAINER (pid there)" : "");
	for (size_t i = 0; i < t->n; i++) {
		const struct conn_row *r = &t->rows[i];

		char fab[64];

		printf("%7d %-15s %4d %-22s %-22s %-18s", r->pid, r->comm, r->fd, r->local, r->peer,
		       fabric_column(r, fab, sizeof(fab)));
		/* MODE: "scilan", or the reason kernel TCP carries it. */
		if (all)
			printf(" %-7s %-12s", r->side ? "accept" : "connect",
			       r->reason == SL_FB_NONE ? "scilan" : sl_fb_name(r->reason));
		printf(" %14llu %14llu %9llu %9llu", (unsigned long long)r->tx, (unsigned long long)r->rx,
		       (unsigned long long)r->sleeps, (unsigned long long)r->wakeups);
		if (prev) {
			uint64_t tx0 = r->tx, rx0 = r->rx;

			for (size_t k = 0; k < prev->n; k++)
				if (prev->rows[k].pid == r->pid && prev->rows[k].fd == r->fd &&
				    strcmp(prev->rows[k].peer, r->peer) == 0) {
					tx0 = prev->rows[k].tx;
					rx0 = prev->rows[k].rx;
				}
			printf(" %12.1f %12.1f", (double)(r->tx - tx0) / secs / 1e6, (double)(r->rx - rx0) / secs / 1e6);
		}
		if (where && r->container[0])
			printf("  %s (%d)", r->container, r->ns_pid);
		else if (where && r->pidns && r->pidns != own_ns)
			printf("  pid namespace %u (%d)", (unsigned)r->pidns, r->ns_pid);
		else if (where)
			printf("  -");
		printf("\n");
	}
}

/* The lines of the runtime directory's stats log (the one it replaced first),
 * as they are or as a JSON array of strings. */
static int print_exited(bool json)
{
	char path[4200], line[2048];
	bool first = true;
	FILE *f;

	if (!*sl_config()->rundir) {
		fprintf(stderr, "scilan_ctl: no usable runtime directory (SCILAN_RUNDIR)\n");
		return 1;
	}
	if (json)
		printf("{\"exited\":[");
	for (int old = 1; old >= 0; old--) {
		if (sl_stats_log_path(path, sizeof(path), old) < 0 || !(f = fopen(path, "re")))
			continue;
		while (fgets(line, sizeof(line), f)) {
			if (!json) {
				fputs(line, stdout);
				continue;
			}
			line[strcspn(line, "\n")] = '\0';
			printf("%s", first ? "" : ",");
			ctl_json_str(stdout, line);
			first = false;
		}
		fclose(f);
	}
	if (json)
		printf("]}\n");
	return 0;
}

int cmd_stat(int argc, char **argv, bool json)
{
	static const struct option opts[] = { { "watch", required_argument, NULL, 'w' },
					      { "all", no_argument, NULL, 'a' },
					      { "exited", no_argument, NULL, 'e' },
					      { NULL, 0, NULL, 0 } };
	struct table now = { 0 }, prev = { 0 };
	double interval = 0;
	bool all = false, exited = false;
	char *end;
	int c;

	optind = 0; /* 0: glibc re-initializes its scanner for this new argument list */
	while ((c = getopt_long(argc, argv, "w:ae", opts, NULL)) != -1) {
		if (c == 'a') {
			all = true;
			continue;
		}
		if (c == 'e') {
			exited = true;
			continue;
		}
		if (c != 'w')
			return 2;
		interval = strtod(optarg, &end);
		if (*end || interval < 0.1 || interval > 3600) {
			fprintf(stderr, "scilan_ctl: --watch wants seconds in [0.1, 3600], not '%s'\n", optarg);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "scilan_ctl: stat takes no arguments besides --all, --watch and --exited\n");
		return 2;
	}
	if (exited)
		return print_exited(json);
	if (collect(&now, all) < 0)
		return 1;
	if (json || interval == 0) {
		if (json)
			print_json(&now);
		else
			print_table(&now, NULL, 0, all);
		free(now.rows);
		return 0;
	}
	for (;;) {
		struct timespec ts = { (time_t)interval, (long)((interval - (double)(time_t)interval) * 1e9) };
		struct table tmp;

		tmp = prev;
		prev = now;
		now = tmp;
		nanosleep(&ts, NULL);
		if (collect(&now, all) < 0)
			return 1;
		printf("\033[H\033[2J"); /* a refreshing view, like top */
		print_table(&now, &prev, interval, all);
		fflush(stdout);
	}
}
