/* late.c — the device fabric's late moves of a live connection onto a link
 * (promotion.c drives them): the connector's CONNECT_LATE, the acceptor's
 * ACCEPT_LATE carrying its switch point with its claim, the connector's
 * SEAM_POINT, and where each driver stores the peer's point.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "uapi/scilan.h" /* the driver's ABI (-Idriver) */
#include "conn/promote.h"
#include "conn/seam.h"
#include "fabric/dev/dev_conn.h"
#include "fabric/dev/link_seen.h"
#include "ring/layout.h"
#include "runtime/log.h"
#include "runtime/own_fd.h"
#include "runtime/sys.h"

_Static_assert(SCILAN_POINT_UNKNOWN == SL_SEAM_UNKNOWN, "the driver's unknown point is the seam's");

int sl_dev_offer_late(struct sl_sock *s, const struct sl_key *dst, const struct sl_key *src, uint64_t peer_ring)
{
	(void)peer_ring; /* both rings are what one slice holds */
	if (sl_dev_connect(s, dst, src, SCILAN_CONNECT_LATE) < 0)
		return -1;
	/* OFFERED until the acceptor's driver pairs through ours: ATTACHED,
	 * the acceptor's point stored before it. */
	s->offer_word = sl_dev_agree_word(s);
	return 0;
}

const _Atomic uint64_t *sl_dev_late_peer_point(struct sl_sock *s, int side)
{
	(void)side; /* each driver stores the peer's point in its own slice */
	return (const _Atomic uint64_t *)((const char *)s->dev_map[0] + SCILAN_SLICE_POINT_OFF);
}

int sl_dev_late_publish(struct sl_sock *s, uint64_t x)
{
	/* The driver's wait is killable only: no EINTR to retry. */
	if (sl_sys.ioctl(s->bell_rx, SCILAN_IOC_SEAM_POINT, &x) == 0)
		return 0;
	/* Refused, or no answer: whether the acceptor knows our point, which
	 * it waits at, is not known to us. */
	sl_warn("fd %d: the switch point could not reach the acceptor over the device (%s)", s->fd, strerror(errno));
	return -1;
}

/* ACCEPT_LATE through one endpoint: the claim and our point in one step. */
struct late_claim {
	int ep;
	int sockfd;
	bool unknown; /* no answer: reset */
};

static int claim_with_point(void *arg, uint64_t x)
{
	struct late_claim *c = arg;
	struct scilan_accept_late req = { .sockfd = c->sockfd, .point = x };

	if (sl_sys.ioctl(c->ep, SCILAN_IOC_ACCEPT_LATE, &req) == 0)
		return 0;
	/* The client's driver did not answer: it may have agreed, and its
	 * program then waits at our point for our marker. */
	if (errno == ETIMEDOUT || errno == ECONNRESET || errno == EINTR) {
		c->unknown = true;
		return -1;
	}
	/* None queued here, its client left, or (ENOLINK) the link went down
	 * before the answer: nothing published.  A client that agreed then
	 * cannot follow (its point needs the lost session) and resets; one
	 * that did not stays on kernel TCP with us. */
	return 1;
}

/* Our switch on link i's late queue: 1 taken (mapped), 0 none there, -1
 * (errno) reset the connection. */
static int take_on(struct sl_sock *s, const struct sl_dev_listen *l, int i)
{
	struct late_claim c = { .sockfd = s->fd };
	enum sl_link_seen seen = sl_dev_link_seen(l->at[i].link);
	struct scilan_info in;
	char path[48];
	int r;

	/* A link this process saw down lately holds no late connect: one look
	 * now and then asks for every connection, through the listener's own
	 * endpoint (no open).  An INFO that fails says nothing: the take goes
	 * on, and the next recheck asks again. */
	if (seen == SL_LINK_DOWN_LATELY)
		return 0;
	if (seen == SL_LINK_RECHECK && sl_sys.ioctl(l->at[i].fd, SCILAN_IOC_INFO, &in) == 0) {
		sl_dev_link_note(l->at[i].link, in.link_up);
		if (!in.link_up)
			return 0;
	}
	sl_dev_link_path(l->at[i].link, path, sizeof(path));
	c.ep = sl_own_fd_lasting(open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK));
	if (c.ep < 0)
		return 0;
	r = sl_promote_switch(s->fd, 1, claim_with_point, &c);
	if (r == 1 || r == 2) {
		/* Nothing published: the connector's offer times out, and it
		 * offers again; after no room for our marker, the next look
		 * waits for room first. */
		if (r == 2 && errno == EAGAIN)
			atomic_store(&s->promote_no_room, true);
		sl_dev_close_quietly(c.ep);
		return 0;
	}
	if (r < 0) {
		sl_warn("%s: fd %d: connection reset: its move onto the device %s (%s)", path, s->fd,
			c.unknown ? "was not confirmed" : "could not send its marker", strerror(errno));
		sl_dev_close_quietly(c.ep);
		errno = ECONNABORTED;
		return -1;
	}
	if (sl_dev_map_connection(s, c.ep, 1) < 0) {
		sl_warn("%s: fd %d: connection reset: its move onto the device cannot map the slices (%s)", path,
			s->fd, strerror(errno));
		sl_dev_close_quietly(c.ep);
		errno = ECONNABORTED;
		return -1;
	}
	/* ATTACHED, stored by our driver as it paired the connection. */
	s->offer_word = sl_dev_agree_word(s);
	return 1;
}

int sl_dev_take_late(struct sl_sock *s, struct sl_sock *listener, struct sl_key *local, struct sl_key *peer)
{
	(void)local; /* the driver reads the 4-tuple from our socket */
	return sl_dev_each_link(s, listener, peer, take_on);
}
