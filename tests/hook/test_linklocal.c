/* test_linklocal.c — IPv6 link-local addresses with a scope id (fe80::1%d0),
 * in a network namespace of our own (made and removed here) whose veth pair
 * d0/d1 carries fe80::1 on both ends: accelerated to a wildcard or a scoped
 * listener, and two listeners of one address and port on two interfaces
 * are two listeners.  The host's interfaces are never touched. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner.h"

#define BYTES 1000000L

static char ns[32];
static bool made;


/* The namespace's name carries our pid (tests of other runs never
 * collide); the interfaces live inside it, so their names cannot. */
static void link_up(void)
{
	snprintf(ns, sizeof(ns), "slhk-%d-ll", (int)getpid());
	cr_assert_eq(geteuid(), 0, "the link-local test needs root (a network namespace)");
	made = true;
	cr_assert_eq(hk_sh("ip netns add %s", ns), 0, "ip netns add");
	/* nodad: usable at once, no duplicate address detection to wait for. */
	cr_assert_eq(hk_sh("ip -n %s link add d0 type veth peer name d1 && ip -n %s link set lo up && "
			"ip -n %s link set d0 up && ip -n %s link set d1 up && "
			"ip -n %s addr add fe80::1/64 dev d0 nodad && ip -n %s addr add fe80::1/64 dev d1 nodad",
			ns, ns, ns, ns, ns, ns),
		     0, "veth pair d0/d1 with fe80::1 on both");
}

static void link_down(void)
{
	if (made)
		hk_sh("ip netns del %s 2>/dev/null", ns);
	made = false;
}

TestSuite(linklocal, .init = link_up, .fini = link_down, .timeout = 180);

/* The server listens on listen_addr, the client connects to connect_addr:
 * plain for the reference transcript, then both preloaded, accelerated,
 * every byte echoed in order, nothing on stderr but the stats lines. */
static void run_case(const char *what, const char *listen_addr, const char *connect_addr)
{
	struct hk_env plain = { .netns = ns }, pre = { .preload = true, .netns = ns };
	struct hk_out rs, rc, s, c;
	char *rundir, *conf, *tmp = hk_tmpdir(&rundir, &conf), label[160];

	hk_run_pair(&plain, &plain, listen_addr, connect_addr, BYTES, &rs, &rc, 60);
	cr_assert_eq(rc.rc, 0, "%s: plain client: %s%s", what, rc.out, rc.err);
	cr_assert(strstr(rc.out, "intact 1"), "%s: plain client: %s", what, rc.out);
	pre.rundir = rundir;
	pre.conf = conf;
	hk_run_pair(&pre, &pre, listen_addr, connect_addr, BYTES, &s, &c, 60);
	hk_rmtree(tmp);
	snprintf(label, sizeof(label), "%s: server", what);
	hk_check_run(label, &rs, &s, true, 1, 0);
	snprintf(label, sizeof(label), "%s: client", what);
	hk_check_run(label, &rc, &c, true, 1, 0);
	cr_expect_eq(hk_stat_sum(c.err, "tx"), BYTES, "%s: client tx through scilan:\n%s", what, c.err);
	hk_out_free(&rs);
	hk_out_free(&rc);
	hk_out_free(&s);
	hk_out_free(&c);
	free(tmp);
	free(rundir);
	free(conf);
}

Test(linklocal, wildcard_listener_scoped_destination_accelerated)
{
	run_case("[::] listener, client to fe80::1%d0", "::", "fe80::1%d0");
}

Test(linklocal, scoped_listener_scoped_destination_accelerated)
{
	run_case("fe80::1%d1 listener and client", "fe80::1%d1", "fe80::1%d1");
}

/* A preloaded `peer server ADDR PORT` (PORT 0: any), started; its port. */
static unsigned start_server(struct hk_proc *p, const struct hk_env *e, const char *addr, unsigned port)
{
	char arg[16], line[64];
	const char *argv[] = { hk_prog("peer"), "server", addr, arg, NULL };
	unsigned got = 0;

	snprintf(arg, sizeof(arg), "%u", port);
	hk_start(p, e, argv);
	if (!hk_read_line(p, line, sizeof(line), 30) || sscanf(line, "port %u", &got) != 1) {
		struct hk_out o;

		hk_finish(p, &o, 5);
		cr_assert_fail("peer server on %s did not start: rc %d\n%s%s", addr, o.rc, o.out, o.err);
	}
	return got;
}

