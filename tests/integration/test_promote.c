/* test_promote.c — promotion in the library's own data path (issue 26 part
 * 3): a connection the offer policy kept on kernel TCP (short) moves onto
 * the rings mid-stream when its connector offers late and its acceptor
 * looks, with data in flight both ways; every byte arrives once and in
 * order, both ends end on the rings, and an offer nobody takes leaves the
 * connection on kernel TCP, whole.  The triggers are called directly here
 * (SCILAN_PROMOTE=off: test_promote_trigger.c has the library's). */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn/promote.h"
#include "conn/promotion.h"
#include "conn/promotion_trigger.h"
#include "runtime/config.h"
#include "runtime/stats_file.h"
#include "runtime/sys.h"
#include "socket/offer_policy.h"
#include "socket/sock_state.h"
#include "promote_helpers.h"
#include "testutil.h"

TestSuite(promote, .timeout = 60);

static int listener(uint16_t *port)
{
	/* The triggers are the tests' own here (test_promote_trigger.c has the
	 * library's). */
	setenv("SCILAN_PROMOTE", "off", 1);
	return tu_promote_listener(port);
}

/* The connector's late offer; the acceptor's look (1 taken, 0 none). */
static void offer(int c)
{
	cr_assert_eq(sl_promote_offer(sl_sock_get(c)), 0, "offer: %s", strerror(errno));
}

static int look(int a, int l)
{
	return sl_promote_look(sl_sock_get(a), sl_sock_get(l));
}

/* FIONREAD's count (the hook's and TCP_INQ's). */
static int64_t waiting(int fd)
{
	struct sl_sock *s = sl_sock_get(fd);
	int64_t n;

	sl_lock(&s->rx_lock);
	n = sl_promote_rx_waiting(s);
	sl_unlock(&s->rx_lock);
	return n;
}

/* The end of every test: both ends and the listener closed. */
static void close_all(int c, int a, int l)
{
	scilan_close(c);
	scilan_close(a);
	scilan_close(l);
}

static void exchange(int from, int to, uint64_t seed, uint64_t off, size_t n)
{
	char *out = malloc(n), *in = malloc(n);

	cr_assert(out && in);
	tu_stream_fill(seed, off, out, n);
	cr_assert_eq(tu_send_all(from, out, n, 0), (ssize_t)n);
	cr_assert_eq(tu_recv_all(to, in, n), (ssize_t)n, "recv: %s", strerror(errno));
	cr_assert_eq(tu_stream_check(seed, off, in, n), -1, "bytes changed at %llu", (unsigned long long)off);
	free(out);
	free(in);
}

Test(promote, a_request_response_connection_moves_onto_the_rings)
{
	uint16_t port;
	int l = listener(&port), c, a;

	tu_plain_pair(l, port, &c, &a);
	exchange(c, a, 1, 0, 100);
	exchange(a, c, 2, 0, 100);
	offer(c);
	/* Bytes of the connector's on TCP before the acceptor looks. */
	exchange(c, a, 1, 100, 300);
	cr_assert_eq(look(a, l), 1, "look: %s", strerror(errno));
	cr_assert(tu_accelerated(a), "the acceptor is on the rings");
	/* The acceptor's bytes go into the connector's ring now; the
	 * connector reads its TCP bytes first, then follows. */
	exchange(a, c, 2, 100, 5000);
	cr_assert(tu_accelerated(c), "the connector followed");
	exchange(c, a, 1, 400, 70000);
	exchange(a, c, 2, 5100, 70000);
	for (int t = 0; t < 100; t++) {
		exchange(c, a, 3, (uint64_t)t * 64, 64);
		exchange(a, c, 4, (uint64_t)t * 64, 64);
	}
	cr_assert(tu_accelerated(c) && tu_accelerated(a));
	close_all(c, a, l);
}

/* The connector's sends reach the acceptor's kernel socket after the
 * claim, before it follows: the acceptor reads them across the seam. */
