/* test_ctl_fabric.c — scilan_ctl status, topo and stat on an N-node fabric:
 * fake driver state trees ($SCILAN_DRIVER_STATE: 3 links one down, an
 * 8-port fabric's 56 links, missing keys, garbage) and a fake /dev
 * ($SCILAN_DEV_DIR), checked in text and, through jq, in JSON.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <unistd.h>
#include <sys/mman.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cr_helpers.h"
#include "ctl_run.h"
#include "scilan.h"
#include "testutil.h"
#include "runtime/config.h"
#include "runtime/stats_file.h"
#include "young_helpers.h"

static char tmpdir[] = "/tmp/scilan-ctlf-test-XXXXXX";
static char conf[PATH_MAX], state[PATH_MAX], devdir[PATH_MAX];

static struct ctl_run *ctl(const char *arg0, ...)
{
	const char *args[32];
	va_list ap;
	int n = 0;

	va_start(ap, arg0);
	for (const char *a = arg0; a && n < 30; a = va_arg(ap, const char *))
		args[n++] = a;
	va_end(ap);
	args[n] = NULL;
	return ctl_runv(tmpdir, args);
}

static void setup(void)
{
	char path[PATH_MAX];

	cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
	snprintf(conf, sizeof(conf), "%s/cluster.conf", tmpdir);
	snprintf(state, sizeof(state), "%s/state", tmpdir);
	snprintf(devdir, sizeof(devdir), "%s/dev", tmpdir);
	cr_assert_eq(mkdir(state, 0755), 0);
	cr_assert_eq(mkdir(devdir, 0755), 0);
	cr_assert_eq(setenv("SCILAN_CONF", conf, 1), 0);
	cr_assert_eq(setenv("SCILAN_DRIVER_STATE", state, 1), 0);
	cr_assert_eq(setenv("SCILAN_DEV_DIR", devdir, 1), 0);
	/* No PCI device: topo's fabric part stands alone. */
	snprintf(path, sizeof(path), "%s/pci", tmpdir);
	cr_assert_eq(mkdir(path, 0755), 0);
	cr_assert_eq(setenv("SCILAN_SYSFS_PCI", path, 1), 0);
	snprintf(path, sizeof(path), "%s/pci/devices", tmpdir);
	cr_assert_eq(mkdir(path, 0755), 0);
}

static void teardown(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "test_ctl_fabric: could not remove %s\n", tmpdir);
}

TestSuite(ctl_fabric, .init = setup, .fini = teardown, .timeout = 60);

/* <state>/<name>/state holding text. */
static void fake_state(const char *name, const char *text)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", state, name);
	cr_assert_eq(mkdir(path, 0755), 0, "%s: %s", path, strerror(errno));
	snprintf(path, sizeof(path), "%s/%s/state", state, name);
	ctl_write_file(path, text);
}

struct fake {
	const char *backend;
	int local, peer;
	bool up;
	unsigned busy, slices, conns, wakeups, irqs;
};

/* A state file as driver/scilan_main.c sl_dbg_show writes it: conns
 * connected endpoints, one idle one and a listener. */
