/* test_ctl.c — scilan_ctl as users run it: a child process (the scilan_ctl of
 * this build, found from /proc/self/exe as ../../bin/scilan_ctl) with its exit
 * status, stdout and stderr checked for map, devices, topo and usage errors.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cr_helpers.h"
#include "ctl_run.h"
#include "scilan.h"
#include "runtime/stats_file.h" /* the file format, to forge a dead process's file */
#include "testutil.h"
#include "young_helpers.h"

static char tmpdir[] = "/tmp/scilan-ctl-test-XXXXXX";
static char conf[PATH_MAX];

/* Run scilan_ctl with the NULL-terminated arguments; output through files. */
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

/* Does the file at path contain text? */
static bool file_has(const char *path, const char *text)
{
	char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, text) != NULL;
}

#define write_file ctl_write_file

static void setup(void)
{
	cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
	snprintf(conf, sizeof(conf), "%s/etc/cluster.conf", tmpdir);
	cr_assert_eq(setenv("SCILAN_CONF", conf, 1), 0);
	unsetenv("SCILAN_SYSFS_PCI");
}

static void teardown(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "test_ctl: could not remove %s\n", tmpdir);
}

/* Trailing newlines dropped: does s start with a and end with z? */
static bool framed(const char *s, const char *a, char z)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
		n--;
	return strncmp(s, a, strlen(a)) == 0 && n > 0 && s[n - 1] == z;
}

TestSuite(ctl, .init = setup, .fini = teardown, .timeout = 60);

/* ---- map ------------------------------------------------------------------ */

