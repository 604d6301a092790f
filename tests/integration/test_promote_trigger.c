/* test_promote_trigger.c — what starts a promotion (promotion_trigger.c):
 * a connection the offer policy kept on kernel TCP offers once it outlived
 * the policy's bound, its acceptor looks at its own calls and takes the
 * offer, and neither starts while a thread is inside a kernel call on the
 * socket, whose read would take the peer's marker for data. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "conn/promotion_trigger.h"
#include "socket/offer_policy.h"
#include "socket/sock_state.h"
#include "promote_helpers.h"
#include "testutil.h"

TestSuite(promote_trigger, .timeout = 60);


static void sleep_ms(long ms)
{
	nanosleep(&(struct timespec){ .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 }, NULL);
}

/* A pool's connection doing request-response: both ends on the rings
 * within a few seconds of its exchanges, every byte checked across. */
Test(promote_trigger, a_live_short_connection_moves_at_its_own_calls)
{
	uint16_t port;
	int l = tu_promote_listener(&port), c, a, rounds = 0;
	uint64_t off = 0;

	tu_plain_pair(l, port, &c, &a);
	cr_assert_eq(atomic_load(&sl_sock_get(c)->promote_role), SL_PROMOTE_CONNECTOR);
	cr_assert_eq(atomic_load(&sl_sock_get(a)->promote_role), SL_PROMOTE_ACCEPTOR);
	for (; rounds < 2000 && !(tu_accelerated(c) && tu_accelerated(a)); rounds++) {
		tu_checked_round_trip(c, a, off, 1 + (size_t)(rounds * 977 % 9000));
		off += 1 + (size_t)(rounds * 977 % 9000);
		sleep_ms(5);
	}
	cr_assert(tu_accelerated(c) && tu_accelerated(a), "not promoted after %d rounds", rounds);
	for (int i = 0; i < 50; i++, off += 4096)
		tu_checked_round_trip(c, a, off, 4096);
	scilan_close(c);
	scilan_close(a);
	scilan_close(l);
}

struct blocked_read {
	int fd;
	ssize_t got;
	char byte;
};

static void *read_one(void *arg)
{
	struct blocked_read *b = arg;

	b->got = scilan_recv(b->fd, &b->byte, 1, 0);
	return NULL;
}

/* A thread inside the kernel's recv on the connector's socket when its
 * offer falls due: no offer goes out (the acceptor's marker would be that
 * thread's byte).  Once its read returns, the next try offers. */
Test(promote_trigger, a_kernel_read_in_flight_holds_the_offer_back)
{
	uint16_t port;
	int l = tu_promote_listener(&port), c, a;
	struct blocked_read b = { .got = -2 };
	struct sl_sock *s;
	pthread_t t;

	tu_plain_pair(l, port, &c, &a);
	s = sl_sock_get(c);
	atomic_store(&s->promote_at_ns, INT64_MAX); /* the reader's own call must not try first */
	b.fd = c;
	cr_assert_eq(pthread_create(&t, NULL, read_one, &b), 0);
	for (int i = 0; i < 200 && atomic_load(&s->kcalls) == 0; i++)
		sleep_ms(5);
	cr_assert_eq(atomic_load(&s->kcalls), 1, "the reader is inside the kernel's recv");
	atomic_store(&s->promote_at_ns, 1); /* due */
	sl_promote_try(s);
	cr_assert_not(sl_sock_promoting(s), "an offer went out over a kernel read in flight");
	cr_assert_gt(atomic_load(&s->promote_at_ns), 1, "the try comes again");
	cr_assert_eq(tu_send_all(a, "y", 1, 0), 1);
	pthread_join(t, NULL);
	cr_assert_eq(b.got, 1);
	cr_assert_eq(b.byte, 'y', "the reader's byte");
	cr_assert_eq(atomic_load(&s->kcalls), 0);
	atomic_store(&s->promote_at_ns, 1);
	sl_promote_try(s);
	cr_assert(sl_sock_promoting(s), "the offer, once nothing was in flight");
	scilan_close(c);
	scilan_close(a);
	scilan_close(l);
}

/* A socket given to something the hook cannot follow (a kernel epoll set,
 * a stdio stream) never offers, and never looks, even when due. */
Test(promote_trigger, a_forbidden_connection_never_tries)
{
	uint16_t port;
	int l = tu_promote_listener(&port), c, a;

	tu_plain_pair(l, port, &c, &a);
	sl_promote_forbid(sl_sock_get(c));
	sl_promote_forbid(sl_sock_get(a));
	atomic_store(&sl_sock_get(c)->promote_at_ns, 1);
	for (int i = 0; i < 40; i++, sleep_ms(10))
		tu_checked_round_trip(c, a, (uint64_t)i * 100, 100);
	cr_assert_not(tu_accelerated(c) || tu_accelerated(a) || sl_sock_promoting(sl_sock_get(c)));
	cr_assert_eq(atomic_load(&sl_sock_get(c)->promote_role), SL_PROMOTE_NEVER);
	scilan_close(c);
	scilan_close(a);
	scilan_close(l);
}

/* SCILAN_PROMOTE=off: nothing is armed, a connection stays where it began. */
Test(promote_trigger, promotion_off_arms_nothing)
{
	uint16_t port;
	int l, c, a;

	setenv("SCILAN_PROMOTE", "off", 1);
	l = tu_promote_listener(&port);
	tu_plain_pair(l, port, &c, &a);
	cr_assert_eq(atomic_load(&sl_sock_get(c)->promote_role), SL_PROMOTE_NONE);
	cr_assert_eq(atomic_load(&sl_sock_get(a)->promote_role), SL_PROMOTE_NONE);
	scilan_close(c);
	scilan_close(a);
	scilan_close(l);
}