static void fake_link(int n, const struct fake *f)
{
	char name[32], text[8192];
	int len;

	len = snprintf(text, sizeof(text),
		       "backend %s\nlocal_port %d\npeer_port %d\ndoorbell words\nlink %s\nproto 6\n"
		       "mw_size 4194304\nslice_size 65536\nslices %u\npeer_slices %u\nslices_busy %u\nsets_busy 1\n"
		       "db_bits 32\ngeneration 3\ndb_irqs %u\nwakeups %u\nstimuli 9\nset_wakeups 0\nset_stimuli 0\n"
		       "ctl_rx 4\nctl_tx 4\nzaps 0\nendpoints %u\n",
		       f->backend, f->local, f->peer, f->up ? "up" : "down", f->slices, f->slices, f->busy, f->irqs,
		       f->wakeups, f->conns + 2);
	for (unsigned i = 0; i < f->conns; i++)
		len += snprintf(text + len, sizeof(text) - (size_t)len,
				"ep %u state 2 slice %u peer_slice %u port 5000 tokens 0x1 set -1\n", 100 + i, i, i);
	len += snprintf(text + len, sizeof(text) - (size_t)len,
			"ep 7 state 0 slice -1 peer_slice -1 port 0 tokens 0 set -1\n"
			"listener 8 uid 0 family ipv4 addr 0.0.0.0 port 5000 netns 4026531840 backlog 0/128\n");
	if (!strcmp(f->backend, "ivshmem"))
		snprintf(text + len, sizeof(text) - (size_t)len,
			 "ivshmem_id %d\nivshmem_peer %d\nivshmem_nodes 4\nivshmem_shm 16777216\n", f->local, f->peer);
	snprintf(name, sizeof(name), "scilan%d", n);
	fake_state(name, text);
}

/* Node 0 of a 4-VM ivshmem fabric: peers 1, 2, 3; the link to 2 down. */
static void three_links(void)
{
	fake_link(0, &(struct fake){ "ivshmem", 0, 1, true, 3, 61, 2, 17, 21 });
	fake_link(1, &(struct fake){ "ivshmem", 0, 2, false, 0, 61, 0, 0, 0 });
	fake_link(2, &(struct fake){ "ivshmem", 0, 3, true, 1, 61, 1, 5, 6 });
}

/* The line of out that starts with word (then a space), copied into line. */
static bool line_of(const char *out, const char *word, char *line, size_t size)
{
	size_t n = strlen(word);

	for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		const char *q = p;

		while (*q == ' ')
			q++;
		if (!strncmp(q, word, n) && q[n] == ' ') {
			size_t len = strcspn(p, "\n");

			snprintf(line, size, "%.*s", (int)len, p);
			return true;
		}
	}
	return false;
}

/* The words of a table row, space-separated, start with expect's words. */
static void row_is(const char *out, const char *link, const char *expect)
{
	char line[512], words[512] = "";
	char *save = NULL;

	cr_assert(line_of(out, link, line, sizeof(line)), "no row for %s:\n%s", link, out);
	for (char *w = strtok_r(line, " ", &save); w; w = strtok_r(NULL, " ", &save))
		snprintf(words + strlen(words), sizeof(words) - strlen(words), "%s%s", *words ? " " : "", w);
	cr_assert(!strncmp(words, expect, strlen(expect)), "row of %s is\n  %s\nnot\n  %s...\n%s", link, words, expect,
		  out);
}

/* ---- status ---------------------------------------------------------------- */

