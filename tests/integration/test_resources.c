/* test_resources.c — scilan out of resources: no room for a connection's
 * segment (a file size limit fails its allocation as a full tmpfs or memory
 * cgroup would).  The connection must still work, over kernel TCP, with a
 * clear error on stderr; nothing may be lost.  And what a connection costs
 * in descriptors once agreed.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>

#include "testutil.h"

#define PAYLOAD (256 * 1024)

/* In a fresh child: connect to port with files limited to limit bytes, send
 * the seeded stream, report whether the connection was accelerated. */
static int limited_client(void *arg)
{
	uint16_t port = (uint16_t)(uintptr_t)arg;
	struct rlimit lim = { 64 * 1024, 64 * 1024 };
	static unsigned char buf[PAYLOAD];
	int fd;

	/* A real full disk returns ENOSPC; the size limit returns EFBIG, and
	 * would also raise SIGXFSZ, which would kill before any error shows. */
	signal(SIGXFSZ, SIG_IGN);
	TU_CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit");
	fd = tu_connect(AF_INET, port);
	TU_CHECK(fd >= 0, "connect under a file size limit");
	tu_log("accelerated=%d", tu_accelerated(fd));
	tu_stream_fill(77, 0, buf, sizeof(buf));
	TU_CHECK(tu_send_all(fd, buf, sizeof(buf), 0) == (ssize_t)sizeof(buf), "send");
	scilan_close(fd);
	return 0;
}

Test(resources, no_room_for_segment_falls_back, .timeout = 60)
{
	static unsigned char buf[PAYLOAD + 1];
	struct tu_child child;
	uint16_t port;
	int lfd = tu_listen(AF_INET, 4, &port), fd;
	ssize_t got;

	cr_assert_geq(lfd, 0, "listen: %s", strerror(errno));
	cr_assert_eq(tu_spawn(&child, limited_client, (void *)(uintptr_t)port), 0);
	fd = tu_accept(lfd);
	cr_assert_geq(fd, 0, "accept: %s", strerror(errno));
	got = tu_recv_all(fd, buf, sizeof(buf));
	tu_reap(&child);
	cr_assert(tu_exited_with(&child, 0), "client failed:\n%s", child.output);
	cr_assert_eq(got, PAYLOAD, "received %zd of %d bytes", got, PAYLOAD);
	cr_assert_eq(tu_stream_check(77, 0, buf, PAYLOAD), -1, "data corrupted");
	cr_assert_eq(tu_accelerated(fd), 0, "accelerated without a segment?");
	cr_assert(strstr(child.output, "accelerated=0"), "client side accelerated:\n%s", child.output);
	cr_assert(strstr(child.output, "cannot offer a shared segment"), "no clear error on stderr:\n%s",
		  child.output);
	scilan_close(fd);
	scilan_close(lfd);
}

static int open_descriptors(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

/* Descriptors are what a server with thousands of clients runs out of first
 * (RLIMIT_NOFILE): once the acceptor attached, the connecting side keeps its
 * socket and its two bells, not the segment's memfd, even on a connection
 * that exchanged bytes without ever sleeping (which used to keep it). */
Test(resources, agreed_connector_keeps_three_descriptors, .timeout = 60)
{
	enum { CONNS = 32 };
	int c[CONNS], s[CONNS], before, after;
	char b = 'x';

	before = open_descriptors();
	for (int i = 0; i < CONNS; i++) {
		cr_assert_eq(tu_pair(AF_INET, &c[i], &s[i]), 0, "pair %d: %s", i, strerror(errno));
		cr_assert(tu_accelerated(c[i]), "pair %d not accelerated", i);
		/* One byte each way: the connector learns the offer was taken. */
		cr_assert_eq(scilan_send(c[i], &b, 1, 0), 1);
		cr_assert_eq(scilan_recv(s[i], &b, 1, 0), 1);
		cr_assert_eq(scilan_send(s[i], &b, 1, 0), 1);
		cr_assert_eq(scilan_recv(c[i], &b, 1, 0), 1);
	}
	after = open_descriptors();
	/* Both ends live in this process: 3 each, the listener's none; a few
	 * once per process (the statistics file). */
	cr_assert_leq(after - before, CONNS * 6 + 4, "%d descriptors for %d connections (both ends)", after - before,
		      CONNS);
	for (int i = 0; i < CONNS; i++) {
		scilan_close(c[i]);
		scilan_close(s[i]);
	}
}
