/* cr_helpers.h — assertions shared by the Criterion test files (kept out of
 * testutil.h, whose helpers also serve forked children and non-Criterion code).
 */
#ifndef SCILAN_CR_HELPERS_H
#define SCILAN_CR_HELPERS_H

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "testutil.h"

/* A connected, accelerated pair with the given receive rings (0 = default). */
static inline void pair_or_die(int crcv, int srcv, int *c, int *s)
{
	cr_assert_eq(tu_pair_rcvbuf(AF_INET, crcv, srcv, c, s), 0, "connected pair: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(*c), 1, "client end not accelerated");
	cr_assert_eq(tu_accelerated(*s), 1, "server end not accelerated");
}

#endif
