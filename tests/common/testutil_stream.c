/* testutil_stream.c — the data helpers of testutil.h: FNV-1a, the streaming
 * xxh64-style checksum, the seeded byte stream (fill/check any slice) and the
 * splitmix64 PRNG with its size distribution. */
#include "testutil.h"

#include <string.h>

/* ---- checksums and streams ---------------------------------------------------- */

uint64_t tu_fnv1a(uint64_t h, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

#define P1 11400714785074694791ull
#define P2 14029467366897019727ull
#define P3 1609587929392839161ull
#define P4 9650029242287828579ull
#define P5 2870177450012600261ull

static inline uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t rd64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline uint32_t rd32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t xround(uint64_t acc, uint64_t in)
{
	acc += in * P2;
	acc = rotl64(acc, 31);
	return acc * P1;
}

static inline uint64_t xmerge(uint64_t acc, uint64_t v)
{
	acc ^= xround(0, v);
	return acc * P1 + P4;
}

void tu_hash_init(struct tu_hash *h, uint64_t seed)
{
	memset(h, 0, sizeof(*h));
	h->seed = seed;
	h->v[0] = seed + P1 + P2;
	h->v[1] = seed + P2;
	h->v[2] = seed;
	h->v[3] = seed - P1;
}

static inline void stripe(uint64_t v[4], const unsigned char *p)
{
	v[0] = xround(v[0], rd64(p));
	v[1] = xround(v[1], rd64(p + 8));
	v[2] = xround(v[2], rd64(p + 16));
	v[3] = xround(v[3], rd64(p + 24));
}

void tu_hash_update(struct tu_hash *h, const void *data, size_t len)
{
	const unsigned char *p = data;

	h->total += len;
	if (h->buflen) {
		size_t take = 32 - h->buflen < len ? 32 - h->buflen : len;

		memcpy(h->buf + h->buflen, p, take);
		h->buflen += take;
		p += take;
		len -= take;
		if (h->buflen < 32)
			return;
		stripe(h->v, h->buf);
		h->buflen = 0;
	}
	while (len >= 32) {
		stripe(h->v, p);
		p += 32;
		len -= 32;
	}
	memcpy(h->buf, p, len);
	h->buflen = len;
}

uint64_t tu_hash_final(const struct tu_hash *h)
{
	uint64_t r;
	const unsigned char *p = h->buf;
	size_t len = h->buflen;

	if (h->total >= 32) {
		r = rotl64(h->v[0], 1) + rotl64(h->v[1], 7) + rotl64(h->v[2], 12) + rotl64(h->v[3], 18);
		for (int i = 0; i < 4; i++)
			r = xmerge(r, h->v[i]);
	} else {
		r = h->seed + P5;
	}
	r += h->total;
	while (len >= 8) {
		r ^= xround(0, rd64(p));
		r = rotl64(r, 27) * P1 + P4;
		p += 8;
		len -= 8;
	}
	if (len >= 4) {
		r ^= (uint64_t)rd32(p) * P1;
		r = rotl64(r, 23) * P2 + P3;
		p += 4;
		len -= 4;
	}
	while (len--) {
		r ^= (*p++) * P5;
		r = rotl64(r, 11) * P1;
	}
	r ^= r >> 33;
	r *= P2;
	r ^= r >> 29;
	r *= P3;
	r ^= r >> 32;
	return r;
}

uint64_t tu_hash_buf(const void *data, size_t len)
{
	struct tu_hash h;

	tu_hash_init(&h, 0);
	tu_hash_update(&h, data, len);
	return tu_hash_final(&h);
}

static inline uint64_t stream_word(uint64_t seed, uint64_t w)
{
	uint64_t z = seed + (w + 1) * 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline unsigned char stream_byte(uint64_t seed, uint64_t o)
{
	return (unsigned char)(stream_word(seed, o >> 3) >> (8 * (o & 7)));
}

void tu_stream_fill(uint64_t seed, uint64_t offset, void *buf, size_t len)
{
	unsigned char *p = buf;
	uint64_t o = offset;

	while (len && (o & 7)) {
		*p++ = stream_byte(seed, o++);
		len--;
	}
	while (len >= 8) {
		uint64_t v = stream_word(seed, o >> 3);

		memcpy(p, &v, 8);
		p += 8;
		o += 8;
		len -= 8;
	}
	while (len) {
		*p++ = stream_byte(seed, o++);
		len--;
	}
}

int64_t tu_stream_check(uint64_t seed, uint64_t offset, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	unsigned char tmp[4096];
	size_t done = 0;

	while (done < len) {
		size_t n = len - done < sizeof(tmp) ? len - done : sizeof(tmp);

		tu_stream_fill(seed, offset + done, tmp, n);
		if (memcmp(tmp, p + done, n) != 0) {
			for (size_t i = 0; i < n; i++)
				if (tmp[i] != p[done + i])
					return (int64_t)(done + i);
		}
		done += n;
	}
	return -1;
}

uint64_t tu_rng_next(struct tu_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t tu_rng_range(struct tu_rng *r, uint64_t lo, uint64_t hi)
{
	if (hi <= lo)
		return lo;
	return lo + tu_rng_next(r) % (hi - lo + 1);
}

size_t tu_rng_size(struct tu_rng *r, size_t max)
{
	unsigned bits = 0;
	uint64_t lim;

	if (max <= 1)
		return 1;
	while (bits < 63 && (1ull << bits) < max)
		bits++;
	lim = 1ull << tu_rng_range(r, 0, bits);
	if (lim > max)
		lim = max;
	return (size_t)tu_rng_range(r, 1, lim);
}
