/* test_fabric.c — the choice of fabric without a device (SCILAN_FABRIC=dev
 * makes every connection plain kernel TCP and says so once; a bad value is
 * reported and the default used) and the cluster map's dev lines with a
 * DEVICE, parsed directly.  Criterion runs each test in its own process, and
 * the fabric is chosen once per process. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/cluster_map.h"
#include "fabric/fabric.h"
#include "scilan.h"
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
	cr_assert_str_eq(sl_fabric()->name, "dev");
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
	cr_assert_not_null(strstr(err, "SCILAN_FABRIC=ib is not one of shm|dev; using shm"), "%s", err);
	cr_assert_str_eq(sl_fabric()->name, "shm");
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
	cr_assert_str_eq(sl_fabric()->name, "shm");
	cr_assert_eq(acc_c, 1);
	cr_assert_eq(acc_s, 1);
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
