/* test_io.c — data calls on a connected pair: partial writes and EAGAIN (O_NONBLOCK,
 * MSG_DONTWAIT), zero-length calls, MSG_PEEK (also across the ring wrap), short reads
 * and MSG_WAITALL.  The rest of the old test_io.c: test_{shutdown,errno,options,poll}.c. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cr_helpers.h"
#include "testutil.h"

static int ring_size(int fd)
{
	int v = -1;
	socklen_t len = sizeof(v);

	cr_assert_eq(scilan_getsockopt(fd, SOL_SCILAN, SCILAN_SO_RING_SIZE, &v, &len), 0, "SCILAN_SO_RING_SIZE: %s", strerror(errno));
	return v;
}

/* Receive everything available without blocking; check it is stream seed at *off. */
static size_t drain_nonblocking(int fd, uint64_t seed, uint64_t *off)
{
	unsigned char buf[65536];
	size_t total = 0;
	ssize_t n;

	while ((n = scilan_recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		int64_t bad = tu_stream_check(seed, *off, buf, (size_t)n);

		cr_assert_eq(bad, -1, "data differs at stream offset %llu", (unsigned long long)(*off + (uint64_t)bad));
		*off += (uint64_t)n;
		total += (size_t)n;
	}
	cr_assert(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK), "drain ended with %zd (%s)", n,
		  strerror(errno));
	return total;
}

/* ---- non-blocking writes and reads --------------------------------------------------- */

static void partial_write(bool use_fcntl)
{
	unsigned char *buf = malloc(65536);
	uint64_t sent = 0, got = 0;
	int c, s, flags = use_fcntl ? 0 : MSG_DONTWAIT;
	ssize_t n;

	pair_or_die(0, 4096, &c, &s);
	cr_assert_eq(ring_size(s), 4096, "receiver ring %d, SO_RCVBUF asked 4096", ring_size(s));
	if (use_fcntl)
		cr_assert_eq(tu_set_nonblock(c, true), 0);
	tu_stream_fill(11, 0, buf, 65536);
	n = scilan_send(c, buf, 65536, flags);
	cr_assert_gt(n, 0, "non-blocking send into an empty ring: %zd (%s)", n, strerror(errno));
	cr_assert_lt(n, 65536, "64 KiB fit into a 4 KiB ring");
	cr_assert_eq(n, 4096, "an empty 4 KiB ring took %zd bytes", n);
	sent = (uint64_t)n;
	n = scilan_send(c, buf + sent, 65536 - sent, flags);
	cr_assert_eq(n, -1, "send into a full ring returned %zd", n);
	cr_assert(errno == EAGAIN || errno == EWOULDBLOCK, "errno %s, want EAGAIN", strerror(errno));

	cr_assert_eq(drain_nonblocking(s, 11, &got), sent, "received %llu of %llu", (unsigned long long)got,
		     (unsigned long long)sent);
	/* Space is back: the rest goes in pieces. */
	while (sent < 65536) {
		n = scilan_send(c, buf + sent, 65536 - sent, flags);
		if (n < 0) {
			cr_assert(errno == EAGAIN || errno == EWOULDBLOCK, "send: %s", strerror(errno));
			cr_assert_gt(drain_nonblocking(s, 11, &got), 0, "ring full but nothing to receive");
			continue;
		}
		cr_assert_gt(n, 0);
		sent += (uint64_t)n;
	}
	while (got < sent)
		cr_assert_gt(drain_nonblocking(s, 11, &got), 0, "lost data: %llu of %llu", (unsigned long long)got,
			     (unsigned long long)sent);
	cr_assert_eq(got, 65536);
	free(buf);
	scilan_close(c);
	scilan_close(s);
}

Test(io, partial_write_o_nonblock, .timeout = 30)
{
	partial_write(true);
}

Test(io, partial_write_msg_dontwait, .timeout = 30)
{
	partial_write(false);
}

