/* fuzz.h — what every libFuzzer target of tests/fuzz shares: a loud stop
 * when an invariant the library's callers rely on is broken (libFuzzer
 * records the input as a crash), and a cursor over the fuzz input.
 */
#ifndef SCILAN_FUZZ_H
#define SCILAN_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(cond, ...)                                                       \
	do {                                                                        \
		if (!(cond)) {                                                      \
			fprintf(stderr, "%s:%d: invariant broken: %s: ", __FILE__,  \
				__LINE__, #cond);                                   \
			fprintf(stderr, __VA_ARGS__);                               \
			fputc('\n', stderr);                                        \
			abort();                                                    \
		}                                                                   \
	} while (0)

/* Bytes taken from the front of the input; zeros once it is used up. */
struct fuzz_in {
	const uint8_t *p;
	size_t left;
};

static inline void fuzz_take(struct fuzz_in *in, void *out, size_t n)
{
	size_t k = n < in->left ? n : in->left;

	memcpy(out, in->p, k);
	memset((uint8_t *)out + k, 0, n - k);
	in->p += k;
	in->left -= k;
}

static inline uint8_t fuzz_u8(struct fuzz_in *in)
{
	uint8_t v;

	fuzz_take(in, &v, 1);
	return v;
}

static inline uint32_t fuzz_u32(struct fuzz_in *in)
{
	uint32_t v;

	fuzz_take(in, &v, 4);
	return v;
}

static inline uint64_t fuzz_u64(struct fuzz_in *in)
{
	uint64_t v;

	fuzz_take(in, &v, 8);
	return v;
}

#endif
