/* test_offer_policy.c — a process that opens one short connection after
 * another to the same listener keeps kernel TCP for the next ones (reason
 * short), both ends agreeing and every byte delivered; connections that carry
 * round trips or bulk stay on the rings; one that lasts is promoted and
 * brings them back, also when its close comes just after the claim (without
 * promotion, a probe that pays does).  Thresholds are offer_policy.h's; no
 * timing is asserted. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "conn/promotion_trigger.h"
#include "ring/layout.h"
#include "runtime/stats.h"
#include "socket/offer_policy.h"
#include "socket/sock_state.h"
#include "testutil.h"

TestSuite(offer_policy_conns, .timeout = 60);

/* Request t and its reply, 16 bytes each way from client c to server s,
 * checked. */
static void round_trip(int c, int s, int t)
{
	char req[16], got[16];

	memset(req, 'a' + t % 26, sizeof(req));
	cr_assert_eq(tu_send_all(c, req, sizeof(req), 0), (ssize_t)sizeof(req));
	cr_assert_eq(tu_recv_all(s, got, sizeof(got)), (ssize_t)sizeof(got));
	cr_assert_eq(memcmp(req, got, sizeof(req)), 0, "request %d changed on the way", t);
	cr_assert_eq(tu_send_all(s, got, sizeof(got), 0), (ssize_t)sizeof(got));
	cr_assert_eq(tu_recv_all(c, req, sizeof(req)), (ssize_t)sizeof(req));
	cr_assert_eq(memcmp(req, got, sizeof(req)), 0, "reply %d changed on the way", t);
}

/* One connection to port: `turns` request/response round trips of 16 bytes,
 * then `bulk` bytes one way; both ends must agree and every byte arrive.
 * Returns whether it rode the rings. */
static int one_connection(int l, uint16_t port, int turns, size_t bulk)
{
	int c = tu_connect(AF_INET, port), s, on;

	cr_assert_geq(c, 0, "connect: %s", strerror(errno));
	s = tu_accept(l);
	cr_assert_geq(s, 0, "accept: %s", strerror(errno));
	on = tu_accelerated(c);
	cr_assert_eq(on, tu_accelerated(s), "ends disagree: client %d, server %d", on, tu_accelerated(s));
	for (int t = 0; t < turns; t++)
		round_trip(c, s, t);
	if (bulk) {
		char *out = malloc(bulk), *in = malloc(bulk);

		cr_assert(out && in);
		tu_stream_fill(bulk, 0, out, bulk);
		cr_assert_eq(tu_send_all(c, out, bulk, 0), (ssize_t)bulk);
		cr_assert_eq(tu_recv_all(s, in, bulk), (ssize_t)bulk);
		cr_assert_eq(memcmp(out, in, bulk), 0, "bulk bytes changed on the way");
		free(out);
		free(in);
	}
	scilan_close(c);
	scilan_close(s);
	return on;
}

/* A listener of a runtime directory of the test's own. */
static int fresh_listener(uint16_t *port)
{
	int l;

	cr_assert_not_null(tu_isolated_rundir());
	l = tu_listen(AF_INET, 16, port);
	cr_assert_geq(l, 0, "listen: %s", strerror(errno));
	return l;
}

static uint64_t short_fallbacks(void)
{
	struct sl_stats st;

	sl_stats_read(&st);
	return st.fb[SL_FB_SHORT];
}

Test(offer_policy_conns, one_request_per_connection_moves_to_kernel_tcp)
{
	uint16_t port;
	int l, plain = 0;

	l = fresh_listener(&port);
	for (int i = 0; i < SL_OFFER_SHORT_RUN; i++)
		cr_assert_eq(one_connection(l, port, 1, 0), 1, "connection %d of the learning run not accelerated", i);
	/* Promotion follows a connection kept plain: none of them pays a
	 * probe's set-up at connect. */
	for (int i = 0; i < 40; i++)
		plain += !one_connection(l, port, 1, 0);
	cr_assert_eq(plain, 40, "only %d of 40 short connections after the run on kernel TCP", plain);
	cr_assert_eq(short_fallbacks(), (uint64_t)plain, "fallbacks not counted as short");
	scilan_close(l);
}

/* n connections to one listener, each carrying turns round trips and bulk
 * bytes: every one on the rings, none counted short. */
static void all_stay_on_rings(int n, int turns, size_t bulk)
{
	uint16_t port;
	int l = fresh_listener(&port);

	for (int i = 0; i < n; i++)
		cr_assert_eq(one_connection(l, port, turns, bulk), 1,
			     "connection %d (%d round trips, %zu bytes) not accelerated", i, turns, bulk);
	cr_assert_eq(short_fallbacks(), 0);
	scilan_close(l);
}

Test(offer_policy_conns, round_trips_keep_the_rings)
{
	all_stay_on_rings(3 * SL_OFFER_SHORT_RUN, SL_OFFER_TURNS_PAID, 0);
}

