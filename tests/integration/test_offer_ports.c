/* test_offer_ports.c — the port mark of offers through the rendezvous: an
 * accept looks into its listener's queue only for a client port in the
 * offers' range, every offer at connect comes from one, and a connect that
 * cannot have one (a port the program bound, a namespace range without it,
 * a range a squatter holds whole) is kernel TCP with every byte, at once.
 * Each test runs in a network namespace of its own, with the ephemeral
 * range it names.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "conn/promotion_trigger.h"
#include "fabric/shm/offer_port.h"
#include "runtime/fallback.h"
#include "runtime/sys.h"
#include "scilan.h"
#include "socket/sock_state.h"
#include "promote_helpers.h"
#include "testutil.h"

TestSuite(offer_ports, .timeout = 60);

static void own_namespace(const char *ephemeral)
{
	int fd;

	cr_assert_not_null(tu_isolated_rundir());
	tu_offer_always();
	if (unshare(CLONE_NEWNET) < 0)
		cr_skip_test("unshare(CLONE_NEWNET): %s", strerror(errno));
	cr_assert_eq(tu_loopback_up(), 0, "lo up: %s", strerror(errno));
	fd = open("/proc/sys/net/ipv4/ip_local_port_range", O_WRONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0, "ip_local_port_range: %s", strerror(errno));
	cr_assert_eq(write(fd, ephemeral, strlen(ephemeral)), (ssize_t)strlen(ephemeral));
	close(fd);
}

static _Atomic int polls;
static int (*real_poll)(struct pollfd *, nfds_t, int);

static int counting_poll(struct pollfd *p, nfds_t n, int timeout)
{
	polls++;
	return real_poll(p, n, timeout);
}

/* The polls one accept makes: the rendezvous look is one. */
static int accept_counting_polls(int l, int *polls_made)
{
	int s;

	real_poll = sl_sys.poll;
	polls = 0;
	sl_sys.poll = counting_poll;
	s = tu_accept(l);
	sl_sys.poll = real_poll;
	*polls_made = polls;
	return s;
}

static const char *reason(int fd)
{
	return sl_fb_name(sl_sock_get(fd)->fb_reason);
}

static void ping_both_ways(int c, int s)
{
	char got[4];

	cr_assert_eq(scilan_send(c, "ping", 4, 0), 4);
	cr_assert_eq(tu_recv_all(s, got, 4), 4);
	cr_assert_arr_eq(got, "ping", 4);
	cr_assert_eq(scilan_send(s, "pong", 4, 0), 4);
	cr_assert_eq(tu_recv_all(c, got, 4), 4);
	cr_assert_arr_eq(got, "pong", 4);
}

/* Our connect to a listener of family on loopback, and its accept. */
static void connected_pair(int family, int l, uint16_t port, int *c, int *s)
{
	*c = tu_connect(family, port);
	cr_assert_geq(*c, 0, "connect: %s", strerror(errno));
	*s = tu_accept(l);
	cr_assert_geq(*s, 0, "accept: %s", strerror(errno));
}

/* Both ports of a namespace whose range narrows ours to 57344-57345,
 * held by binds (another user's, say), to close after. */
static void squat_the_range(int squat[2])
{
	struct sockaddr_in any = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };

	for (int i = 0; i < 2; i++) {
		squat[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		any.sin_port = htons((uint16_t)(SL_OFFER_PORT_LO + i));
		cr_assert_eq(bind(squat[i], (struct sockaddr *)&any, sizeof(any)), 0, "squat %d: %s", i,
			     strerror(errno));
	}
}

/* A plain client from the namespace's ephemeral range: the polls its accept
 * made (the rendezvous look is one). */
static void plain_client_accepted(const char *ephemeral, int polls_expected)
{
	uint16_t port;
	int l, c, s, made;

	own_namespace(ephemeral);
	l = tu_listen(AF_INET, 8, &port);
	cr_assert_geq(l, 0);
	c = tu_plain_connect(AF_INET, port);
	cr_assert_geq(c, 0, "connect: %s", strerror(errno));
	s = accept_counting_polls(l, &made);
	cr_assert_geq(s, 0, "accept: %s", strerror(errno));
	cr_expect_eq(made, polls_expected, "the accept of a client from port %u polled %d times",
		     (unsigned)tu_local_port(c), made);
	cr_assert_eq(tu_accelerated(s), 0);
	cr_assert_str_eq(reason(s), "no-offer");
	ping_both_ways(c, s);
}

