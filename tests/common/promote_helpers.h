/* promote_helpers.h — for the promotion tests (test_promote.c,
 * test_promote_trigger.c): a listener in a runtime directory of its own,
 * and a live connection the offer policy kept on kernel TCP (reason short),
 * the kind promotion moves. */
#ifndef SCILAN_PROMOTE_HELPERS_H
#define SCILAN_PROMOTE_HELPERS_H

#include <criterion/criterion.h>
#include <errno.h>
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
