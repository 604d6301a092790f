/* test_integrity.c — >= 1 GiB (128 MiB under sanitizers) in random sizes through
 * one connection, full duplex across processes and across threads, small rings,
 * the fallback; every byte checked and both ends' checksums compared. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#define MAX_MSG (256u * 1024)

static uint64_t volume(void)
{
	return tu_scaled(1ull << 30, 128ull << 20);
}

struct stream_stats {
	uint64_t bytes;
	uint64_t hash;
	int64_t bad_at;  /* stream offset of the first wrong byte, -1 if none */
	int err;         /* errno of a failed call, 0 if none */
	uint64_t calls;
};

/* Send `bytes` of stream `seed` in random sizes from size_seed. */
static void send_stream(int fd, uint64_t seed, uint64_t size_seed, uint64_t bytes, _Atomic uint64_t *progress,
			struct stream_stats *st)
{
	unsigned char *buf = malloc(MAX_MSG);
	struct tu_rng rng = { size_seed };
	struct tu_hash h;
	uint64_t off = 0;

	memset(st, 0, sizeof(*st));
	st->bad_at = -1;
	tu_hash_init(&h, 0);
	while (buf && off < bytes) {
		size_t k = tu_rng_size(&rng, MAX_MSG);

		if (k > bytes - off)
			k = (size_t)(bytes - off);
		tu_stream_fill(seed, off, buf, k);
		if (tu_send_all(fd, buf, k, MSG_NOSIGNAL) != (ssize_t)k) {
			st->err = errno;
			break;
		}
		tu_hash_update(&h, buf, k);
		off += k;
		st->calls++;
		if (progress)
			atomic_fetch_add(progress, k);
	}
	st->bytes = off;
	st->hash = tu_hash_final(&h);
	free(buf);
}

/* Receive until EOF or `bytes` (stop_at_count), checking every byte. */
static void recv_stream(int fd, uint64_t seed, uint64_t size_seed, uint64_t bytes, bool stop_at_count,
			_Atomic uint64_t *progress, struct stream_stats *st)
{
	unsigned char *buf = malloc(MAX_MSG), *peek = malloc(MAX_MSG);
	struct tu_rng rng = { size_seed };
	struct tu_hash h;
	uint64_t off = 0;

	memset(st, 0, sizeof(*st));
	st->bad_at = -1;
	tu_hash_init(&h, 0);
	while (buf && peek && (!stop_at_count || off < bytes)) {
		size_t k = tu_rng_size(&rng, MAX_MSG);
		unsigned mode = (unsigned)(tu_rng_next(&rng) % 64);
		int flags = 0;
		ssize_t n;

		if (stop_at_count && k > bytes - off)
			k = (size_t)(bytes - off);
		if (mode == 0) {
			/* Peek, then receive exactly what was peeked: must be the same bytes. */
			ssize_t p = scilan_recv(fd, peek, k, MSG_PEEK);

			if (p < 0) {
				st->err = errno;
				break;
			}
			if (p == 0)
				break;
			n = tu_recv_all(fd, buf, (size_t)p);
			if (n != p) {
				st->err = n < 0 ? errno : EIO;
				break;
			}
			if (memcmp(peek, buf, (size_t)p) != 0) {
				st->bad_at = (int64_t)off;
				break;
			}
		} else {
			if (mode == 1)
				flags = MSG_WAITALL;
			do
				n = scilan_recv(fd, buf, k, flags);
			while (n < 0 && errno == EINTR);
			if (n < 0) {
				st->err = errno;
				break;
			}
			if (n == 0)
				break;
		}
		{
			int64_t bad = tu_stream_check(seed, off, buf, (size_t)n);

			if (bad >= 0) {
				st->bad_at = (int64_t)off + bad;
				break;
			}
		}
		tu_hash_update(&h, buf, (size_t)n);
		off += (uint64_t)n;
		st->calls++;
		if (progress)
			atomic_fetch_add(progress, (uint64_t)n);
	}
	st->bytes = off;
	st->hash = tu_hash_final(&h);
	free(buf);
	free(peek);
}

