/* test_io.c — data calls: partial writes/EAGAIN, MSG_PEEK/WAITALL/DONTWAIT, short
 * reads, shutdown, close with data in flight, EPIPE/SIGPIPE, ENOTCONN/EBADF/EINVAL,
 * socket options and env defaults, and scilan_poll readiness. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

static void pair_or_die(int crcv, int srcv, int *c, int *s)
{
	cr_assert_eq(tu_pair_rcvbuf(AF_INET, crcv, srcv, c, s), 0, "connected pair: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(*c), 1, "client end not accelerated");
	cr_assert_eq(tu_accelerated(*s), 1, "server end not accelerated");
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
	}
}

static int ring_size(int fd)
{
	int v = -1;
	socklen_t len = sizeof(v);

	cr_assert_eq(scilan_getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, &len), 0, "SO_RCVBUF: %s", strerror(errno));
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
	cr_assert_eq(scilan_recv(s, &b, 0, MSG_DONTWAIT), 0);
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
		sleep_ms(20);
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

/* ---- shutdown ------------------------------------------------------------------------ */

Test(io, shutdown_wr_eof_after_data, .timeout = 30)
{
	unsigned char buf[4000];
	struct pollfd pfd;
	int c, s;
	ssize_t n;

	tu_watchdog(25, "SHUT_WR");
	pair_or_die(0, 0, &c, &s);
	tu_stream_fill(31, 0, buf, 3000);
	cr_assert_eq(tu_send_all(c, buf, 3000, 0), 3000);
	cr_assert_eq(scilan_shutdown(c, SHUT_WR), 0, "shutdown: %s", strerror(errno));
	memset(buf, 0, sizeof(buf));
	cr_assert_eq(tu_recv_all(s, buf, 3000), 3000, "data before the FIN lost");
	cr_assert_eq(tu_stream_check(31, 0, buf, 3000), -1);
	pfd = (struct pollfd){ .fd = s, .events = POLLIN };
	cr_assert_eq(scilan_poll(&pfd, 1, 5000), 1, "EOF does not make the socket readable");
	cr_assert(pfd.revents & POLLIN);
	cr_assert_eq(scilan_recv(s, buf, sizeof(buf), 0), 0, "no EOF after SHUT_WR");
	cr_assert_eq(scilan_recv(s, buf, sizeof(buf), 0), 0, "EOF not sticky");
	/* Half-close: the other direction still works. */
	cr_assert_eq(tu_send_all(s, "reply", 5, 0), 5, "send after peer's SHUT_WR: %s", strerror(errno));
	n = tu_recv_all(c, buf, 5);
	cr_assert_eq(n, 5, "recv on the half-closed side: %zd (%s)", n, strerror(errno));
	cr_assert_arr_eq(buf, "reply", 5);
	/* Writing after our own SHUT_WR. */
	cr_assert_eq(scilan_send(c, "x", 1, MSG_NOSIGNAL), -1, "send after SHUT_WR succeeded");
	cr_assert_eq(errno, EPIPE, "errno %s", strerror(errno));
	scilan_close(c);
	scilan_close(s);
}

static int blocked_reader(void *p)
{
	struct io_arg *a = p;
	char b[16];
	ssize_t n;
	int fd = tu_connect(AF_INET, a->port);

	TU_CHECK(fd >= 0, "connect");
	TU_CHECK(tu_set_poll_us(fd, 0) == 0, "poll_us");
	TU_CHECK(tu_sync_put_child(&a->sync, 1) == 0, "ready");
	n = scilan_recv(fd, b, sizeof(b), 0);
	TU_CHECK(n == 0, "blocked recv after the peer's SHUT_WR returned %zd", n);
	TU_CHECK(scilan_close(fd) == 0, "close");
	return 0;
}

Test(io, shutdown_wr_wakes_blocked_reader, .timeout = 60)
{
	struct io_arg a;
	struct tu_child child;
	uint64_t v;
	int l, s;
	char st[128];

	tu_watchdog(50, "SHUT_WR wake-up");
	cr_assert_eq(tu_sync_init(&a.sync), 0);
	l = tu_listen(AF_INET, 4, &a.port);
	cr_assert_geq(l, 0);
	cr_assert_eq(tu_spawn(&child, blocked_reader, &a), 0);
	s = tu_accept(l);
	cr_assert_geq(s, 0);
	cr_assert_eq(tu_sync_get(&a.sync, &v), 0);
	sleep_ms(100); /* let it block (not required for correctness) */
	cr_assert_eq(scilan_shutdown(s, SHUT_WR), 0);
	tu_reap(&child);
	cr_assert(tu_exited_with(&child, 0), "reader %s\n%s", tu_status_str(&child, st, sizeof(st)), child.output);
	scilan_close(s);
	scilan_close(l);
}