Test(offer_policy_conns, bulk_keeps_the_rings)
{
	all_stay_on_rings(2 * SL_OFFER_SHORT_RUN, 0, SL_OFFER_BYTES_PAID);
}

/* One more connection to port after a short run: the policy keeps it
 * plain at connect (client end *c, server end *s). */
static void plain_pair(int l, uint16_t port, int *c, int *s)
{
	*c = tu_connect(AF_INET, port);
	cr_assert_geq(*c, 0, "connect: %s", strerror(errno));
	*s = tu_accept(l);
	cr_assert_geq(*s, 0, "accept: %s", strerror(errno));
	cr_assert_not(tu_accelerated(*c), "a connection after the short run offered at connect");
}

/* A connection of the run's destination that lasts: made plain by the
 * policy, it carries round trips 5 ms apart until promotion has moved both
 * ends, every byte checked; then it closes. */
static void one_lasting_connection(int l, uint16_t port)
{
	int c, s, rounds = 0;

	plain_pair(l, port, &c, &s);
	for (; rounds < 2000 && !(tu_accelerated(c) && tu_accelerated(s)); rounds++) {
		round_trip(c, s, rounds);
		nanosleep(&(struct timespec){ .tv_nsec = 5000000 }, NULL);
	}
	cr_assert(tu_accelerated(c) && tu_accelerated(s), "not promoted after %d round trips", rounds);
	scilan_close(c);
	scilan_close(s);
}

/* A pool opened after a burst of short ones: its connection is promoted,
 * and the destination's next connects offer rings at once. */
Test(offer_policy_conns, a_connection_that_lasts_brings_the_rings_back)
{
	uint16_t port;
	int l;

	l = fresh_listener(&port);
	for (int i = 0; i < 3 * SL_OFFER_SHORT_RUN; i++)
		one_connection(l, port, 1, 0);
	one_lasting_connection(l, port);
	for (int i = 0; i < 2 * SL_OFFER_SHORT_RUN; i++)
		cr_assert_eq(one_connection(l, port, SL_OFFER_TURNS_PAID, 0), 1,
			     "connection %d after a promoted one not accelerated", i);
	scilan_close(l);
}

/* A connection kept plain that lasted only because nothing moved on it (a
 * slow server) proves nothing of the rings: it is not promoted, and the
 * next connects stay on kernel TCP. */
Test(offer_policy_conns, a_plain_connection_that_idled_keeps_the_run)
{
	uint16_t port;
	int l, c, s;
	char b = 'x';

	l = fresh_listener(&port);
	for (int i = 0; i < 3 * SL_OFFER_SHORT_RUN; i++)
		one_connection(l, port, 1, 0);
	plain_pair(l, port, &c, &s);
	cr_assert_eq(tu_send_all(c, &b, 1, 0), 1);
	cr_assert_eq(tu_recv_all(s, &b, 1), 1);
	nanosleep(&(struct timespec){ .tv_nsec = 2 * SL_OFFER_LIFE_PAID_NS }, NULL);
	cr_assert_not(tu_accelerated(c) || tu_accelerated(s), "promoted without a call");
	scilan_close(c);
	scilan_close(s);
	cr_assert_eq(one_connection(l, port, 1, 0), 0, "an idle plain connection brought the offers back");
	scilan_close(l);
}

/* The connector closes just after its acceptor claimed its late offer,
 * before any call of its own saw the claim: the close follows the
 * promotion, and the connection counts as promoted (it lasted, it paid),
 * not as one kept plain. */
Test(offer_policy_conns, a_close_just_after_the_claim_counts_as_promoted)
{
	uint16_t port;
	int l, c, a;
	struct sl_sock *sc, *sa;

	l = fresh_listener(&port);
	for (int i = 0; i < 3 * SL_OFFER_SHORT_RUN; i++)
		one_connection(l, port, 1, 0);
	plain_pair(l, port, &c, &a);
	round_trip(c, a, 0);
	nanosleep(&(struct timespec){ .tv_nsec = 2 * SL_OFFER_LIFE_PAID_NS }, NULL);
	sc = sl_sock_get(c);
	sa = sl_sock_get(a);
	atomic_store(&sc->promote_at_ns, 1);
	sl_promote_try(sc);
	cr_assert(sl_sock_promoting(sc), "no late offer from a connection that lasted");
	atomic_store(&sa->promote_at_ns, 1);
	sl_promote_try(sa);
	cr_assert(sl_offer_agreed(atomic_load(sc->offer_word)), "the acceptor did not claim the late offer");
	scilan_close(c);
	scilan_close(a);
	cr_assert_eq(one_connection(l, port, 1, 0), 1, "a promoted connection did not bring the offers back");
	scilan_close(l);
}

