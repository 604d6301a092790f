/* test_fabric.c — the choice of fabric without a device: SCILAN_FABRIC=dev
 * makes every connection plain kernel TCP and says so once; a bad value is
 * reported and ignored; unset, each destination chooses (this host's and shm
 * nodes' addresses over shm, a dev node's over the device, link-down without
 * one); and the cluster map's dev lines with a DEVICE, parsed directly.
 * Criterion runs each test in its own process: SCILAN_FABRIC is read once. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/cluster_map.h"
#include "fabric/fabric.h"
#include "runtime/fallback.h"
#include "scilan.h"
#include "socket/sock_state.h"
#include "testutil.h"

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* A pair over loopback with its accelerated flags, and one exchange. */
static void pair_and_talk(int *acc_c, int *acc_s)
{
	int c, s;
	char buf[5] = "";

	cr_assert_eq(tu_pair(AF_INET, &c, &s), 0, "pair: %s", strerror(errno));
	*acc_c = tu_accelerated(c);
	*acc_s = tu_accelerated(s);
	cr_assert_eq(tu_send_all(c, "ping", 4, 0), 4);
	cr_assert_eq(tu_recv_all(s, buf, 4), 4);
	cr_assert_str_eq(buf, "ping");
	cr_assert_eq(tu_send_all(s, "pong", 4, 0), 4);
	cr_assert_eq(tu_recv_all(c, buf, 4), 4);
	cr_assert_str_eq(buf, "pong");
	scilan_close(c);
	scilan_close(s);
}

Test(fabric, dev_forced_without_device_is_plain_tcp_and_reported)
{
	int token, acc_c, acc_s;
	char *err;

	if (sl_dev_present())
		cr_skip_test("this machine has a /dev/scilanN");
	tu_isolated_rundir();
	cr_assert_eq(tu_cluster_map("1 127.0.0.1 dev scilan0\n"), 0);
	setenv("SCILAN_FABRIC", "dev", 1);
	token = tu_capture_begin();
	pair_and_talk(&acc_c, &acc_s);
	pair_and_talk(&acc_c, &acc_s);
	err = tu_capture_end(token);
	cr_assert_eq(acc_c, 0, "client accelerated without a device");
	cr_assert_eq(acc_s, 0, "server accelerated without a device");
	cr_assert_str_eq(sl_fabric_forced()->name, "dev");
	cr_assert_eq(count(err, "SCILAN_FABRIC=dev but no /dev/scilanN exists; every connection uses kernel TCP"), 1,
		     "not reported exactly once: %s", err);
	free(err);
}

Test(fabric, bad_value_is_reported_and_default_used)
{
	int token, acc_c, acc_s;
	char *err;

	if (sl_dev_present())
		cr_skip_test("this machine has a /dev/scilanN");
	tu_isolated_rundir();
	setenv("SCILAN_FABRIC", "ib", 1);
	token = tu_capture_begin();
	pair_and_talk(&acc_c, &acc_s);
	err = tu_capture_end(token);
	cr_assert_not_null(strstr(err, "SCILAN_FABRIC=ib is not one of shm|dev; each destination chooses its fabric"),
			   "%s", err);
	cr_assert_null(sl_fabric_forced());
	cr_assert_eq(acc_c, 1);
	cr_assert_eq(acc_s, 1);
	free(err);
}

Test(fabric, shm_forced_accelerates)
{
	int acc_c, acc_s;

	tu_isolated_rundir();
	setenv("SCILAN_FABRIC", "shm", 1);
	pair_and_talk(&acc_c, &acc_s);
	cr_assert_str_eq(sl_fabric_forced()->name, "shm");
	cr_assert_eq(acc_c, 1);
	cr_assert_eq(acc_s, 1);
}

/* A network namespace of our own whose loopback also holds 10.99.0.1/24
 * (lo:1): 10.99.0.1 is this host's, and 10.99.0.2 is routed (through lo)
 * but nobody's, so a connect there stays in SYN_SENT.  Skips without the
 * privilege to make one. */
static void netns_with_addresses(void)
{
	struct ifreq ifr = { 0 };
	struct sockaddr_in *a = (struct sockaddr_in *)&ifr.ifr_addr;
	int fd;

	if (unshare(CLONE_NEWNET) < 0)
		cr_skip_test("unshare(CLONE_NEWNET): %s", strerror(errno));
	cr_assert_eq(tu_loopback_up(), 0, "lo up: %s", strerror(errno));
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	strcpy(ifr.ifr_name, "lo:1");
	a->sin_family = AF_INET;
	inet_pton(AF_INET, "10.99.0.1", &a->sin_addr);
	cr_assert_eq(ioctl(fd, SIOCSIFADDR, &ifr), 0, "10.99.0.1 on lo:1: %s", strerror(errno));
	inet_pton(AF_INET, "255.255.255.0", &a->sin_addr);
	cr_assert_eq(ioctl(fd, SIOCSIFNETMASK, &ifr), 0, "netmask: %s", strerror(errno));
	close(fd);
}

static struct sockaddr_in v4(const char *addr, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, addr, &sa.sin_addr);
	return sa;
}

