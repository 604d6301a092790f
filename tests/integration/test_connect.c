/* test_connect.c — connection set-up across fork()ed processes (AF_INET, ::1):
 * accelerated flag, names, ECONNREFUSED, EADDRINUSE/rebind, backlog, non-blocking
 * connect/accept, address forms, and kernel-TCP fallback with plain libc peers. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cr_helpers.h"
#include "testutil.h"

/* Regular files under dir (recursively) whose name does not start with '.',
 * except keep (our own statistics file, which lives until we exit); their
 * names go to list. */
static int count_files(const char *dir, const char *keep, char *list, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char path[4096];
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (lstat(path, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			n += count_files(path, keep, list, size);
		} else if (strcmp(path, keep) != 0) {
			size_t used = strlen(list);

			snprintf(list + used, size - used, "%s ", path);
			n++;
		}
	}
	closedir(d);
	return n;
}

static void assert_rundir_clean(const char *rundir)
{
	char list[2048] = "", own[4096];
	int n;

	snprintf(own, sizeof(own), "%s/stats/%d", rundir, (int)getpid());
	n = count_files(rundir, own, list, sizeof(list));

	cr_assert_eq(n, 0, "runtime dir %s still holds %d file(s) after every socket closed: %s", rundir, n, list);
}

static uint16_t sa_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

static bool sa_is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
	return ss->ss_family == AF_INET &&
	       ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_LOOPBACK);
}

/* ---- accelerated connections across processes ---------------------------------- */

struct client_arg {
	int family;
	uint16_t port;
	bool plain;        /* connect with libc instead of scilan */
	int expect_accel;  /* expected SCILAN_SO_ACCELERATED on the client (scilan only) */
};

/* Server speaks first: "welcome <server-seen client port>\n"; the client
 * checks its names, answers "hello <its port>\n", then reads "bye". */
static int named_client(void *p)
{
	struct client_arg *a = p;
	struct sockaddr_storage me, peer;
	socklen_t len;
	char buf[128], expect[64];
	unsigned port_seen;
	ssize_t n;
	int fd;

	fd = a->plain ? tu_plain_connect(a->family, a->port) : tu_connect(a->family, a->port);
	TU_CHECK(fd >= 0, "connect to port %u", a->port);
	if (!a->plain)
		TU_CHECK(tu_accelerated(fd) == a->expect_accel, "client accelerated = %d, want %d",
			 tu_accelerated(fd), a->expect_accel);
	len = sizeof(me);
	TU_CHECK(getsockname(fd, (struct sockaddr *)&me, &len) == 0, "getsockname");
	len = sizeof(peer);
	TU_CHECK(getpeername(fd, (struct sockaddr *)&peer, &len) == 0, "getpeername");
	TU_CHECK(me.ss_family == a->family && peer.ss_family == a->family, "families %d/%d", me.ss_family,
		 peer.ss_family);
	TU_CHECK(sa_port(&peer) == a->port, "peer port %u, want %u", sa_port(&peer), a->port);
	TU_CHECK(sa_is_loopback(&peer) && sa_is_loopback(&me), "addresses not loopback");
	TU_CHECK(sa_port(&me) != 0, "client has no port");

	/* Server speaks first. */
	memset(buf, 0, sizeof(buf));
	n = a->plain ? recv(fd, buf, sizeof(buf) - 1, 0) : scilan_recv(fd, buf, sizeof(buf) - 1, 0);
	TU_CHECK(n > 0, "recv greeting returned %zd", n);
	while (!strchr(buf, '\n') && n > 0 && (size_t)n < sizeof(buf) - 1) {
		ssize_t m = a->plain ? recv(fd, buf + n, sizeof(buf) - 1 - (size_t)n, 0)
				     : scilan_recv(fd, buf + n, sizeof(buf) - 1 - (size_t)n, 0);
		TU_CHECK(m > 0, "recv rest of greeting returned %zd", m);
		n += m;
	}
	TU_CHECK(sscanf(buf, "welcome %u", &port_seen) == 1, "bad greeting '%s'", buf);
	TU_CHECK(port_seen == sa_port(&me), "server saw port %u, getsockname says %u", port_seen, sa_port(&me));

	n = snprintf(expect, sizeof(expect), "hello %u\n", sa_port(&me));
	if (a->plain)
		TU_CHECK(send(fd, expect, (size_t)n, 0) == n, "send hello");
	else
		TU_CHECK(tu_send_all(fd, expect, (size_t)n, 0) == n, "send hello");
	n = a->plain ? recv(fd, buf, 3, MSG_WAITALL) : tu_recv_all(fd, buf, 3);
	TU_CHECK(n == 3 && memcmp(buf, "bye", 3) == 0, "recv bye returned %zd", n);
	n = a->plain ? recv(fd, buf, 1, 0) : scilan_recv(fd, buf, 1, 0);
	TU_CHECK(n == 0, "expected EOF after bye, got %zd", n);
	TU_CHECK((a->plain ? close(fd) : scilan_close(fd)) == 0, "close");
	return 0;
}

