/* test_seam.c — unit tests of the seam (seam.c) on a loopback TCP pair: the
 * kernel's counts of what each end gave and read, and a receive that hands
 * the program exactly the peer's bytes before its switch point, never the
 * marker, whether the point was published before the read or during it, and
 * resets (EPROTO) where a byte follows the marker or the marker is missing.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn/seam.h"

static int us = -1, peer = -1;
static struct sl_seam_rx rx;
static _Atomic uint64_t peer_x;
static const struct sl_seam_point point = { .x = &peer_x };

static void setup(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(l, 0);
	cr_assert_eq(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(l, 1), 0);
	cr_assert_eq(getsockname(l, (struct sockaddr *)&a, &alen), 0);
	us = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(connect(us, (struct sockaddr *)&a, sizeof(a)), 0);
	peer = accept(l, NULL, NULL);
	cr_assert_geq(peer, 0);
	close(l);
	atomic_store(&peer_x, SL_SEAM_UNKNOWN);
	cr_assert_eq(sl_seam_rx_start(us, &rx), 0);
	cr_assert_eq(rx.read, 0);
}

static void teardown(void)
{
	close(us);
	close(peer);
}

TestSuite(seam, .init = setup, .fini = teardown, .timeout = 20);

static void peer_sends(const char *text)
{
	size_t len = strlen(text);

	cr_assert_eq(send(peer, text, len, 0), (ssize_t)len);
}

/* The peer switches: its count published, then its marker. */
static void peer_switches(void)
{
	uint64_t x;

	cr_assert(sl_seam_room(peer));
	cr_assert_eq(sl_seam_sent_total(peer, false, &x), 0);
	atomic_store(&peer_x, x);
	cr_assert_eq(sl_seam_mark(peer), 0);
}

/* Everything the peer's bytes have arrived (loopback delivers at send). */
static void settle(void)
{
	struct pollfd p = { .fd = us, .events = POLLIN };

	cr_assert_eq(poll(&p, 1, 5000), 1);
	usleep(20000);
}

static ssize_t seam_read(char *buf, size_t len, int flags)
{
	struct iovec iov = { buf, len };

	return sl_seam_recv(us, &rx, &point, &iov, 1, flags);
}

Test(seam, counts_are_the_kernels)
{
	char buf[16];
	uint64_t sent, read;

	peer_sends("hello");
	peer_sends("world");
	cr_assert_eq(sl_seam_sent_total(peer, false, &sent), 0);
	cr_assert_eq(sent, 10);
	settle();
	cr_assert_eq(recv(us, buf, 3, 0), 3);
	cr_assert_eq(sl_seam_read_total(us, &read), 0);
	cr_assert_eq(read, 3, "read %llu", (unsigned long long)read);
}

/* The connector's count leaves out its SYN, which its kernel counts as
 * acknowledged: both ends' counts start at the first byte. */
Test(seam, the_connectors_count_starts_at_its_first_byte)
{
	char buf[16];
	uint64_t sent, read;

	cr_assert_eq(sl_seam_sent_total(us, true, &sent), 0);
	cr_assert_eq(sent, 0);
	cr_assert_eq(send(us, "abcd", 4, 0), 4);
	usleep(20000);
	cr_assert_eq(sl_seam_sent_total(us, true, &sent), 0);
	cr_assert_eq(sent, 4, "sent %llu", (unsigned long long)sent);
	cr_assert_eq(recv(peer, buf, 3, 0), 3);
	cr_assert_eq(sl_seam_read_total(peer, &read), 0);
	cr_assert_eq(read, 3, "read %llu", (unsigned long long)read);
}

/* Unread bytes still count as given: the peer's own reads do not matter. */
Test(seam, bytes_not_yet_acknowledged_count_as_given)
{
	static char big[1 << 20];
	uint64_t sent;
	ssize_t n;

	fcntl(peer, F_SETFL, O_NONBLOCK);
	n = send(peer, big, sizeof(big), 0);
	cr_assert_gt(n, 0);
	cr_assert_eq(sl_seam_sent_total(peer, false, &sent), 0);
	cr_assert_eq(sent, (uint64_t)n);
}

Test(seam, a_point_known_first_stops_the_read_there)
{
	char buf[64] = { 0 };

	peer_sends("abcdef");
	peer_switches();
	settle();
	cr_assert_eq(seam_read(buf, sizeof(buf), 0), 6);
	cr_assert_str_eq(buf, "abcdef");
	cr_assert_not(rx.crossed);
	cr_assert_eq(seam_read(buf, sizeof(buf), 0), 0);
	cr_assert(rx.crossed, "the marker was taken, and the ring comes next");
	cr_assert_eq(rx.read, 7);
}

