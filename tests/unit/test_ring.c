/* test_ring.c — unit tests of the SPSC ring (ring.h) on a malloc'ed fake segment:
 * empty/full/partial, wrap-around, peek with offset, publication batching, index
 * caching, corrupt indices (-1), sl_ring_cap_for rounding and clamps. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "ring/layout.h"
#include "ring/ring.h"
#include "testutil.h"

/* One piece, copied and published at once. */
static void ring_put(struct sl_ring_tx *tx, const void *buf, size_t len)
{
	sl_ring_tx_copy(tx, buf, len, 0);
	sl_ring_tx_commit(tx, len);
}

#define GUARD 256
/* Fresh (uncached) views of the indices: the checks below are about what the
 * shared words say, not about the per-side caches (tested separately). */
#define SPACE(f) sl_ring_tx_space(&(f)->tx, UINT64_MAX)
#define AVAIL(f) sl_ring_rx_avail_fresh(&(f)->rx)
#define GUARD_BYTE 0xa5

/* Area A belongs to the receiver (its control page then its ring data);
 * area B belongs to the sender (only its control page is used here: the
 * receiver publishes its read index into B's peer_read). */
struct fake {
	unsigned char *mem;
	struct sl_area_ctl *a_ctl, *b_ctl;
	unsigned char *a_data;
	uint64_t cap;
	struct sl_ring_tx tx;
	struct sl_ring_rx rx;
};

static void fake_init(struct fake *f, uint64_t cap)
{
	/* A's control page, A's data, a guard page, B's control page. */
	size_t size = SL_AREA_CTL_SIZE + cap + SL_PAGE + SL_AREA_CTL_SIZE;

	memset(f, 0, sizeof(*f));
	f->cap = cap;
	f->mem = aligned_alloc(SL_PAGE, (size + SL_PAGE - 1) / SL_PAGE * SL_PAGE);
	cr_assert_not_null(f->mem, "aligned_alloc(%zu)", size);
	memset(f->mem, 0, size);
	f->a_ctl = (struct sl_area_ctl *)f->mem;
	f->a_data = f->mem + SL_AREA_CTL_SIZE;
	memset(f->a_data + cap, GUARD_BYTE, GUARD);
	f->b_ctl = (struct sl_area_ctl *)(f->mem + SL_AREA_CTL_SIZE + cap + SL_PAGE);
	sl_ring_tx_init(&f->tx, f->a_ctl, f->a_data, f->b_ctl, cap);
	sl_ring_rx_init(&f->rx, f->a_ctl, f->a_data, f->b_ctl, cap);
}

static void fake_check_guard(const struct fake *f)
{
	for (size_t i = 0; i < GUARD; i++)
		cr_assert_eq(f->a_data[f->cap + i], GUARD_BYTE, "ring wrote past its data at cap+%zu", i);
}

static void fake_free(struct fake *f)
{
	fake_check_guard(f);
	free(f->mem);
}

static uint64_t published_read(const struct fake *f)
{
	return atomic_load(&f->b_ctl->peer_read);
}

static uint64_t published_write(const struct fake *f)
{
	return atomic_load(&f->a_ctl->rx_write);
}

/* Put len stream bytes (stream offset = tx write index). */
static void put_stream(struct fake *f, uint64_t seed, size_t len)
{
	unsigned char *buf = malloc(len ? len : 1);

	cr_assert_not_null(buf);
	tu_stream_fill(seed, f->tx.write, buf, len);
	cr_assert_geq(SPACE(f), (int64_t)len, "put of %zu with space %lld", len,
		      (long long)SPACE(f));
	ring_put(&f->tx, buf, len);
	free(buf);
}

/* Peek len bytes at offset and check they are the stream at read+offset. */
static void check_peek(struct fake *f, uint64_t seed, size_t len, uint64_t offset)
{
	unsigned char *buf = malloc(len ? len : 1);
	int64_t bad;

	cr_assert_not_null(buf);
	sl_ring_rx_peek(&f->rx, buf, len, offset);
	bad = tu_stream_check(seed, f->rx.read + offset, buf, len);
	cr_assert_eq(bad, -1, "peek(len %zu, offset %llu) at read %llu differs at byte %lld", len,
		     (unsigned long long)offset, (unsigned long long)f->rx.read, (long long)bad);
	free(buf);
}

/* Advance both indices by n without looking at the data. */
static void advance(struct fake *f, uint64_t n)
{
	unsigned char junk[1024];

	memset(junk, 0x11, sizeof(junk));
	while (n) {
		size_t k = n < sizeof(junk) ? (size_t)n : sizeof(junk);

		ring_put(&f->tx, junk, k);
		sl_ring_rx_consume(&f->rx, k, true);
		n -= k;
	}
}