static void serve_named(int lfd, int family, uint16_t lport, int expect_accel, struct tu_child *child)
{
	struct sockaddr_storage from, me, peer;
	socklen_t fromlen = sizeof(from), len;
	char buf[128], expect[64], st[128];
	int fd, n;

	do
		fd = scilan_accept(lfd, (struct sockaddr *)&from, &fromlen);
	while (fd < 0 && errno == EINTR);
	cr_assert_geq(fd, 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(fd), expect_accel, "server accelerated = %d, want %d", tu_accelerated(fd),
		     expect_accel);
	cr_assert_eq(from.ss_family, family);
	len = sizeof(me);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&me, &len), 0, "getsockname: %s", strerror(errno));
	len = sizeof(peer);
	cr_assert_eq(getpeername(fd, (struct sockaddr *)&peer, &len), 0, "getpeername: %s", strerror(errno));
	cr_assert_eq(sa_port(&me), lport, "accepted socket's port %u, listener %u", sa_port(&me), lport);
	cr_assert_eq(sa_port(&peer), sa_port(&from), "getpeername %u vs accept's address %u", sa_port(&peer),
		     sa_port(&from));

	n = snprintf(buf, sizeof(buf), "welcome %u\n", sa_port(&peer));
	cr_assert_eq(tu_send_all(fd, buf, (size_t)n, 0), n, "send greeting: %s", strerror(errno));
	n = snprintf(expect, sizeof(expect), "hello %u\n", sa_port(&peer));
	memset(buf, 0, sizeof(buf));
	cr_assert_eq(tu_recv_all(fd, buf, (size_t)n), n, "recv hello: %s", strerror(errno));
	cr_assert_str_eq(buf, expect);
	cr_assert_eq(tu_send_all(fd, "bye", 3, 0), 3);
	cr_assert_eq(scilan_close(fd), 0);
	tu_reap(child);
	cr_assert(tu_exited_with(child, 0), "client %s\n%s", tu_status_str(child, st, sizeof(st)), child->output);
}

static void accelerated_across_fork(int family)
{
	struct client_arg a = { .family = family, .expect_accel = 1 };
	struct tu_child child;
	int lfd;

	tu_watchdog(30, "connect across fork");
	lfd = tu_listen(family, 16, &a.port);
	cr_assert_geq(lfd, 0, "listen: %s", strerror(errno));
	cr_assert_eq(tu_spawn(&child, named_client, &a), 0);
	serve_named(lfd, family, a.port, 1, &child);
	scilan_close(lfd);
}

Test(connect, inet_across_fork, .timeout = 60)
{
	accelerated_across_fork(AF_INET);
}

Test(connect, inet6_across_fork, .timeout = 60)
{
	if (!tu_have_ipv6())
		cr_skip_test("no IPv6 loopback here");
	accelerated_across_fork(AF_INET6);
}

Test(connect, is_socket_and_flag_states, .timeout = 30)
{
	int fd = scilan_socket(AF_INET, SOCK_STREAM, 0), c, s;

	cr_assert_geq(fd, 0, "scilan_socket: %s", strerror(errno));
	cr_assert_eq(scilan_is_socket(fd), 1);
	cr_assert_eq(tu_accelerated(fd), 0, "unconnected socket reports accelerated");
	scilan_close(fd);
	cr_assert_eq(scilan_is_socket(fd), 0, "closed fd still known");
	cr_assert_eq(tu_pair(AF_INET, &c, &s), 0, "pair: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(c), 1);
	cr_assert_eq(tu_accelerated(s), 1);
	cr_assert_eq(scilan_is_socket(c), 1);
	cr_assert_eq(scilan_is_socket(s), 1);
	scilan_close(c);
	scilan_close(s);
}

/* ---- refusals and ports ----------------------------------------------------------- */

Test(connect, econnrefused, .timeout = 30)
{
	const char *rundir = tu_isolated_rundir();
	struct sockaddr_storage ss;
	socklen_t len;
	int holder, fd, err = 0, r;
	socklen_t elen = sizeof(err);
	uint16_t port;
	struct pollfd pfd;

	cr_assert_not_null(rundir);
	/* A bound, non-listening socket holds the port: nothing listens there. */
	holder = socket(AF_INET, SOCK_STREAM, 0);
	len = tu_loopback(AF_INET, 0, &ss);
	cr_assert_eq(bind(holder, (struct sockaddr *)&ss, len), 0);
	port = tu_local_port(holder);
	len = tu_loopback(AF_INET, port, &ss);

	fd = scilan_socket(AF_INET, SOCK_STREAM, 0);
	r = scilan_connect(fd, (struct sockaddr *)&ss, len);
	cr_assert_eq(r, -1, "connect to a port nobody listens on succeeded");
	cr_assert_eq(errno, ECONNREFUSED, "errno %d (%s), want ECONNREFUSED", errno, strerror(errno));
	cr_assert_eq(tu_accelerated(fd), 0);
	scilan_close(fd);

	/* Non-blocking: EINPROGRESS (or at once), then poll and SO_ERROR. */
	fd = scilan_socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	r = scilan_connect(fd, (struct sockaddr *)&ss, len);
	if (r < 0 && errno == EINPROGRESS) {
		pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
		r = scilan_poll(&pfd, 1, 10000);
		cr_assert_eq(r, 1, "poll on a refused connect returned %d", r);
		cr_assert(pfd.revents & (POLLERR | POLLHUP), "revents 0x%x lacks POLLERR/POLLHUP", pfd.revents);
		cr_assert_eq(scilan_getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen), 0);
		cr_assert_eq(err, ECONNREFUSED, "SO_ERROR %d (%s)", err, strerror(err));
	} else {
		cr_assert_eq(r, -1);
		cr_assert_eq(errno, ECONNREFUSED, "errno %s", strerror(errno));
	}
	scilan_close(fd);
	close(holder);
	assert_rundir_clean(rundir);
}