Test(promote, the_connectors_bytes_in_flight_at_the_claim_arrive_first)
{
	uint16_t port;
	int l = listener(&port), c, a;
	char *big = malloc(200000), *in = malloc(200000);

	cr_assert(big && in);
	tu_plain_pair(l, port, &c, &a);
	offer(c);
	tu_stream_fill(9, 0, big, 200000);
	cr_assert_eq(tu_send_all(c, big, 100000, 0), 100000); /* on TCP: not claimed yet */
	cr_assert_eq(look(a, l), 1);
	cr_assert_eq(tu_recv_all(a, in, 50000), 50000);
	/* FIONREAD and TCP_INQ count the kernel's bytes before the point:
	 * 0 there would read as the end of the stream to some programs. */
	cr_assert_eq(waiting(a), 50000, "what a read could take now: %lld", (long long)waiting(a));
	/* The connector's next send follows the claim: its marker after the
	 * first 100000 bytes, the rest on the ring. */
	cr_assert_eq(tu_send_all(c, big + 100000, 100000, 0), 100000);
	cr_assert(tu_accelerated(c));
	for (int i = 0; i < 500 && waiting(a) < 150000; i++)
		tu_sleep_ms(2);
	cr_assert_eq(waiting(a), 150000, "the rest, the marker skipped: %lld", (long long)waiting(a));
	cr_assert_eq(tu_recv_all(a, in + 50000, 150000), 150000);
	cr_assert_eq(tu_stream_check(9, 0, in, 200000), -1);
	free(big);
	free(in);
	close_all(c, a, l);
}

/* Urgent data sent with the offer out: the offer is decided first (revoked:
 * nobody claimed it), the byte goes as TCP's urgent byte, and the
 * connection never offers again. */
Test(promote, urgent_data_with_the_offer_out_keeps_kernel_tcp)
{
	uint16_t port;
	int l = listener(&port), c, a;
	char b = 0;

	tu_plain_pair(l, port, &c, &a);
	offer(c);
	cr_assert(sl_sock_promoting(sl_sock_get(c)));
	cr_assert_eq(scilan_send(c, "u", 1, MSG_OOB), 1, "send: %s", strerror(errno));
	cr_assert_not(sl_sock_promoting(sl_sock_get(c)), "the offer was decided");
	cr_assert_eq(atomic_load(&sl_sock_get(c)->promote_role), SL_PROMOTE_NEVER);
	for (int i = 0; i < 200 && scilan_recv(a, &b, 1, MSG_OOB | MSG_DONTWAIT) != 1; i++)
		tu_sleep_ms(5);
	cr_assert_eq(b, 'u', "the acceptor's urgent byte");
	exchange(c, a, 5, 0, 10000);
	exchange(a, c, 6, 0, 10000);
	cr_assert_not(tu_accelerated(c) || tu_accelerated(a));
	close_all(c, a, l);
}

/* Nobody looks: past its time the offer is revoked at the connector's
 * next call, and the connection stays on kernel TCP, whole. */
Test(promote, an_offer_nobody_takes_keeps_kernel_tcp)
{
	uint16_t port;
	int l = listener(&port), c, a;

	tu_plain_pair(l, port, &c, &a);
	offer(c);
	exchange(c, a, 5, 0, 1000);
	exchange(a, c, 6, 0, 1000);
	usleep((SL_PROMOTE_WAIT_MS + 100) * 1000);
	exchange(c, a, 5, 1000, 1000);
	exchange(a, c, 6, 1000, 1000);
	cr_assert_not(tu_accelerated(c));
	cr_assert_not(tu_accelerated(a));
	cr_assert_not(sl_sock_get(c)->seg, "the late offer's segment is gone");
	/* A look after the revoke finds nothing to take. */
	cr_assert_eq(look(a, l), 0);
	exchange(a, c, 6, 2000, 1000);
	close_all(c, a, l);
}

/* The connector closes with its offer out: revoked, the acceptor reads
 * every byte then EOF on kernel TCP. */
Test(promote, a_close_with_the_offer_out_is_a_clean_end)
{
	uint16_t port;
	int l = listener(&port), c, a;
	char b;

	tu_plain_pair(l, port, &c, &a);
	offer(c);
	exchange(c, a, 7, 0, 500);
	cr_assert_eq(tu_send_all(c, "end", 3, 0), 3);
	scilan_close(c);
	cr_assert_eq(tu_recv_all(a, &b, 1), 1);
	cr_assert_eq(b, 'e');
	cr_assert_eq(look(a, l), 0);
	cr_assert_eq(tu_recv_all(a, &b, 1), 1);
	cr_assert_eq(tu_recv_all(a, &b, 1), 1);
	cr_assert_eq(scilan_recv(a, &b, 1, 0), 0, "then EOF");
	scilan_close(a);
	scilan_close(l);
}