Test(ring, empty)
{
	struct fake f;

	fake_init(&f, 4096);
	cr_assert_eq(AVAIL(&f), 0, "fresh ring has data");
	cr_assert_eq(SPACE(&f), 4096, "fresh ring space %lld", (long long)SPACE(&f));
	/* A zero-length put publishes nothing new. */
	ring_put(&f.tx, "", 0);
	cr_assert_eq(AVAIL(&f), 0);
	cr_assert_eq(published_write(&f), 0);
	fake_free(&f);
}

Test(ring, put_peek_consume)
{
	struct fake f;
	char buf[16] = { 0 };

	fake_init(&f, 4096);
	ring_put(&f.tx, "0123456789", 10);
	cr_assert_eq(published_write(&f), 10, "rx_write not published by put");
	cr_assert_eq(AVAIL(&f), 10);
	cr_assert_eq(SPACE(&f), 4096 - 10);
	sl_ring_rx_peek(&f.rx, buf, 10, 0);
	cr_assert_arr_eq(buf, "0123456789", 10);
	/* peek does not consume */
	cr_assert_eq(AVAIL(&f), 10);
	sl_ring_rx_consume(&f.rx, 10, true);
	cr_assert_eq(AVAIL(&f), 0);
	cr_assert_eq(published_read(&f), 10);
	cr_assert_eq(SPACE(&f), 4096);
	fake_free(&f);
}

Test(ring, partial_consume)
{
	struct fake f;

	fake_init(&f, 4096);
	put_stream(&f, 7, 100);
	sl_ring_rx_consume(&f.rx, 30, false);
	cr_assert_eq(AVAIL(&f), 70);
	check_peek(&f, 7, 70, 0);
	sl_ring_rx_consume(&f.rx, 69, true);
	cr_assert_eq(AVAIL(&f), 1);
	check_peek(&f, 7, 1, 0);
	cr_assert_eq(SPACE(&f), 4096 - 1);
	fake_free(&f);
}

Test(ring, exactly_full)
{
	struct fake f;

	fake_init(&f, 4096);
	put_stream(&f, 1, 4096);
	cr_assert_eq(SPACE(&f), 0, "full ring reports space");
	cr_assert_eq(AVAIL(&f), 4096, "full ring avail %lld", (long long)AVAIL(&f));
	check_peek(&f, 1, 4096, 0);
	sl_ring_rx_consume(&f.rx, 4096, true);
	cr_assert_eq(SPACE(&f), 4096);
	cr_assert_eq(AVAIL(&f), 0);

	/* Full again, in two pieces, now starting mid-ring. */
	advance(&f, 1000);
	put_stream(&f, 2, 3000);
	put_stream(&f, 2, 1096);
	cr_assert_eq(SPACE(&f), 0);
	cr_assert_eq(AVAIL(&f), 4096);
	check_peek(&f, 2, 4096, 0);
	fake_free(&f);
}

Test(ring, wrap_around)
{
	static const uint64_t starts[] = { 4095, 4086, 2048 + 3, 4096 * 5 - 1, 1 };

	for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++) {
		struct fake f;
		uint64_t off;

		fake_init(&f, 4096);
		advance(&f, starts[i]);
		off = f.tx.write & 4095;
		put_stream(&f, 42 + i, 100);
		cr_assert_eq(AVAIL(&f), 100);
		check_peek(&f, 42 + i, 100, 0);
		/* The raw layout: the first bytes at the end of the data, the rest at its start. */
		{
			unsigned char expect[100];
			size_t first = 4096 - off < 100 ? (size_t)(4096 - off) : 100;

			tu_stream_fill(42 + i, f.rx.read, expect, 100);
			cr_assert_arr_eq(f.a_data + off, expect, first, "bytes before the wrap (start %llu)",
					 (unsigned long long)starts[i]);
			cr_assert_arr_eq(f.a_data, expect + first, 100 - first, "bytes after the wrap (start %llu)",
					 (unsigned long long)starts[i]);
		}
		sl_ring_rx_consume(&f.rx, 100, true);
		cr_assert_eq(published_read(&f), starts[i] + 100);
		cr_assert_eq(published_write(&f), starts[i] + 100);
		fake_free(&f);
	}
}

