/* test_failover.c — unit tests of the strip after a device fail-over
 * (failover.c) on a socket pair standing for the kernel connection: the
 * peer's header and re-sent bytes are taken off the stream before the
 * program's first byte, a header still on its way is EAGAIN for a call that
 * may not block, and every header the peer could not have sent honestly
 * (beyond what we read, more than a ring before it, garbage, a stream that
 * ends first) resets instead of handing the program a stream with a hole.
 * A reset the strip meets stays the program's, and an exec's description
 * of the strip names its own socket and nothing else. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn/failover.h"

#define RING 4096

static struct sl_sock *s;
static int peer = -1;

static void setup(void)
{
	int sv[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	s = calloc(1, sizeof(*s));
	cr_assert_not_null(s);
	s->fd = sv[0];
	peer = sv[1];
	s->rx.cap = RING;
}

static void teardown(void)
{
	sl_fail_over_forget(s);
	close(s->fd);
	if (peer >= 0)
		close(peer);
	free(s);
}

TestSuite(failover, .init = setup, .fini = teardown);

/* We had read `read` bytes of the peer's stream when the link went down. */
static void moved_at(uint64_t read)
{
	cr_assert_eq(sl_fail_over_strip_begin(s, read, 0), 0);
}

static void peer_sends(const void *buf, size_t len)
{
	cr_assert_eq(write(peer, buf, len), (ssize_t)len);
}

static void peer_header(uint32_t magic, uint64_t from)
{
	struct sl_fail_over_hdr h = { magic, SL_FAIL_OVER_VERSION, from };

	peer_sends(&h, sizeof(h));
}

/* The peer's re-send of its stream's bytes [from, to): byte i is i % 251. */
static void peer_resends(uint64_t from, uint64_t to)
{
	for (uint64_t i = from; i < to; i++) {
		unsigned char b = (unsigned char)(i % 251);

		peer_sends(&b, 1);
	}
}

/* What the program reads next from the kernel socket. */
static void next_bytes_are(uint64_t from, size_t n)
{
	unsigned char buf[256];

	cr_assert(n <= sizeof(buf));
	cr_assert_eq(recv(s->fd, buf, n, MSG_DONTWAIT), (ssize_t)n);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(buf[i], (unsigned char)((from + i) % 251), "byte %zu of the stream after the strip", i);
}

Test(failover, drops_what_was_read_then_the_stream_goes_on)
{
	moved_at(100);
	peer_header(SL_FAIL_OVER_MAGIC, 60); /* it saw our read index at 60 */
	peer_resends(60, 130);
	cr_assert_eq(sl_fail_over_strip(s, MSG_DONTWAIT), 0);
	cr_assert_not(atomic_load(&s->strip_pending));
	next_bytes_are(100, 30);
}

Test(failover, nothing_to_drop_when_the_peer_saw_all_we_read)
{
	moved_at(100);
	peer_header(SL_FAIL_OVER_MAGIC, 100);
	peer_resends(100, 110);
	cr_assert_eq(sl_fail_over_strip(s, MSG_DONTWAIT), 0);
	next_bytes_are(100, 10);
}

Test(failover, a_header_on_its_way_is_eagain_then_completes)
{
	struct sl_fail_over_hdr h = { SL_FAIL_OVER_MAGIC, SL_FAIL_OVER_VERSION, 10 };

	moved_at(20);
	peer_sends(&h, 5);
	errno = 0;
	cr_assert_eq(sl_fail_over_strip(s, MSG_DONTWAIT), -1);
	cr_assert_eq(errno, EAGAIN);
	cr_assert(atomic_load(&s->strip_pending));
	peer_sends((char *)&h + 5, sizeof(h) - 5);
	peer_resends(10, 15); /* half of what must be dropped */
	cr_assert_eq(sl_fail_over_strip(s, MSG_DONTWAIT), -1);
	cr_assert_eq(errno, EAGAIN);
	peer_resends(15, 25);
	cr_assert_eq(sl_fail_over_strip(s, MSG_DONTWAIT), 0);
	next_bytes_are(20, 5);
}

static void *late_header(void *arg)
{
	(void)arg;
	usleep(50000);
	peer_header(SL_FAIL_OVER_MAGIC, 0);
	peer_resends(0, 8);
	return NULL;
}

Test(failover, a_blocking_receive_waits_for_the_header)
{
	pthread_t t;

	moved_at(4);
	cr_assert_eq(pthread_create(&t, NULL, late_header, NULL), 0);
	cr_assert_eq(sl_fail_over_strip(s, 0), 0);
	pthread_join(t, NULL);
	next_bytes_are(4, 4);
}

static void resets(void)
{
	errno = 0;
	cr_assert_eq(sl_fail_over_strip(s, MSG_DONTWAIT), -1);
	cr_assert_eq(errno, ECONNRESET);
	cr_assert_not(atomic_load(&s->strip_pending));
}

Test(failover, a_resend_from_beyond_what_we_read_resets)
{
	moved_at(100);
	peer_header(SL_FAIL_OVER_MAGIC, 101);
	resets();
}

Test(failover, a_resend_from_more_than_a_ring_back_resets)
{
	moved_at(RING + 10);
	peer_header(SL_FAIL_OVER_MAGIC, 9);
	resets();
}