Test(io, shutdown_rd, .timeout = 30)
{
	char buf[16];
	int c, s;

	tu_watchdog(25, "SHUT_RD");
	pair_or_die(0, 0, &c, &s);
	cr_assert_eq(scilan_shutdown(s, SHUT_RD), 0, "shutdown: %s", strerror(errno));
	cr_assert_eq(scilan_recv(s, buf, sizeof(buf), 0), 0, "recv after own SHUT_RD did not return 0");
	cr_assert_eq(scilan_recv(s, buf, sizeof(buf), 0), 0);
	/* Sending still works after SHUT_RD. */
	cr_assert_eq(tu_send_all(s, "still", 5, 0), 5, "send after own SHUT_RD: %s", strerror(errno));
	cr_assert_eq(tu_recv_all(c, buf, 5), 5);
	cr_assert_arr_eq(buf, "still", 5);
	scilan_close(c);
	scilan_close(s);
}

Test(io, shutdown_rdwr_and_errors, .timeout = 30)
{
	char buf[16];
	int c, s, fresh;

	tu_watchdog(25, "SHUT_RDWR");
	pair_or_die(0, 0, &c, &s);
	cr_assert_eq(scilan_shutdown(c, 42), -1, "shutdown(how=42) accepted");
	cr_assert_eq(errno, EINVAL, "errno %s", strerror(errno));
	cr_assert_eq(scilan_shutdown(c, SHUT_RDWR), 0);
	cr_assert_eq(scilan_recv(c, buf, sizeof(buf), 0), 0, "own recv after SHUT_RDWR");
	cr_assert_eq(scilan_send(c, "x", 1, MSG_NOSIGNAL), -1);
	cr_assert_eq(errno, EPIPE, "own send after SHUT_RDWR: %s", strerror(errno));
	cr_assert_eq(scilan_recv(s, buf, sizeof(buf), 0), 0, "peer does not see EOF after SHUT_RDWR");
	scilan_close(c);
	scilan_close(s);

	fresh = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(scilan_shutdown(fresh, SHUT_WR), -1, "shutdown of an unconnected socket");
	cr_assert_eq(errno, ENOTCONN, "errno %s", strerror(errno));
	scilan_close(fresh);
}

/* ---- close with data in flight ---------------------------------------------------------- */

static int bulk_sender_then_close(void *p)
{
	struct io_arg *a = p;
	unsigned char *buf = malloc(a->bytes);
	int fd = tu_connect_rcvbuf(AF_INET, a->port, a->rcvbuf);

	TU_CHECK(buf != NULL, "malloc");
	TU_CHECK(fd >= 0, "connect");
	TU_CHECK(tu_accelerated(fd) == 1, "not accelerated");
	tu_stream_fill(41, 0, buf, a->bytes);
	TU_CHECK(tu_send_all(fd, buf, a->bytes, 0) == (ssize_t)a->bytes, "send");
	TU_CHECK(scilan_close(fd) == 0, "close right after send");
	/* Tell the parent we closed, then stay alive until it has read. */
	TU_CHECK(tu_sync_put_child(&a->sync, 1) == 0, "notify");
	uint64_t v;
	TU_CHECK(tu_sync_get_child(&a->sync, &v) == 0, "wait");
	free(buf);
	return 0;
}

