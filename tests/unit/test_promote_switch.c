/* test_promote_switch.c — the promotion switch (promote.c, seam.c) run for
 * real on a loopback TCP pair, both ends streaming at once: each side sends
 * a numbered stream on TCP, switches at some chunk (the acceptor with its
 * claim, the connector when it sees the claim) and sends the rest into a
 * pipe standing for its ring; each side's reader reads the kernel stream
 * across the seam, then the pipe.  Every byte arrives once, in order, and
 * the marker never does; a revoke that beats the claim leaves everything on
 * TCP; a lost claim publishes nothing the connector counts.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn/promote.h"
#include "conn/seam.h"

#define STREAM 600000u
#define CHUNK 1000u

struct side {
	int tcp;                 /* our kernel socket */
	int ring_out, ring_in;   /* the pipe we send into after our switch, the one we read after the peer's */
	int side;                /* 0 connector, 1 acceptor */
	unsigned switch_chunk;   /* the acceptor claims after this many chunks */
	int switched;            /* 0 switched, 1 claim lost or revoked, -1 error */
	uint64_t got;            /* bytes received in order */
	uint64_t from_tcp;       /* of them, through the seam */
	const char *bad;         /* why the reader stopped early */
};

static _Atomic uint32_t word;
static struct sl_seg_seam *seam;
static void *seg;
static struct side c, a;

static void pair(int *cfd, int *afd)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(l, 1), 0);
	cr_assert_eq(getsockname(l, (struct sockaddr *)&sa, &len), 0);
	*cfd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(connect(*cfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	*afd = accept(l, NULL, NULL);
	cr_assert_geq(*afd, 0);
	close(l);
}

static void setup(void)
{
	int ca[2], ac[2];

	seg = aligned_alloc(4096, 4096);
	cr_assert_not_null(seg);
	memset(seg, 0, 4096);
	sl_promote_seam_init(seg);
	seam = sl_promote_seam(seg);
	atomic_store(&word, SL_OFFER_OFFERED);
	memset(&c, 0, sizeof(c));
	memset(&a, 0, sizeof(a));
	pair(&c.tcp, &a.tcp);
	cr_assert_eq(pipe(ca), 0);
	cr_assert_eq(pipe(ac), 0);
	c.side = 0;
	a.side = 1;
	c.ring_out = ca[1];
	a.ring_in = ca[0];
	a.ring_out = ac[1];
	c.ring_in = ac[0];
	c.switched = a.switched = 1;
}

static void teardown(void)
{
	close(c.tcp);
	close(a.tcp);
	close(c.ring_out);
	close(c.ring_in);
	close(a.ring_out);
	close(a.ring_in);
	free(seg);
}

TestSuite(promote_switch, .init = setup, .fini = teardown, .timeout = 60);

static void fill(unsigned char *buf, uint64_t from, size_t n, int side)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (unsigned char)((from + i) % (side ? 241 : 251));
}

static bool claim(void *arg)
{
	uint32_t offered = SL_OFFER_OFFERED;

	(void)arg;
	return atomic_compare_exchange_strong(&word, &offered, SL_OFFER_ATTACHED);
}

static void send_all(int fd, const unsigned char *buf, size_t n)
{
	while (n) {
		ssize_t k = write(fd, buf, n);

		cr_assert_gt(k, 0, "write: %s", strerror(errno));
		buf += k;
		n -= (size_t)k;
	}
}

static void *sender(void *arg)
{
	struct side *s = arg;
	unsigned char buf[CHUNK];
	bool on_ring = false;

	for (uint64_t off = 0, k = 0; off < STREAM; off += CHUNK, k++) {
		if (!on_ring && s->side == 1 && k == s->switch_chunk) {
			int r;

			struct sl_seam_publish pub = { seam, 1, claim, NULL };

			while ((r = sl_promote_switch(s->tcp, 1, sl_promote_publish_seam, &pub)) == 2 && errno == EAGAIN)
				usleep(100);
			s->switched = r;
			on_ring = r == 0;
		}
		if (!on_ring && s->side == 0 && atomic_load(&word) == SL_OFFER_ATTACHED) {
			int r;

			struct sl_seam_publish pub = { seam, 0, NULL, NULL };

			while ((r = sl_promote_switch(s->tcp, 0, sl_promote_publish_seam, &pub)) == 2 && errno == EAGAIN)
				usleep(100);
			s->switched = r;
			on_ring = r == 0;
		}
		fill(buf, off, CHUNK, s->side);
		send_all(on_ring ? s->ring_out : s->tcp, buf, CHUNK);
	}
	/* The end of our stream where it ends: the pipe's close, or TCP's FIN
	 * (after the peer's switch nothing more comes on TCP from us). */
	if (on_ring)
		close(s->ring_out), s->ring_out = -1;
	else
		shutdown(s->tcp, SHUT_WR);
	return NULL;
}