Test(failover, a_stream_without_the_header_resets)
{
	moved_at(0);
	peer_header(0x12345678u, 0); /* a program's bytes, not a fail-over */
	resets();
}

Test(failover, a_stream_that_ends_before_the_header_resets)
{
	moved_at(10);
	peer_sends("SLOV", 4);
	close(peer);
	peer = -1;
	resets();
}

Test(failover, a_stream_that_ends_before_the_dropped_bytes_resets)
{
	moved_at(50);
	peer_header(SL_FAIL_OVER_MAGIC, 40);
	peer_resends(40, 45);
	close(peer);
	peer = -1;
	resets();
}

/* A kernel TCP connection on loopback in place of the socket pair: a
 * reset (an RST, sk_err) is TCP's. */
static void on_tcp(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert(l >= 0 && c >= 0);
	cr_assert_eq(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(l, 1), 0);
	cr_assert_eq(getsockname(l, (struct sockaddr *)&a, &len), 0);
	cr_assert_eq(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
	close(s->fd);
	close(peer);
	s->fd = c;
	peer = accept(l, NULL, NULL);
	cr_assert(peer >= 0);
	close(l);
}

/* The peer resets the connection (a close with unread data and linger 0),
 * and its RST has arrived. */
static void peer_resets(void)
{
	struct linger now = { 1, 0 };
	struct pollfd p = { .fd = s->fd, .events = POLLIN };

	cr_assert_eq(setsockopt(peer, SOL_SOCKET, SO_LINGER, &now, sizeof(now)), 0);
	close(peer);
	peer = -1;
	for (int i = 0; i < 500 && !(p.revents & POLLERR); i++) {
		cr_assert_eq(poll(&p, 1, 10) >= 0, 1);
	}
	cr_assert(p.revents & POLLERR, "the peer's RST arrived");
}

/* The program's next receive, after the strip ran for a poll, a FIONREAD or
 * a hand-over, reports the peer's reset as TCP would: once, as ECONNRESET. */
static void program_reads_the_reset(void)
{
	char b;

	errno = 0;
	cr_assert_eq(recv(s->fd, &b, 1, MSG_DONTWAIT), -1, "the receive after the strip reads the reset");
	cr_assert_eq(errno, ECONNRESET);
}

Test(failover, a_reset_a_poll_meets_in_the_strip_is_the_programs)
{
	struct sl_fail_over_hdr h = { SL_FAIL_OVER_MAGIC, SL_FAIL_OVER_VERSION, 10 };

	on_tcp();
	moved_at(10);
	peer_sends(&h, 5); /* the rest of the header never comes */
	peer_resets();
	cr_assert(sl_fail_over_ready(s, POLLIN) & POLLERR);
	program_reads_the_reset();
}

Test(failover, a_reset_a_fionread_meets_in_the_strip_is_the_programs)
{
	on_tcp();
	moved_at(10);
	peer_header(SL_FAIL_OVER_MAGIC, 4);
	peer_resends(4, 7); /* half of what must be dropped, then the reset */
	peer_resets();
	sl_fail_over_strip_now(s);
	program_reads_the_reset();
}

Test(failover, a_reset_before_the_header_is_the_programs)
{
	on_tcp();
	moved_at(10);
	peer_resets();
	cr_assert_not(sl_fail_over_strip_now(s), "nothing left to strip of a stream that was reset");
	program_reads_the_reset();
}

/* An exec's description of the strip, as the new image gets it. */
static void described(char *desc, size_t size)
{
	moved_at(30);
	cr_assert(sl_fail_over_describe(s, desc, size));
}

Test(failover, an_exec_description_names_only_its_own_socket)
{
	char desc[SL_FAIL_OVER_DESC_MAX];
	int other[2];
	char b[4];

	on_tcp();
	described(desc, sizeof(desc));
	/* A stale variable: its number now holds another TCP connection,
	 * whose first bytes are its own program's. */
	other[0] = dup(s->fd);
	other[1] = dup(peer);
	on_tcp();
	cr_assert_eq(write(peer, "abcd", 4), 4);
	errno = 0;
	cr_assert_eq(sl_fail_over_adopt(s->fd, AF_INET, desc), -1, "another socket is not the one described");
	cr_assert_eq(errno, EINVAL);
	usleep(10000);
	cr_assert_eq(recv(s->fd, b, 4, MSG_DONTWAIT), 4, "nothing was stripped of the other connection");
	cr_assert_eq(memcmp(b, "abcd", 4), 0);
	close(other[0]);
	close(other[1]);
}

Test(failover, a_garbled_description_of_its_own_socket_is_not_ignored)
{
	char desc[SL_FAIL_OVER_DESC_MAX];
	char *rest;

	on_tcp();
	described(desc, sizeof(desc));
	rest = strchr(desc, ':');
	cr_assert_not_null(rest);
	strcpy(rest + 1, "garbage");
	errno = 0;
	cr_assert_eq(sl_fail_over_adopt(s->fd, AF_INET, desc), -1);
	cr_assert_neq(errno, EINVAL, "the socket is the one described: its header must not be read as data");
}
