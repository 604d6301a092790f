/* test_hostile.c — an untrusted peer: garbage in the victim's control words and
 * in the header before attach, bytes on the kernel connection (a bypass); the
 * victim (a forked child) answers ECONNRESET or data/errors and never crashes.
 * The random-segment fuzz is test_hostile_fuzz.c. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ring/layout.h"
#include "test_segment.h"
#include "testutil.h"

#define WATCHDOG_SECS 30

/* ---- deterministic garbage ----------------------------------------------------------------- */

enum scenario {
	RX_WRITE_BEYOND_CAP,  /* rx_write = written + cap + 1, victim calls recv */
	RX_WRITE_BACKWARDS,   /* victim read everything, rx_write goes back */
	RX_WRITE_HUGE,        /* rx_write = 2^63 */
	RX_BLOCKED_SHUTDOWN,  /* victim blocked in recv; garbage, then our SHUT_WR wakes it */
	RX_BLOCKED_POKE,      /* victim blocked in recv; garbage, then a raw byte wakes it */
	TX_READ_AHEAD,        /* peer_read ahead of the victim's writes, victim sends */
	TX_READ_BEHIND,       /* ring full, peer_read more than cap behind, victim sends */
	TX_BLOCKED_POKE,      /* victim blocked in send on a full ring; garbage, raw byte */
	POLL_BLOCKED_POKE,    /* victim blocked in scilan_poll(POLLIN); garbage, raw byte */
};

struct victim_arg {
	uint16_t port;
	enum scenario sc;
	bool victim_is_server;
	struct tu_sync sync;
};