Test(connect, refused_after_listener_closed, .timeout = 30)
{
	const char *rundir = tu_isolated_rundir();
	struct sockaddr_storage ss;
	socklen_t len;
	uint16_t port;
	int l, holder, fd, c, s;

	cr_assert_not_null(rundir);
	l = tu_listen(AF_INET, 4, &port);
	cr_assert_geq(l, 0, "listen: %s", strerror(errno));
	cr_assert_eq(tu_pair(AF_INET, &c, &s), 0);
	scilan_close(c);
	scilan_close(s);
	cr_assert_eq(scilan_close(l), 0);
	/* Hold the port with a bound, non-listening socket. */
	holder = socket(AF_INET, SOCK_STREAM, 0);
	len = tu_loopback(AF_INET, port, &ss);
	cr_assert_eq(bind(holder, (struct sockaddr *)&ss, len), 0, "re-bind: %s", strerror(errno));
	fd = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(scilan_connect(fd, (struct sockaddr *)&ss, len), -1);
	cr_assert_eq(errno, ECONNREFUSED, "errno %s", strerror(errno));
	scilan_close(fd);
	close(holder);
	assert_rundir_clean(rundir);
}

Test(connect, eaddrinuse_and_rebind, .timeout = 30)
{
	struct sockaddr_storage ss;
	socklen_t len;
	uint16_t port;
	int l, s2, c, a, one = 1;

	l = tu_listen(AF_INET, 8, &port);
	cr_assert_geq(l, 0, "listen: %s", strerror(errno));
	len = tu_loopback(AF_INET, port, &ss);
	s2 = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(scilan_bind(s2, (struct sockaddr *)&ss, len), -1, "second bind of port %u succeeded", port);
	cr_assert_eq(errno, EADDRINUSE, "errno %s", strerror(errno));
	scilan_close(s2);

	/* The listener was not disturbed. */
	c = tu_connect(AF_INET, port);
	cr_assert_geq(c, 0, "connect: %s", strerror(errno));
	a = tu_accept(l);
	cr_assert_geq(a, 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(c), 1);
	cr_assert_eq(tu_accelerated(a), 1);
	exchange_or_die(c, a, "first listener");
	scilan_close(c);
	scilan_close(a);
	cr_assert_eq(scilan_close(l), 0);

	/* The port can be bound and listened on again, and is accelerated again. */
	l = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(scilan_setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
	cr_assert_eq(scilan_bind(l, (struct sockaddr *)&ss, len), 0, "bind after close: %s", strerror(errno));
	cr_assert_eq(scilan_listen(l, 8), 0, "listen after close: %s", strerror(errno));
	c = tu_connect(AF_INET, port);
	cr_assert_geq(c, 0, "connect: %s", strerror(errno));
	a = tu_accept(l);
	cr_assert_geq(a, 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(c), 1, "connection to the re-opened listener not accelerated");
	cr_assert_eq(tu_accelerated(a), 1);
	exchange_or_die(c, a, "second listener");
	scilan_close(c);
	scilan_close(a);
	scilan_close(l);

	/* A bind-only (never listening) scilan socket on a fresh port closes cleanly too. */
	s2 = scilan_socket(AF_INET, SOCK_STREAM, 0);
	len = tu_loopback(AF_INET, 0, &ss);
	cr_assert_eq(scilan_bind(s2, (struct sockaddr *)&ss, len), 0);
	cr_assert_eq(scilan_close(s2), 0);
}

/* listen(fd, 1) and nobody accepts: the kernel queues a couple of connections
 * and leaves the rest in SYN_SENT.  Asserted: the first connect completes, and
 * not all of 16 do (the kernel guarantees no more). */
Test(connect, backlog_limits_pending_connects, .timeout = 60)
{
	const char *rundir = tu_isolated_rundir();
	enum { N = 16 };
	struct sockaddr_storage ss;
	socklen_t len;
	int fds[N], done = 0, pending = 0, l, a, r;
	bool first_done = false;
	uint16_t port;

	cr_assert_not_null(rundir);
	tu_watchdog(50, "backlog test");
	l = tu_listen(AF_INET, 1, &port);
	cr_assert_geq(l, 0, "listen: %s", strerror(errno));
	len = tu_loopback(AF_INET, port, &ss);
	for (int i = 0; i < N; i++) {
		fds[i] = scilan_socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		cr_assert_geq(fds[i], 0);
		r = scilan_connect(fds[i], (struct sockaddr *)&ss, len);
		cr_assert(r == 0 || errno == EINPROGRESS, "non-blocking connect %d: %s", i, strerror(errno));
	}
	for (int i = 0; i < N; i++) {
		struct pollfd pfd = { .fd = fds[i], .events = POLLOUT };

		r = scilan_poll(&pfd, 1, 200);
		cr_assert_geq(r, 0, "poll: %s", strerror(errno));
		if (r == 1) {
			cr_assert_eq(pfd.revents & (POLLERR | POLLHUP), 0, "connect %d failed (revents 0x%x)", i,
				     pfd.revents);
			done++;
			if (i == 0)
				first_done = true;
		} else {
			pending++;
		}
	}
	cr_assert(first_done, "the first connect did not complete with an empty backlog");
	cr_assert_gt(pending, 0, "all %d connects completed against listen(fd, 1) with no accept", N);

	/* What the kernel queued can be accepted, and it is accelerated. */
	cr_assert_eq(tu_set_nonblock(l, true), 0);
	a = scilan_accept(l, NULL, NULL);
	cr_assert_geq(a, 0, "accept of a queued connection: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(a), 1, "queued connection not accelerated");
	cr_assert_eq(tu_accelerated(fds[0]), 1, "first client not accelerated");
	scilan_close(a);
	while ((a = scilan_accept(l, NULL, NULL)) >= 0)
		scilan_close(a);
	cr_assert(errno == EAGAIN || errno == EWOULDBLOCK, "non-blocking accept: %s", strerror(errno));
	for (int i = 0; i < N; i++)
		scilan_close(fds[i]);
	scilan_close(l);
	assert_rundir_clean(rundir);
}

/* A connect that timed out on a full queue (its SYN dropped) and is tried
 * again on the same socket, as Linux allows: the connection it makes is on
 * the rings at both ends.  The timed-out offer still waits in the
 * listener's queue under the socket's cookie, which the second offer
 * carries too: taken first, it put the acceptor on kernel TCP while the
 * client waited out its agreement on the rings (the ends disagreed). */
Test(connect, retry_after_timed_out_connect_rides_the_rings, .timeout = 60)
{
	const char *rundir = tu_isolated_rundir();
	struct sockaddr_storage ss;
	socklen_t len;
	int l, c, s, queued[2], syncnt = 1;
	uint16_t port;

	cr_assert_not_null(rundir);
	tu_watchdog(50, "retry after a timed-out connect");
	l = tu_listen(AF_INET, 1, &port);
	cr_assert_geq(l, 0, "listen: %s", strerror(errno));
	len = tu_loopback(AF_INET, port, &ss);
	for (int i = 0; i < 2; i++)
		cr_assert_geq(queued[i] = tu_connect(AF_INET, port), 0, "queued connect %d: %s", i, strerror(errno));
	cr_assert_geq(c = scilan_socket(AF_INET, SOCK_STREAM, 0), 0);
	/* One SYN retransmission: ETIMEDOUT after some 3 s. */
	cr_assert_eq(scilan_setsockopt(c, IPPROTO_TCP, TCP_SYNCNT, &syncnt, sizeof(syncnt)), 0);
	errno = 0;
	cr_assert_eq(scilan_connect(c, (struct sockaddr *)&ss, len), -1, "the queue was not full");
	cr_assert_eq(errno, ETIMEDOUT, "connect: %s", strerror(errno));
	for (int i = 0; i < 2; i++) {
		cr_assert_geq(s = tu_accept(l), 0);
		exchange_or_die(queued[i], s, "queued");
		scilan_close(s);
		scilan_close(queued[i]);
	}
	cr_assert_eq(scilan_connect(c, (struct sockaddr *)&ss, len), 0, "connect again: %s", strerror(errno));
	cr_assert_geq(s = tu_accept(l), 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(s), 1, "the acceptor is not on the rings");
	cr_assert_eq(tu_accelerated(c), 1, "the connector is not on the rings");
	exchange_or_die(c, s, "again");
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
	assert_rundir_clean(rundir);
}

/* ---- non-blocking connect and accept ------------------------------------------- */

Test(connect, nonblocking_connect_and_accept, .timeout = 30)
{
	struct sockaddr_storage ss, from;
	socklen_t len, fromlen = sizeof(from), elen;
	struct pollfd pfd;
	uint16_t port;
	int l, c, a, r, err = -1;
	char b;

	l = tu_listen(AF_INET, 8, &port);
	cr_assert_geq(l, 0);
	cr_assert_eq(tu_set_nonblock(l, true), 0);
	a = scilan_accept(l, NULL, NULL);
	cr_assert_eq(a, -1, "accept with nothing pending returned a socket");
	cr_assert(errno == EAGAIN || errno == EWOULDBLOCK, "errno %s", strerror(errno));

	len = tu_loopback(AF_INET, port, &ss);
	c = scilan_socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	r = scilan_connect(c, (struct sockaddr *)&ss, len);
	cr_assert(r == 0 || errno == EINPROGRESS, "connect: %s", strerror(errno));
	pfd = (struct pollfd){ .fd = c, .events = POLLOUT };
	cr_assert_eq(scilan_poll(&pfd, 1, 10000), 1);
	cr_assert(pfd.revents & POLLOUT);
	elen = sizeof(err);
	cr_assert_eq(scilan_getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &elen), 0);
	cr_assert_eq(err, 0, "SO_ERROR %s", strerror(err));

	pfd = (struct pollfd){ .fd = l, .events = POLLIN };
	cr_assert_eq(scilan_poll(&pfd, 1, 10000), 1, "listener not readable");
	a = scilan_accept4(l, (struct sockaddr *)&from, &fromlen, SOCK_NONBLOCK | SOCK_CLOEXEC);
	cr_assert_geq(a, 0, "accept4: %s", strerror(errno));
	cr_assert(fcntl(a, F_GETFL) & O_NONBLOCK, "accept4(SOCK_NONBLOCK) lost the flag");
	cr_assert(fcntl(a, F_GETFD) & FD_CLOEXEC, "accept4(SOCK_CLOEXEC) lost the flag");
	cr_assert_eq(sa_port(&from), tu_local_port(c), "accept4 address port %u, client %u", sa_port(&from),
		     tu_local_port(c));
	cr_assert_eq(tu_accelerated(c), 1, "non-blocking connect not accelerated");
	cr_assert_eq(tu_accelerated(a), 1);
	cr_assert_eq(scilan_recv(a, &b, 1, 0), -1, "recv on an empty non-blocking socket");
	cr_assert(errno == EAGAIN || errno == EWOULDBLOCK, "errno %s", strerror(errno));
	cr_assert_eq(scilan_send(c, "x", 1, 0), 1);
	pfd = (struct pollfd){ .fd = a, .events = POLLIN };
	cr_assert_eq(scilan_poll(&pfd, 1, 10000), 1);
	cr_assert_eq(scilan_recv(a, &b, 1, 0), 1);
	cr_assert_eq(b, 'x');
	scilan_close(c);
	scilan_close(a);
	scilan_close(l);
}

Test(connect, client_bound_before_connect, .timeout = 30)
{
	struct sockaddr_storage ss;
	socklen_t len;
	uint16_t port, cport;
	int l, c, a;

	l = tu_listen(AF_INET, 8, &port);
	cr_assert_geq(l, 0);
	c = scilan_socket(AF_INET, SOCK_STREAM, 0);
	len = tu_loopback(AF_INET, 0, &ss);
	cr_assert_eq(scilan_bind(c, (struct sockaddr *)&ss, len), 0);
	cport = tu_local_port(c);
	len = tu_loopback(AF_INET, port, &ss);
	cr_assert_eq(scilan_connect(c, (struct sockaddr *)&ss, len), 0, "connect: %s", strerror(errno));
	cr_assert_eq(tu_local_port(c), cport, "connect changed the bound port");
	a = tu_accept(l);
	cr_assert_geq(a, 0);
	cr_assert_eq(tu_accelerated(c), 1);
	cr_assert_eq(tu_accelerated(a), 1);
	exchange_or_die(c, a, "bound client");
	scilan_close(c);
	scilan_close(a);
	scilan_close(l);
}

/* ---- address forms ----------------------------------------------------------------- */

static void connect_and_check(int lfd, int family, const struct sockaddr_storage *dst, socklen_t len,
			      const char *what)
{
	int c = scilan_socket(family, SOCK_STREAM, 0), a;

	cr_assert_geq(c, 0);
	cr_assert_eq(scilan_connect(c, (const struct sockaddr *)dst, len), 0, "%s: connect: %s", what,
		     strerror(errno));
	a = tu_accept(lfd);
	cr_assert_geq(a, 0, "%s: accept: %s", what, strerror(errno));
	cr_assert_eq(tu_accelerated(c), 1, "%s: client not accelerated", what);
	cr_assert_eq(tu_accelerated(a), 1, "%s: server not accelerated", what);
	exchange_or_die(c, a, what);
	scilan_close(c);
	scilan_close(a);
}

Test(connect, wildcard_listener, .timeout = 30)
{
	struct sockaddr_in any = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
	struct sockaddr_storage dst;
	socklen_t len;
	int l = scilan_socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_eq(scilan_bind(l, (struct sockaddr *)&any, sizeof(any)), 0);
	cr_assert_eq(scilan_listen(l, 8), 0);
	len = tu_loopback(AF_INET, tu_local_port(l), &dst);
	connect_and_check(l, AF_INET, &dst, len, "0.0.0.0 listener, 127.0.0.1 connect");
	scilan_close(l);
}

Test(connect, dual_stack_and_v4_mapped, .timeout = 30)
{
	struct sockaddr_in6 any6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in6 mapped = { .sin6_family = AF_INET6 };
	struct sockaddr_storage dst;
	socklen_t len;
	int l, off = 0;
	uint16_t port;

	if (!tu_have_ipv6())
		cr_skip_test("no IPv6 loopback here");
	/* A dual-stack [::] listener takes IPv4 and IPv6 clients. */
	l = scilan_socket(AF_INET6, SOCK_STREAM, 0);
	cr_assert_eq(scilan_setsockopt(l, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)), 0);
	cr_assert_eq(scilan_bind(l, (struct sockaddr *)&any6, sizeof(any6)), 0);
	cr_assert_eq(scilan_listen(l, 8), 0);
	port = tu_local_port(l);
	len = tu_loopback(AF_INET6, port, &dst);
	connect_and_check(l, AF_INET6, &dst, len, "[::] listener, ::1 connect");
	len = tu_loopback(AF_INET, port, &dst);
	connect_and_check(l, AF_INET, &dst, len, "[::] listener, 127.0.0.1 connect");
	scilan_close(l);

	/* An AF_INET6 socket connecting to ::ffff:127.0.0.1 reaches an IPv4 listener. */
	l = tu_listen(AF_INET, 8, &port);
	cr_assert_geq(l, 0);
	mapped.sin6_port = htons(port);
	cr_assert_eq(inet_pton(AF_INET6, "::ffff:127.0.0.1", &mapped.sin6_addr), 1);
	memcpy(&dst, &mapped, sizeof(mapped));
	connect_and_check(l, AF_INET6, &dst, sizeof(mapped), "127.0.0.1 listener, ::ffff:127.0.0.1 connect");
	scilan_close(l);
}