/* The connector closes after the claim, before it followed: it follows at
 * its close, so that the acceptor reads its marker, then a clean EOF. */
Test(promote, a_close_after_the_claim_is_a_clean_end)
{
	uint16_t port;
	int l = listener(&port), c, a;
	char b[8];

	tu_plain_pair(l, port, &c, &a);
	offer(c);
	cr_assert_eq(tu_send_all(c, "abc", 3, 0), 3);
	cr_assert_eq(look(a, l), 1);
	scilan_close(c);
	cr_assert_eq(tu_recv_all(a, b, 3), 3);
	cr_assert_eq(memcmp(b, "abc", 3), 0);
	cr_assert_eq(scilan_recv(a, b, 1, 0), 0, "then EOF");
	scilan_close(a);
	scilan_close(l);
}

/* The acceptor claims, sends, and closes before the connector followed:
 * the connector reads the acceptor's bytes (kernel, then ring) and a clean
 * EOF, never a reset. */
Test(promote, the_acceptor_closing_before_the_follow_is_a_clean_end)
{
	uint16_t port;
	int l = listener(&port), c, a;
	char b[16];

	tu_plain_pair(l, port, &c, &a);
	cr_assert_eq(tu_send_all(a, "tcp", 3, 0), 3);
	offer(c);
	cr_assert_eq(look(a, l), 1);
	cr_assert_eq(tu_send_all(a, "ring", 4, 0), 4);
	scilan_close(a);
	cr_assert_eq(tu_recv_all(c, b, 7), 7);
	cr_assert_eq(memcmp(b, "tcpring", 7), 0, "got %.7s", b);
	cr_assert_eq(scilan_recv(c, b, 1, 0), 0, "then EOF: %s", strerror(errno));
	scilan_close(c);
	scilan_close(l);
}

/* A segment flagged late at a connect (a hostile or confused connector):
 * the acceptor refuses it, and the connection is kernel TCP with every
 * byte, never a ring the connector writes into and nobody reads. */
Test(promote, an_accept_refuses_a_segment_flagged_late)
{
	uint16_t port;
	int l = listener(&port), c, a;
	char got[5];

	c = tu_connect(AF_INET, port);
	cr_assert_geq(c, 0);
	cr_assert_not_null(sl_sock_get(c)->seg, "the connect made an offer");
	sl_promote_seam_init(sl_sock_get(c)->seg);
	cr_assert_eq(tu_send_all(c, "hello", 5, 0), 5);
	a = tu_accept(l);
	cr_assert_geq(a, 0);
	cr_assert_not(tu_accelerated(a));
	/* The connector's next call sees the refusal and moves what its ring
	 * held onto the kernel socket, ahead of what it sends now. */
	cr_assert_eq(tu_send_all(c, "world", 5, 0), 5);
	cr_assert_not(tu_accelerated(c));
	cr_assert_eq(tu_recv_all(a, got, 5), 5);
	cr_assert_eq(memcmp(got, "hello", 5), 0);
	cr_assert_eq(tu_recv_all(a, got, 5), 5);
	cr_assert_eq(memcmp(got, "world", 5), 0);
	exchange(a, c, 8, 0, 1000);
	exchange(c, a, 9, 0, 1000);
	close_all(c, a, l);
}

/* poll across the seam: the connector's kernel bytes before its point are
 * readable; its marker alone is not (poll takes it, and the ring's bytes
 * behind it are what it reports). */