static void receive_all_then_eof(int s, size_t bytes)
{
	struct tu_hash h;
	unsigned char *buf = malloc(1 << 16), *expect = malloc(1 << 16);
	uint64_t got = 0;
	struct tu_rng rng = { 99 };
	ssize_t n;

	tu_hash_init(&h, 0);
	for (;;) {
		n = scilan_recv(s, buf, tu_rng_size(&rng, 1 << 16), 0);
		cr_assert_geq(n, 0, "recv after %llu bytes: %s", (unsigned long long)got, strerror(errno));
		if (n == 0)
			break;
		cr_assert_eq(tu_stream_check(41, got, buf, (size_t)n), -1, "corrupt data near %llu",
			     (unsigned long long)got);
		tu_hash_update(&h, buf, (size_t)n);
		got += (uint64_t)n;
	}
	cr_assert_eq(got, bytes, "received %llu of %zu bytes before EOF", (unsigned long long)got, bytes);
	{
		struct tu_hash e;

		tu_hash_init(&e, 0);
		for (uint64_t off = 0; off < bytes; off += 1 << 16) {
			size_t k = bytes - off < (1 << 16) ? bytes - off : (1 << 16);

			tu_stream_fill(41, off, expect, k);
			tu_hash_update(&e, expect, k);
		}
		cr_assert_eq(tu_hash_final(&h), tu_hash_final(&e), "checksum mismatch");
	}
	cr_assert_eq(scilan_recv(s, buf, 1, 0), 0, "EOF not sticky");
	free(buf);
	free(expect);
}

Test(io, close_with_data_in_flight, .timeout = 60)
{
	struct io_arg a = { .bytes = 1u << 20 };
	struct tu_child child;
	uint64_t v;
	int l, s;
	char st[128];

	tu_watchdog(50, "close with data in flight");
	cr_assert_eq(tu_sync_init(&a.sync), 0);
	l = tu_listen(AF_INET, 4, &a.port);
	cr_assert_geq(l, 0);
	cr_assert_eq(tu_spawn(&child, bulk_sender_then_close, &a), 0);
	s = tu_accept(l);
	cr_assert_geq(s, 0);
	cr_assert_eq(tu_accelerated(s), 1);
	receive_all_then_eof(s, a.bytes);
	cr_assert_eq(tu_sync_get(&a.sync, &v), 0);
	cr_assert_eq(tu_sync_put(&a.sync, 1), 0);
	scilan_close(s);
	scilan_close(l);
	tu_reap(&child);
	cr_assert(tu_exited_with(&child, 0), "sender %s\n%s", tu_status_str(&child, st, sizeof(st)), child.output);
}

/* The sender sends and closes before the receiver even accepted. */
Test(io, close_before_accept, .timeout = 60)
{
	struct io_arg a = { .bytes = 64 * 1024 };
	struct tu_child child;
	uint64_t v;
	int l, s;
	char st[128];

	tu_watchdog(50, "close before accept");
	cr_assert_eq(tu_sync_init(&a.sync), 0);
	l = tu_listen(AF_INET, 4, &a.port);
	cr_assert_geq(l, 0);
	cr_assert_eq(tu_spawn(&child, bulk_sender_then_close, &a), 0);
	cr_assert_eq(tu_sync_get(&a.sync, &v), 0, "sender died before closing:\n%s", child.output);
	s = tu_accept(l);
	cr_assert_geq(s, 0, "accept of a closed connection: %s", strerror(errno));
	receive_all_then_eof(s, a.bytes);
	cr_assert_eq(tu_sync_put(&a.sync, 1), 0);
	scilan_close(s);
	scilan_close(l);
	tu_reap(&child);
	cr_assert(tu_exited_with(&child, 0), "sender %s\n%s", tu_status_str(&child, st, sizeof(st)), child.output);
}

/* ---- EPIPE / SIGPIPE ----------------------------------------------------------------- */

/* Send until the kernel or scilan reports the closed peer (kernel TCP may
 * accept one send before the RST comes back). */
static void expect_epipe(int c, int flags, const char *what)
{
	ssize_t n = 0;

	for (int i = 0; i < 2000; i++) {
		n = scilan_send(c, "x", 1, flags);
		if (n < 0)
			break;
		sleep_ms(1);
	}
	cr_assert_eq(n, -1, "%s: send kept succeeding after the peer closed", what);
	cr_assert_eq(errno, EPIPE, "%s: errno %s, want EPIPE", what, strerror(errno));
}

static void epipe_case(int c, int s, const char *what)
{
	int before;

	tu_count_sigpipe();
	scilan_close(s);
	expect_epipe(c, 0, what);
	cr_assert_geq(tu_sigpipe_count(), 1, "%s: EPIPE without SIGPIPE", what);
	before = tu_sigpipe_count();
	cr_assert_eq(scilan_send(c, "x", 1, MSG_NOSIGNAL), -1);
	cr_assert_eq(errno, EPIPE, "%s: MSG_NOSIGNAL errno %s", what, strerror(errno));
	cr_assert_eq(tu_sigpipe_count(), before, "%s: SIGPIPE despite MSG_NOSIGNAL", what);
	scilan_close(c);
}