Test(ctl, map_list_missing_file_is_empty)
{
	struct ctl_run *r = ctl("map", "list", NULL);

	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert_not_null(strstr(r->out, "NODE"), "no header: %s", r->out);
	cr_assert_null(strstr(r->out, "10.0.0.1"));
	r = ctl("--json", "map", "list", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert_not_null(strstr(r->out, "\"entries\":[]"), "not empty: %s", r->out);
}

Test(ctl, map_add_list_del)
{
	struct ctl_run *r = ctl("map", "add", "1", "10.0.0.1", NULL);

	cr_assert_eq(r->status, 0, "add 1: exit %d: %s", r->status, r->err);
	r = ctl("map", "add", "2", "fd00::2", "--fabric", "dev", NULL);
	cr_assert_eq(r->status, 0, "add 2: exit %d: %s", r->status, r->err);

	r = ctl("--json", "map", "list", NULL);
	cr_assert_eq(r->status, 0, "list: exit %d: %s", r->status, r->err);
	cr_assert(framed(r->out, "{", '}'), "not a JSON object: %s", r->out);
	cr_assert_not_null(strstr(r->out, "{\"node\":1,\"address\":\"10.0.0.1\",\"fabric\":\"shm\"}"), "%s", r->out);
	cr_assert_not_null(strstr(r->out, "{\"node\":2,\"address\":\"fd00::2\",\"fabric\":\"dev\",\"device\":\"scilan0\"}"),
			   "%s", r->out);
	cr_assert_not_null(strstr(r->out, conf), "map path missing: %s", r->out);

	/* A dev address on another link; the file names it, and list shows it. */
	r = ctl("map", "add", "4", "10.0.0.4", "--fabric", "dev", "--device", "scilan1", NULL);
	cr_assert_eq(r->status, 0, "add 4: exit %d: %s", r->status, r->err);
	cr_assert(file_has(conf, "\n4 10.0.0.4 dev scilan1\n"), "map file lacks the device line");
	cr_assert(file_has(conf, "\n2 fd00::2 dev scilan0\n"), "map file lacks the default device");
	r = ctl("map", "list", NULL);
	cr_assert_eq(r->status, 0, "list: exit %d: %s", r->status, r->err);
	cr_assert_not_null(strstr(r->out, "scilan1"), "%s", r->out);
	r = ctl("map", "del", "10.0.0.4", NULL);
	cr_assert_eq(r->status, 0, "del 4: exit %d: %s", r->status, r->err);

	r = ctl("map", "add", "3", "10.0.0.1", NULL);
	cr_assert_eq(r->status, 1, "duplicate address: exit %d", r->status);
	cr_assert_not_null(strstr(r->err, "10.0.0.1"), "message: %s", r->err);
	cr_assert_not_null(strstr(r->err, "already"), "message: %s", r->err);

	r = ctl("map", "del", "10.0.0.1", NULL);
	cr_assert_eq(r->status, 0, "del address: exit %d: %s", r->status, r->err);
	r = ctl("--json", "map", "list", NULL);
	cr_assert_null(strstr(r->out, "10.0.0.1"), "still listed: %s", r->out);
	cr_assert_not_null(strstr(r->out, "fd00::2"), "wrong entry deleted: %s", r->out);

	r = ctl("map", "add", "2", "10.0.0.9", NULL);
	cr_assert_eq(r->status, 0, "add 2 again: exit %d: %s", r->status, r->err);
	r = ctl("map", "del", "--node", "2", NULL);
	cr_assert_eq(r->status, 0, "del --node: exit %d: %s", r->status, r->err);
	r = ctl("--json", "map", "list", NULL);
	cr_assert_not_null(strstr(r->out, "\"entries\":[]"), "node 2 not deleted: %s", r->out);

	r = ctl("map", "del", "10.0.0.1", NULL);
	cr_assert_eq(r->status, 1, "deleting a missing address: exit %d", r->status);
}

Test(ctl, map_bad_line_names_file_and_line)
{
	char etc[PATH_MAX], want[PATH_MAX + 8];
	struct ctl_run *r;

	snprintf(etc, sizeof(etc), "%s/etc", tmpdir);
	cr_assert_eq(mkdir(etc, 0755), 0);
	write_file(conf, "# comment\n1 10.0.0.1\n3 1.2.3\n");
	r = ctl("map", "list", NULL);
	cr_assert_eq(r->status, 1, "exit %d: %s", r->status, r->out);
	snprintf(want, sizeof(want), "%s:3:", conf);
	cr_assert_not_null(strstr(r->err, want), "message does not name %s: %s", want, r->err);
}

/* NODE ADDRESS [shm|dev [DEVICE]]: each bad form names its line. */
Test(ctl, map_device_lines)
{
	static const char *const bad[][2] = {
		{ "1 10.0.0.2 shm scilan0\n", "only with the 'dev' fabric" },
		{ "1 10.0.0.2 dev ../x\n", "not a /dev name" },
		{ "1 10.0.0.2 dev scilan0 extra\n", "too many fields" },
		{ "1 10.0.0.2 dev 0123456789012345678901234567890123\n", "not a /dev name" },
	};
	char etc[PATH_MAX], text[256], want[PATH_MAX + 8];
	struct ctl_run *r;

	snprintf(etc, sizeof(etc), "%s/etc", tmpdir);
	cr_assert_eq(mkdir(etc, 0755), 0);
	write_file(conf, "1 10.0.0.1 dev scilan7\n2 10.0.0.3 dev\n");
	r = ctl("--json", "map", "list", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert_not_null(strstr(r->out, "\"address\":\"10.0.0.1\",\"fabric\":\"dev\",\"device\":\"scilan7\""), "%s",
			   r->out);
	cr_assert_not_null(strstr(r->out, "\"address\":\"10.0.0.3\",\"fabric\":\"dev\",\"device\":\"scilan0\""), "%s",
			   r->out);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "# c\n3 10.0.0.9\n%s", bad[i][0]);
		write_file(conf, text);
		r = ctl("map", "list", NULL);
		cr_assert_eq(r->status, 1, "%s: exit %d", bad[i][0], r->status);
		snprintf(want, sizeof(want), "%s:3:", conf);
		cr_assert_not_null(strstr(r->err, want), "%s: does not name %s: %s", bad[i][0], want, r->err);
		cr_assert_not_null(strstr(r->err, bad[i][1]), "%s: %s", bad[i][0], r->err);
	}
}