static void check_after_reset(int fd)
{
	char b[16];
	ssize_t n;

	n = scilan_recv(fd, b, sizeof(b), MSG_DONTWAIT);
	TU_CHECK(n == 0 || (n == -1 && (errno == ECONNRESET || errno == EAGAIN)), "recv after the reset: %zd", n);
	n = scilan_send(fd, "x", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	TU_CHECK(n == -1 && (errno == EPIPE || errno == ECONNRESET), "send after the reset: %zd", n);
}

static int victim_conn(struct victim_arg *a, int *lfd)
{
	uint64_t port;
	int fd;

	*lfd = -1;
	if (!a->victim_is_server)
		return tu_connect(AF_INET, a->port);
	*lfd = tu_listen(AF_INET, 4, &a->port);
	TU_CHECK(*lfd >= 0, "listen");
	port = a->port;
	TU_CHECK(tu_sync_put_child(&a->sync, port) == 0, "report port");
	fd = tu_accept(*lfd);
	return fd;
}

static int victim_main(void *p)
{
	struct victim_arg *a = p;
	unsigned char buf[8192];
	uint64_t v;
	ssize_t n;
	int fd, lfd;

	fd = victim_conn(a, &lfd);
	TU_CHECK(fd >= 0, "connection");
	TU_CHECK(tu_accelerated(fd) == 1, "not accelerated");
	TU_CHECK(tu_set_poll_us(fd, 0) == 0, "poll_us");
	TU_CHECK(tu_sync_put_child(&a->sync, 1) == 0, "connected");
	switch (a->sc) {
	case RX_WRITE_BEYOND_CAP:
	case RX_WRITE_HUGE:
		TU_CHECK(tu_sync_get_child(&a->sync, &v) == 0, "wait for garbage");
		n = scilan_recv(fd, buf, sizeof(buf), 0);
		TU_CHECK(n == -1 && errno == ECONNRESET, "recv over a corrupt write index returned %zd", n);
		break;
	case RX_WRITE_BACKWARDS:
		TU_CHECK(tu_sync_get_child(&a->sync, &v) == 0, "wait for data");
		TU_CHECK(tu_recv_all(fd, buf, 200) == 200, "legit data");
		TU_CHECK(tu_sync_put_child(&a->sync, 2) == 0, "read it");
		TU_CHECK(tu_sync_get_child(&a->sync, &v) == 0, "wait for garbage");
		n = scilan_recv(fd, buf, sizeof(buf), 0);
		TU_CHECK(n == -1 && errno == ECONNRESET, "recv with the write index gone backwards returned %zd", n);
		break;
	case RX_BLOCKED_SHUTDOWN:
	case RX_BLOCKED_POKE:
		n = scilan_recv(fd, buf, sizeof(buf), 0);
		TU_CHECK(n == -1 && errno == ECONNRESET, "blocked recv woken over garbage returned %zd", n);
		break;
	case POLL_BLOCKED_POKE: {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int r;

		do
			r = scilan_poll(&pfd, 1, -1);
		while (r < 0 && errno == EINTR);
		TU_CHECK(r == 1, "poll returned %d", r);
		TU_CHECK(pfd.revents & (POLLERR | POLLHUP | POLLIN), "revents 0x%x", pfd.revents);
		n = scilan_recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		TU_CHECK(n == -1 && errno == ECONNRESET, "recv after poll over garbage returned %zd", n);
		break;
	}
	case TX_READ_AHEAD:
		TU_CHECK(scilan_send(fd, buf, 100, MSG_NOSIGNAL) == 100, "legit send");
		TU_CHECK(tu_sync_put_child(&a->sync, 2) == 0, "sent");
		TU_CHECK(tu_sync_get_child(&a->sync, &v) == 0, "wait for garbage");
		/* The sender may use its cached view of the free space first; once it
		 * looks at the index again it must reset. */
		for (int i = 0; i < 1000; i++) {
			n = scilan_send(fd, buf, sizeof(buf), MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0)
				break;
		}
		TU_CHECK(n == -1 && errno == ECONNRESET, "send over a read index ahead of the writes: %zd", n);
		break;
	case TX_READ_BEHIND:
		while ((n = scilan_send(fd, buf, sizeof(buf), MSG_NOSIGNAL | MSG_DONTWAIT)) > 0) {
		}
		TU_CHECK(n == -1 && errno == EAGAIN, "filling the ring");
		TU_CHECK(tu_sync_put_child(&a->sync, 2) == 0, "full");
		TU_CHECK(tu_sync_get_child(&a->sync, &v) == 0, "wait for garbage");
		n = scilan_send(fd, buf, sizeof(buf), MSG_NOSIGNAL | MSG_DONTWAIT);
		TU_CHECK(n == -1 && errno == ECONNRESET, "send over a read index too far behind: %zd", n);
		break;
	case TX_BLOCKED_POKE:
		while ((n = scilan_send(fd, buf, sizeof(buf), MSG_NOSIGNAL | MSG_DONTWAIT)) > 0) {
		}
		TU_CHECK(n == -1 && errno == EAGAIN, "filling the ring");
		TU_CHECK(tu_sync_put_child(&a->sync, 2) == 0, "full");
		for (int i = 0; i < 100; i++) {
			n = scilan_send(fd, buf, sizeof(buf), MSG_NOSIGNAL);
			if (n < 0)
				break;
		}
		TU_CHECK(n == -1 && errno == ECONNRESET, "blocked send woken over garbage: %zd", n);
		break;
	}
	check_after_reset(fd);
	TU_CHECK(tu_sync_put_child(&a->sync, 3) == 0, "done");
	TU_CHECK(tu_sync_get_child(&a->sync, &v) == 0, "wait for the end");
	TU_CHECK(scilan_close(fd) == 0, "close");
	if (lfd >= 0)
		scilan_close(lfd);
	return 0;
}

static void run_scenario(enum scenario sc, bool victim_is_server)
{
	struct victim_arg *a = tu_shared_alloc(sizeof(*a));
	struct tu_child child;
	struct sl_test_hseg h;
	uint64_t v, w;
	int l = -1, fd;
	char st[128], b;
	ssize_t n;

	tu_watchdog(WATCHDOG_SECS, "hostile scenario");
	cr_assert_not_null(a);
	memset(a, 0, sizeof(*a));
	a->sc = sc;
	a->victim_is_server = victim_is_server;
	cr_assert_eq(tu_sync_init(&a->sync), 0);
	if (victim_is_server) {
		cr_assert_eq(tu_spawn(&child, victim_main, a), 0);
		cr_assert_eq(tu_sync_get(&a->sync, &v), 0, "victim failed:\n%s", (tu_reap(&child), child.output));
		fd = tu_connect(AF_INET, (uint16_t)v);
	} else {
		l = tu_listen(AF_INET, 4, &a->port);
		cr_assert_geq(l, 0);
		cr_assert_eq(tu_spawn(&child, victim_main, a), 0);
		fd = tu_accept(l);
	}
	cr_assert_geq(fd, 0, "hostile end: %s", strerror(errno));
	cr_assert_eq(tu_sync_get(&a->sync, &v), 0, "victim failed:\n%s", (tu_reap(&child), child.output));
	cr_assert_eq(tu_accelerated(fd), 1);
	sl_test_hostile_view(fd, &h);

	switch (sc) {
	case RX_WRITE_BEYOND_CAP:
		cr_assert_eq(scilan_send(fd, "legit", 5, 0), 5);
		w = atomic_load(&h.victim->rx_write);
		atomic_store(&h.victim->rx_write, w + h.victim_cap + 1);
		tu_sync_put(&a->sync, 1);
		break;
	case RX_WRITE_HUGE:
		atomic_store(&h.victim->rx_write, 1ull << 63);
		tu_sync_put(&a->sync, 1);
		break;
	case RX_WRITE_BACKWARDS:
		{
			char data[200];

			memset(data, 'd', sizeof(data));
			cr_assert_eq(tu_send_all(fd, data, sizeof(data), 0), 200);
		}
		tu_sync_put(&a->sync, 1);
		cr_assert_eq(tu_sync_get(&a->sync, &v), 0, "victim:\n%s", (tu_reap(&child), child.output));
		w = atomic_load(&h.victim->rx_write);
		atomic_store(&h.victim->rx_write, w - 50);
		tu_sync_put(&a->sync, 1);
		break;
	case RX_BLOCKED_SHUTDOWN:
	case RX_BLOCKED_POKE:
	case POLL_BLOCKED_POKE:
		tu_sleep_ms(200); /* let it block (not required) */
		w = atomic_load(&h.victim->rx_write);
		atomic_store(&h.victim->rx_write, w + h.victim_cap + 1);
		if (sc == RX_BLOCKED_SHUTDOWN)
			cr_assert_eq(scilan_shutdown(fd, SHUT_WR), 0);
		else
			sl_test_poke(fd);
		break;
	case TX_READ_AHEAD:
		cr_assert_eq(tu_sync_get(&a->sync, &v), 0, "victim:\n%s", (tu_reap(&child), child.output));
		/* Ahead of anything the victim can have written by its next look
		 * (it can write at most one ring beyond its last valid read index). */
		w = atomic_load(&h.mine->rx_write); /* the victim's write index */
		atomic_store(&h.victim->peer_read, w + h.hdr.ring_cap[h.own] + 1);
		tu_sync_put(&a->sync, 1);
		break;
	case TX_READ_BEHIND:
		cr_assert_eq(tu_sync_get(&a->sync, &v), 0, "victim:\n%s", (tu_reap(&child), child.output));
		w = atomic_load(&h.mine->rx_write);
		atomic_store(&h.victim->peer_read, w - h.hdr.ring_cap[h.own] - 1);
		tu_sync_put(&a->sync, 1);
		break;
	case TX_BLOCKED_POKE:
		cr_assert_eq(tu_sync_get(&a->sync, &v), 0, "victim:\n%s", (tu_reap(&child), child.output));
		tu_sleep_ms(200);
		w = atomic_load(&h.mine->rx_write);
		atomic_store(&h.victim->peer_read, w + 1);
		sl_test_poke(fd);
		break;
	}
	cr_assert_eq(tu_sync_get(&a->sync, &v), 0, "victim did not finish:\n%s", (tu_reap(&child), child.output));
	/* The victim told us: our side is reset too (never hangs): whatever the
	 * victim sent before is delivered, then ECONNRESET. */
	tu_set_nonblock(fd, false);
	{
		static char sink[65536];
		size_t drained = 0;

		while ((n = scilan_recv(fd, sink, sizeof(sink), 0)) > 0 && drained < (1u << 30))
			drained += (size_t)n;
	}
	(void)b;
	cr_assert(n == -1 && errno == ECONNRESET, "the hostile end was not told of the reset: recv %zd (%s)", n,
		  strerror(errno));
	tu_sync_put(&a->sync, 9);
	tu_reap(&child);
	cr_assert(tu_exited_with(&child, 0), "victim %s\n%s", tu_status_str(&child, st, sizeof(st)), child.output);
	scilan_close(fd);
	if (l >= 0)
		scilan_close(l);
}

Test(hostile, rx_write_beyond_capacity, .timeout = 60)
{
	run_scenario(RX_WRITE_BEYOND_CAP, false);
}

Test(hostile, rx_write_beyond_capacity_victim_server, .timeout = 60)
{
	run_scenario(RX_WRITE_BEYOND_CAP, true);
}

Test(hostile, rx_write_huge, .timeout = 60)
{
	run_scenario(RX_WRITE_HUGE, false);
}

Test(hostile, rx_write_backwards, .timeout = 60)
{
	run_scenario(RX_WRITE_BACKWARDS, false);
}

Test(hostile, rx_write_backwards_victim_server, .timeout = 60)
{
	run_scenario(RX_WRITE_BACKWARDS, true);
}

Test(hostile, recv_blocked_woken_by_shutdown, .timeout = 60)
{
	run_scenario(RX_BLOCKED_SHUTDOWN, false);
}

Test(hostile, recv_blocked_woken_by_stray_byte, .timeout = 60)
{
	run_scenario(RX_BLOCKED_POKE, true);
}

Test(hostile, poll_blocked_woken_by_stray_byte, .timeout = 60)
{
	run_scenario(POLL_BLOCKED_POKE, false);
}

Test(hostile, tx_read_index_ahead, .timeout = 60)
{
	run_scenario(TX_READ_AHEAD, false);
}

Test(hostile, tx_read_index_ahead_victim_server, .timeout = 60)
{
	run_scenario(TX_READ_AHEAD, true);
}

Test(hostile, tx_read_index_too_far_behind, .timeout = 60)
{
	run_scenario(TX_READ_BEHIND, false);
}

Test(hostile, send_blocked_woken_by_stray_byte, .timeout = 60)
{
	run_scenario(TX_BLOCKED_POKE, true);
}

/* ---- bytes on the kernel connection: the peer bypassed the rings ---------------------------- */

/* Bytes on the kernel connection of an accelerated connection are the peer's
 * stream (io_uring, a program without the hook).  Before any ring data they
 * start its stream: the connection continues on kernel TCP, both ways. */
Test(hostile, kernel_bytes_before_ring_data_continue_on_kernel_tcp, .timeout = 60)
{
	char buf[64];
	int c, s;

	tu_watchdog(WATCHDOG_SECS, "bypass");
	cr_assert_eq(tu_pair(AF_INET, &c, &s), 0);
	cr_assert_eq(tu_accelerated(s), 1);
	cr_assert_eq(send(c, "hello", 5, MSG_NOSIGNAL), 5, "raw send: %s", strerror(errno));
	cr_assert_eq(tu_recv_all(s, buf, 5), 5, "recv: %s", strerror(errno));
	cr_assert_eq(memcmp(buf, "hello", 5), 0);
	cr_assert_eq(tu_send_all(s, "world", 5, 0), 5);
	cr_assert_eq(recv(c, buf, 5, MSG_WAITALL), 5, "raw recv: %s", strerror(errno));
	cr_assert_eq(memcmp(buf, "world", 5), 0);
	/* The bypassing end's own hook follows: its later sends use the kernel too. */
	cr_assert_eq(tu_send_all(c, "more", 4, 0), 4);
	cr_assert_eq(tu_recv_all(s, buf, 4), 4);
	cr_assert_eq(memcmp(buf, "more", 4), 0);
	cr_assert_eq(scilan_close(c), 0);
	cr_assert_eq(scilan_recv(s, buf, 1, 0), 0, "EOF after the peer's close");
	scilan_close(s);
}

/* Kernel bytes and ring bytes from the same peer: their order is lost, so
 * the connection is reset loudly at both ends, never silently reordered. */
Test(hostile, kernel_bytes_beside_ring_data_reset_both_ends, .timeout = 60)
{
	unsigned char junk[1000], buf[4096];
	struct pollfd pfd;
	ssize_t n;
	int c, s;

	tu_watchdog(WATCHDOG_SECS, "bypass beside the ring");
	cr_assert_eq(tu_pair(AF_INET, &c, &s), 0);
	memset(junk, 0xee, sizeof(junk));
	cr_assert_eq(send(c, junk, sizeof(junk), MSG_NOSIGNAL), (ssize_t)sizeof(junk));
	tu_stream_fill(3, 0, buf, 3000);
	cr_assert_eq(tu_send_all(c, buf, 3000, 0), 3000);
	/* Whatever the ring delivers first, the end is ECONNRESET. */
	cr_assert_eq(tu_set_poll_us(s, 0), 0);
	pfd = (struct pollfd){ .fd = s, .events = POLLIN };
	while ((n = scilan_recv(s, buf, sizeof(buf), MSG_DONTWAIT)) > 0 ||
	       (n < 0 && errno == EAGAIN && scilan_poll(&pfd, 1, 10000) == 1))
		;
	cr_assert(n == -1 && errno == ECONNRESET, "the receiving end was not reset: %zd (%s)", n, strerror(errno));
	n = scilan_recv(c, buf, sizeof(buf), 0);
	cr_assert(n == -1 && errno == ECONNRESET, "the bypassing end was not reset: %zd (%s)", n, strerror(errno));
	scilan_close(c);
	scilan_close(s);
}

/* An acceptor that cannot use the offer says so (REFUSED in the offer word):
 * the client moves what it already wrote into the ring onto the kernel
 * socket at its next send, and both ends carry on over kernel TCP. */
Test(hostile, refused_offer_moves_client_to_kernel_tcp, .timeout = 60)
{
	uint16_t port;
	char buf[16];
	void *base;
	size_t len;
	int l, c, s, own;

	tu_watchdog(WATCHDOG_SECS, "refused offer");
	l = tu_listen(AF_INET, 4, &port);
	cr_assert_geq(l, 0);
	c = tu_connect(AF_INET, port);
	cr_assert_geq(c, 0);
	cr_assert_eq(sl_test_segment(c, &base, &len, &own), 0);
	cr_assert_eq(tu_send_all(c, "early", 5, 0), 5);
	((struct sl_seg_header *)base)->magic ^= 1; /* the acceptor cannot validate it */
	s = tu_accept(l);
	cr_assert_geq(s, 0, "accept of an unusable offer: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(s), 0, "the acceptor attached a bad segment");
	cr_assert_eq(tu_send_all(c, "hello", 5, 0), 5);
	cr_assert_eq(tu_accelerated(c), 0, "the client did not see the refusal");
	cr_assert_eq(tu_recv_all(s, buf, 10), 10, "recv: %s", strerror(errno));
	cr_assert_eq(memcmp(buf, "earlyhello", 10), 0);
	cr_assert_eq(tu_send_all(s, "world", 5, 0), 5);
	cr_assert_eq(tu_recv_all(c, buf, 5), 5);
	cr_assert_eq(memcmp(buf, "world", 5), 0);
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
}

/* ---- a corrupt segment header before the victim attaches ------------------------------------ */

struct header_arg {
	uint16_t port;
	int rounds;
	struct tu_sync sync;
};

/* The victim server: accepts whatever comes; a corrupt offer must not crash
 * it or break the listener; the good connection that follows each bad one
 * must be accelerated and deliver "good". */
static int header_victim(void *p)
{
	struct header_arg *a = p;
	uint16_t port;
	int l = tu_listen(AF_INET, 16, &port);

	TU_CHECK(l >= 0, "listen");
	TU_CHECK(tu_sync_put_child(&a->sync, port) == 0, "port");
	for (int r = 0; r < a->rounds; r++) {
		uint64_t v;
		char b[4];
		int fd;

		TU_CHECK(tu_sync_get_child(&a->sync, &v) == 0, "wait for the bad client");
		fd = scilan_accept(l, NULL, NULL);
		if (fd >= 0) {
			/* Accepted (as plain TCP, or it reset): any call must return. */
			ssize_t n = scilan_recv(fd, b, sizeof(b), MSG_DONTWAIT);

			TU_CHECK(n >= -1 && n <= (ssize_t)sizeof(b), "recv on the bad connection: %zd", n);
			scilan_close(fd);
		} else {
			TU_CHECK(errno == ECONNABORTED || errno == EPROTO || errno == ECONNRESET,
				 "accept of a corrupt offer failed with an odd errno");
		}
		TU_CHECK(tu_sync_put_child(&a->sync, 1) == 0, "bad one handled");
		fd = tu_accept(l);
		TU_CHECK(fd >= 0, "accept of the good client after a bad one (round %d)", r);
		TU_CHECK(tu_accelerated(fd) == 1, "good client not accelerated (round %d)", r);
		TU_CHECK(tu_recv_all(fd, b, 4) == 4 && memcmp(b, "good", 4) == 0, "good data (round %d)", r);
		TU_CHECK(tu_sync_put_child(&a->sync, 2) == 0, "good one read");
		TU_CHECK(scilan_close(fd) == 0, "close");
	}
	scilan_close(l);
	return 0;
}

Test(hostile, corrupt_header_before_attach, .timeout = 120)
{
	struct header_arg *a = tu_shared_alloc(sizeof(*a));
	struct tu_child child;
	struct tu_rng rng = { 0x4ead };
	uint64_t port, v;
	char st[128];

	tu_watchdog(100, "corrupt header");
	tu_offer_always(); /* a round is a short connection to one listener */
	cr_assert_not_null(a);
	memset(a, 0, sizeof(*a));
	a->rounds = 12;
	cr_assert_eq(tu_sync_init(&a->sync), 0);
	cr_assert_eq(tu_spawn(&child, header_victim, a), 0);
	cr_assert_eq(tu_sync_get(&a->sync, &port), 0, "victim:\n%s", (tu_reap(&child), child.output));
	for (int r = 0; r < a->rounds; r++) {
		struct sl_seg_header *hdr;
		void *base;
		size_t len;
		int own, fd, good;

		fd = tu_connect(AF_INET, (uint16_t)port);
		cr_assert_geq(fd, 0);
		cr_assert_eq(tu_accelerated(fd), 1);
		cr_assert_eq(sl_test_segment(fd, &base, &len, &own), 0);
		cr_assert_eq(own, 0, "the connecting side should own area 0");
		hdr = base;
		switch (r % 6) {
		case 0:
			hdr->magic ^= 1;
			break;
		case 1:
			hdr->ring_cap[1] = 1ull << 40;
			hdr->total_size = hdr->area_off[1] + SL_AREA_CTL_SIZE + hdr->ring_cap[1];
			break;
		case 2:
			hdr->area_off[1] = len - 16;
			break;
		case 3:
			hdr->ring_cap[1] = 3000; /* not a power of two */
			break;
		case 4:
			hdr->version = 0xdead;
			break;
		default:
			for (size_t i = 0; i < SL_SEG_HEADER_SIZE; i += 8) {
				uint64_t x = tu_rng_next(&rng);

				memcpy((unsigned char *)base + i, &x, 8);
			}
			break;
		}
		cr_assert_eq(tu_sync_put(&a->sync, 1), 0);
		cr_assert_eq(tu_sync_get(&a->sync, &v), 0, "victim failed on bad header %d:\n%s", r % 6,
			     (tu_reap(&child), child.output));
		scilan_close(fd);
		good = tu_connect(AF_INET, (uint16_t)port);
		cr_assert_geq(good, 0);
		cr_assert_eq(tu_send_all(good, "good", 4, 0), 4);
		/* A close before the accept would revoke the offer (plain TCP). */
		cr_assert_eq(tu_sync_get(&a->sync, &v), 0, "victim:\n%s", (tu_reap(&child), child.output));
		scilan_close(good);
	}
	tu_reap(&child);
	cr_assert(tu_exited_with(&child, 0), "victim %s\n%s", tu_status_str(&child, st, sizeof(st)), child.output);
}