Test(io, epipe_and_sigpipe, .timeout = 30)
{
	int c, s;

	pair_or_die(0, 0, &c, &s);
	epipe_case(c, s, "accelerated");
}

Test(io, epipe_msg_nosignal_only, .timeout = 30)
{
	int c, s;

	/* With the default SIGPIPE action a raised signal would kill the test. */
	signal(SIGPIPE, SIG_DFL);
	pair_or_die(0, 0, &c, &s);
	scilan_close(s);
	expect_epipe(c, MSG_NOSIGNAL, "accelerated, MSG_NOSIGNAL");
	scilan_close(c);
}

Test(io, epipe_and_sigpipe_fallback, .timeout = 30)
{
	uint16_t port;
	int l = tu_plain_listen(AF_INET, 4, &port), c, s;

	cr_assert_geq(l, 0);
	c = tu_connect(AF_INET, port);
	cr_assert_geq(c, 0);
	s = accept(l, NULL, NULL);
	cr_assert_geq(s, 0);
	cr_assert_eq(tu_accelerated(c), 0);
	epipe_case(c, s, "fallback");
	close(l);
}

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
	v = -1;
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

/* ---- options ------------------------------------------------------------------------------ */

static int get_int(int fd, int level, int name)
{
	int v = -12345;
	socklen_t len = sizeof(v);

	cr_assert_eq(scilan_getsockopt(fd, level, name, &v, &len), 0, "getsockopt(%d, %d): %s", level, name,
		     strerror(errno));
	cr_assert_eq(len, sizeof(int));
	return v;
}

static void set_int(int fd, int level, int name, int v)
{
	cr_assert_eq(scilan_setsockopt(fd, level, name, &v, sizeof(v)), 0, "setsockopt(%d, %d, %d): %s", level,
		     name, v, strerror(errno));
}

Test(io, so_rcvbuf_sets_ring_size, .timeout = 30)
{
	unsigned char *buf = malloc(1 << 20);
	int c, s, fresh, def;
	ssize_t n;

	fresh = scilan_socket(AF_INET, SOCK_STREAM, 0);
	def = get_int(fresh, SOL_SOCKET, SO_RCVBUF);
	cr_assert(def >= 4096 && (def & (def - 1)) == 0, "default ring size %d", def);
	set_int(fresh, SOL_SOCKET, SO_RCVBUF, 5000);
	cr_assert_eq(get_int(fresh, SOL_SOCKET, SO_RCVBUF), 8192, "SO_RCVBUF 5000 not rounded to 8192");
	scilan_close(fresh);

	/* Client ring 8 KiB (5000 rounded up), server ring 16 KiB (set on the listener). */
	pair_or_die(5000, 16384, &c, &s);
	cr_assert_eq(get_int(c, SOL_SOCKET, SO_RCVBUF), 8192, "client ring in use");
	cr_assert_eq(get_int(s, SOL_SOCKET, SO_RCVBUF), 16384, "server ring in use");
	/* The rings really have those sizes: an empty ring takes exactly that much. */
	memset(buf, 7, 1 << 20);
	n = scilan_send(c, buf, 1 << 20, MSG_DONTWAIT);
	cr_assert_eq(n, 16384, "send into the server's 16 KiB ring took %zd", n);
	n = scilan_send(s, buf, 1 << 20, MSG_DONTWAIT);
	cr_assert_eq(n, 8192, "send into the client's 8 KiB ring took %zd", n);
	/* Set after connect: the ring in use does not change. */
	set_int(c, SOL_SOCKET, SO_RCVBUF, 1 << 20);
	cr_assert_eq(get_int(c, SOL_SOCKET, SO_RCVBUF), 8192, "ring size changed after connect");
	scilan_close(c);
	scilan_close(s);

	/* Clamped to the limits. */
	pair_or_die(1, 1, &c, &s);
	cr_assert_eq(get_int(c, SOL_SOCKET, SO_RCVBUF), 4096);
	cr_assert_eq(get_int(s, SOL_SOCKET, SO_RCVBUF), 4096);
	scilan_close(c);
	scilan_close(s);
	free(buf);
}

