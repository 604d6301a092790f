/* test_hostile_claim.c — connections taken over without a cached view: a forked
 * sender's claim and the exec hand-over over impossible indices (a reset with a log
 * line), and an SCM_RIGHTS sender passing blocking bells (never a hang). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "process/handover.h"
#include "ring/layout.h"
#include "process/scm.h"
#include "ring/segment.h"
#include "test_segment.h"
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
	TU_CHECK(sl_handover_adopt_one(kfd, AF_INET, seg, brx[0], btx[1], v->own, false) == 0, "adopt: %s",
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

/* ---- SCM_RIGHTS from a hostile sender ------------------------------------------------------ */

/* A well-formed segment memfd as its creator seals it. */
static int fake_segment(int *own)
{
	struct sl_seg_header hdr;
	int fd = memfd_create("hostile-seg", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	sl_segment_layout(&hdr, SL_RING_MIN, SL_RING_MIN);
	TU_CHECK(fd >= 0 && ftruncate(fd, (off_t)hdr.total_size) == 0, "segment memfd");
	TU_CHECK(pwrite(fd, &hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr), "header");
	TU_CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0, "seals");
	*own = 1;
	return fd;
}

static int fake_manifest(int own)
{
	struct manifest m = { .magic = MANIFEST_MAGIC, .app_fds = 1, .count = 1 };
	size_t len = offsetof(struct manifest, e) + sizeof(m.e[0]);
	int fd = memfd_create("hostile-manifest", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	m.e[0] = (struct manifest_entry){ .index = 0, .domain = AF_INET, .own = own };
	TU_CHECK(fd >= 0 && pwrite(fd, &m, len, 0) == (ssize_t)len, "manifest");
	TU_CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) == 0, "seals");
	return fd;
}

/* The sender passes a kernel TCP socket as a ring connection whose bells are
 * blocking pipes: the wake-up pipe holds exactly one drain's worth of bytes
 * and the stimulus pipe is full, so a blocking read or write would hang. */
static int scm_bells_child(void *p)
{
	static unsigned char junk[65536];
	int u[2], l, c, k, own, bell_rx[2], bell_tx[2], fds[5], got_fd = -1;
	uint16_t port;
	char ctl[CMSG_SPACE(sizeof(fds))], rctl[CMSG_SPACE(sizeof(fds))], byte = 'x';
	struct iovec iov = { &byte, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	struct cmsghdr *cm;
	struct timeval tv = { 0, 100000 };
	struct sl_seg_header hdr;
	unsigned char *base;
	ssize_t n;

	(void)p;
	TU_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, u) == 0, "socketpair");
	l = tu_plain_listen(AF_INET, 1, &port);
	c = tu_plain_connect(AF_INET, port);
	k = accept(l, NULL, NULL);
	TU_CHECK(l >= 0 && c >= 0 && k >= 0, "kernel connection");
	TU_CHECK(pipe2(bell_rx, O_CLOEXEC) == 0 && pipe2(bell_tx, O_CLOEXEC) == 0, "pipes");
	TU_CHECK(write(bell_rx[1], junk, 64) == 64, "one drain's worth");
	TU_CHECK(fcntl(bell_tx[1], F_SETFL, O_NONBLOCK) == 0, "fill");
	while (write(bell_tx[1], junk, sizeof(junk)) > 0) {
	}
	TU_CHECK(fcntl(bell_tx[1], F_SETFL, 0) == 0, "blocking again");
	fds[0] = c;
	fds[1] = fake_segment(&own);
	TU_CHECK(pread(fds[1], &hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr), "header");
	base = mmap(NULL, hdr.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[1], 0);
	TU_CHECK(base != MAP_FAILED, "map the segment as its peer");
	fds[2] = bell_rx[0];
	fds[3] = bell_tx[1];
	fds[4] = fake_manifest(own);
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	TU_CHECK(sendmsg(u[0], &m, 0) == 1, "sendmsg");
	m = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1, .msg_control = rctl, .msg_controllen = sizeof(rctl) };
	TU_CHECK(scilan_recvmsg(u[1], &m, 0) == 1, "recvmsg");
	cm = CMSG_FIRSTHDR(&m);
	TU_CHECK(cm && cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(sizeof(int)), "one descriptor");
	memcpy(&got_fd, CMSG_DATA(cm), sizeof(int));
	TU_CHECK(tu_accelerated(got_fd) == 1, "adopted as a ring connection");
	TU_CHECK(tu_set_poll_us(got_fd, 0) == 0, "interrupt mode");
	TU_CHECK(scilan_setsockopt(got_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0, "SO_RCVTIMEO");
	/* Sleeps (drains the bell), then times out. */
	n = scilan_recv(got_fd, junk, 1, 0);
	TU_CHECK(n == -1 && errno == EAGAIN, "recv on the adopted connection: %zd", n);
	/* The peer sleeps for data: a send stimulates it through the full pipe. */
	atomic_store(&((struct sl_area_ctl *)(base + hdr.area_off[own]))->wake_on_data, 1);
	n = scilan_send(got_fd, "x", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
	TU_CHECK(n == 1, "send on the adopted connection: %zd", n);
	return 0;
}

Test(hostile_claim, scm_rights_blocking_bells_never_hang, .timeout = 60)
{
	struct tu_child child;
	char st[128];

	tu_watchdog(WATCHDOG_SECS, "blocking bells");
	cr_assert_eq(tu_spawn(&child, scm_bells_child, NULL), 0);
	tu_reap(&child);
	cr_assert(tu_exited_with(&child, 0), "child %s\n%s", tu_status_str(&child, st, sizeof(st)), child.output);
}
