/* cr_helpers.h — assertions shared by the Criterion test files (kept out of
 * testutil.h, whose helpers also serve forked children and non-Criterion code).
 */
#ifndef SCILAN_CR_HELPERS_H
#define SCILAN_CR_HELPERS_H

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "testutil.h"

/* A connected, accelerated pair with the given receive rings (0 = default). */
static inline void pair_or_die(int crcv, int srcv, int *c, int *s)
{
	cr_assert_eq(tu_pair_rcvbuf(AF_INET, crcv, srcv, c, s), 0, "connected pair: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(*c), 1, "client end not accelerated");
	cr_assert_eq(tu_accelerated(*s), 1, "server end not accelerated");
}

/* what, sent from a to b and back, read back whole on each side. */
static inline void exchange_or_die(int a, int b, const char *what)
{
	char got[64] = { 0 };
	size_t n = strlen(what);

	cr_assert_lt(n, sizeof(got));
	cr_assert_eq(tu_send_all(a, what, n, MSG_NOSIGNAL), (ssize_t)n, "%s: send a->b: %s", what, strerror(errno));
	cr_assert_eq(tu_recv_all(b, got, n), (ssize_t)n, "%s: recv a->b: %s", what, strerror(errno));
	cr_assert_str_eq(got, what);
	memset(got, 0, sizeof(got));
	cr_assert_eq(tu_send_all(b, what, n, MSG_NOSIGNAL), (ssize_t)n, "%s: send b->a: %s", what, strerror(errno));
	cr_assert_eq(tu_recv_all(a, got, n), (ssize_t)n, "%s: recv b->a: %s", what, strerror(errno));
	cr_assert_str_eq(got, what);
}

#endif