Test(io, other_options, .timeout = 30)
{
	int c, s, fill;

	pair_or_die(0, 0, &c, &s);
	set_int(c, SOL_SOCKET, SO_SNDBUF, 65536);
	cr_assert_gt(get_int(c, SOL_SOCKET, SO_SNDBUF), 0);
	cr_assert_eq(get_int(c, SOL_SOCKET, SO_ERROR), 0);
	cr_assert_eq(get_int(s, SOL_SOCKET, SO_ERROR), 0);
	set_int(c, IPPROTO_TCP, TCP_NODELAY, 1);
	cr_assert_neq(get_int(c, IPPROTO_TCP, TCP_NODELAY), 0);
	set_int(c, IPPROTO_TCP, TCP_NODELAY, 0);
	cr_assert_eq(get_int(c, IPPROTO_TCP, TCP_NODELAY), 0);
	set_int(c, SOL_SCILAN, SCILAN_SO_POLL_US, 123);
	cr_assert_eq(get_int(c, SOL_SCILAN, SCILAN_SO_POLL_US), 123);
	set_int(c, SOL_SCILAN, SCILAN_SO_POLL_US, 0);
	cr_assert_eq(get_int(c, SOL_SCILAN, SCILAN_SO_POLL_US), 0);
	cr_assert_eq(get_int(s, SOL_SCILAN, SCILAN_SO_RING_FILL), 0);
	cr_assert_eq(tu_send_all(c, "0123456789", 10, 0), 10);
	fill = get_int(s, SOL_SCILAN, SCILAN_SO_RING_FILL);
	cr_assert_eq(fill, 10, "ring fill %d after 10 bytes", fill);
	/* Interrupt mode still moves data. */
	{
		char b[10];

		cr_assert_eq(tu_recv_all(s, b, 10), 10);
		cr_assert_arr_eq(b, "0123456789", 10);
		cr_assert_eq(tu_send_all(s, "back", 4, 0), 4);
		cr_assert_eq(tu_recv_all(c, b, 4), 4);
	}
	/* SO_KEEPALIVE and friends pass through to the kernel socket. */
	set_int(c, SOL_SOCKET, SO_KEEPALIVE, 1);
	cr_assert_neq(get_int(c, SOL_SOCKET, SO_KEEPALIVE), 0);
	scilan_close(c);
	scilan_close(s);
}

Test(io, env_defaults, .timeout = 30)
{
	int fd, c, s;

	/* Settings are read once per process at first use: this test's process is fresh. */
	setenv("SCILAN_POLL_US", "7", 1);
	setenv("SCILAN_RING_KB", "8", 1);
	fd = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(get_int(fd, SOL_SCILAN, SCILAN_SO_POLL_US), 7, "SCILAN_POLL_US=7 not applied");
	cr_assert_eq(get_int(fd, SOL_SOCKET, SO_RCVBUF), 8192, "SCILAN_RING_KB=8 not applied");
	scilan_close(fd);
	pair_or_die(0, 0, &c, &s);
	cr_assert_eq(get_int(c, SOL_SOCKET, SO_RCVBUF), 8192);
	cr_assert_eq(get_int(s, SOL_SOCKET, SO_RCVBUF), 8192);
	cr_assert_eq(get_int(c, SOL_SCILAN, SCILAN_SO_POLL_US), 7);
	cr_assert_eq(scilan_send(c, (char[16384]){ 0 }, 16384, MSG_DONTWAIT), 8192);
	scilan_close(c);
	scilan_close(s);
}

Test(io, env_ring_kb_rounds_up, .timeout = 30)
{
	int fd;

	setenv("SCILAN_RING_KB", "5", 1);
	fd = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(get_int(fd, SOL_SOCKET, SO_RCVBUF), 8192, "SCILAN_RING_KB=5 not rounded to 8 KiB");
	scilan_close(fd);
}

/* ---- scilan_poll ------------------------------------------------------------------------------ */

