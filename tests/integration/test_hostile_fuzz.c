/* test_hostile_fuzz.c — an untrusted peer that writes random garbage over
 * the shared segment, many rounds, while the victim (a forked child) makes
 * calls of every kind: each returns data or an error, none crashes or hangs. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ring/layout.h"
#include "test_segment.h"
#include "testutil.h"

struct fuzz_arg {
	uint16_t port;
	int rounds;
	bool victim_is_server;
	struct tu_sync sync;
	_Atomic uint64_t calls, errors, data_calls;
};

static volatile sig_atomic_t fuzz_sigpipes;

static void fuzz_on_sigpipe(int sig)
{
	(void)sig;
	fuzz_sigpipes++;
}

static bool errno_in(int e, const int *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == e)
			return true;
	return false;
}

/* A few calls of every kind on a connection whose shared memory is garbage:
 * each returns data or an error, none hangs (timeouts bound the blocking ones). */
static void fuzz_ops(int fd, struct fuzz_arg *a, struct tu_rng *rng)
{
	static const int recv_ok[] = { EAGAIN, EWOULDBLOCK, ECONNRESET };
	static const int send_ok[] = { EAGAIN, EWOULDBLOCK, ECONNRESET, EPIPE };
	static unsigned char buf[65536];
	struct timeval tv = { 0, 20000 };
	int ops = (int)tu_rng_range(rng, 4, 24);

	TU_CHECK(scilan_setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0, "SO_RCVTIMEO");
	TU_CHECK(scilan_setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == 0, "SO_SNDTIMEO");
	for (int i = 0; i < ops; i++) {
		size_t len = tu_rng_size(rng, sizeof(buf));
		ssize_t n;
		int r, v;
		socklen_t vlen = sizeof(v);
		struct pollfd pfd = { .fd = fd, .events = POLLIN | POLLOUT | POLLPRI };

		atomic_fetch_add(&a->calls, 1);
		switch (tu_rng_next(rng) % 8) {
		case 0:
		case 1:
			n = scilan_recv(fd, buf, len, MSG_DONTWAIT);
			goto check_recv;
		case 2:
			if (len % 2) {
				n = scilan_recv(fd, buf, len, MSG_DONTWAIT | MSG_PEEK);
				goto check_recv;
			}
			/* Urgent data over garbage marks: the byte, or TCP's errors. */
			n = scilan_recv(fd, buf, len, MSG_OOB | (len % 4 ? 0 : MSG_PEEK));
			TU_CHECK((n >= 0 && n <= 1) || (n == -1 && (errno == EINVAL || errno == ENOTCONN)),
				 "recv(MSG_OOB) over garbage returned %zd (%s)", n, strerror(errno));
			break;
		case 3:
			n = scilan_recv(fd, buf, len, 0); /* bounded by SO_RCVTIMEO */
		check_recv:
			TU_CHECK((n >= 0 && (size_t)n <= len) ||
					 (n == -1 && errno_in(errno, recv_ok, sizeof(recv_ok) / sizeof(recv_ok[0]))),
				 "recv(%zu) over garbage returned %zd", len, n);
			break;
		case 4:
			n = scilan_send(fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
			goto check_send;
		case 5:
			n = scilan_send(fd, buf, len, MSG_NOSIGNAL); /* bounded by SO_SNDTIMEO */
		check_send:
			TU_CHECK((n >= 0 && (size_t)n <= len) ||
					 (n == -1 && errno_in(errno, send_ok, sizeof(send_ok) / sizeof(send_ok[0]))),
				 "send(%zu) over garbage returned %zd", len, n);
			break;
		case 6:
			r = scilan_poll(&pfd, 1, (int)tu_rng_range(rng, 0, 5));
			TU_CHECK(r == 0 || r == 1, "poll over garbage returned %d", r);
			n = r;
			break;
		default:
			r = scilan_getsockopt(fd, SOL_SCILAN, SCILAN_SO_RING_FILL, &v, &vlen);
			TU_CHECK(r == 0, "getsockopt over garbage");
			n = 0;
			break;
		}
		if (n > 0)
			atomic_fetch_add(&a->data_calls, 1);
		else if (n < 0)
			atomic_fetch_add(&a->errors, 1);
	}
}

static int fuzz_victim(void *p)
{
	struct fuzz_arg *a = p;
	struct tu_rng rng = { 0xf022 };
	struct sigaction sa;
	uint64_t v;
	int l = -1;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fuzz_on_sigpipe;
	sigaction(SIGPIPE, &sa, NULL);
	if (a->victim_is_server) {
		l = tu_listen_rcvbuf(AF_INET, 8, 16384, &a->port);
		TU_CHECK(l >= 0, "listen");
		TU_CHECK(tu_sync_put_child(&a->sync, a->port) == 0, "port");
	}
	for (int r = 0; r < a->rounds; r++) {
		struct pollfd pfd;
		int fd;

		if (a->victim_is_server) {
			TU_CHECK(tu_sync_get_child(&a->sync, &v) == 0, "wait for the connect");
			fd = tu_accept(l);
		} else {
			fd = tu_connect_rcvbuf(AF_INET, a->port, 16384);
		}
		TU_CHECK(fd >= 0, "connection round %d", r);
		TU_CHECK(tu_set_poll_us(fd, 0) == 0, "poll_us");
		TU_CHECK(tu_sync_put_child(&a->sync, 1) == 0, "connected");
		TU_CHECK(tu_sync_get_child(&a->sync, &v) == 0, "wait for the accept");
		/* Sleep once on the empty ring so that the set-up is settled. */
		pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
		scilan_poll(&pfd, 1, 1);
		TU_CHECK(tu_sync_put_child(&a->sync, 2) == 0, "settled");
		TU_CHECK(tu_sync_get_child(&a->sync, &v) == 0, "wait for garbage");
		fuzz_ops(fd, a, &rng);
		TU_CHECK(scilan_close(fd) == 0, "close over garbage");
		TU_CHECK(tu_sync_put_child(&a->sync, 3) == 0, "round done");
	}
	if (l >= 0)
		scilan_close(l);
	TU_CHECK(fuzz_sigpipes == 0, "SIGPIPE raised despite MSG_NOSIGNAL (%d)", (int)fuzz_sigpipes);
	return 0;
}

static void fill_random(unsigned char *p, size_t len, struct tu_rng *rng)
{
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t x = tu_rng_next(rng);

		memcpy(p + i, &x, 8);
	}
	for (; i < len; i++)
		p[i] = (unsigned char)tu_rng_next(rng);
}

