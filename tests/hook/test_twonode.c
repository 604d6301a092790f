/* test_twonode.c — two network namespaces joined by a veth pair (made and removed
 * here), server in one, client in the other, one SCILAN_RUNDIR: accelerated only
 * when both are preloaded and the map lists the server's node; data checked always.
 * Also: a wildcard listener accelerates only connections to its own node. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner.h"

#define BYTES 2000000L

static char ns_a[32], ns_b[32], veth_a[16], veth_b[16], addr_a[32], addr_b[32], addr6_a[48], addr6_b[48];
static bool made, have_v6;


/* Names carry our pid: tests of other runs (or other agents) on this host
 * never collide.  Addresses live inside the namespaces, so they cannot. */
static void nodes_up(void)
{
	int id = (int)getpid();

	snprintf(ns_a, sizeof(ns_a), "slhk-%d-a", id);
	snprintf(ns_b, sizeof(ns_b), "slhk-%d-b", id);
	snprintf(veth_a, sizeof(veth_a), "slh%da", id % 1000000);
	snprintf(veth_b, sizeof(veth_b), "slh%db", id % 1000000);
	snprintf(addr_a, sizeof(addr_a), "10.77.%d.1", 10 + id % 240);
	snprintf(addr_b, sizeof(addr_b), "10.77.%d.2", 10 + id % 240);
	snprintf(addr6_a, sizeof(addr6_a), "fd77:%x::1", 10 + id % 240);
	snprintf(addr6_b, sizeof(addr6_b), "fd77:%x::2", 10 + id % 240);
	cr_assert_eq(geteuid(), 0, "the two-node test needs root (network namespaces)");
	made = true;
	cr_assert_eq(hk_sh("ip netns add %s && ip netns add %s", ns_a, ns_b), 0, "ip netns add");
	cr_assert_eq(hk_sh("ip link add %s type veth peer name %s && ip link set %s netns %s && ip link set %s netns %s",
			veth_a, veth_b, veth_a, ns_a, veth_b, ns_b),
		     0, "veth pair");
	cr_assert_eq(hk_sh("ip -n %s addr add %s/24 dev %s && ip -n %s addr add %s/24 dev %s", ns_a, addr_a, veth_a, ns_b,
			addr_b, veth_b),
		     0, "addresses");
	/* nodad: usable at once, no duplicate address detection to wait for.
	 * A kernel without IPv6 skips the IPv6 cases only. */
	have_v6 = hk_sh("ip -n %s addr add %s/64 dev %s nodad 2>/dev/null && ip -n %s addr add %s/64 dev %s nodad "
		     "2>/dev/null",
		     ns_a, addr6_a, veth_a, ns_b, addr6_b, veth_b) == 0;
	cr_assert_eq(hk_sh("ip -n %s link set lo up && ip -n %s link set lo up && ip -n %s link set %s up && "
			"ip -n %s link set %s up",
			ns_a, ns_b, ns_a, veth_a, ns_b, veth_b),
		     0, "links up");
}

static void nodes_down(void)
{
	if (!made)
		return;
	/* Deleting a namespace deletes its end of the veth, and so the pair. */
	hk_sh("ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null", ns_a, ns_b);
	made = false;
}

static void write_conf(const char *conf, bool node_a, bool node_b)
{
	FILE *f = fopen(conf, "w");

	cr_assert(f, "%s", conf);
	if (node_a)
		fprintf(f, "1 %s shm\n", addr_a);
	if (node_b)
		fprintf(f, "2 %s shm\n", addr_b);
	fclose(f);
}

/* The server in node A listens on listen ("addr" or "any"), the client in
 * node B connects to A's address; map lists A and/or B. */
/* Each end in pid and mount namespaces of its own, with its own /proc, as a
 * container runtime starts a program. */
