/* promote_helpers.h — for the promotion tests (test_promote.c,
 * test_promote_trigger.c, test_offer_ports.c): a listener in a runtime
 * directory of its own, a live connection the offer policy kept on kernel
 * TCP (reason short), the kind promotion moves, and a checked exchange on it. */
#ifndef SCILAN_PROMOTE_HELPERS_H
#define SCILAN_PROMOTE_HELPERS_H

#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scilan.h"
#include "socket/offer_policy.h"
#include "testutil.h"

static inline int tu_promote_listener(uint16_t *port)
{
	int l;

	cr_assert_not_null(tu_isolated_rundir());
	l = tu_listen(AF_INET, 16, port);
	cr_assert_geq(l, 0, "listen: %s", strerror(errno));
	return l;
}

/* One request (c to a) and its reply, each n bytes of a checked stream
 * at offset off. */
static inline void tu_checked_round_trip(int c, int a, uint64_t off, size_t n)
{
	char *out = malloc(n), *in = malloc(n);

	cr_assert(out && in);
	tu_stream_fill(1, off, out, n);
	cr_assert_eq(tu_send_all(c, out, n, 0), (ssize_t)n);
	cr_assert_eq(tu_recv_all(a, in, n), (ssize_t)n, "recv: %s", strerror(errno));
	cr_assert_eq(tu_stream_check(1, off, in, n), -1, "request bytes changed at %llu", (unsigned long long)off);
	tu_stream_fill(2, off, out, n);
	cr_assert_eq(tu_send_all(a, out, n, 0), (ssize_t)n);
	cr_assert_eq(tu_recv_all(c, in, n), (ssize_t)n, "recv: %s", strerror(errno));
	cr_assert_eq(tu_stream_check(2, off, in, n), -1, "reply bytes changed at %llu", (unsigned long long)off);
	free(out);
	free(in);
}

/* Short connections until the offer policy keeps the next one plain; that
 * one, open, as *c and *a (both ends scilan sockets on kernel TCP). */
static inline void tu_plain_pair(int l, uint16_t port, int *c, int *a)
{
	for (int i = 0; i < 4 * SL_OFFER_SHORT_RUN; i++) {
		char b = 'x';

		*c = tu_connect(AF_INET, port);
		cr_assert_geq(*c, 0);
		*a = tu_accept(l);
		cr_assert_geq(*a, 0);
		if (!tu_accelerated(*c) && !tu_accelerated(*a) && i >= SL_OFFER_SHORT_RUN)
			return;
		cr_assert_eq(tu_send_all(*c, &b, 1, 0), 1);
		cr_assert_eq(tu_recv_all(*a, &b, 1), 1);
		scilan_close(*c);
		scilan_close(*a);
	}
	cr_assert_fail("the offer policy never kept a connection plain");
}

#endif