Test(io, eagain_on_empty, .timeout = 30)
{
	int c, s;
	char b;

	pair_or_die(0, 0, &c, &s);
	cr_assert_eq(scilan_recv(s, &b, 1, MSG_DONTWAIT), -1);
	cr_assert(errno == EAGAIN || errno == EWOULDBLOCK, "MSG_DONTWAIT: %s", strerror(errno));
	cr_assert_eq(scilan_recv(s, &b, 1, MSG_DONTWAIT | MSG_PEEK), -1);
	cr_assert(errno == EAGAIN || errno == EWOULDBLOCK, "MSG_PEEK|MSG_DONTWAIT: %s", strerror(errno));
	cr_assert_eq(tu_set_nonblock(s, true), 0);
	cr_assert_eq(scilan_recv(s, &b, 1, 0), -1);
	cr_assert(errno == EAGAIN || errno == EWOULDBLOCK, "O_NONBLOCK: %s", strerror(errno));
	cr_assert_eq(tu_set_nonblock(s, false), 0);
	/* Both directions. */
	cr_assert_eq(scilan_recv(c, &b, 1, MSG_DONTWAIT), -1);
	cr_assert(errno == EAGAIN || errno == EWOULDBLOCK, "client: %s", strerror(errno));
	/* Data arrives: no longer EAGAIN. */
	cr_assert_eq(scilan_send(c, "z", 1, 0), 1);
	cr_assert_eq(scilan_recv(s, &b, 1, MSG_DONTWAIT), 1);
	cr_assert_eq(b, 'z');
	scilan_close(c);
	scilan_close(s);
}

Test(io, zero_length_calls, .timeout = 30)
{
	int c, s;
	char b;

	pair_or_die(0, 0, &c, &s);
	cr_assert_eq(scilan_send(c, "", 0, 0), 0);
	/* As kernel TCP: even zero bytes wait for data (EAGAIN when non-blocking). */
	errno = 0;
	cr_assert_eq(scilan_recv(s, &b, 0, MSG_DONTWAIT), -1);
	cr_assert_eq(errno, EAGAIN);
	cr_assert_eq(scilan_send(c, "q", 1, 0), 1);
	cr_assert_eq(scilan_recv(s, &b, 0, 0), 0);
	cr_assert_eq(scilan_recv(s, &b, 1, 0), 1, "zero-length recv consumed data");
	cr_assert_eq(b, 'q');
	scilan_close(c);
	scilan_close(s);
}

/* ---- MSG_PEEK, short reads, MSG_WAITALL ----------------------------------------------------- */