Test(connect, many_connections, .timeout = 120)
{
	const char *rundir = tu_isolated_rundir();
	enum { LIVE = 48, SEQ = 100 };
	int c[LIVE], a[LIVE], l, x, y;
	uint16_t port;

	cr_assert_not_null(rundir);
	tu_offer_always(); /* a hundred short connections to one listener */
	l = tu_listen(AF_INET, 64, &port);
	cr_assert_geq(l, 0);
	/* Many at once (small rings keep the memory modest). */
	for (int i = 0; i < LIVE; i++) {
		c[i] = tu_connect_rcvbuf(AF_INET, port, 4096);
		cr_assert_geq(c[i], 0, "connect %d: %s", i, strerror(errno));
		a[i] = tu_accept(l);
		cr_assert_geq(a[i], 0, "accept %d: %s", i, strerror(errno));
		cr_assert_eq(tu_accelerated(c[i]), 1, "connection %d not accelerated", i);
		cr_assert_eq(tu_accelerated(a[i]), 1);
	}
	for (int i = 0; i < LIVE; i++) {
		uint32_t v = 0x1000u + (uint32_t)i, w = 0;

		cr_assert_eq(tu_send_all(c[i], &v, sizeof(v), 0), (ssize_t)sizeof(v));
		cr_assert_eq(tu_recv_all(a[i], &w, sizeof(w)), (ssize_t)sizeof(w));
		cr_assert_eq(w, v, "connection %d delivered another connection's data", i);
	}
	for (int i = 0; i < LIVE; i++) {
		scilan_close(c[i]);
		scilan_close(a[i]);
	}
	/* Many one after the other, fds reused. */
	for (int i = 0; i < SEQ; i++) {
		x = tu_connect(AF_INET, port);
		cr_assert_geq(x, 0, "sequential connect %d: %s", i, strerror(errno));
		y = tu_accept(l);
		cr_assert_geq(y, 0);
		cr_assert_eq(tu_accelerated(x), 1, "sequential connection %d not accelerated", i);
		exchange_or_die(x, y, "sequential");
		scilan_close(x);
		scilan_close(y);
	}
	scilan_close(l);
	assert_rundir_clean(rundir);
}

