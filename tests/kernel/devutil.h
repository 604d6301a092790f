/* devutil.h — what the guest programs over libscilan's device fabric
 * (devtest.c, devsec.c) share: the map and settings every process reads,
 * scilan listeners and clients on loopback, whole sends and receives.
 */
#ifndef SCILAN_DEVUTIL_H
#define SCILAN_DEVUTIL_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guest.h"
#include "scilan.h"

#define MOCK_LINK "/sys/kernel/debug/ntb_mock/link"

static inline struct sockaddr_in loopback(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* A scilan listener on 127.0.0.1:port (registered on every /dev/scilanN). */
static inline int listener(uint16_t port)
{
	struct sockaddr_in a = loopback(port);
	int one = 1, fd = scilan_socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || scilan_setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    scilan_bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || scilan_listen(fd, 64) < 0)
		return -1;
	return fd;
}

static inline int connect_to(uint16_t port)
{
	struct sockaddr_in a = loopback(port);
	int fd = scilan_socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || scilan_connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return -1;
	return fd;
}

static inline int accelerated(int fd)
{
	int v = -1;
	socklen_t len = sizeof(v);

	return scilan_getsockopt(fd, SOL_SCILAN, SCILAN_SO_ACCELERATED, &v, &len) == 0 ? v : -1;
}

static inline int set_poll_us(int fd, int us)
{
	return scilan_setsockopt(fd, SOL_SCILAN, SCILAN_SO_POLL_US, &us, sizeof(us));
}

static inline int send_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t k = scilan_send(fd, p, n, MSG_NOSIGNAL);

		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static inline int recv_all(int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n) {
		ssize_t k = scilan_recv(fd, p, n, 0);

		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static inline int child_ok(pid_t pid)
{
	int st;

	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* The cluster map (every client through /dev/scilan0, so listeners take
 * connections on /dev/scilan1) and the settings, before the first scilan
 * call: they are read once per process.  0, or -1 after a FAIL line. */
static inline int dev_setup(const char *map)
{
	FILE *f = fopen("/tmp/devtest.conf", "w");

	if (!f || fputs(map, f) < 0 || fclose(f) != 0) {
		result("dev_setup", 0, "cannot write the map");
		return -1;
	}
	setenv("SCILAN_CONF", "/tmp/devtest.conf", 1);
	setenv("SCILAN_FABRIC", "dev", 1);
	if (!getenv("SCILAN_RUNDIR"))
		setenv("SCILAN_RUNDIR", "/tmp/scilan-run", 1);
	return 0;
}

#endif
