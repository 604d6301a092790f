/* test_hostile_claim.c — a hostile peer's indices taken over without a cached
 * view: a forked process claiming the send direction, and an exec hand-over
 * adopting the connection.  A bad index is a reset (ECONNRESET + log line). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "handover.h"
#include "layout.h"
#include "testing.h"
#include "testutil.h"

#define WATCHDOG_SECS 30

/* The areas of the connection fd as its peer sees them. */
struct view {
	unsigned char *base;
	size_t len;
	int own;
	struct sl_seg_header hdr;
	struct sl_area_ctl *victim; /* fd's own area: the peer writes its words */
	struct sl_area_ctl *other;  /* the peer's area */
	uint64_t tx_cap;            /* the ring fd sends into */
};

static void view_of(int fd, struct view *v)
{
	void *base;

	TU_CHECK(sl_test_segment(fd, &base, &v->len, &v->own) == 0, "sl_test_segment");
	v->base = base;
	memcpy(&v->hdr, base, sizeof(v->hdr));
	v->victim = (struct sl_area_ctl *)(v->base + v->hdr.area_off[v->own]);
	v->other = (struct sl_area_ctl *)(v->base + v->hdr.area_off[1 - v->own]);
	v->tx_cap = v->hdr.ring_cap[1 - v->own];
}

/* A read index ahead of everything fd has written: impossible. */
static void read_index_ahead(struct view *v)
{
	uint64_t w = atomic_load(&v->other->rx_write);

	atomic_store(&v->victim->peer_read, w + v->tx_cap + 1);
}

struct claim_arg {
	int fd;
};

/* A forked process sending first takes the indices over from shared memory. */
static int claim_child(void *p)
{
	struct claim_arg *a = p;
	static unsigned char buf[8192];
	ssize_t n;
	int tok = tu_capture_begin();
	char *err;

	n = scilan_send(a->fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_NOSIGNAL);
	err = tu_capture_end(tok);
	TU_CHECK(n == -1 && errno == ECONNRESET, "first send of a forked process over an impossible read index: %zd",
		 n);
	TU_CHECK(strstr(err, "connection reset") != NULL, "no log line for the reset: '%s'", err);
	free(err);
	return 0;
}

Test(hostile_claim, forked_sender_claims_impossible_read_index, .timeout = 60)
{
	struct claim_arg a;
	struct tu_child child;
	struct view v;
	char st[128];
	int c, s;

	tu_watchdog(WATCHDOG_SECS, "claim");
	cr_assert_eq(tu_pair(AF_INET, &c, &s), 0);
	cr_assert_eq(tu_send_all(c, "legit", 5, 0), 5);
	view_of(c, &v);
	read_index_ahead(&v);
	a.fd = c;
	cr_assert_eq(tu_spawn(&child, claim_child, &a), 0);
	tu_reap(&child);
	cr_assert(tu_exited_with(&child, 0), "child %s\n%s", tu_status_str(&child, st, sizeof(st)), child.output);
	scilan_close(c);
	scilan_close(s);
}

/* The exec hand-over in one process: the connection of c is adopted again
 * under a second descriptor of its kernel socket, as the new image would. */
static int adopt_copy(int c, struct view *v)
{
	char path[128];
	int seg, kfd, brx[2], btx[2];

	snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx", (unsigned long)v->base,
		 (unsigned long)v->base + (unsigned long)v->len);
	seg = open(path, O_RDWR | O_CLOEXEC);
	TU_CHECK(seg >= 0, "reopen the segment");
	kfd = dup(c);
	TU_CHECK(kfd >= 0, "dup");
	TU_CHECK(pipe2(brx, O_NONBLOCK | O_CLOEXEC) == 0 && pipe2(btx, O_NONBLOCK | O_CLOEXEC) == 0, "bells");
	TU_CHECK(sl_handover_adopt_one(kfd, AF_INET, seg, brx[0], btx[1], v->own) == 0, "adopt: %s",
		 strerror(errno));
	close(seg);
	return kfd;
}

struct adopt_arg {
	bool rx; /* corrupt the receive direction instead of the send direction */
};

static int adopt_child(void *p)
{
	struct adopt_arg *a = p;
	static unsigned char buf[8192];
	struct view v;
	ssize_t n;
	int c, s, fd, tok;
	char *err;

	TU_CHECK(tu_pair(AF_INET, &c, &s) == 0, "pair");
	TU_CHECK(tu_send_all(c, "legit", 5, 0) == 5, "send");
	view_of(c, &v);
	if (a->rx)
		atomic_store(&v.other->peer_read, atomic_load(&v.victim->rx_write) - v.hdr.ring_cap[v.own] - 1);
	else
		read_index_ahead(&v);
	tok = tu_capture_begin();
	fd = adopt_copy(c, &v);
	if (a->rx)
		n = scilan_recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	else
		n = scilan_send(fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_NOSIGNAL);
	err = tu_capture_end(tok);
	TU_CHECK(n == -1 && errno == ECONNRESET, "first %s of an adopted connection over an impossible index: %zd",
		 a->rx ? "recv" : "send", n);
	TU_CHECK(strstr(err, "connection reset") != NULL, "no log line for the reset: '%s'", err);
	free(err);
	return 0;
}

static void run_adopt(bool rx)
{
	struct adopt_arg *a = tu_shared_alloc(sizeof(*a));
	struct tu_child child;
	char st[128];

	tu_watchdog(WATCHDOG_SECS, "adopt");
	cr_assert_not_null(a);
	a->rx = rx;
	cr_assert_eq(tu_spawn(&child, adopt_child, a), 0);
	tu_reap(&child);
	cr_assert(tu_exited_with(&child, 0), "child %s\n%s", tu_status_str(&child, st, sizeof(st)), child.output);
}

Test(hostile_claim, exec_handover_adopts_impossible_read_index, .timeout = 60)
{
	run_adopt(false);
}

Test(hostile_claim, exec_handover_adopts_impossible_write_index, .timeout = 60)
{
	run_adopt(true);
}
