/* test_wakeup_stress.c — lost-wake-up stress: interrupt-mode ping-pong to
 * SCILAN_STRESS_HANDOFFS real sleeps (1,000,000; 20,000 sanitized), mixed/hybrid spin,
 * full-ring sender sleeps one-way and duplex; 10 s without progress fails the test. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "socket/sock_state.h" /* sl_totals: how often this process really slept */
#include "testutil.h"

#define STALL_SECS 10

static uint64_t handoffs(void)
{
	return tu_env_u64("SCILAN_STRESS_HANDOFFS", tu_scaled(1000000, 20000));
}

struct stress_arg {
	uint16_t port;
	uint64_t bytes;       /* full-ring runs */
	int child_poll_us;
	int child_rcvbuf;
	bool duplex;
	struct tu_sync sync;
	_Atomic uint64_t progress;     /* messages or bytes so far (shared memory) */
	_Atomic uint64_t child_sleeps; /* the child's sleeps in the library */
	_Atomic uint64_t rounds_done;  /* pings the parent sent */
};

static struct stress_arg *new_arg(void)
{
	struct stress_arg *a = tu_shared_alloc(sizeof(*a));

	cr_assert_not_null(a);
	memset(a, 0, sizeof(*a));
	cr_assert_eq(tu_sync_init(&a->sync), 0);
	return a;
}

static void finish(struct stress_arg *a, struct tu_child *child, const char *what, const char *unit)
{
	uint64_t stalled;
	bool fired = tu_progress_stop(&stalled);
	char st[128];

	tu_reap(child);
	cr_assert(!fired, "%s: lost wake-up after %llu %s (no progress for %d s)\nchild %s:\n%s", what,
		  (unsigned long long)stalled, unit, STALL_SECS, tu_status_str(child, st, sizeof(st)),
		  child->output);
	cr_assert(tu_exited_with(child, 0), "%s: child %s after %llu %s\n%s", what,
		  tu_status_str(child, st, sizeof(st)), (unsigned long long)atomic_load(&a->progress), unit,
		  child->output);
}

/* ---- ping-pong ----------------------------------------------------------------------- */

/* The child answers every ping until EOF and publishes how often it slept
 * (its sl_totals.sleeps) in shared memory. */
static int pong_child(void *p)
{
	struct stress_arg *a = p;
	uint64_t base = atomic_load(&sl_totals.sleeps), i = 0;
	unsigned char b;
	int fd = tu_connect(AF_INET, a->port);

	TU_CHECK(fd >= 0, "connect");
	TU_CHECK(tu_accelerated(fd) == 1, "not accelerated");
	TU_CHECK(tu_set_poll_us(fd, a->child_poll_us) == 0, "poll_us");
	for (;; i++) {
		ssize_t n = scilan_recv(fd, &b, 1, 0);

		if (n == 0)
			break;
		TU_CHECK(n == 1, "recv of ping %llu returned %zd", (unsigned long long)i, n);
		TU_CHECK(b == (unsigned char)i, "ping %llu carried %u", (unsigned long long)i, b);
		TU_CHECK(scilan_send(fd, &b, 1, 0) == 1, "send of pong %llu", (unsigned long long)i);
		atomic_store_explicit(&a->child_sleeps,
				      atomic_load_explicit(&sl_totals.sleeps, memory_order_relaxed) - base,
				      memory_order_relaxed);
	}
	TU_CHECK(i == atomic_load(&a->rounds_done), "EOF after %llu pings, parent sent %llu", (unsigned long long)i,
		 (unsigned long long)atomic_load(&a->rounds_done));
	TU_CHECK(scilan_close(fd) == 0, "close");
	return 0;
}

/* Ping-pong one byte until `target` hand-offs: when count_sleeps, a hand-off
 * is a real sleep of either side that the other side's message ended (both
 * processes count their sleeps); otherwise it is a message. */