/* SCILAN_PROMOTE=off: the policy's probes are the way back. */
Test(offer_policy_conns, without_promotion_a_probe_that_pays_brings_the_rings_back)
{
	uint16_t port;
	int l, tries = 0;

	setenv("SCILAN_PROMOTE", "off", 1);
	l = fresh_listener(&port);
	for (int i = 0; i < 3 * SL_OFFER_SHORT_RUN; i++)
		one_connection(l, port, 1, 0);
	cr_assert_eq(one_connection(l, port, SL_OFFER_TURNS_PAID, 0), 0, "still offering after 24 short ones");
	/* Chatty from now on: the next probe pays. */
	while (!one_connection(l, port, SL_OFFER_TURNS_PAID, 0))
		cr_assert_lt(++tries, 4 * SL_OFFER_PROBE_GAP_MAX, "no probe in %d connects", tries);
	for (int i = 0; i < 2 * SL_OFFER_SHORT_RUN; i++)
		cr_assert_eq(one_connection(l, port, SL_OFFER_TURNS_PAID, 0), 1,
			     "connection %d after a paying probe not accelerated", i);
	scilan_close(l);
}

Test(offer_policy_conns, other_listeners_keep_their_offers)
{
	uint16_t port_a, port_b;
	int la, lb;

	la = fresh_listener(&port_a);
	lb = tu_listen(AF_INET, 16, &port_b);
	cr_assert_geq(lb, 0);
	for (int i = 0; i < 3 * SL_OFFER_SHORT_RUN; i++)
		one_connection(la, port_a, 1, 0);
	cr_assert_eq(one_connection(lb, port_b, 1, 0), 1, "another listener lost its offers");
	scilan_close(la);
	scilan_close(lb);
}

Test(offer_policy_conns, accelerate_setting_offers_every_time)
{
	uint16_t port;
	int l;

	tu_offer_always();
	l = fresh_listener(&port);
	for (int i = 0; i < 4 * SL_OFFER_SHORT_RUN; i++)
		cr_assert_eq(one_connection(l, port, 1, 0), 1, "connection %d not accelerated", i);
	scilan_close(l);
}

/* A scilan listener on exactly port (SO_REUSEADDR: the plain one before it
 * left TIME_WAIT behind). */
static int scilan_listener_on(uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t len = tu_loopback(AF_INET, port, &ss);
	int l = scilan_socket(AF_INET, SOCK_STREAM, 0), one = 1;

	cr_assert_geq(l, 0);
	cr_assert_eq(scilan_setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
	cr_assert_eq(scilan_bind(l, (struct sockaddr *)&ss, len), 0, "bind %u: %s", (unsigned)port, strerror(errno));
	cr_assert_eq(scilan_listen(l, 16), 0);
	return l;
}

/* A client that retries until its server is up (a database starting): the
 * refused connects teach nothing, its first connection is on the rings. */
Test(offer_policy_conns, refused_connects_do_not_hide_a_listener_that_comes)
{
	uint16_t port;
	int l = fresh_listener(&port), c;

	scilan_close(l);
	for (int i = 0; i < 20; i++) {
		c = tu_connect(AF_INET, port);
		cr_assert_lt(c, 0, "connect %d to a closed port succeeded", i);
		cr_assert_eq(errno, ECONNREFUSED, "connect %d: %s", i, strerror(errno));
	}
	l = scilan_listener_on(port);
	cr_assert(one_connection(l, port, 1, 0), "the first connection after the server came up is kernel TCP");
	scilan_close(l);
}

/* A plain server is not looked up at every connect, yet a scilan server that
 * takes its place is found, at the latest SL_ABSENT_RECHECK_MS after the
 * last look; every connection meanwhile agrees on kernel TCP. */
Test(offer_policy_conns, a_plain_server_replaced_by_a_scilan_one_is_found_again)
{
	uint16_t port;
	struct sl_stats before, after;
	int pl = tu_plain_listen(AF_INET, 64, &port), l, on = 0;

	cr_assert_geq(pl, 0);
	cr_assert_not_null(tu_isolated_rundir());
	sl_stats_read(&before);
	for (int i = 0; i < 40; i++) {
		int c = tu_connect(AF_INET, port), s = accept(pl, NULL, NULL);

		cr_assert_geq(c, 0, "connect %d: %s", i, strerror(errno));
		cr_assert_geq(s, 0);
		cr_assert_eq(tu_accelerated(c), 0, "connection %d to a plain server on the rings", i);
		/* The client closes first: its end keeps the TIME_WAIT, and
		 * the port is free for the next listener. */
		scilan_close(c);
		close(s);
	}
	sl_stats_read(&after);
	cr_assert_eq(after.fb[SL_FB_NO_LISTENER] - before.fb[SL_FB_NO_LISTENER], 40,
		     "every connection to the plain server is no-listener");
	close(pl);
	l = scilan_listener_on(port);
	usleep((SL_ABSENT_RECHECK_MS + 100) * 1000);
	on = one_connection(l, port, 1, 0);
	cr_assert(on, "the scilan server that replaced a plain one is not found %d ms later", SL_ABSENT_RECHECK_MS + 100);
	scilan_close(l);
}