/* Outside the range (a server's usual client): the accept asks the kernel
 * nothing more than it would without us. */
Test(offer_ports, an_accept_from_a_port_outside_the_range_makes_no_look)
{
	plain_client_accepted("40000 40099", 0);
}

/* Inside it: an offer could wait there. */
Test(offer_ports, an_accept_from_a_port_inside_the_range_looks)
{
	plain_client_accepted("58000 58099", 1);
}

/* Our connects take their port in the range, from any ephemeral range that
 * holds it, and the range does not stay on the socket. */
static void accelerated_from_the_range(int family)
{
	uint16_t port;
	uint32_t left = 1;
	socklen_t len = sizeof(left);
	int l, c, s;

	own_namespace("32768 60999");
	if (family == AF_INET6 && !tu_have_ipv6())
		cr_skip_test("no IPv6 loopback");
	l = tu_listen(family, 8, &port);
	cr_assert_geq(l, 0);
	connected_pair(family, l, port, &c, &s);
	cr_assert_eq(tu_accelerated(c), 1, "connector: %s", reason(c));
	cr_assert_eq(tu_accelerated(s), 1, "acceptor: %s", reason(s));
	cr_expect(tu_local_port(c) >= SL_OFFER_PORT_LO && tu_local_port(c) <= SL_OFFER_PORT_HI, "port %u",
		  (unsigned)tu_local_port(c));
	cr_assert_eq(getsockopt(c, IPPROTO_IP, IP_LOCAL_PORT_RANGE, &left, &len), 0, "%s", strerror(errno));
	cr_expect_eq(left, 0, "the socket kept the range 0x%x", left);
	ping_both_ways(c, s);
}

Test(offer_ports, our_connects_take_a_port_in_the_range)
{
	accelerated_from_the_range(AF_INET);
}

Test(offer_ports, our_ipv6_connects_take_a_port_in_the_range)
{
	accelerated_from_the_range(AF_INET6);
}

/* Our socket, bound to 127.0.0.1:client_port, connected to port. */
static int connect_from(uint16_t client_port, uint16_t port)
{
	struct sockaddr_in me = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				  .sin_port = htons(client_port) };
	struct sockaddr_in to = me;
	int c = scilan_socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(c, 0);
	cr_assert_eq(scilan_bind(c, (struct sockaddr *)&me, sizeof(me)), 0, "bind: %s", strerror(errno));
	to.sin_port = htons(port);
	cr_assert_eq(scilan_connect(c, (struct sockaddr *)&to, sizeof(to)), 0, "connect: %s", strerror(errno));
	cr_assert_eq(tu_local_port(c), client_port);
	return c;
}

/* A client that binds its port: in the range, an offer as ever; outside
 * it (and not a privileged one), no offer that its acceptor would not look for (it would wait out
 * its agreement's second, reason `unconfirmed`), but kernel TCP at once. */
static void bound_client(uint16_t client_port, bool accelerated)
{
	uint16_t port;
	int l, c, s;

	own_namespace("32768 60999");
	l = tu_listen(AF_INET, 8, &port);
	cr_assert_geq(l, 0);
	c = connect_from(client_port, port);
	s = tu_accept(l);
	cr_assert_geq(s, 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(c), accelerated, "connector: %s", reason(c));
	cr_assert_eq(tu_accelerated(s), accelerated, "acceptor: %s", reason(s));
	if (!accelerated) {
		cr_expect_str_eq(reason(c), "port-range");
		cr_expect_str_eq(reason(s), "no-offer");
	}
	ping_both_ways(c, s);
}

Test(offer_ports, a_client_bound_outside_the_range_is_kernel_tcp_at_once)
{
	bound_client(40123, false);
}

Test(offer_ports, a_client_bound_inside_the_range_is_accelerated)
{
	bound_client(58123, true);
}

/* A privileged port is one the client chose too (SunRPC's bindresvport,
 * rsh): no plain client's kernel-picked port is, so the acceptor looks. */
Test(offer_ports, a_client_bound_to_a_privileged_port_is_accelerated)
{
	if (geteuid() != 0)
		cr_skip_test("binding port 812 needs root");
	bound_client(812, true);
}

/* A client that fixes its source address with port 0 (a multi-homed host's,
 * curl --interface): the kernel's port for it comes from the range, and the
 * socket does not keep the range. */
