/* test_errno.c — errno for misuse of the API: ENOTCONN on unconnected sockets and
 * listeners, EBADF on bad/closed fds (and ENOTSOCK on a reused number), EINVAL for
 * bad arguments, option values and lengths. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "cr_helpers.h"
#include "testutil.h"

/* ---- errno for misuse -------------------------------------------------------------------- */

Test(io, enotconn, .timeout = 30)
{
	int fd = scilan_socket(AF_INET, SOCK_STREAM, 0), plain = socket(AF_INET, SOCK_STREAM, 0), l, kerr;
	uint16_t port;
	char b;

	cr_assert_eq(scilan_recv(fd, &b, 1, 0), -1);
	cr_assert_eq(errno, ENOTCONN, "recv on an unconnected socket: %s", strerror(errno));
	cr_assert_eq(scilan_recv(fd, &b, 1, MSG_DONTWAIT), -1);
	cr_assert_eq(errno, ENOTCONN);
	/* send on an unconnected TCP socket: whatever the kernel says (Linux: EPIPE). */
	cr_assert_eq(send(plain, "x", 1, MSG_NOSIGNAL), -1);
	kerr = errno;
	cr_assert_eq(scilan_send(fd, "x", 1, MSG_NOSIGNAL), -1);
	cr_assert_eq(errno, kerr, "send on an unconnected socket: %s, kernel TCP says %s", strerror(errno),
		     strerror(kerr));
	cr_assert_eq(scilan_shutdown(fd, SHUT_RDWR), -1);
	cr_assert_eq(errno, ENOTCONN);
	/* A listener is not connected either. */
	l = tu_listen(AF_INET, 4, &port);
	cr_assert_eq(scilan_recv(l, &b, 1, 0), -1);
	cr_assert_eq(errno, ENOTCONN, "recv on a listener: %s", strerror(errno));
	scilan_close(l);
	scilan_close(fd);
	close(plain);
}

Test(io, ebadf, .timeout = 30)
{
	struct pollfd pfd;
	int c, s, v;
	socklen_t vlen = sizeof(v);
	char b;
	int p[2];

	cr_assert_eq(scilan_send(-1, "x", 1, 0), -1);
	cr_assert_eq(errno, EBADF, "send(-1): %s", strerror(errno));
	cr_assert_eq(scilan_recv(-1, &b, 1, 0), -1);
	cr_assert_eq(errno, EBADF);
	cr_assert_eq(scilan_close(-1), -1);
	cr_assert_eq(errno, EBADF);
	cr_assert_eq(scilan_shutdown(-1, SHUT_RDWR), -1);
	cr_assert_eq(errno, EBADF);
	cr_assert_eq(scilan_listen(-1, 1), -1);
	cr_assert_eq(errno, EBADF);
	cr_assert_eq(scilan_accept(-1, NULL, NULL), -1);
	cr_assert_eq(errno, EBADF);
	cr_assert_eq(scilan_getsockopt(-1, SOL_SCILAN, SCILAN_SO_ACCELERATED, &v, &vlen), -1);
	cr_assert_eq(errno, EBADF, "getsockopt(-1, SOL_SCILAN): %s", strerror(errno));

	/* A closed accelerated socket. */
	pair_or_die(0, 0, &c, &s);
	cr_assert_eq(scilan_close(c), 0);
	cr_assert_eq(scilan_send(c, "x", 1, MSG_NOSIGNAL), -1, "send on a closed fd succeeded");
	cr_assert_eq(errno, EBADF, "send on a closed fd: %s", strerror(errno));
	cr_assert_eq(scilan_recv(c, &b, 1, MSG_DONTWAIT), -1);
	cr_assert_eq(errno, EBADF, "recv on a closed fd: %s", strerror(errno));
	cr_assert_eq(scilan_close(c), -1, "double close succeeded");
	cr_assert_eq(errno, EBADF);
	vlen = sizeof(v);
	cr_assert_eq(scilan_getsockopt(c, SOL_SCILAN, SCILAN_SO_ACCELERATED, &v, &vlen), -1);
	cr_assert_eq(errno, EBADF, "getsockopt on a closed fd: %s", strerror(errno));
	cr_assert_eq(scilan_setsockopt(c, SOL_SCILAN, SCILAN_SO_POLL_US, &v, sizeof(v)), -1);
	cr_assert_eq(errno, EBADF, "setsockopt on a closed fd: %s", strerror(errno));
	pfd = (struct pollfd){ .fd = c, .events = POLLIN };
	cr_assert_eq(scilan_poll(&pfd, 1, 0), 1);
	cr_assert(pfd.revents & POLLNVAL, "poll on a closed fd: revents 0x%x", pfd.revents);

	/* The number reused by a pipe: not a socket any more. */
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(scilan_is_socket(p[0]), 0);
	cr_assert_eq(scilan_is_socket(p[1]), 0);
	cr_assert_eq(scilan_send(p[1], "x", 1, MSG_NOSIGNAL), -1, "scilan_send on a pipe succeeded");
	cr_assert(errno == ENOTSOCK || errno == EBADF, "send on a pipe: %s", strerror(errno));
	cr_assert_eq(scilan_recv(p[0], &b, 1, MSG_DONTWAIT), -1);
	cr_assert(errno == ENOTSOCK || errno == EBADF, "recv on a pipe: %s", strerror(errno));
	vlen = sizeof(v);
	cr_assert_eq(scilan_getsockopt(p[0], SOL_SCILAN, SCILAN_SO_ACCELERATED, &v, &vlen), -1);
	cr_assert(errno == ENOTSOCK || errno == EBADF, "getsockopt on a pipe: %s", strerror(errno));
	close(p[0]);
	close(p[1]);
	scilan_close(s);
}