static uint64_t plausible(struct tu_rng *rng, uint64_t around, uint64_t cap)
{
	switch (tu_rng_next(rng) % 4) {
	case 0:
		return around + tu_rng_range(rng, 0, 2 * cap);
	case 1:
		return around - tu_rng_range(rng, 0, 2 * cap);
	case 2:
		return tu_rng_next(rng);
	default:
		return around + cap + 1;
	}
}

static void corrupt(struct sl_test_hseg *h, struct tu_rng *rng, int mode)
{
	struct sl_area_ctl *v = h->victim;

	switch (mode) {
	case 0: /* random bytes over the whole segment */
		fill_random(h->base, h->len, rng);
		break;
	case 1: /* random words in the victim's control block */
		atomic_store(&v->rx_write, tu_rng_next(rng));
		atomic_store(&v->peer_read, tu_rng_next(rng));
		atomic_store(&v->wake_on_data, (uint32_t)tu_rng_next(rng));
		atomic_store(&v->wake_on_space, (uint32_t)tu_rng_next(rng));
		atomic_store(&v->peer_state, (uint32_t)tu_rng_next(rng));
		atomic_store(&v->urg_mark[tu_rng_next(rng) % SL_URG_MARKS], tu_rng_next(rng));
		atomic_store(&v->urg_count, tu_rng_next(rng));
		break;
	case 2: /* plausible-looking indices near the real ones */
		atomic_store(&v->rx_write, plausible(rng, atomic_load(&v->rx_write), h->victim_cap));
		atomic_store(&v->peer_read, plausible(rng, atomic_load(&h->mine->rx_write), h->victim_cap));
		if (tu_rng_next(rng) % 2)
			atomic_store(&v->peer_state, (uint32_t)(tu_rng_next(rng) & 0xf));
		for (int i = 0; i < SL_URG_MARKS; i++)
			atomic_store(&v->urg_mark[i], plausible(rng, atomic_load(&v->rx_write), h->victim_cap));
		atomic_store(&v->urg_count, atomic_load(&v->urg_count) + tu_rng_range(rng, 0, 2 * SL_URG_MARKS));
		break;
	case 3: /* bit flips anywhere */
		for (int i = 0; i < 64; i++) {
			size_t at = (size_t)tu_rng_range(rng, 0, h->len - 1);

			h->base[at] ^= (unsigned char)(1u << (tu_rng_next(rng) % 8));
		}
		break;
	default: /* random bytes over the victim's whole area */
		fill_random((unsigned char *)v, SL_AREA_CTL_SIZE + h->victim_cap, rng);
		break;
	}
}

