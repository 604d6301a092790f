/* test_local_ports.c — our connections leave the local port space as kernel
 * TCP leaves it: each test runs in a network namespace of its own with two
 * ephemeral ports, so every connection past the second must reuse a port
 * in TIME_WAIT, as the kernel's connect does on loopback.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "scilan.h"
#include "testutil.h"

TestSuite(local_ports, .timeout = 60);

/* A listener made by libc's socket, which scilan adopts at listen: another
 * process may hold it, so offers for it are also named as files (by the
 * connecting socket, in our namespace). */
static int adopted_listener(uint16_t *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(l, 0);
	cr_assert_eq(bind(l, (struct sockaddr *)&sin, sizeof(sin)), 0);
	cr_assert_eq(scilan_listen(l, 8), 0);
	cr_assert_eq(getsockname(l, (struct sockaddr *)&sin, &len), 0);
	*port = ntohs(sin.sin_port);
	return l;
}

/* A listener in a network namespace of its own, whose ephemeral range is
 * then narrowed to two ports (after: the listener takes one of the range). */
static int listen_with_two_ephemeral_ports(bool adopted, uint16_t *port)
{
	int fd, l;

	cr_assert_not_null(tu_isolated_rundir());
	if (unshare(CLONE_NEWNET) < 0)
		cr_skip_test("unshare(CLONE_NEWNET): %s", strerror(errno));
	cr_assert_eq(tu_loopback_up(), 0, "lo up: %s", strerror(errno));
	l = adopted ? adopted_listener(port) : tu_listen(AF_INET, 8, port);
	cr_assert_geq(l, 0);
	fd = open("/proc/sys/net/ipv4/ip_local_port_range", O_WRONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0, "ip_local_port_range: %s", strerror(errno));
	cr_assert_eq(write(fd, "60000 60001", 11), 11);
	close(fd);
	return l;
}

/* One connection, closed by the client first so that its port goes to
 * TIME_WAIT; accelerated says which kind the client is. */
static void one_connection(int l, uint16_t port, bool accelerated, int i)
{
	char got[4] = { 0 };
	int c = accelerated ? tu_connect(AF_INET, port) : tu_plain_connect(AF_INET, port), s;

	cr_assert_geq(c, 0, "connection %d (%s): %s", i, accelerated ? "scilan" : "plain", strerror(errno));
	s = tu_accept(l);
	cr_assert_geq(s, 0, "accept %d: %s", i, strerror(errno));
	cr_assert_eq(tu_accelerated(s), accelerated ? 1 : 0, "connection %d", i);
	cr_assert_eq(scilan_send(c, "ping", 4, 0), 4);
	cr_assert_eq(tu_recv_all(s, got, 4), 4);
	cr_assert_arr_eq(got, "ping", 4);
	if (accelerated)
		scilan_close(c);
	else
		close(c);
	scilan_close(s);
}

/* TIME_WAIT reuse wants a timestamp a second newer than the old one's. */
static void let_timestamps_move(void)
{
	usleep(1100 * 1000);
}

/* Two connections of the first kind take both ports and leave them in
 * TIME_WAIT; two of the second kind must reuse them. */
static void reuse_after(bool adopted, bool first_accelerated, bool then_accelerated)
{
	uint16_t port;
	int l = listen_with_two_ephemeral_ports(adopted, &port);

	for (int i = 0; i < 4; i++) {
		if (i == 2)
			let_timestamps_move();
		one_connection(l, port, i < 2 ? first_accelerated : then_accelerated, i);
	}
	scilan_close(l);
}

/* Our connections take their ports as the kernel's connect does: the ports
 * of closed ones are reused after them, ours or anyone's.  The bind that
 * used to fix our port before the offer made port buckets the kernel's
 * connect never reuses: the third connection failed with EADDRNOTAVAIL. */
Test(local_ports, scilan_connections_reuse_time_wait_ports)
{
	reuse_after(false, true, true);
}

/* Ports our closed connections left in TIME_WAIT stay open to other
 * programs' plain connects (they were denied them for 60 s). */
Test(local_ports, plain_programs_reuse_ports_we_left)
{
	reuse_after(false, true, false);
}

/* And the other way round: ports plain programs left in TIME_WAIT carry
 * accelerated connections (they fell back to kernel TCP for want of a port). */
Test(local_ports, scilan_connections_reuse_ports_plain_programs_left)
{
	reuse_after(false, false, true);
}

/* Offers also named as files (a listener another process may hold): named
 * by the connecting socket, they need no port either. */
Test(local_ports, offers_named_as_files_need_no_port)
{
	reuse_after(true, false, true);
}