Test(ring, peek_with_offset)
{
	struct fake f;

	fake_init(&f, 4096);
	put_stream(&f, 9, 100);
	check_peek(&f, 9, 10, 20);
	check_peek(&f, 9, 1, 99);
	check_peek(&f, 9, 0, 100);
	check_peek(&f, 9, 100, 0);
	sl_ring_rx_consume(&f.rx, 100, true);

	/* Offset that crosses the wrap point. */
	advance(&f, 4096 - 100 - (f.rx.read & 4095));
	cr_assert_eq(f.rx.read & 4095, 4096 - 100);
	put_stream(&f, 10, 300);
	check_peek(&f, 10, 50, 80);   /* straddles the wrap */
	check_peek(&f, 10, 50, 150);  /* entirely after the wrap */
	check_peek(&f, 10, 300, 0);
	sl_ring_rx_consume(&f.rx, 120, false);
	check_peek(&f, 10, 180, 0);
	check_peek(&f, 10, 30, 150);
	fake_free(&f);
}

Test(ring, batching_quarter_ring)
{
	struct fake f;

	fake_init(&f, 4096); /* quarter = 1024 */
	put_stream(&f, 3, 4096);
	/* The first consume is published at once: a published 0 means nothing
	 * was consumed (bypass.c relies on it). */
	sl_ring_rx_consume(&f.rx, 1, false);
	cr_assert_eq(published_read(&f), 1, "the first consume was not published at once");
	sl_ring_rx_consume(&f.rx, 1023, false);
	cr_assert_eq(published_read(&f), 1, "read index published before a quarter ring was consumed");
	cr_assert_eq(SPACE(&f), 1, "sender sees space that was not published");
	sl_ring_rx_consume(&f.rx, 1, false);
	cr_assert_eq(published_read(&f), 1025, "read index not published at a quarter ring");
	cr_assert_eq(SPACE(&f), 1025);
	sl_ring_rx_consume(&f.rx, 100, false);
	cr_assert_eq(published_read(&f), 1025, "batching: 100 bytes published early");
	sl_ring_rx_consume(&f.rx, 1000, false);
	cr_assert_eq(published_read(&f), 2125, "1100 unpublished bytes >= quarter not published");
	fake_free(&f);

	/* Larger ring: quarter = 16 KiB. */
	fake_init(&f, 65536);
	put_stream(&f, 4, 65536);
	sl_ring_rx_consume(&f.rx, 1, false);
	cr_assert_eq(published_read(&f), 1);
	for (int i = 0; i < 16383; i++)
		sl_ring_rx_consume(&f.rx, 1, false);
	cr_assert_eq(published_read(&f), 1);
	sl_ring_rx_consume(&f.rx, 1, false);
	cr_assert_eq(published_read(&f), 16385);
	check_peek(&f, 4, 65536 - 16385, 0);
	fake_free(&f);
}

Test(ring, batching_forced_and_on_empty)
{
	struct fake f;

	fake_init(&f, 4096);
	put_stream(&f, 5, 500);
	sl_ring_rx_consume(&f.rx, 10, true);
	cr_assert_eq(published_read(&f), 10, "forced consume did not publish");
	/* Drain to empty below a quarter: batched, not yet visible... */
	sl_ring_rx_consume(&f.rx, 490, false);
	cr_assert_eq(AVAIL(&f), 0);
	cr_assert_eq(published_read(&f), 10);
	cr_assert_eq(SPACE(&f), 4096 - 490);
	/* ...until the receiver, finding the ring empty, publishes before it sleeps. */
	sl_ring_rx_publish(&f.rx);
	cr_assert_eq(published_read(&f), 500, "publish on empty did not hand back the read index");
	cr_assert_eq(SPACE(&f), 4096);
	cr_assert_eq(f.rx.published, f.rx.read);
	/* Publishing again with nothing new changes nothing. */
	sl_ring_rx_publish(&f.rx);
	cr_assert_eq(published_read(&f), 500);
	/* A forced zero-length consume publishes what is pending. */
	put_stream(&f, 5, 20);
	sl_ring_rx_consume(&f.rx, 20, false);
	cr_assert_eq(published_read(&f), 500);
	sl_ring_rx_consume(&f.rx, 0, true);
	cr_assert_eq(published_read(&f), 520);
	fake_free(&f);
}

Test(ring, write_combining_put)
{
	struct fake f;

	fake_init(&f, 8192);
	f.tx.write_combining = true;
	advance(&f, 8000);
	put_stream(&f, 77, 1000);
	check_peek(&f, 77, 1000, 0);
	cr_assert_eq(published_write(&f), 9000);
	fake_free(&f);
}