Test(ctl, map_usage_errors_exit_2)
{
	static const char *bad[][9] = {
		{ "map", "add", "0", "10.0.0.1" },
		{ "map", "add", "65536", "10.0.0.1" },
		{ "map", "add", "x", "10.0.0.1" },
		{ "map", "add", "1", "10.0.0.256" },
		{ "map", "add", "1", "not-an-address" },
		{ "map", "add", "1", "10.0.0.1", "--fabric", "ib" },
		{ "map", "add", "1", "10.0.0.1", "--device", "scilan1" },
		{ "map", "add", "1", "10.0.0.1", "--fabric", "dev", "--device", "a/b" },
		{ "map", "del", "--node", "0" },
		{ "map", "del", "1.2.3" },
		{ "map" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ctl_run *r = ctl(bad[i][0], bad[i][1], bad[i][2], bad[i][3], bad[i][4], bad[i][5], bad[i][6],
				    bad[i][7], NULL);

		cr_assert_eq(r->status, 2, "case %zu (%s %s %s %s): exit %d", i, bad[i][1], bad[i][2], bad[i][3],
			     bad[i][4] ? bad[i][4] : "", r->status);
		cr_assert_neq(r->err[0], '\0', "case %zu: no message", i);
	}
	cr_assert_eq(access(conf, F_OK), -1, "a failed add wrote the map");
}

/* ---- devices, topo ---------------------------------------------------------- */

Test(ctl, devices_on_this_machine)
{
	struct ctl_run *r = ctl("devices", NULL);

	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert(strstr(r->out, "scilan_ctl: no NTB or ivshmem device found (scanned ") || strstr(r->out, "SLOT"),
		  "neither the no-device line nor a table: %s", r->out);
	r = ctl("--json", "devices", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert(framed(r->out, "{\"devices\":", '}'), "%s", r->out);
	cr_assert_not_null(strstr(r->out, "\"scanned\":"), "%s", r->out);
}

Test(ctl, topo_on_this_machine)
{
	struct ctl_run *r = ctl("topo", NULL);

	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert_not_null(strstr(r->out, "NUMA node"), "%s", r->out);
	cr_assert_not_null(strstr(r->out, "PU"), "%s", r->out);
	r = ctl("--json", "topo", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert(framed(r->out, "{", '}'), "not a JSON object: %s", r->out);
	cr_assert_not_null(strstr(r->out, "\"numa_nodes\":[{"), "%s", r->out);
	cr_assert_not_null(strstr(r->out, "\"pus\":"), "%s", r->out);
}

/* A fake /sys/bus/pci holding one ivshmem function on NUMA node 0. */
static void fake_sysfs_ivshmem(void)
{
	char dev[PATH_MAX], path[PATH_MAX + 32];
	static const char *const files[][2] = {
		{ "vendor", "0x1af4\n" },
		{ "device", "0x1110\n" },
		{ "class", "0x050000\n" },
		{ "numa_node", "0\n" },
		{ "irq", "0\n" },
		{ "resource", "0x00000000fe000000 0x00000000fe0000ff 0x0000000000040200\n"
			      "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
			      "0x0000000800000000 0x0000000803ffffff 0x000000000014220c\n"
			      "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
			      "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
			      "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
			      "0x0000000000000000 0x0000000000000000 0x0000000000000000\n" },
	};

	snprintf(dev, sizeof(dev), "%s/pci", tmpdir);
	cr_assert_eq(mkdir(dev, 0755), 0);
	cr_assert_eq(setenv("SCILAN_SYSFS_PCI", dev, 1), 0);
	snprintf(dev, sizeof(dev), "%s/pci/devices", tmpdir);
	cr_assert_eq(mkdir(dev, 0755), 0);
	snprintf(dev, sizeof(dev), "%s/pci/devices/0000:3b:00.1", tmpdir);
	cr_assert_eq(mkdir(dev, 0755), 0);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dev, files[i][0]);
		write_file(path, files[i][1]);
	}
}

Test(ctl, devices_finds_ivshmem)
{
	struct ctl_run *r;

	fake_sysfs_ivshmem();
	r = ctl("devices", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert_not_null(strstr(r->out, "0000:3b:00.1  ivshmem    1af4:1110  0"), "%s", r->out);
	cr_assert_not_null(strstr(r->out, "BAR2 0x0000000800000000 64 MiB"), "%s", r->out);
	r = ctl("--json", "devices", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert_not_null(strstr(r->out, "{\"devices\":[{\"slot\":\"0000:3b:00.1\",\"kind\":\"ivshmem\","
					  "\"vendor_id\":\"0x1af4\",\"device_id\":\"0x1110\",\"class\":\"0x0500\""),
			   "%s", r->out);
	cr_assert_not_null(strstr(r->out, "\"numa_node\":0,\"bars\":[{\"index\":0,\"base\":\"0xfe000000\","
					  "\"size\":256},{\"index\":2,\"base\":\"0x800000000\",\"size\":67108864}]"),
			   "%s", r->out);
	cr_assert_not_null(strstr(r->out, "\"scanned\":1}"), "%s", r->out);
}

Test(ctl, topo_advises_pinning_for_a_device)
{
	struct ctl_run *r;

	fake_sysfs_ivshmem();
	r = ctl("topo", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert_not_null(strstr(r->out, "pin scilan processes for 0000:3b:00.1 to CPUs "), "%s", r->out);
	cr_assert_not_null(strstr(r->out, "(NUMA node 0): taskset -c "), "%s", r->out);
	r = ctl("--json", "topo", NULL);
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	cr_assert(framed(r->out, "{", '}'), "not a JSON object: %s", r->out);
	cr_assert_not_null(strstr(r->out, "\"devices\":[{\"slot\":\"0000:3b:00.1\",\"kind\":\"ivshmem\",\"numa_node\":0"),
			   "%s", r->out);
}

Test(ctl, pci_access_failure_is_an_error)
{
	struct ctl_run *r;

	cr_assert_eq(setenv("SCILAN_SYSFS_PCI", "/nonexistent/scilan-test", 1), 0);
	r = ctl("devices", NULL);
	cr_assert_eq(r->status, 1, "exit %d: %s", r->status, r->err);
	cr_assert_not_null(strstr(r->err, "scilan_ctl: cannot access PCI devices"), "%s", r->err);
	cr_assert_eq(r->out[0], '\0', "printed a result: %s", r->out);
}

/* ---- usage ------------------------------------------------------------------ */

Test(ctl, usage)
{
	struct ctl_run *r = ctl("--help", NULL);

	cr_assert_eq(r->status, 0, "--help: exit %d", r->status);
	cr_assert_not_null(strstr(r->out, "devices"), "%s", r->out);
	cr_assert_not_null(strstr(r->out, "topo"), "%s", r->out);
	r = ctl("frobnicate", NULL);
	cr_assert_eq(r->status, 2, "unknown command: exit %d", r->status);
	cr_assert_not_null(strstr(r->err, "frobnicate"), "%s", r->err);
	r = ctl(NULL);
	cr_assert_eq(r->status, 2, "no command: exit %d", r->status);
	r = ctl("devices", "extra", NULL);
	cr_assert_eq(r->status, 2, "devices with an argument: exit %d", r->status);
}

/* The global options stand before or after the command (up to "--"). */
Test(ctl, options_before_or_after_the_command)
{
	static const char *const lines[][4] = {
		{ "--json", "devices", NULL }, { "devices", "--json", NULL }, { "-j", "devices", NULL },
		{ "devices", "-j", NULL },     { "map", "list", "--json" },   { "map", "--json", "list" },
		{ "stat", "--json", NULL },    { "stat", "--all", "--json" }, { "--json", "stat", "--all" },
	};
	struct ctl_run *r;

	/* Other users of the machine's runtime directory may list more than
	 * CTL_OUT_MAX of connections: stat sees ours alone. */
	cr_assert_not_null(tu_isolated_rundir());
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		r = ctl(lines[i][0], lines[i][1], lines[i][2], NULL);
		cr_expect_eq(r->status, 0, "%s %s %s: exit %d: %s", lines[i][0], lines[i][1], lines[i][2] ? lines[i][2] : "",
			     r->status, r->err);
		cr_expect(framed(r->out, "{", '}'), "%s %s %s: not JSON: %s", lines[i][0], lines[i][1],
			  lines[i][2] ? lines[i][2] : "", r->out);
	}
	r = ctl("map", "list", NULL);
	cr_expect_eq(r->status, 0);
	cr_expect(strncmp(r->out, "NODE", 4) == 0, "without --json: %s", r->out);
	for (int i = 0; i < 3; i++) {
		r = i == 0 ? ctl("--version", NULL) : i == 1 ? ctl("stat", "--version", NULL) : ctl("-V", NULL);
		cr_expect_eq(r->status, 0);
		cr_expect(strncmp(r->out, "scilan_ctl ", 11) == 0 && strchr(r->out, '\n'), "version: %s", r->out);
	}
	r = ctl("devices", "--help", NULL);
	cr_expect_eq(r->status, 0);
	cr_expect(strstr(r->out, "usage: scilan_ctl"), "%s", r->out);
	/* After "--" nothing is an option: stat takes no argument. */
	r = ctl("stat", "--", "--json", NULL);
	cr_expect_eq(r->status, 2, "stat -- --json: exit %d", r->status);
	r = ctl("devices", "--frobnicate", NULL);
	cr_expect_eq(r->status, 2, "unknown option after the command: exit %d", r->status);
	r = ctl("--frobnicate", "devices", NULL);
	cr_expect_eq(r->status, 2, "unknown option before the command: exit %d", r->status);
	cr_expect(strstr(r->err, "frobnicate"), "%s", r->err);
}

/* ---- stat ----------------------------------------------------------------- */

Test(ctl, stat_shows_live_connection_counters)
{
	char buf[12345], expect_pid[32], expect_tx[48];
	int c, s;

	memset(buf, 'z', sizeof(buf));
	pair_or_die(0, 0, &c, &s);
	cr_assert_eq(tu_send_all(c, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	cr_assert_eq(tu_recv_all(s, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	tu_grow_up(); /* the bytes counted before the file are carried into it */
	struct ctl_run *r = ctl("--json", "stat", NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	snprintf(expect_pid, sizeof(expect_pid), "{\"pid\":%d,", (int)getpid());
	snprintf(expect_tx, sizeof(expect_tx), "\"tx_bytes\":%zu,\"rx_bytes\":0,", sizeof(buf));
	cr_assert(strstr(r->out, expect_pid), "our process is not listed: %s", r->out);
	cr_assert(strstr(r->out, expect_tx), "the sender's counters are not live: %s", r->out);
	/* Each connection's fabric: both ends of a local pair ride shm. */
	cr_assert(strstr(r->out, "\"fabric\":\"shm\"") && !strstr(r->out, "\"fabric\":\"dev\""),
		  "the fabric is not shown: %s", r->out);
	r = ctl("stat", NULL);
	cr_assert_eq(r->status, 0);
	cr_assert(strstr(r->out, "TX bytes") && strstr(r->out, "12345"), "%s", r->out);
	cr_assert(strstr(r->out, "FABRIC") && strstr(r->out, " shm "), "no FABRIC column: %s", r->out);
	scilan_close(c);
	scilan_close(s);
	r = ctl("--json", "stat", NULL);
	cr_assert_null(strstr(r->out, expect_pid), "closed connections still listed: %s", r->out);
}

/* A process in its first 10 ms lists its accelerated connections at its
 * first wait after them, not on their connect's path (young.h); one that
 * went to sleep in that wait wakes for it: listed, with the bytes it sent
 * before, while still asleep. */
struct sleeper {
	uint16_t port;
	_Atomic int connected;
};

static int connect_send_and_sleep(void *p)
{
	struct sleeper *sl = p;
	char b[100], path[PATH_MAX];
	int fd = tu_connect(AF_INET, sl->port);

	memset(b, 'y', sizeof(b));
	TU_CHECK(fd >= 0 && tu_accelerated(fd) == 1, "not accelerated");
	TU_CHECK(scilan_send(fd, b, sizeof(b), 0) == (ssize_t)sizeof(b), "send");
	snprintf(path, sizeof(path), "%s/stats/%d", getenv("SCILAN_RUNDIR"), (int)getpid());
	TU_CHECK(access(path, F_OK) != 0, "%s made on the first connection's path", path);
	atomic_store(&sl->connected, 1);
	TU_CHECK(scilan_recv(fd, b, 1, 0) == 1, "recv"); /* asleep until the parent says */
	scilan_close(fd);
	return 0;
}

Test(ctl, stat_lists_a_young_process_asleep_in_its_first_wait, .timeout = 60)
{
	struct sleeper *sl = tu_shared_alloc(sizeof(*sl));
	const char *rundir = tu_isolated_rundir();
	char path[PATH_MAX], expect[64], buf[100], st[128];
	struct tu_child kid;
	struct ctl_run *r = NULL;
	int l, fd;

	cr_assert_not_null(rundir);
	l = tu_listen(AF_INET, 4, &sl->port);
	cr_assert_geq(l, 0);
	cr_assert_eq(tu_spawn(&kid, connect_send_and_sleep, sl), 0);
	fd = tu_accept(l);
	cr_assert_geq(fd, 0, "%s", strerror(errno));
	cr_assert_eq(tu_recv_all(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	snprintf(path, sizeof(path), "%s/stats/%d", rundir, (int)kid.pid);
	snprintf(expect, sizeof(expect), "\"tx_bytes\":%zu,", sizeof(buf));
	/* Bounded far above the 10 ms: a loaded machine, a sanitizer. */
	for (int i = 0; i < 500; i++) {
		if (access(path, F_OK) == 0) {
			r = ctl("--json", "stat", NULL);
			if (strstr(r->out, expect))
				break;
		}
		tu_sleep_ms(10);
	}
	cr_expect_eq(access(path, F_OK), 0, "no statistics file of the sleeping process %d", (int)kid.pid);
	cr_expect(r && strstr(r->out, expect), "its connection is not listed with its bytes: %s", r ? r->out : "");
	cr_assert_eq(scilan_send(fd, "z", 1, 0), 1);
	tu_reap(&kid);
	cr_expect(tu_exited_with(&kid, 0), "child %s:\n%s", tu_status_str(&kid, st, sizeof(st)), kid.output);
	scilan_close(fd);
	scilan_close(l);
}

/* An IPv4 peer of a dual-stack listener: the accepted socket's kernel name is
 * ::ffff:127.0.0.1, which stat shows as the IPv4 address it is, as the
 * registry keys it (one address key for the library). */
Test(ctl, stat_shows_v4_mapped_addresses_as_ipv4)
{
	struct sockaddr_in6 any6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(any6);
	char expect[64];
	int off = 0, l, c, s;

	cr_assert_not_null(tu_isolated_rundir()); /* our connections alone */
	l = scilan_socket(AF_INET6, SOCK_STREAM, 0);
	cr_assert_geq(l, 0);
	cr_assert_eq(scilan_setsockopt(l, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)), 0);
	cr_assert_eq(scilan_bind(l, (struct sockaddr *)&any6, sizeof(any6)), 0, "%s", strerror(errno));
	cr_assert_eq(scilan_listen(l, 4), 0);
	cr_assert_eq(getsockname(l, (struct sockaddr *)&any6, &len), 0);
	to.sin_port = any6.sin6_port;
	c = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(scilan_connect(c, (struct sockaddr *)&to, sizeof(to)), 0, "%s", strerror(errno));
	s = scilan_accept(l, NULL, NULL);
	cr_assert_geq(s, 0, "%s", strerror(errno));
	tu_grow_up();
	struct ctl_run *r = ctl("--json", "stat", "--all", NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	snprintf(expect, sizeof(expect), "\"local\":\"127.0.0.1:%u\"", (unsigned)ntohs(to.sin_port));
	cr_expect(strstr(r->out, expect), "the accepted end is not listed at %s: %s", expect, r->out);
	cr_expect_null(strstr(r->out, "ffff"), "a v4-mapped address is listed: %s", r->out);
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
}

/* A pid proves nothing (another process may have it by now): a statistics
 * file that no live process holds is not listed, and is removed. */
Test(ctl, stat_drops_files_no_process_holds)
{
	static struct sl_stats_map ghost;
	const char *rundir = tu_isolated_rundir();
	char path[PATH_MAX], expect_pid[32];
	int c, s, fd;

	cr_assert_not_null(rundir);
	pair_or_die(0, 0, &c, &s); /* a live file of ours beside it */
	tu_grow_up();
	ghost.hdr.magic = SL_STATS_MAGIC;
	ghost.hdr.pid = 1; /* alive, and not a scilan process */
	ghost.hdr.slots = SL_STATS_SLOTS;
	snprintf(ghost.hdr.comm, sizeof(ghost.hdr.comm), "ghost");
	ghost.slot[0].in_use = 1;
	ghost.slot[0].fd = 99;
	snprintf(path, sizeof(path), "%s/stats/1", rundir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, &ghost, sizeof(ghost)), (ssize_t)sizeof(ghost));
	close(fd);
	struct ctl_run *r = ctl("--json", "stat", NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	snprintf(expect_pid, sizeof(expect_pid), "{\"pid\":%d,", (int)getpid());
	cr_expect(strstr(r->out, expect_pid), "our process is not listed: %s", r->out);
	cr_expect_null(strstr(r->out, "ghost"), "a file no process holds is listed: %s", r->out);
	cr_expect_neq(access(path, F_OK), 0, "%s was not removed", path);
	scilan_close(c);
	scilan_close(s);
}

Test(ctl, stat_rejects_bad_watch_interval)
{
	struct ctl_run *r = ctl("stat", "--watch", "0", NULL);

	cr_assert_eq(r->status, 2);
	cr_assert(strstr(r->err, "--watch"), "%s", r->err);
}