/* The reader blocks first, with the point still unknown; then the peer
 * publishes its point and sends `before` bytes, the marker and `after` in
 * one segment, so that one read takes them all and must look at the point
 * after it. */
struct crossing {
	const char *before, *after;
	int flags;
	char buf[64];
	ssize_t got;
	int err;
};

static void *read_blocked(void *arg)
{
	struct crossing *c = arg;

	errno = 0;
	c->got = seam_read(c->buf, sizeof(c->buf), c->flags);
	c->err = errno;
	return NULL;
}

static void read_across(struct crossing *c)
{
	char wire[64];
	size_t nb = strlen(c->before), na = strlen(c->after);
	uint64_t x;
	pthread_t t;

	cr_assert_eq(pthread_create(&t, NULL, read_blocked, c), 0);
	usleep(100000); /* the reader sleeps in the kernel, the point unknown */
	cr_assert_eq(sl_seam_sent_total(peer, false, &x), 0);
	atomic_store(&peer_x, x + nb);
	memcpy(wire, c->before, nb);
	wire[nb] = (char)SL_SEAM_MARKER;
	memcpy(wire + nb + 1, c->after, na);
	cr_assert_eq(send(peer, wire, nb + 1 + na, 0), (ssize_t)(nb + 1 + na));
	pthread_join(t, NULL);
}

/* The read began before the peer published: it reaches the marker, which
 * the program never sees. */
Test(seam, a_read_that_crossed_the_point_drops_the_marker)
{
	struct crossing c = { .before = "abc", .after = "" };

	read_across(&c);
	cr_assert_eq(c.got, 3);
	cr_assert_eq(memcmp(c.buf, "abc", 3), 0);
	cr_assert(rx.crossed);
	cr_assert_eq(rx.read, 4);
}

Test(seam, a_point_at_the_start_gives_nothing_but_the_switch)
{
	char buf[8];

	peer_switches();
	settle();
	cr_assert_eq(seam_read(buf, sizeof(buf), 0), 0);
	cr_assert(rx.crossed);
}

Test(seam, small_reads_stop_at_the_point_one_by_one)
{
	char buf[2], all[16] = { 0 };
	size_t got = 0;
	ssize_t n;

	peer_sends("12345");
	peer_switches();
	settle();
	while ((n = seam_read(buf, sizeof(buf), 0)) > 0) {
		memcpy(all + got, buf, (size_t)n);
		got += (size_t)n;
	}
	cr_assert_eq(n, 0);
	cr_assert(rx.crossed);
	cr_assert_str_eq(all, "12345");
}

/* With the point known, the read stops at the marker: a byte after it is
 * never delivered here, and stays on the kernel socket for the guard of a
 * ring connection (a kernel byte beside the rings). */
Test(seam, a_byte_after_a_known_point_is_never_delivered)
{
	char buf[64];

	peer_sends("ab");
	peer_switches();
	peer_sends("Z"); /* past the hook: its place among the ring's bytes is unknown */
	settle();
	cr_assert_eq(seam_read(buf, sizeof(buf), 0), 2);
	cr_assert_eq(seam_read(buf, sizeof(buf), 0), 0);
	cr_assert(rx.crossed);
	cr_assert_eq(seam_read(buf, sizeof(buf), 0), 0, "crossed: nothing more from the kernel");
	cr_assert_eq(recv(us, buf, sizeof(buf), MSG_DONTWAIT | MSG_PEEK), 1);
	cr_assert_eq(buf[0], 'Z');
}

Test(seam, a_byte_after_the_marker_in_the_crossing_read_is_a_reset)
{
	struct crossing c = { .before = "ab", .after = "Z" };

	read_across(&c);
	cr_assert_eq(c.got, -1);
	cr_assert_eq(c.err, EPROTO);
}

/* The peer sends text and publishes its point just after it. */
static void peer_sends_then_publishes(const char *text)
{
	uint64_t x;

	peer_sends(text);
	cr_assert_eq(sl_seam_sent_total(peer, false, &x), 0);
	atomic_store(&peer_x, x);
}

/* A first read of `first` bytes, then the reset. */
static void reads_then_resets(ssize_t first)
{
	char buf[64];

	settle();
	cr_assert_eq(seam_read(buf, sizeof(buf), 0), first);
	errno = 0;
	cr_assert_eq(seam_read(buf, sizeof(buf), 0), -1);
	cr_assert_eq(errno, EPROTO);
}