/* The checksum of stream seed's first `bytes` bytes, independently of any split. */
static uint64_t expected_hash(uint64_t seed, uint64_t bytes)
{
	unsigned char *buf = malloc(1 << 20);
	struct tu_hash h;

	tu_hash_init(&h, 0);
	for (uint64_t off = 0; off < bytes; off += 1 << 20) {
		size_t k = bytes - off < (1 << 20) ? (size_t)(bytes - off) : (1 << 20);

		tu_stream_fill(seed, off, buf, k);
		tu_hash_update(&h, buf, k);
	}
	free(buf);
	return tu_hash_final(&h);
}

static void check_received(const struct stream_stats *rx, uint64_t want_bytes, uint64_t sender_hash,
			   const char *what)
{
	cr_assert_eq(rx->err, 0, "%s: receive failed after %llu bytes: %s", what, (unsigned long long)rx->bytes,
		     strerror(rx->err));
	cr_assert_eq(rx->bad_at, -1, "%s: wrong data at stream offset %lld", what, (long long)rx->bad_at);
	cr_assert_eq(rx->bytes, want_bytes, "%s: received %llu of %llu bytes", what, (unsigned long long)rx->bytes,
		     (unsigned long long)want_bytes);
	cr_assert_eq(rx->hash, sender_hash, "%s: receiver checksum %016llx != sender checksum %016llx", what,
		     (unsigned long long)rx->hash, (unsigned long long)sender_hash);
}

/* ---- one direction across processes ---------------------------------------------------- */

struct peer_arg {
	uint16_t port;
	uint64_t bytes;
	int rcvbuf;      /* client SO_RCVBUF */
	int poll_us;     /* -1: leave the default */
	bool duplex;
	struct tu_sync sync;
	_Atomic uint64_t *progress;
};

enum { SEED_C2S = 0x1111, SEED_S2C = 0x2222, SIZES_C = 0xa1, SIZES_S = 0xb2, RSIZES_C = 0xc3, RSIZES_S = 0xd4 };

struct sender_thread {
	pthread_t t;
	int fd;
	uint64_t seed, size_seed, bytes;
	_Atomic uint64_t *progress;
	bool shut;       /* shutdown(SHUT_WR) once everything was sent */
	struct stream_stats st;
};

static void *sender_main(void *p)
{
	struct sender_thread *s = p;

	send_stream(s->fd, s->seed, s->size_seed, s->bytes, s->progress, &s->st);
	if (s->shut && !s->st.err && scilan_shutdown(s->fd, SHUT_WR) < 0)
		s->st.err = errno;
	return NULL;
}

/* The client process: sends SEED_C2S (and, in duplex, receives SEED_S2C on
 * the main thread while a thread sends); reports its send checksum and its
 * receive result through the sync pipe. */
static int stream_client(void *p)
{
	struct peer_arg *a = p;
	struct sender_thread snd = { 0 };
	struct stream_stats rx = { 0 };
	uint64_t v;
	int fd = tu_connect_rcvbuf(AF_INET, a->port, a->rcvbuf);

	TU_CHECK(fd >= 0, "connect");
	TU_CHECK(tu_accelerated(fd) == 1, "accelerated = %d", tu_accelerated(fd));
	if (a->poll_us >= 0)
		TU_CHECK(tu_set_poll_us(fd, a->poll_us) == 0, "poll_us");
	snd = (struct sender_thread){ .fd = fd, .seed = SEED_C2S, .size_seed = SIZES_C, .bytes = a->bytes,
				      .progress = a->progress, .shut = true };
	if (a->duplex) {
		TU_CHECK(pthread_create(&snd.t, NULL, sender_main, &snd) == 0, "thread");
		recv_stream(fd, SEED_S2C, RSIZES_C, a->bytes, false, a->progress, &rx);
		TU_CHECK(pthread_join(snd.t, NULL) == 0, "join");
	} else {
		sender_main(&snd);
	}
	TU_CHECK(snd.st.err == 0, "send failed after %llu bytes: %s", (unsigned long long)snd.st.bytes,
		 strerror(snd.st.err));
	if (a->duplex) {
		TU_CHECK(rx.err == 0, "client receive failed after %llu: %s", (unsigned long long)rx.bytes,
			 strerror(rx.err));
		TU_CHECK(rx.bad_at == -1, "client received wrong data at %lld", (long long)rx.bad_at);
		TU_CHECK(rx.bytes == a->bytes, "client received %llu of %llu", (unsigned long long)rx.bytes,
			 (unsigned long long)a->bytes);
	}
	TU_CHECK(tu_sync_put_child(&a->sync, snd.st.hash) == 0, "report send checksum");
	TU_CHECK(tu_sync_put_child(&a->sync, rx.hash) == 0, "report receive checksum");
	TU_CHECK(tu_sync_get_child(&a->sync, &v) == 0, "wait for the end");
	TU_CHECK(scilan_close(fd) == 0, "close");
	return 0;
}