Test(offer_ports, a_client_bound_to_its_address_with_any_port_is_accelerated)
{
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	uint32_t left = 1;
	socklen_t len = sizeof(left);
	uint16_t port;
	int l, c, s;

	own_namespace("32768 60999");
	l = tu_listen(AF_INET, 8, &port);
	cr_assert_geq(l, 0);
	c = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(scilan_bind(c, (struct sockaddr *)&me, sizeof(me)), 0, "bind: %s", strerror(errno));
	cr_assert(tu_local_port(c) >= SL_OFFER_PORT_LO && tu_local_port(c) <= SL_OFFER_PORT_HI, "port %u",
		  (unsigned)tu_local_port(c));
	cr_assert_eq(getsockopt(c, IPPROTO_IP, IP_LOCAL_PORT_RANGE, &left, &len), 0, "%s", strerror(errno));
	cr_expect_eq(left, 0, "the socket kept the range 0x%x", left);
	me.sin_port = htons(port);
	cr_assert_eq(scilan_connect(c, (struct sockaddr *)&me, sizeof(me)), 0, "connect: %s", strerror(errno));
	s = tu_accept(l);
	cr_assert_geq(s, 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(c), 1, "connector: %s", reason(c));
	cr_assert_eq(tu_accelerated(s), 1, "acceptor: %s", reason(s));
	ping_both_ways(c, s);
}

/* The same bind with the range held whole: a port outside it, as the
 * kernel alone would give, never EADDRINUSE while one is free. */
Test(offer_ports, a_bind_to_any_port_with_the_range_held_takes_one_outside)
{
	struct sockaddr_in any = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
	int squat[2], c;

	own_namespace("57340 57345");
	squat_the_range(squat);
	c = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(scilan_bind(c, (struct sockaddr *)&any, sizeof(any)), 0, "bind: %s", strerror(errno));
	cr_assert(tu_local_port(c) >= 57340 && tu_local_port(c) < SL_OFFER_PORT_LO, "port %u",
		  (unsigned)tu_local_port(c));
	scilan_close(c);
	close(squat[0]);
	close(squat[1]);
}

/* A program that confines its ports itself (IP_LOCAL_PORT_RANGE, Linux 6.3)
 * keeps its range, at bind and at connect: a connection outside ours is
 * kernel TCP at connect, and promoted if it lasts. */
Test(offer_ports, a_range_the_program_set_is_its_own)
{
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	uint32_t mine = 40099u << 16 | 40000u, left = 0;
	socklen_t len = sizeof(left);
	uint16_t port;
	int l, c[2], s;

	own_namespace("32768 60999");
	l = tu_listen(AF_INET, 8, &port);
	cr_assert_geq(l, 0);
	for (int i = 0; i < 2; i++) {
		c[i] = scilan_socket(AF_INET, SOCK_STREAM, 0);
		cr_assert_eq(scilan_setsockopt(c[i], IPPROTO_IP, IP_LOCAL_PORT_RANGE, &mine, sizeof(mine)), 0, "%s",
			     strerror(errno));
	}
	/* One binds its address first, one leaves it all to the connect. */
	cr_assert_eq(scilan_bind(c[0], (struct sockaddr *)&me, sizeof(me)), 0, "bind: %s", strerror(errno));
	me.sin_port = htons(port);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(scilan_connect(c[i], (struct sockaddr *)&me, sizeof(me)), 0, "connect: %s", strerror(errno));
		s = tu_accept(l);
		cr_assert_geq(s, 0, "accept: %s", strerror(errno));
		cr_assert(tu_local_port(c[i]) >= 40000 && tu_local_port(c[i]) <= 40099, "port %u",
			  (unsigned)tu_local_port(c[i]));
		cr_assert_eq(getsockopt(c[i], IPPROTO_IP, IP_LOCAL_PORT_RANGE, &left, &len), 0);
		cr_expect_eq(left, mine, "the program's range became 0x%x", left);
		cr_assert_eq(tu_accelerated(c[i]), 0);
		cr_expect_str_eq(reason(c[i]), "port-range");
		ping_both_ways(c[i], s);
	}
}

/* Kept plain for its port at connect, it is no worse off than a short one:
 * it offers late once it lasts (a late offer needs no mark), and both ends
 * move onto the rings with every byte checked across. */
