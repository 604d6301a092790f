/* testutil.c — the socket helpers of testutil.h: test scaling from the environment,
 * loopback addresses, scilan and plain listeners/connects, in-process pairs, option
 * shortcuts and send/recv-all loops. */
#include "testutil.h"
#include "fabric/shm/offer_port.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sys/ioctl.h>
#include <net/if.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- scaling ----------------------------------------------------------------- */

uint64_t tu_env_u64(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long x;

	if (!v || !*v)
		return dflt;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || *end || v[0] == '-')
		return dflt;
	return (uint64_t)x;
}

uint64_t tu_scaled(uint64_t native, uint64_t sanitized)
{
	uint64_t base = TU_SANITIZED ? sanitized : native;
	const char *v = getenv("SCILAN_TEST_SCALE");
	double scale, r;
	char *end;

	if (v && *v) {
		scale = strtod(v, &end);
		if (!*end && scale > 0) {
			r = (double)base * scale;
			base = r < 1 ? 1 : (uint64_t)r;
		}
	}
	return base ? base : 1;
}

/* ---- sockets ----------------------------------------------------------------- */

socklen_t tu_loopback(int family, uint16_t port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		a->sin6_port = htons(port);
		return sizeof(*a);
	}
	struct sockaddr_in *a = (struct sockaddr_in *)ss;

	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a->sin_port = htons(port);
	return sizeof(*a);
}

uint16_t tu_local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return 0;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return 0;
}

int tu_bind_offer_port(int fd)
{
	const unsigned span = SL_OFFER_PORT_HI - SL_OFFER_PORT_LO + 1;
	struct sockaddr_in at = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	/* Tests of other processes pick theirs from the same range. */
	unsigned first = (unsigned)getpid() * 7919u % span;

	for (unsigned i = 0; i < span; i++) {
		at.sin_port = htons((uint16_t)(SL_OFFER_PORT_LO + (first + i) % span));
		if (bind(fd, (struct sockaddr *)&at, sizeof(at)) == 0)
			return 0;
		if (errno != EADDRINUSE)
			return -1;
	}
	errno = EADDRINUSE;
	return -1;
}

bool tu_have_ipv6(void)
{
	struct sockaddr_storage ss;
	socklen_t len = tu_loopback(AF_INET6, 0, &ss);
	int fd = socket(AF_INET6, SOCK_STREAM, 0);
	bool ok;

	if (fd < 0)
		return false;
	ok = bind(fd, (struct sockaddr *)&ss, len) == 0;
	close(fd);
	return ok;
}

static int listen_common(bool plain, int family, int backlog, int rcvbuf, uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t len = tu_loopback(family, 0, &ss);
	int fd = plain ? socket(family, SOCK_STREAM, 0) : scilan_socket(family, SOCK_STREAM, 0);
	int err;

	if (fd < 0)
		return -1;
	if (rcvbuf > 0 && (plain ? setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf))
				 : scilan_setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf))) < 0)
		goto fail;
	if ((plain ? bind(fd, (struct sockaddr *)&ss, len) : scilan_bind(fd, (struct sockaddr *)&ss, len)) < 0)
		goto fail;
	if ((plain ? listen(fd, backlog) : scilan_listen(fd, backlog)) < 0)
		goto fail;
	*port = tu_local_port(fd);
	if (!*port) {
		errno = EADDRNOTAVAIL;
		goto fail;
	}
	return fd;
fail:
	err = errno;
	if (plain)
		close(fd);
	else
		scilan_close(fd);
	errno = err;
	return -1;
}

int tu_listen(int family, int backlog, uint16_t *port)
{
	return listen_common(false, family, backlog, 0, port);
}

int tu_listen_rcvbuf(int family, int backlog, int rcvbuf, uint16_t *port)
{
	return listen_common(false, family, backlog, rcvbuf, port);
}

int tu_plain_listen(int family, int backlog, uint16_t *port)
{
	return listen_common(true, family, backlog, 0, port);
}

int tu_connect_rcvbuf(int family, uint16_t port, int rcvbuf)
{
	struct sockaddr_storage ss;
	socklen_t len = tu_loopback(family, port, &ss);
	int fd = scilan_socket(family, SOCK_STREAM, 0), err;

	if (fd < 0)
		return -1;
	if (rcvbuf > 0 && scilan_setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) < 0)
		goto fail;
	while (scilan_connect(fd, (struct sockaddr *)&ss, len) < 0) {
		if (errno != EINTR)
			goto fail;
	}
	return fd;
fail:
	err = errno;
	scilan_close(fd);
	errno = err;
	return -1;
}

int tu_connect(int family, uint16_t port)
{
	return tu_connect_rcvbuf(family, port, 0);
}

int tu_plain_connect(int family, uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t len = tu_loopback(family, port, &ss);
	int fd = socket(family, SOCK_STREAM, 0), err;

	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&ss, len) < 0) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

int tu_accept(int lfd)
{
	int fd;

	do
		fd = scilan_accept(lfd, NULL, NULL);
	while (fd < 0 && errno == EINTR);
	return fd;
}

int tu_pair_rcvbuf(int family, int crcv, int srcv, int *cfd, int *sfd)
{
	uint16_t port;
	int l = tu_listen_rcvbuf(family, 4, srcv, &port), c, s, err;

	if (l < 0)
		return -1;
	c = tu_connect_rcvbuf(family, port, crcv);
	if (c < 0)
		goto fail_l;
	s = tu_accept(l);
	if (s < 0)
		goto fail_c;
	scilan_close(l);
	*cfd = c;
	*sfd = s;
	return 0;
fail_c:
	err = errno;
	scilan_close(c);
	errno = err;
fail_l:
	err = errno;
	scilan_close(l);
	errno = err;
	return -1;
}

int tu_pair(int family, int *cfd, int *sfd)
{
	return tu_pair_rcvbuf(family, 0, 0, cfd, sfd);
}

int tu_accelerated(int fd)
{
	int v = -1;
	socklen_t len = sizeof(v);

	if (scilan_getsockopt(fd, SOL_SCILAN, SCILAN_SO_ACCELERATED, &v, &len) < 0)
		return -1;
	return v;
}

int tu_set_poll_us(int fd, int us)
{
	return scilan_setsockopt(fd, SOL_SCILAN, SCILAN_SO_POLL_US, &us, sizeof(us));
}

int tu_set_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -1;
	return fcntl(fd, F_SETFL, on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK));
}

ssize_t tu_send_all(int fd, const void *buf, size_t len, int flags)
{
	const unsigned char *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = scilan_send(fd, p + done, len - done, flags);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		done += (size_t)n;
	}
	return (ssize_t)done;
}

ssize_t tu_recv_all(int fd, void *buf, size_t len)
{
	unsigned char *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = scilan_recv(fd, p + done, len - done, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

int tu_loopback_up(void)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r = -1;

	if (fd < 0)
		return -1;
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		r = ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	close(fd);
	return r;
}