Test(io, msg_peek, .timeout = 30)
{
	char buf[64], again[64];
	int c, s;
	ssize_t n;

	pair_or_die(0, 0, &c, &s);
	cr_assert_eq(tu_send_all(c, "abcdefghijklmnopqrstuvwxyz", 26, 0), 26);
	n = scilan_recv(s, buf, 4, MSG_PEEK);
	cr_assert_eq(n, 4);
	cr_assert_arr_eq(buf, "abcd", 4);
	n = scilan_recv(s, again, 4, MSG_PEEK);
	cr_assert_eq(n, 4, "second peek");
	cr_assert_arr_eq(again, "abcd", 4, "peek consumed data");
	n = scilan_recv(s, buf, 4, 0);
	cr_assert_eq(n, 4);
	cr_assert_arr_eq(buf, "abcd", 4, "recv after peek got other bytes");
	/* A peek larger than what is there returns what is there. */
	n = scilan_recv(s, buf, sizeof(buf), MSG_PEEK);
	cr_assert_eq(n, 22, "peek of 64 with 22 waiting returned %zd", n);
	cr_assert_arr_eq(buf, "efghijklmnopqrstuvwxyz", 22);
	/* MSG_PEEK|MSG_WAITALL does not wait for more. */
	n = scilan_recv(s, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	cr_assert_eq(n, 22);
	n = scilan_recv(s, buf, sizeof(buf), 0);
	cr_assert_eq(n, 22);
	cr_assert_arr_eq(buf, "efghijklmnopqrstuvwxyz", 22);
	cr_assert_eq(scilan_recv(s, buf, 1, MSG_PEEK | MSG_DONTWAIT), -1, "peek after everything was read");
	cr_assert(errno == EAGAIN || errno == EWOULDBLOCK);

	/* Peek across the ring's wrap point (4 KiB ring, data straddling the end). */
	scilan_close(c);
	scilan_close(s);
	pair_or_die(0, 4096, &c, &s);
	{
		unsigned char big[4096], p1[3000], p2[3000];
		uint64_t off = 0;

		tu_stream_fill(5, 0, big, 3000);
		cr_assert_eq(tu_send_all(c, big, 3000, 0), 3000);
		cr_assert_eq(tu_recv_all(s, p1, 3000), 3000);
		off = 3000;
		tu_stream_fill(5, off, big, 3000);
		cr_assert_eq(tu_send_all(c, big, 3000, 0), 3000);
		cr_assert_eq(scilan_recv(s, p1, 3000, MSG_PEEK), 3000);
		cr_assert_eq(tu_stream_check(5, off, p1, 3000), -1, "peek across the wrap corrupted");
		cr_assert_eq(tu_recv_all(s, p2, 3000), 3000);
		cr_assert_arr_eq(p1, p2, 3000, "peek and recv differ across the wrap");
	}
	scilan_close(c);
	scilan_close(s);
}

Test(io, short_reads, .timeout = 30)
{
	char buf[1000];
	int c, s;
	ssize_t n, total = 0;

	pair_or_die(0, 0, &c, &s);
	cr_assert_eq(tu_send_all(c, buf, 100, 0), 100);
	n = scilan_recv(s, buf, sizeof(buf), 0);
	cr_assert_eq(n, 100, "blocking recv of 1000 with 100 waiting returned %zd", n);
	cr_assert_eq(tu_send_all(c, buf, 10, 0), 10);
	cr_assert_eq(tu_send_all(c, buf, 20, 0), 20);
	cr_assert_eq(tu_send_all(c, buf, 30, 0), 30);
	while (total < 60) {
		n = scilan_recv(s, buf, sizeof(buf), 0);
		cr_assert_gt(n, 0);
		total += n;
	}
	cr_assert_eq(total, 60);
	/* Reads smaller than the data. */
	cr_assert_eq(tu_send_all(c, "0123456789", 10, 0), 10);
	for (int i = 0; i < 10; i++) {
		cr_assert_eq(scilan_recv(s, buf, 1, 0), 1);
		cr_assert_eq(buf[0], '0' + i);
	}
	scilan_close(c);
	scilan_close(s);
}

struct io_arg {
	uint16_t port;
	struct tu_sync sync;
	int rcvbuf;
	size_t bytes;
};

static int waitall_sender(void *p)
{
	struct io_arg *a = p;
	unsigned char buf[1000];
	uint64_t v;
	int fd = tu_connect(AF_INET, a->port);

	TU_CHECK(fd >= 0, "connect");
	TU_CHECK(tu_sync_get_child(&a->sync, &v) == 0, "wait for go");
	for (int i = 0; i < 10; i++) {
		tu_stream_fill(21, (uint64_t)i * 1000, buf, 1000);
		TU_CHECK(tu_send_all(fd, buf, 1000, 0) == 1000, "send piece %d", i);
		tu_sleep_ms(20);
	}
	TU_CHECK(tu_sync_get_child(&a->sync, &v) == 0, "wait for phase 2");
	tu_stream_fill(22, 0, buf, 500);
	TU_CHECK(tu_send_all(fd, buf, 500, 0) == 500, "send 500");
	TU_CHECK(scilan_shutdown(fd, SHUT_WR) == 0, "shutdown");
	TU_CHECK(tu_sync_get_child(&a->sync, &v) == 0, "wait for done");
	TU_CHECK(scilan_close(fd) == 0, "close");
	return 0;
}

Test(io, msg_waitall, .timeout = 60)
{
	struct io_arg a;
	struct tu_child child;
	unsigned char buf[10000];
	int l, s;
	ssize_t n;
	char st[128];

	tu_watchdog(50, "MSG_WAITALL");
	cr_assert_eq(tu_sync_init(&a.sync), 0);
	l = tu_listen(AF_INET, 4, &a.port);
	cr_assert_geq(l, 0);
	cr_assert_eq(tu_spawn(&child, waitall_sender, &a), 0);
	s = tu_accept(l);
	cr_assert_geq(s, 0);
	cr_assert_eq(tu_accelerated(s), 1);
	cr_assert_eq(tu_sync_put(&a.sync, 1), 0);
	n = scilan_recv(s, buf, 10000, MSG_WAITALL);
	cr_assert_eq(n, 10000, "MSG_WAITALL over 10 sender writes returned %zd (%s)", n, strerror(errno));
	cr_assert_eq(tu_stream_check(21, 0, buf, 10000), -1, "MSG_WAITALL data corrupted");
	cr_assert_eq(tu_sync_put(&a.sync, 2), 0);
	/* EOF ends MSG_WAITALL early with what arrived. */
	n = scilan_recv(s, buf, 1000, MSG_WAITALL);
	cr_assert_eq(n, 500, "MSG_WAITALL cut by EOF returned %zd (%s)", n, strerror(errno));
	cr_assert_eq(tu_stream_check(22, 0, buf, 500), -1);
	cr_assert_eq(scilan_recv(s, buf, 1000, MSG_WAITALL), 0);
	cr_assert_eq(tu_sync_put(&a.sync, 3), 0);
	scilan_close(s);
	scilan_close(l);
	tu_reap(&child);
	cr_assert(tu_exited_with(&child, 0), "sender %s\n%s", tu_status_str(&child, st, sizeof(st)), child.output);
}

struct late_answer {
	int fd;
	unsigned delay_ms;
};

static void *answer_late(void *arg)
{
	const struct late_answer *a = arg;

	usleep(a->delay_ms * 1000u);
	return (void *)(intptr_t)scilan_send(a->fd, "answer", 6, 0);
}

/* A hooked server that takes longer than the stall watch (3 s) to answer a
 * request it has read: the waiting client must not take it for a peer that
 * reads the kernel socket and move a healthy connection to kernel TCP. */
Test(io, slow_answer_keeps_the_rings, .timeout = 60)
{
	struct late_answer a;
	pthread_t t;
	char req[100] = { 0 }, got[100];
	int c, s;

	cr_assert_eq(tu_pair(AF_INET, &c, &s), 0);
	cr_assert_eq(tu_accelerated(c), 1);
	/* The server's first consume is published at once whatever the
	 * batching: the second request is the one that counts. */
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(tu_send_all(c, req, sizeof(req), 0), (ssize_t)sizeof(req));
		cr_assert_eq(tu_recv_all(s, got, sizeof(req)), (ssize_t)sizeof(req));
		if (i == 0) {
			cr_assert_eq(scilan_send(s, "first!", 6, 0), 6);
			cr_assert_eq(tu_recv_all(c, got, 6), 6);
		}
	}
	a.fd = s;
	a.delay_ms = 3600;
	cr_assert_eq(pthread_create(&t, NULL, answer_late, &a), 0);
	cr_assert_eq(tu_recv_all(c, got, 6), 6, "recv: %s", strerror(errno));
	pthread_join(t, NULL);
	cr_expect_eq(memcmp(got, "answer", 6), 0);
	cr_expect_eq(tu_accelerated(c), 1, "the client moved a healthy connection to kernel TCP");
	cr_expect_eq(tu_accelerated(s), 1, "the server's connection was moved to kernel TCP");
	scilan_close(c);
	scilan_close(s);
}
