/* test_shutdown.c — ending a connection: SHUT_WR/SHUT_RD/SHUT_RDWR (EOF, half-close,
 * waking a blocked reader), close with data still in flight or before accept, and
 * EPIPE/SIGPIPE with and without MSG_NOSIGNAL, accelerated and kernel fallback. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cr_helpers.h"
#include "testutil.h"

struct io_arg {
	uint16_t port;
	struct tu_sync sync;
	int rcvbuf;
	size_t bytes;
};

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
	tu_sleep_ms(100); /* let it block (not required for correctness) */
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
		tu_sleep_ms(1);
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