/* A listener on the wildcard address, a client to addr:port, the accepted
 * socket; one exchange each way, and both ends' fabric. */
static void pair_at(const char *addr, bool *acc_c, bool *acc_s, const char **fab_c, const char **fab_s)
{
	struct sockaddr_in any = v4("0.0.0.0", 0), dst;
	socklen_t len = sizeof(any);
	char buf[5] = "";
	int l, c, s;

	l = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(l, 0);
	cr_assert_eq(scilan_bind(l, (struct sockaddr *)&any, sizeof(any)), 0, "bind: %s", strerror(errno));
	cr_assert_eq(scilan_listen(l, 4), 0);
	cr_assert_eq(getsockname(l, (struct sockaddr *)&any, &len), 0);
	dst = v4(addr, ntohs(any.sin_port));
	c = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(c, 0);
	cr_assert_eq(scilan_connect(c, (struct sockaddr *)&dst, sizeof(dst)), 0, "connect %s: %s", addr,
		     strerror(errno));
	s = scilan_accept(l, NULL, NULL);
	cr_assert_geq(s, 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_send_all(c, "ping", 4, 0), 4);
	cr_assert_eq(tu_recv_all(s, buf, 4), 4);
	cr_assert_str_eq(buf, "ping");
	cr_assert_eq(tu_send_all(s, "pong", 4, 0), 4);
	cr_assert_eq(tu_recv_all(c, buf, 4), 4);
	cr_assert_str_eq(buf, "pong");
	*acc_c = tu_accelerated(c) == 1;
	*acc_s = tu_accelerated(s) == 1;
	*fab_c = sl_sock_get(c)->fabric->name;
	*fab_s = sl_sock_get(s)->fabric->name;
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
}

/* SCILAN_FABRIC unset, a map whose dev lines name this host's addresses and
 * another node's (one map for every node): this host's, loopback or not, are
 * reached over shm, as its local connections always were, at both ends (the
 * client's source address is a dev address too); the other node's goes to
 * the device fabric, which without a device says link-down. */
Test(fabric, unset_each_destination_chooses)
{
	struct sockaddr_in far;
	bool acc_c, acc_s;
	const char *fab_c, *fab_s;
	struct sl_sock *st;
	int c, r;

	if (sl_dev_present())
		cr_skip_test("this machine has a /dev/scilanN");
	tu_isolated_rundir();
	netns_with_addresses();
	unsetenv("SCILAN_FABRIC");
	cr_assert_eq(tu_cluster_map("1 127.0.0.1 dev scilan0\n1 10.99.0.1 dev scilan0\n2 10.99.0.2 dev scilan0\n"), 0);

	pair_at("127.0.0.1", &acc_c, &acc_s, &fab_c, &fab_s);
	cr_expect(acc_c && acc_s, "127.0.0.1: accelerated client %d server %d", acc_c, acc_s);
	cr_expect_str_eq(fab_c, "shm");
	cr_expect_str_eq(fab_s, "shm");
	pair_at("10.99.0.1", &acc_c, &acc_s, &fab_c, &fab_s);
	cr_expect(acc_c && acc_s, "10.99.0.1: accelerated client %d server %d", acc_c, acc_s);
	cr_expect_str_eq(fab_c, "shm");
	cr_expect_str_eq(fab_s, "shm");

	/* Nobody answers there: the connect stays in progress, kernel TCP. */
	far = v4("10.99.0.2", 9);
	c = scilan_socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	cr_assert_geq(c, 0);
	r = scilan_connect(c, (struct sockaddr *)&far, sizeof(far));
	cr_assert(r == 0 || errno == EINPROGRESS, "connect 10.99.0.2: %s", strerror(errno));
	st = sl_sock_get(c);
	cr_assert_not_null(st);
	cr_expect_eq(tu_accelerated(c), 0);
	cr_expect_str_eq(sl_fb_name(st->fb_reason), "link-down");
	cr_expect_str_eq(st->fabric->name, "dev");
	scilan_close(c);
}

Test(fabric, map_dev_lines_with_device)
{
	struct sl_cluster_map map;
	char path[512], err[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/map", tu_tmpdir());
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("# nodes\n1 10.1.0.1 dev scilan3\n2 10.1.0.2 dev\n3 10.1.0.3\n4 fd00::4 shm\n", f);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(sl_cluster_map_load(path, &map, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(map.count, 4);
	cr_assert_eq(map.entries[0].fabric, SL_MAP_DEV);
	cr_assert_str_eq(map.entries[0].device, "scilan3");
	cr_assert_str_eq(map.entries[1].device, "scilan0", "default device");
	cr_assert_eq(map.entries[2].fabric, SL_MAP_SHM);
	cr_assert_str_eq(map.entries[2].device, "");
	sl_cluster_map_free(&map);

	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("1 10.1.0.1 dev scilan3\n\n2 10.1.0.2 dev /dev/scilan0\n", f);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(sl_cluster_map_load(path, &map, err, sizeof(err)), -1);
	cr_assert_not_null(strstr(err, ":3: DEVICE is not a /dev name"), "%s", err);
	cr_assert_eq(map.count, 0);
}