Test(io, einval, .timeout = 30)
{
	struct sockaddr_storage ss;
	int c, s, v, fresh;
	socklen_t vlen;
	short tiny = 0;

	pair_or_die(0, 0, &c, &s);
	v = -2; /* -1 hands the spin back to the learning (adaptive) */
	cr_assert_eq(scilan_setsockopt(c, SOL_SCILAN, SCILAN_SO_POLL_US, &v, sizeof(v)), -1);
	cr_assert_eq(errno, EINVAL, "negative poll time: %s", strerror(errno));
	v = INT_MAX;
	cr_assert_eq(scilan_setsockopt(c, SOL_SCILAN, SCILAN_SO_POLL_US, &v, sizeof(v)), -1);
	cr_assert_eq(errno, EINVAL, "absurd poll time: %s", strerror(errno));
	cr_assert_eq(scilan_setsockopt(c, SOL_SCILAN, SCILAN_SO_POLL_US, &tiny, sizeof(tiny)), -1);
	cr_assert_eq(errno, EINVAL, "short optlen: %s", strerror(errno));
	vlen = 2;
	cr_assert_eq(scilan_getsockopt(c, SOL_SCILAN, SCILAN_SO_ACCELERATED, &v, &vlen), -1);
	cr_assert_eq(errno, EINVAL, "short getsockopt optlen: %s", strerror(errno));
	vlen = sizeof(v);
	cr_assert_eq(scilan_getsockopt(c, SOL_SCILAN, 999, &v, &vlen), -1);
	cr_assert_eq(errno, ENOPROTOOPT, "unknown SOL_SCILAN option: %s", strerror(errno));
	v = 1;
	cr_assert_eq(scilan_setsockopt(c, SOL_SCILAN, SCILAN_SO_ACCELERATED, &v, sizeof(v)), -1,
		     "read-only SCILAN_SO_ACCELERATED was set");
	cr_assert_eq(scilan_shutdown(c, -1), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(scilan_listen(c, 4), -1, "listen on a connected socket");
	cr_assert_eq(errno, EINVAL, "listen on a connected socket: %s", strerror(errno));
	cr_assert_eq(scilan_accept(c, NULL, NULL), -1);
	cr_assert_eq(errno, EINVAL, "accept on a connected socket: %s", strerror(errno));

	fresh = scilan_socket(AF_INET, SOCK_STREAM, 0);
	tu_loopback(AF_INET, 0, &ss);
	cr_assert_eq(scilan_bind(fresh, (struct sockaddr *)&ss, 3), -1);
	cr_assert_eq(errno, EINVAL, "bind with a short address: %s", strerror(errno));
	cr_assert_eq(scilan_connect(fresh, (struct sockaddr *)&ss, 3), -1);
	cr_assert_eq(errno, EINVAL, "connect with a short address: %s", strerror(errno));
	cr_assert_eq(scilan_accept(fresh, NULL, NULL), -1);
	cr_assert_eq(errno, EINVAL, "accept on a non-listening socket: %s", strerror(errno));
	scilan_close(fresh);
	cr_assert_eq(scilan_socket(AF_INET, 12345, 0), -1);
	cr_assert_eq(errno, EINVAL, "socket with a bad type: %s", strerror(errno));
	scilan_close(c);
	scilan_close(s);
}