static void pingpong(int parent_poll_us, int child_poll_us, uint64_t target, bool count_sleeps, const char *what)
{
	struct stress_arg *a = new_arg();
	struct tu_child child;
	unsigned char b;
	uint64_t sleeps_before, slept = 0, i;
	int l, s;

	a->child_poll_us = child_poll_us;
	l = tu_listen(AF_INET, 4, &a->port);
	cr_assert_geq(l, 0, "listen: %s", strerror(errno));
	cr_assert_eq(tu_spawn(&child, pong_child, a), 0);
	s = tu_accept(l);
	cr_assert_geq(s, 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(s), 1);
	cr_assert_eq(tu_set_poll_us(s, parent_poll_us), 0);
	sleeps_before = atomic_load(&sl_totals.sleeps);
	tu_progress_start(&a->progress, STALL_SECS, what);
	for (i = 0;; i++) {
		ssize_t n;

		slept = atomic_load_explicit(&sl_totals.sleeps, memory_order_relaxed) - sleeps_before;
		if (count_sleeps ? slept + atomic_load_explicit(&a->child_sleeps, memory_order_relaxed) >= target
				 : 2 * i >= target)
			break;
		b = (unsigned char)i;
		if (scilan_send(s, &b, 1, 0) != 1)
			break;
		n = scilan_recv(s, &b, 1, 0);
		if (n != 1 || b != (unsigned char)i) {
			if (!tu_progress_fired())
				cr_log_error("%s: round %llu: recv returned %zd (%s), byte %u", what,
					     (unsigned long long)i, n, strerror(errno), b);
			break;
		}
		atomic_fetch_add_explicit(&a->progress, 2, memory_order_relaxed);
	}
	atomic_store(&a->rounds_done, i);
	scilan_shutdown(s, SHUT_WR);
	{
		uint64_t stalled;
		bool fired = tu_progress_stop(&stalled);
		char st[128];

		tu_reap(&child);
		cr_assert(!fired,
			  "%s: lost wake-up after %llu hand-offs (%llu messages; sleeps: here %llu, peer %llu): "
			  "no progress for %d s\nchild %s:\n%s",
			  what, (unsigned long long)(slept + atomic_load(&a->child_sleeps)), (unsigned long long)stalled,
			  (unsigned long long)slept, (unsigned long long)atomic_load(&a->child_sleeps), STALL_SECS,
			  tu_status_str(&child, st, sizeof(st)), child.output);
		cr_assert(tu_exited_with(&child, 0), "%s: child %s after %llu messages\n%s", what,
			  tu_status_str(&child, st, sizeof(st)), (unsigned long long)atomic_load(&a->progress),
			  child.output);
	}
	slept = atomic_load(&sl_totals.sleeps) - sleeps_before;
	cr_log_info("%s: %llu round trips; sleep/wake hand-offs: here %llu, peer %llu", what, (unsigned long long)i,
		    (unsigned long long)slept, (unsigned long long)atomic_load(&a->child_sleeps));
	if (count_sleeps)
		cr_assert_geq(slept + atomic_load(&a->child_sleeps), target, "%s: stopped early", what);
	else
		cr_assert_geq(2 * i, target, "%s: stopped after %llu of %llu messages", what,
			      (unsigned long long)(2 * i), (unsigned long long)target);
	scilan_close(s);
	scilan_close(l);
}

/* Pure interrupt mode on both sides: SCILAN_STRESS_HANDOFFS real sleep/wake
 * hand-offs (sleeps of either side, counted by the library). */
Test(wakeup, pingpong_interrupt_mode)
{
	pingpong(0, 0, handoffs(), true, "interrupt-mode ping-pong");
}

/* One side spins 1 us before sleeping, the other is in interrupt mode: the
 * arm/re-check race is hit at other points.  Counts messages. */
Test(wakeup, pingpong_mixed_1us)
{
	pingpong(1, 0, handoffs(), false, "mixed ping-pong (1 us / interrupt)");
}

/* A spin about as long as the wake-up latency: sometimes the data arrives
 * during the spin, sometimes right after arming.  Counts messages. */
Test(wakeup, pingpong_hybrid_spin)
{
	pingpong(0, 30, handoffs() / 4, false, "hybrid ping-pong (interrupt / 30 us)");
}

/* ---- full ring: the sender sleeps for space ---------------------------------------------------- */

static void sleep_us(unsigned us)
{
	struct timespec ts = { 0, (long)us * 1000L };

	nanosleep(&ts, NULL);
}

/* Receive a.bytes of stream 0x5151 in small random pieces, sometimes pausing. */
static int slow_reader(int fd, struct stress_arg *a, uint64_t seed)
{
	unsigned char buf[512];
	struct tu_rng rng = { seed };
	uint64_t got = 0;

	while (got < a->bytes) {
		size_t k = (size_t)tu_rng_range(&rng, 1, sizeof(buf));
		ssize_t n = scilan_recv(fd, buf, k, 0);
		int64_t bad;

		if (n <= 0) {
			tu_log("slow reader: recv returned %zd after %llu bytes: %s", n, (unsigned long long)got,
			       strerror(errno));
			return 1;
		}
		bad = tu_stream_check(0x5151 + seed, got, buf, (size_t)n);
		if (bad >= 0) {
			tu_log("slow reader: wrong data at %llu", (unsigned long long)(got + (uint64_t)bad));
			return 1;
		}
		got += (uint64_t)n;
		atomic_fetch_add_explicit(&a->progress, (uint64_t)n, memory_order_relaxed);
		switch (tu_rng_next(&rng) % 64) {
		case 0:
			sleep_us(50);
			break;
		case 1:
			sched_yield();
			break;
		default:
			break;
		}
	}
	return 0;
}