/* ---- fallback to kernel TCP ---------------------------------------------------------- */

Test(connect, fallback_plain_listener, .timeout = 30)
{
	const char *rundir = tu_isolated_rundir();
	unsigned char *big, *got;
	uint16_t port;
	int l, c, s;
	size_t n = 64 * 1024;

	cr_assert_not_null(rundir);
	l = tu_plain_listen(AF_INET, 8, &port);
	cr_assert_geq(l, 0, "plain listen: %s", strerror(errno));
	c = tu_connect(AF_INET, port);
	cr_assert_geq(c, 0, "scilan connect to a plain listener: %s", strerror(errno));
	s = accept(l, NULL, NULL);
	cr_assert_geq(s, 0);
	cr_assert_eq(tu_accelerated(c), 0, "connection to a plain listener claims acceleration");
	cr_assert_eq(scilan_is_socket(c), 1);

	cr_assert_eq(scilan_send(c, "ping", 4, 0), 4, "send: %s", strerror(errno));
	{
		char b[8];

		cr_assert_eq(recv(s, b, 4, MSG_WAITALL), 4);
		cr_assert_arr_eq(b, "ping", 4);
		cr_assert_eq(send(s, "pong", 4, 0), 4);
		cr_assert_eq(tu_recv_all(c, b, 4), 4, "scilan_recv on fallback: %s", strerror(errno));
		cr_assert_arr_eq(b, "pong", 4);
	}
	/* A larger block in each direction (fits the kernel socket buffers). */
	big = malloc(n);
	got = malloc(n);
	tu_stream_fill(1, 0, big, n);
	cr_assert_eq(tu_send_all(c, big, n, 0), (ssize_t)n);
	cr_assert_eq(recv(s, got, n, MSG_WAITALL), (ssize_t)n);
	cr_assert_eq(tu_stream_check(1, 0, got, n), -1);
	tu_stream_fill(2, 0, big, n);
	for (size_t off = 0; off < n;) {
		ssize_t k = send(s, big + off, n - off, 0);

		cr_assert_gt(k, 0);
		off += (size_t)k;
	}
	cr_assert_eq(tu_recv_all(c, got, n), (ssize_t)n);
	cr_assert_eq(tu_stream_check(2, 0, got, n), -1);
	/* EOF through the fallback path. */
	close(s);
	cr_assert_eq(scilan_recv(c, got, 1, 0), 0, "no EOF on fallback connection");
	free(big);
	free(got);
	scilan_close(c);
	close(l);
	assert_rundir_clean(rundir);
}