Test(ctl_fabric, status_three_links_one_down)
{
	struct ctl_run *r;

	three_links();
	r = ctl("status", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert(strstr(r->out, "ivshmem port 0: 3 links, 2 up, 1 down, 3 connections"), "%s", r->out);
	/* LINK PEER STATE SLICES CONNS WAKEUPS DB_IRQS */
	row_is(r->out, "scilan0", "scilan0 1 up 3/61 2 17 21");
	row_is(r->out, "scilan1", "scilan1 2 down 0/61 0 0 0");
	row_is(r->out, "scilan2", "scilan2 3 up 1/61 1 5 6");
	cr_assert(strstr(r->out, "listener 8 uid 0 ipv4 0.0.0.0 port 5000"), "%s", r->out);
	r = ctl("--json", "status", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert(ctl_jq(tmpdir, r->out, ".links | length == 3"), "%s", r->out);
	cr_assert(ctl_jq(tmpdir, r->out,
			 ".links[1] | .name == \"scilan1\" and .link == \"down\" and .backend == \"ivshmem\" and "
			 ".local_port == 0 and .peer_port == 2 and .connections == 0"),
		  "%s", r->out);
	cr_assert(ctl_jq(tmpdir, r->out,
			 ".links[0] | .slices_busy == 3 and .slices == 61 and .connections == 2 and .wakeups == 17 "
			 "and .db_irqs == 21 and .backend_info.ivshmem_nodes == \"4\""),
		  "%s", r->out);
	cr_assert(ctl_jq(tmpdir, r->out, ".summary == {\"links\":3,\"up\":2,\"down\":1,\"connections\":3}"), "%s",
		  r->out);
	/* One link asked for by name. */
	r = ctl("status", "scilan2", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert(strstr(r->out, "scilan2") && !strstr(r->out, "scilan0"), "%s", r->out);
	r = ctl("status", "scilan9", NULL);
	cr_assert_eq(r->status, 1, "exit %d: %s", r->status, r->out);
	cr_assert(strstr(r->err, "no link scilan9"), "%s", r->err);
}

/* An 8-port fabric seen from one guest: ports 0..7, a link for each ordered
 * pair: 56 links, grouped by port, in number order. */
Test(ctl_fabric, status_fifty_six_links)
{
	struct ctl_run *r;
	char head[64], *p9, *p10;
	int n = 0;

	for (int port = 0; port < 8; port++)
		for (int peer = 0; peer < 8; peer++)
			if (peer != port) {
				fake_link(n, &(struct fake){ "ntb", port, peer, true, 1, 32, 1, (unsigned)n, 1 });
				n++;
			}
	r = ctl("status", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	for (int port = 0; port < 8; port++) {
		snprintf(head, sizeof(head), "ntb port %d: 7 links, 7 up, 0 down, 7 connections", port);
		cr_assert(strstr(r->out, head), "no '%s':\n%s", head, r->out);
	}
	row_is(r->out, "scilan55", "scilan55 6 up 1/32 1 55 1");
	p9 = strstr(r->out, "scilan9 ");
	p10 = strstr(r->out, "scilan10 ");
	cr_assert(p9 && p10 && p9 < p10, "not in number order:\n%s", r->out);
	cr_assert(strstr(r->out, "56 links: 56 up, 0 down, 56 connections"), "%s", r->out);
	r = ctl("--json", "status", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert(ctl_jq(tmpdir, r->out, ".links | length == 56"), "%.2000s", r->out);
	cr_assert(ctl_jq(tmpdir, r->out, "[.links[].name] == [range(56) | \"scilan\\(.)\"]"), "%.2000s", r->out);
	cr_assert(ctl_jq(tmpdir, r->out, ".links[55] | .local_port == 7 and .peer_port == 6"), "%.2000s", r->out);
}

/* A file without some keys: those show "?" (null in JSON), never 0. */
Test(ctl_fabric, status_missing_keys_are_unknown)
{
	struct ctl_run *r;

	fake_state("scilan0", "backend ivshmem\nlink up\nslices 61\ndb_irqs 4\nendpoints 0\n");
	r = ctl("status", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert(strstr(r->out, "ivshmem port ?: 1 link, 1 up, 0 down, 0 connections"), "%s", r->out);
	row_is(r->out, "scilan0", "scilan0 ? up ?/61 0 ? 4");
	r = ctl("--json", "status", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert(ctl_jq(tmpdir, r->out,
			 ".links[0] | .slices_busy == null and .wakeups == null and .local_port == null and "
			 ".peer_port == null and .slices == 61 and .db_irqs == 4 and .connections == 0"),
		  "%s", r->out);
}

/* What the kernel wrote is read, not trusted: garbage is unknown. */
Test(ctl_fabric, status_garbage_values_are_unknown)
{
	static char text[40000];
	struct ctl_run *r;
	int len;

	len = snprintf(text, sizeof(text),
		       "backend iv\"shmem\nlocal_port -1\npeer_port 2x\nlink sideways\nslices 61\n"
		       "slices_busy 12abc\nwakeups -5\ndb_irqs 99999999999999999999999\nendpoints many\n"
		       "ep 1 state 2 slice 0 peer_slice 0 port 1 tokens 0 set -1\nslices_busy\n\n \n"
		       "\x01\x02\xff garbage\nivshmem_id \"0\"\nbig ");
	memset(text + len, '7', 30000);
	strcpy(text + len + 30000, "\nzaps 1\n");
	fake_state("scilan3", text);
	fake_state("scilan1", "");
	r = ctl("status", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	row_is(r->out, "scilan3", "scilan3 ? ? ?/61 ? ? ?");
	row_is(r->out, "scilan1", "scilan1 ? ? ?/? ? ? ?");
	cr_assert_null(strstr(r->out, "sideways"), "%s", r->out);
	r = ctl("--json", "status", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert(ctl_jq(tmpdir, r->out,
			 ".links[1] | .name == \"scilan3\" and .link == null and .backend == null and "
			 ".slices_busy == null and .wakeups == null and .db_irqs == null and .connections == null and "
			 ".peer_port == null and .zaps == 1"),
		  "%s", r->out);
}

/* No debugfs: say so, and show what each /dev/scilanN's SCILAN_IOC_INFO
 * gives (here: files that are no driver, so nothing but their names). */
Test(ctl_fabric, status_without_debugfs_falls_back_to_info)
{
	char path[PATH_MAX + 16];
	struct ctl_run *r;

	cr_assert_eq(setenv("SCILAN_DRIVER_STATE", "/nonexistent/scilan-test", 1), 0);
	r = ctl("status", NULL);
	cr_assert_eq(r->status, 1, "no link anywhere: exit %d: %s", r->status, r->out);
	cr_assert(strstr(r->err, "cannot read driver state in /nonexistent/scilan-test"), "%s", r->err);
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/scilan%d", devdir, i);
		ctl_write_file(path, "");
	}
	snprintf(path, sizeof(path), "%s/scilanx", devdir);
	ctl_write_file(path, "");
	r = ctl("status", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert(strstr(r->err, "cannot read driver state in /nonexistent/scilan-test"), "%s", r->err);
	cr_assert(strstr(r->err, "SCILAN_IOC_INFO"), "%s", r->err);
	row_is(r->out, "scilan0", "scilan0 ? ? ?/? ? ? ?");
	row_is(r->out, "scilan1", "scilan1 ? ? ?/? ? ? ?");
	cr_assert_null(strstr(r->out, "scilanx"), "%s", r->out);
	r = ctl("--json", "status", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert(ctl_jq(tmpdir, r->out, ".source == \"info\" and (.links | length == 2)"), "%s", r->out);
}

/* ---- topo ------------------------------------------------------------------- */

Test(ctl_fabric, topo_shows_peers_and_their_map_entries)
{
	struct ctl_run *r;

	three_links();
	ctl_write_file(conf, "2 10.0.0.2 dev scilan0\n2 fd00::2 dev scilan0\n4 10.0.0.4 dev scilan2\n"
			     "9 10.0.0.9 dev scilan7\n5 10.77.0.5 shm\n");
	r = ctl("topo", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert(strstr(r->out, "fabric: ivshmem port 0 (this node): 3 peers, 2 up"), "%s", r->out);
	cr_assert(strstr(r->out, "scilan0 -> port 1  up    node 2 (10.0.0.2, fd00::2)"), "%s", r->out);
	cr_assert(strstr(r->out, "scilan1 -> port 2  down  no map entry: scilan_ctl map add NODE ADDRESS "
				 "--fabric dev --device scilan1"),
		  "%s", r->out);
	cr_assert(strstr(r->out, "scilan2 -> port 3  up    node 4 (10.0.0.4)"), "%s", r->out);
	cr_assert(strstr(r->out, "warning: the cluster map names dev scilan7 (node 9, 10.0.0.9), which does not exist"),
		  "%s", r->out);
	r = ctl("--json", "topo", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert(ctl_jq(tmpdir, r->out,
			 ".fabric.ports | length == 1 and .[0].backend == \"ivshmem\" and .[0].local_port == 0 and "
			 "(.[0].peers | length == 3)"),
		  "%s", r->out);
	cr_assert(ctl_jq(tmpdir, r->out,
			 ".fabric.ports[0].peers[0] | .device == \"scilan0\" and .peer_port == 1 and .link == \"up\" "
			 "and .map == [{\"node\":2,\"address\":\"10.0.0.2\"},{\"node\":2,\"address\":\"fd00::2\"}]"),
		  "%s", r->out);
	cr_assert(ctl_jq(tmpdir, r->out, ".fabric.ports[0].peers[1].map == []"), "%s", r->out);
	cr_assert(ctl_jq(tmpdir, r->out,
			 ".fabric.missing_devices == [{\"device\":\"scilan7\",\"node\":9,\"address\":\"10.0.0.9\"}]"),
		  "%s", r->out);
}

/* A link two map nodes claim reaches one peer: a map error to show. */
Test(ctl_fabric, topo_warns_of_two_nodes_on_one_link)
{
	struct ctl_run *r;

	three_links();
	ctl_write_file(conf, "2 10.0.0.2 dev scilan0\n3 10.0.0.3 dev scilan0\n");
	r = ctl("topo", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert(strstr(r->out, "warning: the cluster map puts nodes 2 and 3 on scilan0, a link to one peer"), "%s",
		  r->out);
}

/* ---- stat ------------------------------------------------------------------- */

/* A live connection whose peer address the map names on a link: stat says
 * which link and which fabric port it goes to. */
/* Our own statistics slot of fd says the connection rides /dev/scilan<link>:
 * no device here, so the library's record of a device connection is written
 * as the device fabric would have it. */
static void mark_slot_as_device(int fd, int link)
{
	char dir[PATH_MAX + 16], path[PATH_MAX + 300];
	struct sl_stats_map *m;
	struct dirent *de;
	bool found = false;
	DIR *d;
	int f;

	snprintf(dir, sizeof(dir), "%s/stats", sl_config()->rundir);
	d = opendir(dir);
	cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = open(path, O_RDWR | O_CLOEXEC);
		if (f < 0)
			continue;
		m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
		close(f);
		if (m == MAP_FAILED)
			continue;
		for (int i = 0; m->hdr.pid == getpid() && i < SL_STATS_SLOTS; i++) {
			if (!atomic_load(&m->slot[i].in_use) || m->slot[i].fd != fd)
				continue;
			m->slot[i].fabric = SL_STATS_DEV;
			m->slot[i].link = link;
			found = true;
		}
		munmap(m, sizeof(*m));
	}
	closedir(d);
	cr_assert(found, "no slot of ours for fd %d in %s", fd, dir);
}

Test(ctl_fabric, stat_names_the_link_of_a_device_peer)
{
	struct ctl_run *r;
	int c, s;

	cr_assert_not_null(tu_isolated_rundir());
	three_links();
	pair_or_die(0, 0, &c, &s);
	cr_assert_eq(tu_send_all(c, "x", 1, 0), 1);
	tu_grow_up();
	r = ctl("stat", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert(strstr(r->out, "FABRIC") && strstr(r->out, " shm "), "%s", r->out);
	mark_slot_as_device(c, 2);
	r = ctl("stat", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert(strstr(r->out, "scilan2 (port 3)"), "%s", r->out);
	r = ctl("--json", "stat", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert(ctl_jq(tmpdir, r->out,
			 "[.connections[] | select(.fabric == \"dev\" and .link == \"scilan2\" and .peer_port == 3)] "
			 "| length == 1"),
		  "%s", r->out);
	scilan_close(c);
	scilan_close(s);
}