Test(promote, poll_reports_the_program_s_bytes_never_the_marker)
{
	uint16_t port;
	int l = listener(&port), c, a;
	struct pollfd p;
	char b;

	tu_plain_pair(l, port, &c, &a);
	offer(c);
	cr_assert_eq(tu_send_all(c, "k", 1, 0), 1); /* kernel TCP: not claimed yet */
	cr_assert_eq(look(a, l), 1);
	p = (struct pollfd){ .fd = a, .events = POLLIN };
	cr_assert_eq(scilan_poll(&p, 1, 1000), 1);
	cr_assert_eq(scilan_recv(a, &b, 1, 0), 1);
	cr_assert_eq(b, 'k');
	p.revents = 0;
	cr_assert_eq(scilan_poll(&p, 1, 0), 0, "nothing for the program");
	/* The connector's next call follows (its marker), then sends on the
	 * ring. */
	cr_assert_eq(tu_send_all(c, "r", 1, 0), 1);
	cr_assert(tu_accelerated(c));
	usleep(20000); /* the marker's way through loopback */
	p.revents = 0;
	cr_assert_eq(scilan_poll(&p, 1, 1000), 1);
	cr_assert(p.revents & POLLIN);
	cr_assert_eq(scilan_recv(a, &b, 1, MSG_DONTWAIT), 1, "recv: %s", strerror(errno));
	cr_assert_eq(b, 'r');
	p.revents = 0;
	cr_assert_eq(scilan_poll(&p, 1, 0), 0);
	close_all(c, a, l);
}

/* The acceptor's kernel connection reset after its claim: the connector's
 * close cannot write its marker, and ends loudly, at once, instead of
 * waiting for room that never comes. */
Test(promote, a_connector_closing_after_a_reset_does_not_wait_for_room)
{
	uint16_t port;
	int l = listener(&port), c, a;

	tu_plain_pair(l, port, &c, &a);
	offer(c);
	cr_assert_eq(look(a, l), 1);
	sl_sys_reset_tcp(a); /* an RST to the connector, its state left as it was */
	usleep(20000);
	cr_assert_eq(scilan_close(c), 0);
	scilan_close(a);
	scilan_close(l);
}

/* The rows scilan_ctl stat shows for fd in this process's statistics file:
 * how many slots list it, and the flags of the last one. */
static int stat_rows(int fd, uint32_t *flags)
{
	char path[PATH_MAX + 32];
	struct sl_stats_map *m;
	int f, rows = 0;

	snprintf(path, sizeof(path), "%s/stats/%d", sl_config()->rundir, (int)getpid());
	f = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(f, 0, "%s: %s", path, strerror(errno));
	m = mmap(NULL, sizeof(*m), PROT_READ, MAP_SHARED, f, 0);
	close(f);
	cr_assert_neq(m, MAP_FAILED);
	for (int i = 0; i < SL_STATS_SLOTS; i++)
		if (atomic_load(&m->slot[i].in_use) && m->slot[i].fd == fd) {
			rows++;
			*flags = m->slot[i].flags;
			cr_expect_eq(m->slot[i].reason, SL_FB_NONE, "fd %d listed as kernel TCP (%u)", fd,
				     m->slot[i].reason);
		}
	munmap(m, sizeof(*m));
	return rows;
}

/* scilan_ctl stat lists a promoted connection once, as accelerated and
 * promoted (its kernel TCP row gone with the move), and not after its
 * close. */
Test(promote, stat_lists_a_promoted_connection_once_and_says_so)
{
	uint16_t port;
	int l, c, a;
	uint32_t flags = 0;

	l = listener(&port);
	tu_plain_pair(l, port, &c, &a);
	exchange(c, a, 1, 0, 100);
	offer(c);
	cr_assert_eq(look(a, l), 1, "look: %s", strerror(errno));
	exchange(a, c, 2, 0, 1000);
	exchange(c, a, 1, 100, 1000);
	cr_assert(tu_accelerated(c) && tu_accelerated(a));
	/* The first files are made at a process's first wait (young.h). */
	sl_stats_publish_idle();
	cr_expect_eq(stat_rows(c, &flags), 1, "rows for the connector");
	cr_expect(flags & SL_STATS_PROMOTED, "the connector's row does not say promoted");
	flags = 0;
	cr_expect_eq(stat_rows(a, &flags), 1, "rows for the acceptor");
	cr_expect(flags & SL_STATS_PROMOTED, "the acceptor's row does not say promoted");
	scilan_close(c);
	scilan_close(a);
	cr_expect_eq(stat_rows(c, &flags), 0, "the connector still listed after its close");
	cr_expect_eq(stat_rows(a, &flags), 0, "the acceptor still listed after its close");
	scilan_close(l);
}