Test(connect, fallback_plain_client_server_speaks_first, .timeout = 60)
{
	struct client_arg a = { .family = AF_INET, .plain = true };
	struct tu_child child;
	int lfd;

	tu_watchdog(50, "plain client");
	lfd = tu_listen(AF_INET, 8, &a.port);
	cr_assert_geq(lfd, 0);
	cr_assert_eq(tu_spawn(&child, named_client, &a), 0);
	serve_named(lfd, AF_INET, a.port, 0, &child);
	scilan_close(lfd);
}

Test(connect, fallback_plain_client_inet6, .timeout = 60)
{
	struct client_arg a = { .family = AF_INET6, .plain = true };
	struct tu_child child;
	int lfd;

	if (!tu_have_ipv6())
		cr_skip_test("no IPv6 loopback here");
	tu_watchdog(50, "plain client");
	lfd = tu_listen(AF_INET6, 8, &a.port);
	cr_assert_geq(lfd, 0);
	cr_assert_eq(tu_spawn(&child, named_client, &a), 0);
	serve_named(lfd, AF_INET6, a.port, 0, &child);
	scilan_close(lfd);
}

/* A plain listener in another process, a scilan client here, bulk both ways. */
static int plain_echo_server(void *p)
{
	int l = *(int *)p, s;
	char buf[65536];
	ssize_t n;

	s = accept(l, NULL, NULL);
	TU_CHECK(s >= 0, "accept");
	while ((n = recv(s, buf, sizeof(buf), 0)) > 0) {
		for (ssize_t off = 0; off < n;) {
			ssize_t k = send(s, buf + off, (size_t)(n - off), MSG_NOSIGNAL);

			TU_CHECK(k > 0, "echo send");
			off += k;
		}
	}
	TU_CHECK(n == 0, "recv ended with error");
	close(s);
	return 0;
}