/* side s reads what its peer sent. */
static void *reader(void *arg)
{
	struct side *s = arg;
	struct sl_seam_rx rx;
	/* The connector counts the acceptor's point only once the claim is
	 * made; the acceptor's peer publishes its point only when final. */
	struct sl_seam_point point = { .x = &seam->x[!s->side], .word = s->side == 0 ? &word : NULL };
	unsigned char buf[4096], want[4096];
	int peer_side = !s->side;

	cr_assert_eq(sl_seam_rx_start(s->tcp, &rx), 0);
	for (;;) {
		struct iovec iov = { buf, 1 + (size_t)(s->got % sizeof(buf)) }; /* reads of every size */
		bool via_tcp = !rx.crossed;
		ssize_t n = via_tcp ? sl_seam_recv(s->tcp, &rx, &point, &iov, 1, 0) : read(s->ring_in, buf, sizeof(buf));

		if (n < 0) {
			s->bad = strerror(errno);
			fprintf(stderr, "side %d reader: %s at %llu (tcp %llu)\n", s->side, s->bad, (unsigned long long)s->got, (unsigned long long)s->from_tcp);
			return NULL;
		}
		/* 0: the end of the peer's stream (its FIN when it never
		 * switched, its pipe's close after), or the crossing itself,
		 * after which the pipe is read. */
		if (n == 0 && (!via_tcp || !rx.crossed))
			break;
		fill(want, s->got, (size_t)n, peer_side);
		if (memcmp(buf, want, (size_t)n) != 0) {
			s->bad = "a byte out of place";
			for (ssize_t i = 0; i < n; i++)
				if (buf[i] != want[i]) {
					fprintf(stderr, "side %d: byte %llu is %02x, not %02x (%s; its read index %llu)\n",
						s->side, (unsigned long long)(s->got + (uint64_t)i), buf[i], want[i],
						via_tcp ? "kernel" : "ring", (unsigned long long)rx.read);
					break;
				}
			fprintf(stderr, "side %d reader: %s at %llu (tcp %llu)\n", s->side, s->bad, (unsigned long long)s->got, (unsigned long long)s->from_tcp);
			return NULL;
		}
		if (via_tcp)
			s->from_tcp += (uint64_t)n;
		s->got += (uint64_t)n;
	}
	return NULL;
}

static void run(void)
{
	pthread_t t[4];

	cr_assert_eq(pthread_create(&t[0], NULL, sender, &c), 0);
	cr_assert_eq(pthread_create(&t[1], NULL, sender, &a), 0);
	cr_assert_eq(pthread_create(&t[2], NULL, reader, &c), 0);
	cr_assert_eq(pthread_create(&t[3], NULL, reader, &a), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
}

Test(promote_switch, both_directions_cross_the_seam_whole)
{
	a.switch_chunk = 200;
	run();
	cr_assert_null(c.bad, "connector's reader: %s", c.bad);
	cr_assert_null(a.bad, "acceptor's reader: %s", a.bad);
	cr_assert_eq(a.switched, 0);
	cr_assert_eq(c.got, STREAM, "the connector got %llu", (unsigned long long)c.got);
	cr_assert_eq(a.got, STREAM, "the acceptor got %llu", (unsigned long long)a.got);
	cr_assert_gt(c.from_tcp, 0);
	cr_assert_lt(c.from_tcp, STREAM, "some of the acceptor's bytes came on the ring");
}

Test(promote_switch, a_switch_at_the_first_byte)
{
	a.switch_chunk = 0;
	run();
	cr_assert_null(c.bad, "%s", c.bad);
	cr_assert_null(a.bad, "%s", a.bad);
	cr_assert_eq(c.got, STREAM);
	cr_assert_eq(a.got, STREAM);
	cr_assert_eq(c.from_tcp, 0);
}

/* The connector revoked before the claim: nothing moves, and the point the
 * acceptor published for its lost claim is never counted. */
Test(promote_switch, a_revoke_that_beats_the_claim_keeps_tcp)
{
	atomic_store(&word, SL_OFFER_REVOKED);
	a.switch_chunk = 100;
	run();
	cr_assert_null(c.bad, "%s", c.bad);
	cr_assert_null(a.bad, "%s", a.bad);
	cr_assert_eq(a.switched, 1, "the claim is lost");
	cr_assert_eq(c.switched, 1);
	cr_assert_eq(c.got, STREAM);
	cr_assert_eq(a.got, STREAM);
	cr_assert_eq(c.from_tcp, STREAM);
	cr_assert_eq(a.from_tcp, STREAM);
}

/* Many switch points, to meet the readers at every moment. */
Test(promote_switch, switches_at_many_points)
{
	for (unsigned k = 1; k < 600; k += 97) {
		teardown();
		setup();
		a.switch_chunk = k;
		run();
		cr_assert_null(c.bad, "switch at chunk %u: %s", k, c.bad);
		cr_assert_null(a.bad, "switch at chunk %u: %s", k, a.bad);
		cr_assert_eq(c.got, STREAM, "switch at chunk %u", k);
		cr_assert_eq(a.got, STREAM, "switch at chunk %u", k);
	}
}