static int fast_writer(int fd, uint64_t bytes, uint64_t seed)
{
	unsigned char *buf = malloc(65536);
	uint64_t off = 0;

	if (!buf)
		return 1;
	while (off < bytes) {
		size_t k = bytes - off < 65536 ? (size_t)(bytes - off) : 65536;

		tu_stream_fill(0x5151 + seed, off, buf, k);
		if (tu_send_all(fd, buf, k, MSG_NOSIGNAL) != (ssize_t)k) {
			tu_log("fast writer: send failed at %llu: %s", (unsigned long long)off, strerror(errno));
			free(buf);
			return 1;
		}
		off += k;
	}
	free(buf);
	return 0;
}

struct writer_thread {
	pthread_t t;
	int fd;
	uint64_t bytes, seed;
	int rc;
};

static void *writer_main(void *p)
{
	struct writer_thread *w = p;

	w->rc = fast_writer(w->fd, w->bytes, w->seed);
	return NULL;
}

/* Child: small receive ring; reads slowly (and, in duplex, also writes fast
 * from a second thread). */
static int ring_child(void *p)
{
	struct stress_arg *a = p;
	struct writer_thread w = { 0 };
	uint64_t v;
	int fd = tu_connect_rcvbuf(AF_INET, a->port, a->child_rcvbuf), rc;

	TU_CHECK(fd >= 0, "connect");
	TU_CHECK(tu_accelerated(fd) == 1, "not accelerated");
	TU_CHECK(tu_set_poll_us(fd, a->child_poll_us) == 0, "poll_us");
	if (a->duplex) {
		w = (struct writer_thread){ .fd = fd, .bytes = a->bytes, .seed = 2 };
		TU_CHECK(pthread_create(&w.t, NULL, writer_main, &w) == 0, "thread");
	}
	rc = slow_reader(fd, a, 1);
	if (a->duplex) {
		pthread_join(w.t, NULL);
		TU_CHECK(w.rc == 0, "child writer failed");
	}
	TU_CHECK(rc == 0, "child reader failed");
	TU_CHECK(tu_sync_put_child(&a->sync, 1) == 0, "done");
	TU_CHECK(tu_sync_get_child(&a->sync, &v) == 0, "wait");
	TU_CHECK(scilan_close(fd) == 0, "close");
	return 0;
}

static void full_ring(bool duplex, int parent_poll_us, int child_poll_us, const char *what)
{
	struct stress_arg *a = new_arg();
	struct tu_child child;
	struct writer_thread w;
	uint64_t v;
	int l, s, rc = 0;

	a->bytes = tu_scaled(64ull << 20, 4ull << 20);
	a->child_rcvbuf = 4096;
	a->child_poll_us = child_poll_us;
	a->duplex = duplex;
	/* Our own receive ring (duplex) is small too. */
	l = tu_listen_rcvbuf(AF_INET, 4, 4096, &a->port);
	cr_assert_geq(l, 0, "listen: %s", strerror(errno));
	cr_assert_eq(tu_spawn(&child, ring_child, a), 0);
	s = tu_accept(l);
	cr_assert_geq(s, 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(s), 1);
	cr_assert_eq(tu_set_poll_us(s, parent_poll_us), 0);
	tu_progress_start(&a->progress, STALL_SECS, what);
	w = (struct writer_thread){ .fd = s, .bytes = a->bytes, .seed = 1 };
	if (duplex) {
		cr_assert_eq(pthread_create(&w.t, NULL, writer_main, &w), 0);
		rc = slow_reader(s, a, 2);
		pthread_join(w.t, NULL);
	} else {
		writer_main(&w);
	}
	if (rc == 0 && w.rc == 0)
		tu_sync_get(&a->sync, &v);
	tu_sync_put(&a->sync, 1);
	finish(a, &child, what, "bytes");
	cr_assert_eq(w.rc, 0, "%s: parent writer failed", what);
	cr_assert_eq(rc, 0, "%s: parent reader failed", what);
	scilan_close(s);
	scilan_close(l);
}

Test(wakeup, full_ring_sender_sleeps_interrupt)
{
	full_ring(false, 0, 0, "full 4 KiB ring, interrupt mode");
}

Test(wakeup, full_ring_sender_sleeps_mixed)
{
	full_ring(false, 1, 0, "full 4 KiB ring, sender spins 1 us");
}

Test(wakeup, full_ring_duplex_threads_interrupt)
{
	full_ring(true, 0, 0, "full 4 KiB rings both ways, two threads per side, interrupt mode");
}