Test(connect, fallback_echo_across_fork, .timeout = 60)
{
	struct tu_child child;
	size_t total = 8u << 20, sent = 0, got = 0;
	unsigned char *sb = malloc(65536), *rb = malloc(65536);
	uint16_t port;
	int l, c;
	char st[128];

	tu_watchdog(50, "fallback echo");
	l = tu_plain_listen(AF_INET, 8, &port);
	cr_assert_geq(l, 0);
	cr_assert_eq(tu_spawn(&child, plain_echo_server, &l), 0);
	c = tu_connect(AF_INET, port);
	cr_assert_geq(c, 0);
	cr_assert_eq(tu_accelerated(c), 0);
	cr_assert_eq(tu_set_nonblock(c, true), 0);
	/* Interleave sends and receives so neither side's buffers fill up. */
	while (got < total) {
		struct pollfd pfd = { .fd = c, .events = POLLIN | (sent < total ? POLLOUT : 0) };

		cr_assert_geq(scilan_poll(&pfd, 1, 10000), 1, "echo stalled at %zu/%zu", got, total);
		if ((pfd.revents & POLLOUT) && sent < total) {
			size_t k = total - sent < 65536 ? total - sent : 65536;
			ssize_t n;

			tu_stream_fill(3, sent, sb, k);
			n = scilan_send(c, sb, k, 0);
			cr_assert(n > 0 || errno == EAGAIN, "send: %s", strerror(errno));
			if (n > 0)
				sent += (size_t)n;
		}
		if (pfd.revents & POLLIN) {
			ssize_t n = scilan_recv(c, rb, 65536, 0);

			cr_assert(n > 0 || (n < 0 && errno == EAGAIN), "recv: %zd %s", n, strerror(errno));
			if (n > 0) {
				cr_assert_eq(tu_stream_check(3, got, rb, (size_t)n), -1, "echo corrupted near %zu", got);
				got += (size_t)n;
			}
		}
	}
	scilan_shutdown(c, SHUT_WR);
	tu_set_nonblock(c, false);
	cr_assert_eq(scilan_recv(c, rb, 1, 0), 0);
	scilan_close(c);
	close(l);
	tu_reap(&child);
	cr_assert(tu_exited_with(&child, 0), "echo server %s\n%s", tu_status_str(&child, st, sizeof(st)),
		  child.output);
	free(sb);
	free(rb);
}