Test(io, poll_readiness, .timeout = 30)
{
	struct pollfd pfd[2];
	int c, s, p[2];
	char b[64];

	pair_or_die(0, 0, &c, &s);
	/* Fresh connection: writable, not readable. */
	pfd[0] = (struct pollfd){ .fd = c, .events = POLLIN | POLLOUT };
	cr_assert_eq(scilan_poll(pfd, 1, 0), 1);
	cr_assert(pfd[0].revents & POLLOUT, "fresh connection not writable (0x%x)", pfd[0].revents);
	cr_assert_eq(pfd[0].revents & POLLIN, 0, "empty connection readable");
	/* Timeout with nothing to do. */
	pfd[0] = (struct pollfd){ .fd = s, .events = POLLIN };
	cr_assert_eq(scilan_poll(pfd, 1, 100), 0, "poll with nothing to read did not time out");
	cr_assert_eq(pfd[0].revents, 0);
	cr_assert_eq(scilan_poll(pfd, 1, 0), 0);
	/* Data makes it readable; reading it all makes it not readable again. */
	cr_assert_eq(tu_send_all(c, "hello", 5, 0), 5);
	cr_assert_eq(scilan_poll(pfd, 1, 1000), 1);
	cr_assert(pfd[0].revents & POLLIN);
	cr_assert_eq(tu_recv_all(s, b, 5), 5);
	cr_assert_eq(scilan_poll(pfd, 1, 0), 0);

	/* Mixed with a pipe. */
	cr_assert_eq(pipe(p), 0);
	pfd[0] = (struct pollfd){ .fd = s, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = p[0], .events = POLLIN };
	cr_assert_eq(scilan_poll(pfd, 2, 50), 0, "nothing ready, yet poll returned");
	cr_assert_eq(write(p[1], "x", 1), 1);
	cr_assert_eq(scilan_poll(pfd, 2, 1000), 1);
	cr_assert_eq(pfd[0].revents, 0);
	cr_assert(pfd[1].revents & POLLIN, "pipe revents 0x%x", pfd[1].revents);
	cr_assert_eq(tu_send_all(c, "y", 1, 0), 1);
	cr_assert_eq(scilan_poll(pfd, 2, 1000), 2);
	cr_assert(pfd[0].revents & POLLIN);
	cr_assert(pfd[1].revents & POLLIN);
	cr_assert_eq(read(p[0], b, 1), 1);
	cr_assert_eq(tu_recv_all(s, b, 1), 1);
	cr_assert_eq(scilan_poll(pfd, 2, 0), 0);

	/* EOF is readable. */
	cr_assert_eq(scilan_shutdown(c, SHUT_WR), 0);
	cr_assert_eq(scilan_poll(pfd, 1, 1000), 1);
	cr_assert(pfd[0].revents & POLLIN, "EOF not readable (0x%x)", pfd[0].revents);
	cr_assert_eq(scilan_recv(s, b, 1, 0), 0);

	/* nfds 0 just times out. */
	cr_assert_eq(scilan_poll(NULL, 0, 10), 0);
	close(p[0]);
	close(p[1]);
	scilan_close(c);
	scilan_close(s);
}

Test(io, poll_pollout_full_ring, .timeout = 30)
{
	unsigned char buf[8192];
	struct pollfd pfd;
	uint64_t got = 0;
	int c, s;

	pair_or_die(0, 4096, &c, &s);
	memset(buf, 1, sizeof(buf));
	cr_assert_eq(scilan_send(c, buf, sizeof(buf), MSG_DONTWAIT), 4096);
	pfd = (struct pollfd){ .fd = c, .events = POLLOUT };
	cr_assert_eq(scilan_poll(&pfd, 1, 50), 0, "full ring reported writable (0x%x)", pfd.revents);
	/* The receiver drains: writable again. */
	{
		unsigned char r[8192];
		ssize_t n;

		while ((n = scilan_recv(s, r, sizeof(r), MSG_DONTWAIT)) > 0)
			got += (uint64_t)n;
	}
	cr_assert_eq(got, 4096);
	cr_assert_eq(scilan_poll(&pfd, 1, 1000), 1, "drained ring not writable");
	cr_assert(pfd.revents & POLLOUT);
	scilan_close(c);
	scilan_close(s);
}

struct late_arg {
	uint16_t port;
	int pipe_w;
	bool via_pipe;
};