Test(seam, another_byte_at_the_point_is_a_reset)
{
	peer_sends_then_publishes("ab");
	peer_sends("Q"); /* not the marker */
	reads_then_resets(2);
}

Test(seam, an_end_before_the_marker_is_a_reset)
{
	peer_sends_then_publishes("ab");
	shutdown(peer, SHUT_WR);
	reads_then_resets(2);
}

/* The peer published a point beyond what it ever sent before its FIN. */
Test(seam, an_end_short_of_a_published_point_is_a_reset)
{
	peer_sends("ab");
	atomic_store(&peer_x, 5);
	shutdown(peer, SHUT_WR);
	reads_then_resets(2);
}

Test(seam, a_point_behind_what_was_read_is_a_reset)
{
	char buf[64];

	peer_sends("abcd");
	settle();
	cr_assert_eq(seam_read(buf, sizeof(buf), 0), 4);
	atomic_store(&peer_x, 2);
	errno = 0;
	cr_assert_eq(seam_read(buf, sizeof(buf), 0), -1);
	cr_assert_eq(errno, EPROTO);
}

Test(seam, a_peek_never_moves_the_read_nor_shows_the_marker)
{
	char buf[64] = { 0 };

	peer_sends("xyz");
	peer_switches();
	settle();
	cr_assert_eq(seam_read(buf, sizeof(buf), MSG_PEEK), 3);
	cr_assert_eq(rx.read, 0);
	cr_assert_eq(seam_read(buf, sizeof(buf), 0), 3);
	cr_assert_eq(memcmp(buf, "xyz", 3), 0);
	/* A peek at the point takes the marker: the peek goes on in the ring. */
	cr_assert_eq(seam_read(buf, sizeof(buf), MSG_PEEK), 0);
	cr_assert(rx.crossed);
}

/* MSG_WAITALL would wait on the kernel for bytes that come on the ring:
 * the read returns what came before the marker. */
Test(seam, waitall_never_waits_past_the_marker)
{
	struct crossing c = { .before = "ab", .after = "", .flags = MSG_WAITALL };

	read_across(&c);
	cr_assert_eq(c.got, 2);
	cr_assert(rx.crossed);
}

/* A peek that crossed shows the bytes before the marker and moves nothing. */
Test(seam, a_peek_that_crossed_moves_nothing)
{
	struct crossing c = { .before = "pq", .after = "", .flags = MSG_PEEK };

	read_across(&c);
	cr_assert_eq(c.got, 2);
	cr_assert_not(rx.crossed);
	cr_assert_eq(seam_read(c.buf, sizeof(c.buf), 0), 2);
	cr_assert_eq(seam_read(c.buf, sizeof(c.buf), 0), 0);
	cr_assert(rx.crossed);
}

Test(seam, truncating_reads_count_what_they_discard)
{
	char buf[4];

	peer_sends("abcdef");
	peer_switches();
	settle();
	cr_assert_eq(seam_read(buf, 4, MSG_TRUNC), 4);
	cr_assert_eq(rx.read, 4);
	cr_assert_eq(seam_read(buf, 4, MSG_TRUNC), 2);
	cr_assert_eq(seam_read(buf, 4, MSG_TRUNC), 0);
	cr_assert(rx.crossed);
}

/* Reads already made before the seam started count: the start takes the
 * kernel's count. */
Test(seam, the_start_counts_earlier_reads)
{
	char buf[64] = { 0 };

	peer_sends("0123456789");
	settle();
	cr_assert_eq(recv(us, buf, 4, 0), 4);
	cr_assert_eq(sl_seam_rx_start(us, &rx), 0);
	cr_assert_eq(rx.read, 4);
	peer_switches();
	settle();
	memset(buf, 0, sizeof(buf));
	cr_assert_eq(seam_read(buf, sizeof(buf), 0), 6);
	cr_assert_str_eq(buf, "456789");
	cr_assert_eq(seam_read(buf, sizeof(buf), 0), 0);
	cr_assert(rx.crossed);
}

/* A blocked reader is woken by the marker alone. */
static void *switch_later(void *arg)
{
	(void)arg;
	usleep(100000);
	peer_switches();
	return NULL;
}

Test(seam, a_sleeping_reader_is_woken_by_the_marker)
{
	pthread_t t;
	char buf[8];

	cr_assert_eq(pthread_create(&t, NULL, switch_later, NULL), 0);
	cr_assert_eq(seam_read(buf, sizeof(buf), 0), 0);
	cr_assert(rx.crossed);
	pthread_join(t, NULL);
}