Test(ring, corrupt_write_index)
{
	struct fake f;
	uint64_t r;

	fake_init(&f, 4096);
	/* Exactly cap ahead is legal (full), one more is not. */
	atomic_store(&f.a_ctl->rx_write, 4096);
	cr_assert_eq(AVAIL(&f), 4096);
	atomic_store(&f.a_ctl->rx_write, 4097);
	cr_assert_eq(AVAIL(&f), -1, "write index cap+1 ahead accepted");
	atomic_store(&f.a_ctl->rx_write, UINT64_MAX);
	cr_assert_eq(AVAIL(&f), -1, "write index UINT64_MAX accepted");
	atomic_store(&f.a_ctl->rx_write, 1ull << 63);
	cr_assert_eq(AVAIL(&f), -1);
	atomic_store(&f.a_ctl->rx_write, 0);
	f.tx.write = 0;

	/* Going backwards after some laps. */
	advance(&f, 10000);
	r = f.rx.read;
	atomic_store(&f.a_ctl->rx_write, r - 1);
	cr_assert_eq(AVAIL(&f), -1, "write index behind the read index accepted");
	atomic_store(&f.a_ctl->rx_write, r - 5000);
	cr_assert_eq(AVAIL(&f), -1);
	atomic_store(&f.a_ctl->rx_write, r + 4096 + 1);
	cr_assert_eq(AVAIL(&f), -1);
	atomic_store(&f.a_ctl->rx_write, r + 4096);
	cr_assert_eq(AVAIL(&f), 4096);
	/* Back to sane: valid again (detection is a pure check). */
	atomic_store(&f.a_ctl->rx_write, r);
	cr_assert_eq(AVAIL(&f), 0);
	fake_free(&f);
}

Test(ring, corrupt_read_index)
{
	struct fake f;
	uint64_t w;

	fake_init(&f, 4096);
	/* A read index ahead of everything we wrote. */
	atomic_store(&f.b_ctl->peer_read, 1);
	cr_assert_eq(SPACE(&f), -1, "read index ahead of the writes accepted");
	/* (Indices compare modulo 2^64, so only values outside [write-cap, write]
	 * in modular terms are detectable; 2^63 is one.) */
	atomic_store(&f.b_ctl->peer_read, 1ull << 63);
	cr_assert_eq(SPACE(&f), -1);
	atomic_store(&f.b_ctl->peer_read, 0);
	cr_assert_eq(SPACE(&f), 4096);

	advance(&f, 9000);
	put_stream(&f, 1, 100);
	w = f.tx.write;
	atomic_store(&f.b_ctl->peer_read, w + 1);
	cr_assert_eq(SPACE(&f), -1, "read index one past the writes accepted");
	atomic_store(&f.b_ctl->peer_read, w - 4096 - 1);
	cr_assert_eq(SPACE(&f), -1, "read index more than cap behind accepted");
	atomic_store(&f.b_ctl->peer_read, w - 4096);
	cr_assert_eq(SPACE(&f), 0);
	atomic_store(&f.b_ctl->peer_read, w);
	cr_assert_eq(SPACE(&f), 4096);
	atomic_store(&f.b_ctl->peer_read, 0);
	cr_assert_eq(SPACE(&f), -1, "read index far behind accepted");
	fake_free(&f);
}

/* A long random run against a model: many laps, random put/peek/consume. */
/* The sides cache the other side's index; a cached view may be stale but
 * never claims more than the last validated index allowed, and a corrupt
 * index is caught as soon as it is looked at again. */
Test(ring, cached_indices)
{
	struct fake f;

	fake_init(&f, 4096);
	/* Sender: a full ring re-reads the shared read index when asked for room. */
	put_stream(&f, 8, 4096);
	cr_assert_eq(sl_ring_tx_space(&f.tx, 1), 0);
	cr_assert_eq(sl_ring_rx_avail(&f.rx), 4096);
	sl_ring_rx_consume(&f.rx, 2048, true);
	cr_assert_eq(sl_ring_tx_space(&f.tx, 1), 2048, "freed space not seen by a sender that needs room");
	/* Garbage published now: a cached answer is still bounded by validated state... */
	atomic_store(&f.b_ctl->peer_read, f.tx.write + 12345);
	cr_assert_leq(sl_ring_tx_space(&f.tx, 100), 2048, "cached space exceeds the validated free space");
	/* ...and asking for more than the cache shows reads the word and rejects it. */
	cr_assert_eq(sl_ring_tx_space(&f.tx, 4000), -1, "corrupt read index not detected on re-read");
	atomic_store(&f.b_ctl->peer_read, 2048);
	cr_assert_eq(sl_ring_tx_space(&f.tx, 4000), 2048);

	/* Receiver: cached data stays valid; the corrupt index is caught once it is re-read. */
	cr_assert_eq(sl_ring_rx_avail(&f.rx), 2048);
	sl_ring_rx_consume(&f.rx, 2048, true);
	put_stream(&f, 8, 100);
	cr_assert_eq(sl_ring_rx_avail(&f.rx), 100);
	/* Invalid both before and after the 100 cached bytes are consumed. */
	atomic_store(&f.a_ctl->rx_write, f.rx.read + 100 + 4096 + 1);
	{
		int64_t a = sl_ring_rx_avail(&f.rx);

		cr_assert(a == -1 || a == 100, "cached avail after corruption: %lld", (long long)a);
		if (a == 100) {
			check_peek(&f, 8, 100, 0);
			sl_ring_rx_consume(&f.rx, 100, false);
		}
	}
	cr_assert_eq(sl_ring_rx_avail(&f.rx), -1, "corrupt write index not detected once the cache is used up");
	cr_assert_eq(sl_ring_rx_avail_fresh(&f.rx), -1);
	fake_free(&f);
}