static int late_writer(void *p)
{
	struct late_arg *a = p;
	int fd = tu_connect(AF_INET, a->port);

	TU_CHECK(fd >= 0, "connect");
	sleep_ms(150);
	if (a->via_pipe)
		TU_CHECK(write(a->pipe_w, "p", 1) == 1, "pipe write");
	else
		TU_CHECK(scilan_send(fd, "s", 1, 0) == 1, "send");
	sleep_ms(200);
	scilan_close(fd);
	return 0;
}

static void poll_woken(bool via_pipe, int poll_us)
{
	struct late_arg a = { .via_pipe = via_pipe };
	struct tu_child child;
	struct pollfd pfd[2];
	int l, s, p[2], r;
	char st[128];

	tu_watchdog(25, via_pipe ? "poll woken by a pipe" : "poll woken by data");
	cr_assert_eq(pipe(p), 0);
	a.pipe_w = p[1];
	l = tu_listen(AF_INET, 4, &a.port);
	cr_assert_geq(l, 0);
	cr_assert_eq(tu_spawn(&child, late_writer, &a), 0);
	s = tu_accept(l);
	cr_assert_geq(s, 0);
	cr_assert_eq(tu_accelerated(s), 1);
	cr_assert_eq(tu_set_poll_us(s, poll_us), 0);
	pfd[0] = (struct pollfd){ .fd = s, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = p[0], .events = POLLIN };
	do
		r = scilan_poll(pfd, 2, -1);
	while (r < 0 && errno == EINTR);
	cr_assert_eq(r, 1, "poll returned %d (%s)", r, strerror(errno));
	if (via_pipe) {
		cr_assert(pfd[1].revents & POLLIN, "pipe not reported (0x%x)", pfd[1].revents);
		cr_assert_eq(pfd[0].revents, 0);
	} else {
		cr_assert(pfd[0].revents & POLLIN, "socket not reported (0x%x)", pfd[0].revents);
		cr_assert_eq(pfd[1].revents, 0);
	}
	tu_reap(&child);
	cr_assert(tu_exited_with(&child, 0), "writer %s\n%s", tu_status_str(&child, st, sizeof(st)), child.output);
	scilan_close(s);
	scilan_close(l);
	close(p[0]);
	close(p[1]);
}

Test(io, poll_blocking_woken_by_data, .timeout = 30)
{
	poll_woken(false, 0);
}

Test(io, poll_blocking_woken_by_pipe, .timeout = 30)
{
	poll_woken(true, 0);
}

Test(io, poll_blocking_woken_by_data_spinning, .timeout = 30)
{
	poll_woken(false, 50);
}

Test(io, poll_many_fds, .timeout = 60)
{
	enum { PAIRS = 40 };
	struct pollfd pfd[PAIRS + 1];
	int c[PAIRS], s[PAIRS], p[2], r;
	char b;

	for (int i = 0; i < PAIRS; i++)
		pair_or_die(4096, 4096, &c[i], &s[i]);
	cr_assert_eq(pipe(p), 0);
	for (int i = 0; i < PAIRS; i++)
		pfd[i] = (struct pollfd){ .fd = s[i], .events = POLLIN };
	pfd[PAIRS] = (struct pollfd){ .fd = p[0], .events = POLLIN };
	cr_assert_eq(scilan_poll(pfd, PAIRS + 1, 20), 0);
	cr_assert_eq(tu_send_all(c[7], "a", 1, 0), 1);
	cr_assert_eq(tu_send_all(c[39], "b", 1, 0), 1);
	cr_assert_eq(write(p[1], "c", 1), 1);
	r = scilan_poll(pfd, PAIRS + 1, 1000);
	cr_assert_eq(r, 3, "poll over %d fds returned %d", PAIRS + 1, r);
	for (int i = 0; i < PAIRS; i++)
		cr_assert_eq(!!(pfd[i].revents & POLLIN), i == 7 || i == 39, "fd %d revents 0x%x", i,
			     pfd[i].revents);
	cr_assert(pfd[PAIRS].revents & POLLIN);
	cr_assert_eq(scilan_recv(s[7], &b, 1, 0), 1);
	cr_assert_eq(b, 'a');
	cr_assert_eq(scilan_recv(s[39], &b, 1, 0), 1);
	cr_assert_eq(b, 'b');
	for (int i = 0; i < PAIRS; i++) {
		scilan_close(c[i]);
		scilan_close(s[i]);
	}
	close(p[0]);
	close(p[1]);
}