static void run_stream_test(uint64_t bytes, bool duplex, int client_rcvbuf, int server_rcvbuf, int poll_us,
			    const char *what)
{
	struct peer_arg *a = tu_shared_alloc(sizeof(*a));
	struct tu_child child;
	struct sender_thread snd = { 0 };
	struct stream_stats rx;
	uint64_t c_send_hash, c_recv_hash, stalled;
	int l, s;
	char st[128];

	cr_assert_not_null(a);
	memset(a, 0, sizeof(*a));
	a->bytes = bytes;
	a->duplex = duplex;
	a->rcvbuf = client_rcvbuf;
	a->poll_us = poll_us;
	a->progress = tu_shared_alloc(sizeof(*a->progress));
	cr_assert_not_null(a->progress);
	cr_assert_eq(tu_sync_init(&a->sync), 0);
	l = tu_listen_rcvbuf(AF_INET, 4, server_rcvbuf, &a->port);
	cr_assert_geq(l, 0, "listen: %s", strerror(errno));
	cr_assert_eq(tu_spawn(&child, stream_client, a), 0);
	s = tu_accept(l);
	cr_assert_geq(s, 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(s), 1);
	if (poll_us >= 0)
		cr_assert_eq(tu_set_poll_us(s, poll_us), 0);
	tu_progress_start(a->progress, 20, what);
	if (duplex) {
		snd = (struct sender_thread){ .fd = s, .seed = SEED_S2C, .size_seed = SIZES_S, .bytes = bytes,
					      .progress = a->progress, .shut = true };
		cr_assert_eq(pthread_create(&snd.t, NULL, sender_main, &snd), 0);
	}
	recv_stream(s, SEED_C2S, RSIZES_S, bytes, false, a->progress, &rx);
	if (duplex)
		pthread_join(snd.t, NULL);
	cr_assert_eq(tu_progress_stop(&stalled), false, "%s: no progress for 20 s at %llu bytes", what,
		     (unsigned long long)stalled);
	cr_assert_eq(tu_sync_get(&a->sync, &c_send_hash), 0, "client died:\n%s", (tu_reap(&child), child.output));
	cr_assert_eq(tu_sync_get(&a->sync, &c_recv_hash), 0);
	cr_assert_eq(tu_sync_put(&a->sync, 1), 0);
	tu_reap(&child);
	cr_assert(tu_exited_with(&child, 0), "%s: client %s\n%s", what, tu_status_str(&child, st, sizeof(st)),
		  child.output);
	check_received(&rx, bytes, c_send_hash, what);
	cr_assert_eq(c_send_hash, expected_hash(SEED_C2S, bytes), "%s: sender checksum is not the stream's", what);
	if (duplex) {
		cr_assert_eq(snd.st.err, 0, "%s: server send: %s", what, strerror(snd.st.err));
		cr_assert_eq(c_recv_hash, snd.st.hash, "%s: client received checksum %016llx != server sent %016llx",
			     what, (unsigned long long)c_recv_hash, (unsigned long long)snd.st.hash);
	}
	scilan_close(s);
	scilan_close(l);
}