static const char *const own_pidns[] = { "/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "--kill-child", NULL };

/* The same as run_case, each end run inside wrap (NULL: as it is); the
 * client's statistics line is returned in *client_err (malloc'ed) when
 * client_err is not NULL. */
static void run_case_in(const char *what, const char *listen, bool server_preload, bool client_preload, bool map_a,
			bool map_b, long accelerated, const char *const *wrap, char **client_err)
{
	struct hk_env pa = { .netns = ns_a }, pb = { .netns = ns_b }, se, ce;
	struct hk_out rs, rc, s, c;
	char *rundir, *conf, *tmp = hk_tmpdir(&rundir, &conf), label[160];
	const char *laddr = strcmp(listen, "any") == 0 ? "0.0.0.0" : addr_a;

	/* Reference: the same programs, plain, over the veth. */
	hk_run_pair(&pa, &pb, laddr, addr_a, BYTES, &rs, &rc, 60);
	cr_assert_eq(rs.rc, 0, "%s: plain server: %s%s", what, rs.out, rs.err);
	cr_assert_eq(rc.rc, 0, "%s: plain client: %s%s", what, rc.out, rc.err);
	cr_assert(strstr(rc.out, "intact 1"), "%s: plain client: %s", what, rc.out);
	write_conf(conf, map_a, map_b);
	se = (struct hk_env){ .preload = server_preload, .rundir = rundir, .conf = conf, .netns = ns_a, .wrap = wrap };
	ce = (struct hk_env){ .preload = client_preload, .rundir = rundir, .conf = conf, .netns = ns_b, .wrap = wrap };
	hk_run_pair(&se, &ce, laddr, addr_a, BYTES, &s, &c, 60);
	hk_rmtree(tmp);
	snprintf(label, sizeof(label), "%s: server", what);
	hk_check_run(label, &rs, &s, server_preload, accelerated, -1);
	snprintf(label, sizeof(label), "%s: client", what);
	hk_check_run(label, &rc, &c, client_preload, accelerated, -1);
	if (accelerated > 0)
		cr_expect_eq(hk_stat_sum(c.err, "tx"), BYTES, "%s: client tx through scilan:\n%s", what, c.err);
	if (client_err)
		*client_err = strdup(c.err);
	hk_out_free(&rs);
	hk_out_free(&rc);
	hk_out_free(&s);
	hk_out_free(&c);
	free(tmp);
	free(rundir);
	free(conf);
}

static void run_case(const char *what, const char *listen, bool server_preload, bool client_preload, bool map_a,
		     bool map_b, long accelerated)
{
	run_case_in(what, listen, server_preload, client_preload, map_a, map_b, accelerated, NULL, NULL);
}

TestSuite(twonode, .init = nodes_up, .fini = nodes_down, .timeout = 180);

/* Containers with their own network and pid namespaces, one runtime
 * directory and a map: an offer file names its connector by a pid the
 * other end's /proc does not show, so the connector does not offer (no
 * second spent waiting for an agreement that cannot come), and says why. */
Test(twonode, own_pid_namespaces_kernel_tcp_said_at_connect)
{
	char *err = NULL;

	run_case_in("own pid namespaces", "addr", true, true, true, true, 0, own_pidns, &err);
	cr_expect(strstr(err, "fallback reasons: pid-namespace 1"), "the client's reason:\n%s", err);
	free(err);
}

Test(twonode, both_preloaded_map_lists_both_nodes_accelerated)
{
	run_case("map lists both", "addr", true, true, true, true, 1);
}

Test(twonode, both_preloaded_map_lists_server_node_accelerated)
{
	run_case("map lists the server's node", "addr", true, true, true, false, 1);
}

Test(twonode, wildcard_listener_map_lists_both_accelerated)
{
	run_case("wildcard listener", "any", true, true, true, true, 1);
}

Test(twonode, map_lacks_server_node_kernel_tcp)
{
	run_case("map lacks the server's node", "addr", true, true, false, true, 0);
}

Test(twonode, empty_map_kernel_tcp)
{
	run_case("empty map", "addr", true, true, false, false, 0);
}

Test(twonode, server_not_preloaded_kernel_tcp)
{
	run_case("server plain", "addr", false, true, true, true, 0);
}

Test(twonode, client_not_preloaded_kernel_tcp)
{
	run_case("client plain", "addr", true, false, true, true, 0);
}

/* One run of the wrong-destination case: node B runs a plain echo server at
 * b_addr; node A a wildcard listener (wildcard) on the same port, which never
 * accepts, and a client connecting to b_addr.  With preload_a, both programs
 * in A run under the hook, sharing one runtime directory. */
static void wrong_destination_run(const char *wildcard, const char *b_addr, bool preload_a, struct hk_out *srv,
				  struct hk_out *cli)
{
	struct hk_env pb = { .netns = ns_b }, ea;
	char *rundir, *conf, *tmp = hk_tmpdir(&rundir, &conf), line[64], port[16], nbytes[24];
	const char *bargv[] = { hk_prog("peer"), "server", b_addr, NULL };
	struct hk_proc bp, ap;
	struct hk_out lo;

	ea = (struct hk_env){ .preload = preload_a, .rundir = rundir, .conf = conf, .netns = ns_a };
	hk_start(&bp, &pb, bargv);
	cr_assert(hk_read_line(&bp, line, sizeof(line), 30) && sscanf(line, "port %15s", port) == 1,
		  "echo server in B did not start");
	{
		const char *aargv[] = { hk_prog("peer"), "server", wildcard, port, NULL };
		const char *cargv[] = { hk_prog("peer"), "client", b_addr, port, nbytes, NULL };

		hk_start(&ap, &ea, aargv);
		cr_assert(hk_read_line(&ap, line, sizeof(line), 30), "wildcard listener in A did not start");
		snprintf(nbytes, sizeof(nbytes), "%ld", BYTES);
		hk_run(&ea, cargv, cli, 60);
	}
	hk_finish(&bp, srv, 30);
	memmove(srv->out, srv->out + bp.ocons, strlen(srv->out + bp.ocons) + 1); /* its port line */
	/* The listener in A waits for a connection that must never come. */
	kill(-ap.pid, SIGKILL);
	hk_finish(&ap, &lo, 10);
	cr_expect(!strstr(lo.out, "accepted"), "the wildcard listener in A accepted a connection meant for B:\n%s",
		  lo.out);
	hk_out_free(&lo);
	hk_rmtree(tmp);
	free(tmp);
	free(rundir);
	free(conf);
}

static void wrong_destination(const char *what, const char *wildcard, const char *b_addr)
{
	struct hk_out rs, rc, s, c;
	char label[160];

	wrong_destination_run(wildcard, b_addr, false, &rs, &rc);
	cr_assert_eq(rc.rc, 0, "%s: plain client: %s%s", what, rc.out, rc.err);
	cr_assert(strstr(rc.out, "intact 1"), "%s: plain client: %s", what, rc.out);
	wrong_destination_run(wildcard, b_addr, true, &s, &c);
	snprintf(label, sizeof(label), "%s: echo server in B", what);
	hk_check_run(label, &rs, &s, false, -1, -1);
	snprintf(label, sizeof(label), "%s: client in A", what);
	hk_check_run(label, &rc, &c, true, 0, -1);
	hk_out_free(&rs);
	hk_out_free(&rc);
	hk_out_free(&s);
	hk_out_free(&c);
}

Test(twonode, wildcard_listener_port_elsewhere_kernel_tcp)
{
	wrong_destination("IPv4", "0.0.0.0", addr_b);
}

Test(twonode, wildcard_listener_port_elsewhere_ipv6_kernel_tcp)
{
	if (!have_v6)
		cr_skip_test("no IPv6 in the namespaces");
	wrong_destination("IPv6", "::", addr6_b);
}

Test(twonode, dual_stack_listener_port_elsewhere_kernel_tcp)
{
	if (!have_v6)
		cr_skip_test("no IPv6 in the namespaces");
	wrong_destination("dual-stack listener, IPv4 destination", "::", addr_b);
}

/* The other side of the same rule: a wildcard listener does serve its own
 * node's non-loopback address (no cluster map needed). */
static void own_address(const char *what, const char *wildcard, const char *a_addr)
{
	struct hk_env pa = { .netns = ns_a }, e;
	struct hk_out rs, rc, s, c;
	char *rundir, *conf, *tmp = hk_tmpdir(&rundir, &conf), label[160];

	hk_run_pair(&pa, &pa, wildcard, a_addr, BYTES, &rs, &rc, 60);
	cr_assert_eq(rc.rc, 0, "%s: plain client: %s%s", what, rc.out, rc.err);
	e = (struct hk_env){ .preload = true, .rundir = rundir, .conf = conf, .netns = ns_a };
	hk_run_pair(&e, &e, wildcard, a_addr, BYTES, &s, &c, 60);
	hk_rmtree(tmp);
	snprintf(label, sizeof(label), "%s: server", what);
	hk_check_run(label, &rs, &s, true, 1, -1);
	snprintf(label, sizeof(label), "%s: client", what);
	hk_check_run(label, &rc, &c, true, 1, -1);
	hk_out_free(&rs);
	hk_out_free(&rc);
	hk_out_free(&s);
	hk_out_free(&c);
	free(tmp);
	free(rundir);
	free(conf);
}

Test(twonode, wildcard_listener_own_address_accelerated)
{
	own_address("IPv4", "0.0.0.0", addr_a);
}

Test(twonode, wildcard_listener_own_address_ipv6_accelerated)
{
	if (!have_v6)
		cr_skip_test("no IPv6 in the namespaces");
	own_address("IPv6", "::", addr6_a);
}

/* Two containers of one pod: one network namespace, each in pid, mount and
 * user namespaces of its own (root inside, mapped to root), each with a
 * runtime directory of its own and no map.  Offers pass through the
 * rendezvous (an abstract socket of the network namespace), which needs no
 * shared directory and no /proc: accelerated, bytes intact. */
Test(twonode, pod_containers_own_pid_mount_user_namespaces_accelerated)
{
	static const char *const container[] = { "/usr/bin/unshare", "--user", "--map-root-user", "--pid", "--fork",
						 "--mount-proc", "--kill-child", NULL };
	struct hk_env pa = { .netns = ns_a }, se, ce;
	struct hk_out rs, rc, s, c;
	char *rundir, *conf, *rundir2, *conf2, *tmp = hk_tmpdir(&rundir, &conf), *tmp2 = hk_tmpdir(&rundir2, &conf2);

	hk_run_pair(&pa, &pa, addr_a, addr_a, BYTES, &rs, &rc, 60);
	cr_assert(rc.rc == 0 && strstr(rc.out, "intact 1"), "plain client: %s%s", rc.out, rc.err);
	se = (struct hk_env){ .preload = true, .rundir = rundir, .netns = ns_a, .wrap = container };
	ce = (struct hk_env){ .preload = true, .rundir = rundir2, .netns = ns_a, .wrap = container };
	hk_run_pair(&se, &ce, addr_a, addr_a, BYTES, &s, &c, 60);
	hk_rmtree(tmp);
	hk_rmtree(tmp2);
	hk_check_run("pod: server", &rs, &s, true, 1, 0);
	hk_check_run("pod: client", &rc, &c, true, 1, 0);
	cr_expect_eq(hk_stat_sum(c.err, "tx"), BYTES, "pod: client tx through scilan:\n%s", c.err);
	hk_out_free(&rs);
	hk_out_free(&rc);
	hk_out_free(&s);
	hk_out_free(&c);
	free(tmp);
	free(tmp2);
	free(rundir);
	free(rundir2);
	free(conf);
	free(conf2);
}