Test(ring, random_model)
{
	static const uint64_t caps[] = { 4096, 8192, 65536 };
	uint64_t ops = tu_scaled(200000, 50000);

	for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
		struct fake f;
		struct tu_rng rng = { 1000 + c };
		uint64_t cap = caps[c], seed = 555 + c;

		fake_init(&f, cap);
		for (uint64_t i = 0; i < ops; i++) {
			int64_t space = SPACE(&f), avail = AVAIL(&f);

			cr_assert_geq(space, 0);
			cr_assert_geq(avail, 0);
			cr_assert_eq((uint64_t)avail, f.tx.write - f.rx.read);
			cr_assert_eq((uint64_t)space, cap - (f.tx.write - published_read(&f)));
			cr_assert_leq(f.rx.read - published_read(&f), cap / 4 - 1,
				      "unpublished backlog grew unbounded");
			switch (tu_rng_next(&rng) % 3) {
			case 0:
				if (space > 0)
					put_stream(&f, seed, (size_t)tu_rng_range(&rng, 1, (uint64_t)space));
				break;
			case 1:
				if (avail > 0) {
					uint64_t off = tu_rng_range(&rng, 0, (uint64_t)avail - 1);

					check_peek(&f, seed, (size_t)tu_rng_range(&rng, 0, (uint64_t)avail - off), off);
				}
				break;
			default:
				if (avail > 0) {
					size_t n = (size_t)tu_rng_range(&rng, 1, (uint64_t)avail);

					check_peek(&f, seed, n, 0);
					sl_ring_rx_consume(&f.rx, n, tu_rng_next(&rng) % 8 == 0);
				} else {
					sl_ring_rx_publish(&f.rx);
				}
				break;
			}
		}
		cr_assert_gt(f.tx.write, cap * 10, "the run should lap the ring many times (wrote %llu)",
			     (unsigned long long)f.tx.write);
		fake_free(&f);
	}
}

Test(ring, cap_for_rounding_and_clamps)
{
	static const struct {
		uint64_t req, cap;
	} cases[] = {
		{ 0, SL_RING_MIN },
		{ 1, SL_RING_MIN },
		{ 4095, 4096 },
		{ 4096, 4096 },
		{ 4097, 8192 },
		{ 5000, 8192 },
		{ 65535, 65536 },
		{ 65536, 65536 },
		{ 65537, 131072 },
		{ (256u << 10), (256u << 10) },
		{ (128u << 20) + 1, (256u << 20) },
		{ SL_RING_MAX, SL_RING_MAX },
		{ (uint64_t)SL_RING_MAX + 1, SL_RING_MAX },
		{ 1ull << 40, SL_RING_MAX },
		{ UINT64_MAX, SL_RING_MAX },
	};

	cr_assert_eq(SL_RING_MIN, 4096u);
	cr_assert_eq(SL_RING_MAX, 256u << 20);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t got = sl_ring_cap_for(cases[i].req);

		cr_assert_eq(got, cases[i].cap, "sl_ring_cap_for(%llu) = %llu, want %llu",
			     (unsigned long long)cases[i].req, (unsigned long long)got,
			     (unsigned long long)cases[i].cap);
	}
	for (uint64_t req = 0; req < (1u << 20); req += 977) {
		uint64_t got = sl_ring_cap_for(req);

		cr_assert_eq(got & (got - 1), 0, "not a power of two for %llu", (unsigned long long)req);
		cr_assert_geq(got, req);
		cr_assert(got == SL_RING_MIN || got / 2 < req, "not the smallest fit for %llu: %llu",
			  (unsigned long long)req, (unsigned long long)got);
	}
}