Test(integrity, one_gib_one_direction, .timeout = 600)
{
	run_stream_test(volume(), false, 0, 0, -1, "one direction");
}

Test(integrity, full_duplex_two_processes, .timeout = 600)
{
	run_stream_test(volume() / 2, true, 0, 0, -1, "full duplex");
}

Test(integrity, small_rings_duplex, .timeout = 600)
{
	run_stream_test(volume() / 16, true, 4096, 4096, -1, "4 KiB rings, duplex");
}

Test(integrity, interrupt_mode_odd_ring, .timeout = 600)
{
	run_stream_test(volume() / 16, false, 8192, 65536, 0, "interrupt mode, 64 KiB ring");
}

/* ---- four threads in one process: both ends here, each sending and receiving ----------------- */

struct recv_thread {
	pthread_t t;
	int fd;
	uint64_t seed, size_seed, bytes;
	_Atomic uint64_t *progress;
	struct stream_stats st;
};

static void *receiver_main(void *p)
{
	struct recv_thread *r = p;

	recv_stream(r->fd, r->seed, r->size_seed, r->bytes, true, r->progress, &r->st);
	return NULL;
}

Test(integrity, duplex_four_threads_one_process, .timeout = 600)
{
	uint64_t bytes = volume() / 8, stalled;
	static _Atomic uint64_t progress;
	struct sender_thread s1, s2;
	struct recv_thread r1, r2;
	int c, s;

	cr_assert_eq(tu_pair(AF_INET, &c, &s), 0, "pair: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(c), 1);
	s1 = (struct sender_thread){ .fd = c, .seed = SEED_C2S, .size_seed = SIZES_C, .bytes = bytes,
				     .progress = &progress };
	s2 = (struct sender_thread){ .fd = s, .seed = SEED_S2C, .size_seed = SIZES_S, .bytes = bytes,
				     .progress = &progress };
	r1 = (struct recv_thread){ .fd = s, .seed = SEED_C2S, .size_seed = RSIZES_S, .bytes = bytes,
				   .progress = &progress };
	r2 = (struct recv_thread){ .fd = c, .seed = SEED_S2C, .size_seed = RSIZES_C, .bytes = bytes,
				   .progress = &progress };
	tu_progress_start(&progress, 20, "four threads");
	cr_assert_eq(pthread_create(&r1.t, NULL, receiver_main, &r1), 0);
	cr_assert_eq(pthread_create(&r2.t, NULL, receiver_main, &r2), 0);
	cr_assert_eq(pthread_create(&s1.t, NULL, sender_main, &s1), 0);
	cr_assert_eq(pthread_create(&s2.t, NULL, sender_main, &s2), 0);
	pthread_join(s1.t, NULL);
	pthread_join(s2.t, NULL);
	pthread_join(r1.t, NULL);
	pthread_join(r2.t, NULL);
	cr_assert_eq(tu_progress_stop(&stalled), false, "no progress for 20 s at %llu", (unsigned long long)stalled);
	cr_assert_eq(s1.st.err, 0, "client send: %s", strerror(s1.st.err));
	cr_assert_eq(s2.st.err, 0, "server send: %s", strerror(s2.st.err));
	check_received(&r1.st, bytes, s1.st.hash, "client -> server");
	check_received(&r2.st, bytes, s2.st.hash, "server -> client");
	scilan_close(c);
	scilan_close(s);
}

/* ---- the kernel-TCP fallback, scilan calls on both ends -------------------------------- */

/* The server process has no usable runtime dir, so its listener is not
 * registered and the connection falls back; both ends still use scilan_*. */
static int fallback_server(void *p)
{
	struct peer_arg *a = p;
	struct stream_stats rx;
	uint16_t port;
	uint64_t v;
	int l, s;

	setenv("SCILAN_RUNDIR", "/proc/nonexistent/scilan", 1);
	l = tu_listen(AF_INET, 4, &port);
	TU_CHECK(l >= 0, "listen");
	TU_CHECK(tu_sync_put_child(&a->sync, port) == 0, "report port");
	s = tu_accept(l);
	TU_CHECK(s >= 0, "accept");
	TU_CHECK(tu_accelerated(s) == 0, "accelerated without a runtime dir");
	recv_stream(s, SEED_C2S, RSIZES_S, a->bytes, false, a->progress, &rx);
	TU_CHECK(rx.err == 0, "receive failed after %llu: %s", (unsigned long long)rx.bytes, strerror(rx.err));
	TU_CHECK(rx.bad_at == -1, "wrong data at %lld", (long long)rx.bad_at);
	TU_CHECK(rx.bytes == a->bytes, "received %llu of %llu", (unsigned long long)rx.bytes,
		 (unsigned long long)a->bytes);
	TU_CHECK(tu_sync_put_child(&a->sync, rx.hash) == 0, "report checksum");
	TU_CHECK(tu_sync_get_child(&a->sync, &v) == 0, "wait");
	scilan_close(s);
	scilan_close(l);
	return 0;
}

Test(integrity, fallback_connection, .timeout = 600)
{
	struct peer_arg *a = tu_shared_alloc(sizeof(*a));
	struct tu_child child;
	struct stream_stats tx;
	uint64_t port, hash, stalled;
	int c;
	char st[128];

	cr_assert_not_null(a);
	memset(a, 0, sizeof(*a));
	a->bytes = volume() / 8;
	a->progress = tu_shared_alloc(sizeof(*a->progress));
	cr_assert_eq(tu_sync_init(&a->sync), 0);
	/* Fork before this process makes its first scilan call. */
	cr_assert_eq(tu_spawn(&child, fallback_server, a), 0);
	cr_assert_eq(tu_sync_get(&a->sync, &port), 0, "server failed:\n%s", (tu_reap(&child), child.output));
	c = tu_connect(AF_INET, (uint16_t)port);
	cr_assert_geq(c, 0, "connect: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(c), 0);
	tu_progress_start(a->progress, 20, "fallback stream");
	send_stream(c, SEED_C2S, SIZES_C, a->bytes, a->progress, &tx);
	cr_assert_eq(tx.err, 0, "send: %s", strerror(tx.err));
	cr_assert_eq(scilan_shutdown(c, SHUT_WR), 0);
	cr_assert_eq(tu_sync_get(&a->sync, &hash), 0, "server failed:\n%s", (tu_reap(&child), child.output));
	cr_assert_eq(tu_progress_stop(&stalled), false, "no progress for 20 s at %llu", (unsigned long long)stalled);
	cr_assert_eq(hash, tx.hash, "fallback: receiver checksum %016llx != sender %016llx", (unsigned long long)hash,
		     (unsigned long long)tx.hash);
	cr_assert_eq(tu_sync_put(&a->sync, 1), 0);
	tu_reap(&child);
	cr_assert(tu_exited_with(&child, 0), "server %s\n%s", tu_status_str(&child, st, sizeof(st)), child.output);
	scilan_close(c);
}

Test(integrity, checksum_is_split_independent)
{
	unsigned char buf[5000];
	struct tu_rng rng = { 5 };
	uint64_t whole;

	tu_stream_fill(77, 3, buf, sizeof(buf));
	whole = tu_hash_buf(buf, sizeof(buf));
	for (int round = 0; round < 200; round++) {
		struct tu_hash h;
		size_t off = 0;

		tu_hash_init(&h, 0);
		while (off < sizeof(buf)) {
			size_t k = tu_rng_size(&rng, sizeof(buf) - off);

			tu_hash_update(&h, buf + off, k);
			off += k;
		}
		cr_assert_eq(tu_hash_final(&h), whole, "checksum depends on the split");
	}
	buf[1234] ^= 1;
	cr_assert_neq(tu_hash_buf(buf, sizeof(buf)), whole, "checksum missed a flipped bit");
	cr_assert_eq(tu_stream_check(77, 3, buf, sizeof(buf)), 1234);
}