Test(offer_ports, a_client_bound_outside_the_range_moves_onto_the_rings_when_it_lasts)
{
	uint16_t port;
	uint64_t off = 0;
	int l, c, s, rounds = 0;

	own_namespace("32768 60999");
	l = tu_listen(AF_INET, 8, &port);
	cr_assert_geq(l, 0);
	c = connect_from(40124, port);
	s = tu_accept(l);
	cr_assert_geq(s, 0, "accept: %s", strerror(errno));
	cr_assert_str_eq(reason(c), "port-range");
	cr_assert_eq(atomic_load(&sl_sock_get(c)->promote_role), SL_PROMOTE_CONNECTOR);
	for (; rounds < 2000 && !(tu_accelerated(c) && tu_accelerated(s)); rounds++, off += 1000) {
		tu_checked_round_trip(c, s, off, 1000);
		tu_sleep_ms(5);
	}
	cr_assert(tu_accelerated(c) && tu_accelerated(s), "not promoted after %d rounds", rounds);
	for (int i = 0; i < 20; i++, off += 4096)
		tu_checked_round_trip(c, s, off, 4096);
}

/* A namespace whose ephemeral range leaves ours out: Linux then ignores the
 * socket's, the connect's port is outside, and the offer is withdrawn; the
 * next connects make none for a while (each would wait in the queue). */
Test(offer_ports, a_namespace_range_without_ours_gives_kernel_tcp_with_every_byte)
{
	uint16_t port;
	int l, c, s;

	own_namespace("40000 40099");
	l = tu_listen(AF_INET, 8, &port);
	cr_assert_geq(l, 0);
	for (int i = 0; i < 3; i++) {
		connected_pair(AF_INET, l, port, &c, &s);
		cr_assert_eq(tu_accelerated(c), 0, "connection %d", i);
		cr_assert_eq(tu_accelerated(s), 0, "connection %d", i);
		cr_expect_str_eq(reason(c), "port-range", "connection %d", i);
		cr_expect_str_eq(reason(s), "no-offer", "connection %d", i);
		ping_both_ways(c, s);
		scilan_close(c);
		scilan_close(s);
	}
	scilan_close(l);
}

/* An acceptor that looks all the same (its accept gave no address: the
 * program's buffer was too small) may take the offer before the connector
 * finds its port unmarked: the connector must then follow it onto the
 * rings, not withdraw into kernel TCP with its acceptor on the rings.  The
 * accept is made inside the connector's own settle (its clearing of the
 * range), so that it comes first every time. */
static int early_listener = -1, early_accepted = -1;

static int accept_first_setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	char tiny[1];
	socklen_t tiny_len = sizeof(tiny);

	if (early_listener >= 0 && level == IPPROTO_IP && name == IP_LOCAL_PORT_RANGE && *(const uint32_t *)val == 0) {
		early_accepted = scilan_accept(early_listener, (struct sockaddr *)tiny, &tiny_len);
		early_listener = -1;
	}
	return setsockopt(fd, level, name, val, len);
}

Test(offer_ports, an_acceptor_that_took_the_offer_first_is_followed)
{
	uint16_t port;
	int l, c;

	own_namespace("40000 40099");
	l = tu_listen(AF_INET, 8, &port);
	cr_assert_geq(l, 0);
	early_listener = l;
	sl_sys.setsockopt = accept_first_setsockopt;
	c = tu_connect(AF_INET, port);
	cr_assert_geq(c, 0, "connect: %s", strerror(errno));
	cr_assert_geq(early_accepted, 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(early_accepted), 1, "acceptor: %s", reason(early_accepted));
	cr_assert_eq(tu_accelerated(c), 1, "the connector left its acceptor on the rings: %s", reason(c));
	ping_both_ways(c, early_accepted);
}

/* Someone (another user, maybe) holds every port of the range: our connect
 * loses its rings, not its connection, and takes a port outside as the
 * kernel's connect would. */
Test(offer_ports, a_squatter_on_the_whole_range_costs_the_rings_not_the_connection)
{
	int squat[2], l, c, s;
	uint16_t port;

	own_namespace("57340 57345");
	squat_the_range(squat);
	l = tu_listen(AF_INET, 8, &port);
	cr_assert_geq(l, 0);
	connected_pair(AF_INET, l, port, &c, &s);
	cr_assert_lt(tu_local_port(c), SL_OFFER_PORT_LO);
	cr_assert_eq(tu_accelerated(c), 0);
	cr_assert_eq(tu_accelerated(s), 0);
	cr_expect_str_eq(reason(c), "port-range");
	ping_both_ways(c, s);
	close(squat[0]);
	close(squat[1]);
}