/* ---- not accelerated: other families and types ------------------------------------------ */

Test(connect, af_unix_and_dgram_are_plain, .timeout = 30)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	const char *dir = tu_tmpdir();
	int l, c, a, v = -1, u;
	socklen_t vlen = sizeof(v);
	char b[8];

	cr_assert_not_null(dir);
	snprintf(un.sun_path, sizeof(un.sun_path), "%s/sock", dir);
	l = scilan_socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert_geq(l, 0, "scilan_socket(AF_UNIX): %s", strerror(errno));
	cr_assert_eq(scilan_is_socket(l), 0, "AF_UNIX socket managed by scilan");
	cr_assert_eq(scilan_bind(l, (struct sockaddr *)&un, sizeof(un)), 0, "bind: %s", strerror(errno));
	cr_assert_eq(scilan_listen(l, 4), 0);
	c = scilan_socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert_eq(scilan_connect(c, (struct sockaddr *)&un, sizeof(un)), 0, "connect: %s", strerror(errno));
	a = scilan_accept(l, NULL, NULL);
	cr_assert_geq(a, 0);
	cr_assert_eq(scilan_send(c, "unix", 4, 0), 4);
	cr_assert_eq(scilan_recv(a, b, 4, MSG_WAITALL), 4);
	cr_assert_arr_eq(b, "unix", 4);
	if (scilan_getsockopt(c, SOL_SCILAN, SCILAN_SO_ACCELERATED, &v, &vlen) == 0)
		cr_assert_eq(v, 0, "AF_UNIX connection claims acceleration");
	scilan_close(c);
	scilan_close(a);
	scilan_close(l);

	u = scilan_socket(AF_INET, SOCK_DGRAM, 0);
	cr_assert_geq(u, 0);
	cr_assert_eq(scilan_is_socket(u), 0, "UDP socket managed by scilan");
	cr_assert_eq(scilan_close(u), 0);
}