/* One preloaded client (argv); the server that took it (p) must have
 * served every byte, and both ends say accelerated. */
static void client_runs(const struct hk_env *e, struct hk_proc *p, const char *const argv[], const char *addr)
{
	char served[64];
	struct hk_out c, s;

	hk_run(e, argv, &c, 60);
	hk_finish(p, &s, 60);
	snprintf(served, sizeof(served), "served %ld bytes, then EOF", BYTES);
	cr_expect_eq(c.rc, 0, "client to %s: rc %d\n%s%s", addr, c.rc, c.out, c.err);
	cr_expect(strstr(c.out, "intact 1"), "client to %s: %s", addr, c.out);
	cr_expect(strstr(s.out, served), "the server on %s: %s%s", addr, s.out, s.err);
	cr_expect_eq(hk_stat_sum(c.err, "accelerated"), 1, "client to %s not accelerated:\n%s", addr, c.err);
	cr_expect_eq(hk_stat_sum(s.err, "accelerated"), 1, "the server on %s not accelerated:\n%s", addr, s.err);
	cr_expect_eq(hk_stat_sum(c.err, "tx"), BYTES, "client to %s: tx through scilan:\n%s", addr, c.err);
	hk_out_free(&c);
	hk_out_free(&s);
}

static void client_reaches(const struct hk_env *e, struct hk_proc *p, const char *addr, unsigned port)
{
	char arg[16], nbytes[24];
	const char *argv[] = { hk_prog("peer"), "client", addr, arg, nbytes, NULL };

	snprintf(arg, sizeof(arg), "%u", port);
	snprintf(nbytes, sizeof(nbytes), "%ld", BYTES);
	client_runs(e, p, argv, addr);
}

/* fe80::1 port P on d0 and on d1 are two listeners: the second one's
 * rendezvous and registry entry are its own, and each client's offer goes
 * to the listener the kernel connects it to. */
Test(linklocal, same_address_and_port_on_two_interfaces_are_two_listeners)
{
	struct hk_env e = { .preload = true, .netns = ns };
	char *rundir, *conf, *tmp = hk_tmpdir(&rundir, &conf);
	struct hk_proc on_d0, on_d1;
	unsigned port;

	e.rundir = rundir;
	e.conf = conf;
	port = start_server(&on_d0, &e, "fe80::1%d0", 0);
	cr_assert_eq(start_server(&on_d1, &e, "fe80::1%d1", port), port);
	/* The second listener first: it is the one whose names were taken. */
	client_reaches(&e, &on_d1, "fe80::1%d1", port);
	client_reaches(&e, &on_d0, "fe80::1%d0", port);
	hk_rmtree(tmp);
	free(tmp);
	free(rundir);
	free(conf);
}

/* A link-local destination without a scope goes out of the interface the
 * socket is bound to (here by binding a link-local address): so is it
 * looked up. */
Test(linklocal, unscoped_destination_from_a_scoped_socket_accelerated)
{
	struct hk_env e = { .preload = true, .netns = ns };
	char *rundir, *conf, *tmp = hk_tmpdir(&rundir, &conf), port[16], nbytes[24];
	const char *argv[] = { hk_prog("peer"), "client", "fe80::1", port, nbytes, "fe80::1%d0", NULL };
	struct hk_proc server;

	e.rundir = rundir;
	e.conf = conf;
	snprintf(port, sizeof(port), "%u", start_server(&server, &e, "fe80::1%d0", 0));
	snprintf(nbytes, sizeof(nbytes), "%ld", BYTES);
	client_runs(&e, &server, argv, "fe80::1 from fe80::1%d0");
	hk_rmtree(tmp);
	free(tmp);
	free(rundir);
	free(conf);
}