static void run_fuzz(bool victim_is_server)
{
	struct fuzz_arg *a = tu_shared_alloc(sizeof(*a));
	struct tu_child child;
	struct tu_rng rng = { victim_is_server ? 0xbad5e7 : 0xbadc11 };
	uint64_t v;
	int l = -1;
	char st[128];

	tu_offer_always(); /* a round is a short connection to one listener */
	tu_count_sigpipe();
	cr_assert_not_null(a);
	memset(a, 0, sizeof(*a));
	a->rounds = (int)tu_scaled(200, 60);
	a->victim_is_server = victim_is_server;
	cr_assert_eq(tu_sync_init(&a->sync), 0);
	tu_watchdog(200, "fuzz");
	if (victim_is_server) {
		cr_assert_eq(tu_spawn(&child, fuzz_victim, a), 0);
		cr_assert_eq(tu_sync_get(&a->sync, &v), 0, "victim:\n%s", (tu_reap(&child), child.output));
		a->port = (uint16_t)v;
	} else {
		l = tu_listen_rcvbuf(AF_INET, 8, 16384, &a->port);
		cr_assert_geq(l, 0);
		cr_assert_eq(tu_spawn(&child, fuzz_victim, a), 0);
	}
	for (int r = 0; r < a->rounds; r++) {
		struct sl_test_hseg h;
		unsigned char junk[512];
		int fd;

		if (victim_is_server) {
			cr_assert_eq(tu_sync_put(&a->sync, 0), 0);
			fd = tu_connect_rcvbuf(AF_INET, a->port, 16384);
		} else {
			fd = tu_accept(l);
		}
		cr_assert_geq(fd, 0, "round %d: %s", r, strerror(errno));
		if (tu_sync_get(&a->sync, &v) < 0)
			break;
		cr_assert_eq(tu_accelerated(fd), 1, "round %d not accelerated", r);
		tu_sync_put(&a->sync, 1);
		if (tu_sync_get(&a->sync, &v) < 0)
			break;
		/* Some legit traffic first, so the rings are not all empty. */
		memset(junk, 0x5a, sizeof(junk));
		scilan_send(fd, junk, tu_rng_range(&rng, 0, sizeof(junk)), MSG_DONTWAIT | MSG_NOSIGNAL);
		sl_test_hostile_view(fd, &h);
		corrupt(&h, &rng, r % 5);
		sl_test_poke(fd);
		tu_sync_put(&a->sync, 2);
		if (tu_sync_get(&a->sync, &v) < 0)
			break;
		/* Our own end saw the same garbage: it must not crash either. */
		scilan_recv(fd, junk, sizeof(junk), MSG_DONTWAIT);
		scilan_close(fd);
	}
	tu_reap(&child);
	cr_assert(tu_exited_with(&child, 0), "victim %s after %llu calls\n%s", tu_status_str(&child, st, sizeof(st)),
		  (unsigned long long)atomic_load(&a->calls), child.output);
	cr_log_info("fuzz (victim %s): %d rounds, %llu calls: %llu returned data, %llu errors",
		    victim_is_server ? "server" : "client", a->rounds, (unsigned long long)atomic_load(&a->calls),
		    (unsigned long long)atomic_load(&a->data_calls), (unsigned long long)atomic_load(&a->errors));
	cr_assert_gt(atomic_load(&a->errors), 0, "garbage never produced an error");
	if (l >= 0)
		scilan_close(l);
}

Test(hostile, fuzz_victim_client, .timeout = 300)
{
	run_fuzz(false);
}

Test(hostile, fuzz_victim_server, .timeout = 300)
{
	run_fuzz(true);
}
