/* fabric_dev.c — the device fabric: the ring protocol of layout.h over the two
 * slices a /dev/scilanN endpoint maps (ours: the ring we receive into; the
 * peer's: the ring we send into), paired with the companion TCP connection by
 * its 4-tuple, which the driver reads from our own sockets and the client's
 * driver vouches for; wake-ups are the endpoint's tokens and SCILAN_IOC_STIMULATE.
 */
#include <errno.h>
#include <poll.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "uapi/scilan.h" /* the driver's ABI (-Idriver) */
#include "runtime/config.h"
#include "conn/agree.h"
#include "conn/failover.h"
#include "conn/conn.h"
#include "evq/evq_dev.h"
#include "fabric/fabric.h"
#include "fabric/dev/dev_conn.h"
#include "fabric/dev/link_down.h"
#include "fabric/dev/link_seen.h"
#include "runtime/log.h"
#include "runtime/own_fd.h"
#include "ring/segment.h"
#include "runtime/sys.h"
#include "sync/clock.h"

_Static_assert(SL_TOKEN_DATA == SCILAN_TOKEN_DATA && SL_TOKEN_SPACE == SCILAN_TOKEN_SPACE &&
		       SL_TOKEN_LOCAL == SCILAN_TOKEN_LOCAL,
	       "bell tokens and device tokens are the same bits");

/* Room in s->dev_listen for n endpoints (a later listen of the same state
 * may find more links than its first did); false if there is none. */
static bool listen_room(struct sl_sock *s, int n)
{
	struct sl_dev_listen *l = s->dev_listen;

	if (l && l->cap >= n)
		return true;
	l = malloc(sizeof(*l) + (size_t)n * sizeof(l->at[0]));
	if (!l)
		return false;
	l->count = 0;
	l->cap = n;
	/* The state is fresh here: nothing reads the old one any more. */
	free(s->dev_listen);
	s->dev_listen = l;
	return true;
}

/* A listener joins the listen table of every link with its own socket (the
 * driver takes the namespace, address and port from it): the client picks
 * the link (the cluster map's DEVICE), the listener cannot.  A link that
 * refuses it is loud: connections coming through that link use kernel TCP
 * (the driver refuses them, as no listener of this port is registered). */
static int dev_listen_register(struct sl_sock *s, const struct sl_key *local)
{
	/* Backlog 0: the driver queues as many connections before accept()
	 * as the socket's own listen() backlog lets the kernel queue. */
	struct scilan_listen req = { .sockfd = s->fd, .backlog = 0 };
	char path[SL_DEV_NAME_MAX + 8];
	int *links, n = sl_dev_link_numbers(&links), fd;

	if (n && !listen_room(s, n)) {
		sl_warn("no memory for the device registrations of port %u; its connections over the links use kernel TCP",
			(unsigned)local->port);
		n = 0;
	}
	for (int i = 0; i < n; i++) {
		sl_dev_link_path(links[i], path, sizeof(path));
		fd = sl_dev_open_link(path + 5);
		if (fd < 0) {
			sl_warn("%s: %s; port %u not registered there, its connections through that link use kernel TCP",
				path, strerror(errno), (unsigned)local->port);
			continue;
		}
		if (sl_sys.ioctl(fd, SCILAN_IOC_LISTEN, &req) < 0) {
			sl_warn("%s: port %u cannot listen over the link (%s); connections through it use kernel TCP",
				path, (unsigned)local->port, strerror(errno));
			sl_dev_close_quietly(fd);
			continue;
		}
		s->dev_listen->at[s->dev_listen->count].fd = fd;
		s->dev_listen->at[s->dev_listen->count].link = links[i];
		s->dev_listen->count++;
	}
	free(links);
	return 0;
}

static void dev_listen_unregister(struct sl_sock *s)
{
	struct sl_dev_listen *l = s->dev_listen;

	for (int i = 0; l && i < l->count; i++)
		sl_dev_close_quietly(l->at[i].fd);
	if (l)
		l->count = 0;
}

static int dev_lookup(struct sl_sock *s, const struct sl_key *dst, uint64_t *peer_ring)
{
	const struct sl_map_entry *e = sl_dev_entry(dst);
	struct scilan_info in;
	int fd, ok, link;

	if (!e) {
		sl_fb_hint(SL_FB_NOT_IN_MAP);
		return 0;
	}
	/* A live connection's try to come back (promotion.c) does not ask a
	 * link this process saw down lately: one asks for all of them.  A
	 * connect always asks. */
	link = sl_dev_link_number(e->device);
	if (sl_sock_state(s) == SL_PLAIN && sl_dev_link_seen(link) == SL_LINK_DOWN_LATELY) {
		sl_fb_hint(SL_FB_LINK_DOWN);
		return 0;
	}
	fd = sl_dev_open_link(e->device);
	if (fd < 0) {
		sl_debug("/dev/%s: %s; kernel TCP to %s", e->device, strerror(errno), e->text);
		/* No such device (not a process out of descriptors). */
		if (errno == ENOENT || errno == ENODEV || errno == ENXIO)
			sl_dev_link_note(link, false);
		sl_fb_hint(SL_FB_LINK_DOWN);
		return 0;
	}
	ok = sl_dev_link_info(fd, &in) == 0 && in.link_up;
	sl_dev_close_quietly(fd);
	sl_dev_link_note(link, ok);
	if (!ok) {
		sl_fb_hint(SL_FB_LINK_DOWN);
		return 0;
	}
	*peer_ring = sl_dev_ring_for_slice(in.slice_size);
	return 1;
}

/* The mirror of what we send (failover.c) lives in the holder memfd past
 * its page: shared with fork children, handed to an exec'd image with the
 * rest, and its pages exist only as far as the ring was written.  An
 * adopted memfd without it (none could be made) leaves the connection
 * without fail-over: a link down resets it. */
static void *map_mirror(int hfd, uint64_t cap)
{
	struct stat st;
	void *m;

	if (fstat(hfd, &st) < 0 || (uint64_t)st.st_size < SL_PAGE + cap)
		return NULL;
	m = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED, hfd, SL_PAGE);
	return m == MAP_FAILED ? NULL : m;
}

/* Maps the connected endpoint fd for s: our slice (the ring we receive into)
 * and the peer's (the ring we send into); with holders_fd >= 0 the holder
 * page is that file's (an exec'd image adopting the connection), else a new
 * one.  The holder page is a memfd, not anonymous memory, so that exec can
 * hand it to the new image; fork children inherit the mapping. */
static int map_slices(struct sl_sock *s, int fd, int holders_fd, void **holders, void **local, void **peer,
		      uint64_t *cap)
{
	struct scilan_info in;
	int hfd = holders_fd, err;

	*holders = *local = *peer = MAP_FAILED;
	if (sl_dev_link_info(fd, &in) < 0)
		return -1;
	*cap = sl_dev_ring_for_slice(in.slice_size);
	if (hfd < 0) {
		hfd = memfd_create("scilan-dev-holders", MFD_CLOEXEC);
		if (hfd >= 0 && ftruncate(hfd, (off_t)(SL_PAGE + (sl_config()->fail_over ? *cap : 0))) < 0) {
			sl_dev_close_quietly(hfd);
			hfd = -1;
		}
	}
	if (hfd >= 0)
		*holders = mmap(NULL, SL_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, hfd, 0);
	*local = mmap(NULL, in.slice_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, SCILAN_MMAP_LOCAL);
	*peer = mmap(NULL, in.slice_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, SCILAN_MMAP_PEER(in.slice_size));
	if (hfd < 0 || *holders == MAP_FAILED || *local == MAP_FAILED || *peer == MAP_FAILED) {
		err = errno ? errno : EIO;
		if (*holders != MAP_FAILED)
			munmap(*holders, SL_PAGE);
		if (*local != MAP_FAILED)
			munmap(*local, in.slice_size);
		if (*peer != MAP_FAILED)
			munmap(*peer, in.slice_size);
		if (hfd >= 0 && hfd != holders_fd)
			sl_dev_close_quietly(hfd);
		errno = err;
		return -1;
	}
	s->dev_mirror = map_mirror(hfd, *cap);
	s->fabric = &sl_fabric_dev;
	s->bell_rx = fd;
	s->bell_tx = -1;
	/* Kept (out of the program's way) for a later exec's hand-over. */
	s->memfd = sl_own_fd(hfd == holders_fd ? sl_sys.fcntl(hfd, F_DUPFD_CLOEXEC, 3) : hfd);
	s->dev_map[0] = *local;
	s->dev_map[1] = *peer;
	s->dev_slice = in.slice_size;
	s->dev_link = sl_dev_link_of(fd);
	s->dev_own_slice = in.slice;
	s->dev_peer_slice = in.peer_slice;
	atomic_store(&s->dev_lost, false);
	atomic_store(&s->fail_over_due, false);
	atomic_store(&s->strip_pending, false);
	return 0;
}

/* After the areas are bound (which sets the ring views up afresh). */
static void tx_setup(struct sl_sock *s)
{
	/* The peer is another host: membarrier cannot order its stores, so
	 * every send publishes fenced (sfence for the write-combining window,
	 * store, then the full fence before the arm-word load in conn.c):
	 * never a locked instruction on the window. */
	s->tx.write_combining = true;
	s->tx.unfenced = false;
	s->tx.mirror = s->dev_mirror;
}

_Static_assert(sizeof(struct sl_area_ctl) <= SCILAN_SLICE_POINT_OFF, "the driver's point word is past the control words");
_Static_assert(SCILAN_SLICE_POINT_OFF + sizeof(uint64_t) <= SCILAN_SLICE_AGREE_OFF, "the agreement word is past the point");
_Static_assert(SL_OFFER_ATTACHED == SCILAN_AGREE_ATTACHED, "the driver's agreed value is the library's");
_Static_assert(SL_OFFER_LINK_DOWN == SCILAN_AGREE_LINK_DOWN, "the driver's link-down value is the library's");

/* The agreement word in our own slice (the driver's and ours). */
_Atomic uint32_t *sl_dev_agree_word(struct sl_sock *s)
{
	return (_Atomic uint32_t *)((char *)s->dev_map[0] + SCILAN_SLICE_AGREE_OFF);
}

int sl_dev_map_connection(struct sl_sock *s, int fd, int own)
{
	void *holders, *local, *peer;
	uint64_t cap;

	if (map_slices(s, fd, -1, &holders, &local, &peer, &cap) < 0)
		return -1;
	sl_segment_bind_areas(s, holders, SL_PAGE, own, holders, local, peer, cap, cap);
	tx_setup(s);
	/* Our sends mark the peer's epoll sets (evq_dev.c). */
	sl_segment_set_state(s, SL_PEER_EVQ);
	return 0;
}

int sl_dev_adopt(struct sl_sock *s, int holders_fd, int ep_fd, int own)
{
	void *holders, *local, *peer;
	uint64_t cap;

	if (map_slices(s, ep_fd, holders_fd, &holders, &local, &peer, &cap) < 0)
		return -1;
	sl_segment_adopt_areas(s, holders, SL_PAGE, own, holders, local, peer, cap, cap);
	tx_setup(s);
	/* Agreed (a hand-over decides first): the word carries later moves
	 * and the driver's link-down mark. */
	s->offer_word = sl_dev_agree_word(s);
	return 0;
}

void sl_dev_abandon(int fd)
{
	int err = errno;

	if (sl_sys.ioctl(fd, SCILAN_IOC_ABANDON) < 0 && errno != ENOTCONN)
		sl_debug("device endpoint: abandon: %s", strerror(errno));
	errno = err;
}

int sl_dev_connect(struct sl_sock *s, const struct sl_key *dst, const struct sl_key *src, uint16_t flags)
{
	struct sl_key any = { .family = dst->family, .port = dst->port };
	const struct sl_map_entry *e = sl_dev_entry(dst);
	struct scilan_connect req = { .sockfd = s->fd, .dport = dst->port, .flags = flags };
	bool connected;
	int fd;

	sl_dev_addr16(dst, req.daddr);
	sl_dev_addr16(src, req.saddr);
	if (!e)
		e = sl_dev_entry(&any);
	if (!e) {
		errno = ENOENT;
		return -1;
	}
	fd = sl_dev_open_link(e->device);
	/* A signal whose handler does not restart: the program's connect
	 * goes on (its handler ran), and so does ours. */
	do
		connected = fd >= 0 && sl_sys.ioctl(fd, SCILAN_IOC_CONNECT, &req) == 0;
	while (!connected && fd >= 0 && errno == EINTR);
	/* The driver's EAGAIN: every slice of the link is held here (the
	 * listener's side says ENOSPC): a resource limit, like running out of
	 * ports, which the fallback names "resource". */
	if (!connected && fd >= 0 && errno == EAGAIN)
		errno = ENOSPC;
	if (connected && sl_dev_map_connection(s, fd, 0) == 0) {
		uint32_t zeroed = 0;

		/* The acceptor's driver pairs through ours, which then stores
		 * ATTACHED over OFFERED: the agreement (agree.c,
		 * dev_offer_revoke), or a late move's claim (promotion.c).
		 * Only over the driver's zeroed slice: a listener that looks
		 * often pairs before we get here, and a plain store would put
		 * OFFERED over its claim (we would withdraw while it moved to
		 * the rings and its marker came to us as data). */
		atomic_compare_exchange_strong_explicit(sl_dev_agree_word(s), &zeroed, SL_OFFER_OFFERED,
							memory_order_acq_rel, memory_order_acquire);
		return 0;
	}
	/* Connected but unusable: the listener's side must drop it,
	 * not pair it with our kernel connection (which it would end). */
	if (connected)
		sl_dev_abandon(fd);
	sl_dev_close_quietly(fd);
	/* No listener on that port over the link (not on scilan, or
	 * another link): the ordinary case of a plain TCP peer. */
	if (errno == ECONNREFUSED)
		sl_debug("/dev/%s: no scilan listener on port %u; kernel TCP", e->device, (unsigned)dst->port);
	else if (errno == ENOSPC)
		sl_info("/dev/%s: every slice of the link is in use; kernel TCP", e->device);
	else if (errno == ENOBUFS)
		sl_info("/dev/%s: port %u's listener has its %s queue full; kernel TCP", e->device,
			(unsigned)dst->port, flags & SCILAN_CONNECT_LATE ? "late" : "backlog");
	else
		sl_warn("/dev/%s: cannot connect over the link (%s); connection uses kernel TCP", e->device,
			strerror(errno));
	return -1;
}

static int dev_offer(struct sl_sock *s, const struct sl_key *dst, const struct sl_key *src, uint64_t peer_ring)
{
	(void)peer_ring; /* both rings are what one slice holds */
	if (sl_dev_connect(s, dst, src, 0) < 0)
		return -1;
	sl_agree_start(s, sl_dev_agree_word(s));
	return 0;
}

/* ACCEPT_SOCK through a fresh endpoint of the listener's link i: 1 taken
 * (mapped), 0 not there, -1 (errno) reset the connection. */
static int accept_on(struct sl_sock *s, const struct sl_dev_listen *l, int i)
{
	struct scilan_accept_sock req = { .sockfd = s->fd };
	char path[SL_DEV_NAME_MAX + 8];
	int fd;

	sl_dev_link_path(l->at[i].link, path, sizeof(path));
	fd = sl_own_fd_lasting(open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK));
	if (fd < 0)
		return 0;
	if (sl_sys.ioctl(fd, SCILAN_IOC_ACCEPT_SOCK, &req) < 0) {
		/* The client's driver did not answer whether the queued
		 * connection is this socket's: its bytes may sit in the ring,
		 * so kernel TCP would lose them silently. */
		if (errno == ETIMEDOUT || errno == ECONNRESET || errno == EINTR) {
			sl_warn("%s: the device connection of fd %d is not confirmed (%s); resetting it", path, s->fd,
				strerror(errno));
			sl_dev_close_quietly(fd);
			errno = ECONNABORTED;
			return -1;
		}
		if (errno != EAGAIN)
			sl_warn("%s: cannot take the device connection of fd %d: %s", path, s->fd, strerror(errno));
		sl_dev_close_quietly(fd);
		return 0;
	}
	if (sl_dev_map_connection(s, fd, 1) < 0) {
		sl_warn("%s: cannot map the connection (%s); resetting it", path, strerror(errno));
		sl_dev_close_quietly(fd);
		errno = ECONNABORTED;
		return -1;
	}
	/* ATTACHED, stored by our driver as it paired the connection: our
	 * forked holders agree on a later move here, and the driver marks a
	 * link that goes down. */
	s->offer_word = sl_dev_agree_word(s);
	return 1;
}

/* The link the cluster map names for the peer's address, if the listener
 * registered there: the one its connection most likely came over. */
static int link_for(const struct sl_dev_listen *l, const struct sl_key *peer)
{
	const struct sl_map_entry *e = peer->family ? sl_dev_entry(peer) : NULL;
	int link = e ? sl_dev_link_number(e->device) : -1;

	if (link < 0)
		return -1;
	for (int i = 0; i < l->count; i++)
		if (l->at[i].link == link)
			return i;
	return -1;
}

int sl_dev_each_link(struct sl_sock *s, const struct sl_sock *listener, const struct sl_key *peer,
		     int (*on)(struct sl_sock *s, const struct sl_dev_listen *l, int i))
{
	const struct sl_dev_listen *l = listener->dev_listen;
	int first, r;

	if (!l || !l->count)
		return 0;
	first = link_for(l, peer);
	if (first >= 0 && (r = on(s, l, first)) != 0)
		return r;
	for (int i = 0; i < l->count; i++)
		if (i != first && (r = on(s, l, i)) != 0)
			return r;
	return 0;
}

static int dev_attach(struct sl_sock *s, struct sl_sock *listener, struct sl_key *local, struct sl_key *peer)
{
	(void)local; /* the driver reads the 4-tuple from the accepted socket */
	/* 0: the client did not come over a device: plain TCP */
	return sl_dev_each_link(s, listener, peer, accept_on);
}

/* Does a device connection wait on any of the listener's links?  The
 * driver queued it before the client's SYN left, so by our accept it is
 * there, readable on the endpoint.  One poll for all the links. */
static bool dev_may_attach(struct sl_sock *listener)
{
	const struct sl_dev_listen *l = listener->dev_listen;
	struct pollfd stack[8], *p = stack;
	bool any = false;
	int n;

	if (!l || !l->count)
		return false;
	if (l->count > (int)(sizeof(stack) / sizeof(stack[0])) && !(p = calloc((size_t)l->count, sizeof(*p))))
		return true; /* the full look, then */
	for (int i = 0; i < l->count; i++)
		p[i] = (struct pollfd){ .fd = l->at[i].fd, .events = POLLIN };
	n = sl_sys.poll(p, (nfds_t)l->count, 0);
	any = n != 0; /* an error: the full look */
	if (p != stack)
		free(p);
	return any;
}

static void dev_release(struct sl_sock *s)
{
	void *holders = s->seg, *local = s->dev_map[0], *peer = s->dev_map[1];
	size_t slice = s->dev_slice;
	int fd = s->bell_rx;

	if (!s->seg)
		return;
	sl_segment_unbind(s); /* before the unmap: racing readers see the stand-in */
	s->bell_rx = s->bell_tx = -1;
	s->dev_map[0] = s->dev_map[1] = NULL;
	sl_evq_dev_unmap(s, false);
	munmap(local, slice);
	munmap(peer, slice);
	munmap(holders, SL_PAGE);
	if (s->dev_mirror)
		munmap(s->dev_mirror, sl_dev_ring_for_slice(slice));
	s->dev_mirror = NULL;
	sl_dev_close_quietly(s->memfd);
	s->memfd = -1;
	/* The last reference to the endpoint tells the peer (CLOSE). */
	sl_dev_close_quietly(fd);
}

/* The endpoint's driver reset it (the session it belonged to is over). */
static bool endpoint_reset(struct sl_sock *s)
{
	struct scilan_info in;

	return s->bell_rx >= 0 && sl_sys.ioctl(s->bell_rx, SCILAN_IOC_INFO, &in) == 0 && in.ep_state == SCILAN_EP_RESET;
}

/* A connection its link left, moved to kernel TCP and stripped: the dead
 * session goes, under the connection's three locks (no ring access of ours
 * is under way; racing readers see the stand-in the unbind leaves). */
static void dev_late_retire(struct sl_sock *s)
{
	if (!s->seg || atomic_load(&s->strip_pending) || !sl_fell_back(s) || atomic_load(&s->reset))
		return;
	/* Moved by the peer's fail-over header, which can come before our
	 * own end hears of the link: the endpoint says so then. */
	if (!atomic_load(&s->dev_lost) && !endpoint_reset(s))
		return;
	/* The endpoint's close gives the dead session's slices back. */
	dev_release(s);
	sl_fail_over_forget(s);
	s->offer_word = NULL;
	atomic_store(&s->agree, 0);
	atomic_store(&s->dev_lost, false);
	atomic_store(&s->fail_over_due, false);
}

/* The kernel connect failed after the device connect: the listener's side
 * never gets a kernel connection to pair it with. */
static void dev_offer_withdraw(struct sl_sock *s)
{
	if (s->seg && s->bell_rx >= 0)
		sl_dev_abandon(s->bell_rx);
	dev_release(s);
}

static void dev_stimulate(struct sl_sock *s, int token)
{
	uint32_t t = (uint32_t)token & (SCILAN_TOKEN_DATA | SCILAN_TOKEN_SPACE);

	if (t && s->bell_rx >= 0 && sl_sys.ioctl(s->bell_rx, SCILAN_IOC_STIMULATE, &t) < 0 && errno != ECONNRESET &&
	    errno != EPIPE)
		sl_debug("fd %d: stimulate: %s", s->fd, strerror(errno));
}

static void dev_ring_self(struct sl_sock *s, int token)
{
	uint32_t t = (uint32_t)token & SCILAN_TOKENS_ALL;

	if (t && s->bell_rx >= 0 && sl_sys.ioctl(s->bell_rx, SCILAN_IOC_RING_SELF, &t) < 0)
		sl_debug("fd %d: local wake-up: %s", s->fd, strerror(errno));
}

/* Step 3 of the sleep protocol across PCIe: the full fence drains our
 * write-combining buffers, and a load through the peer mapping returns only
 * after our earlier posted writes (the arm word) reached the peer's memory,
 * since read completions do not pass posted writes. */
static void dev_flush_remote(struct sl_sock *s)
{
	atomic_thread_fence(memory_order_seq_cst);
	(void)atomic_load_explicit(&s->peer_ctl->peer_state, memory_order_acquire);
}

static int dev_drain(struct sl_sock *s)
{
	uint32_t t;
	ssize_t n;
	int seen = 0;

	for (;;) {
		n = sl_sys.read(s->bell_rx, &t, sizeof(t));
		if (n == (ssize_t)sizeof(t)) {
			seen |= (int)(t & SCILAN_TOKENS_ALL);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		break;
	}
	/* Link down: swap the mappings out before the caller stores its arm
	 * word into the peer's (zapped) slice. */
	if (n < 0 && errno == ECONNRESET)
		sl_dev_link_lost(s);
	return seen;
}

static bool dev_peer_gone(struct sl_sock *s)
{
	struct scilan_info in;

	if (s->bell_rx >= 0 && sl_sys.ioctl(s->bell_rx, SCILAN_IOC_INFO, &in) == 0) {
		if (in.ep_state == SCILAN_EP_RESET) {
			sl_dev_link_lost(s);
			/* Failed over: the connection goes on (the next guard moves it). */
			return !atomic_load(&s->fail_over_due);
		}
		/* The driver's CLOSE: the peer's last holder closed or died. */
		if (in.ep_state == SCILAN_EP_PEER_CLOSED)
			return true;
	}
	/* Then the companion connection, as on shm: its end, or the peer's
	 * bytes bypassing the rings, which bypass.c moves (never dropped). */
	return sl_conn_kernel_ended(s);
}

/* The revoke of an undecided offer (agree.c): our driver answers the
 * acceptor's pairing (VERIFY) and our ABANDON under one lock, so exactly
 * one wins; after ours no acceptor reads the ring.  A refusal is the link's
 * loss only when the driver says so (the endpoint reset): any other one
 * would otherwise pass for a flap, which a return retries without end. */
static int dev_offer_revoke(struct sl_sock *s)
{
	int err;

	if (s->bell_rx < 0 || atomic_load(&s->dev_lost))
		return -1;
	if (sl_sys.ioctl(s->bell_rx, SCILAN_IOC_ABANDON) == 0)
		return 1;
	if (errno == EALREADY)
		return 0;
	err = errno;
	sl_debug("fd %d: revoke over the device: %s", s->fd, strerror(err));
	if (endpoint_reset(s))
		return -1;
	errno = err;
	return -2;
}

/* A close must not touch mappings the driver zapped at link down. */
static void dev_before_close(struct sl_sock *s)
{
	struct scilan_info in;

	if (s->bell_rx >= 0 && sl_sys.ioctl(s->bell_rx, SCILAN_IOC_INFO, &in) == 0 && in.ep_state == SCILAN_EP_RESET)
		sl_dev_link_lost(s);
}

static void dev_nothing(struct sl_sock *s)
{
	(void)s;
}

const struct sl_fabric_ops sl_fabric_dev = {
	.name = "dev",
	.listen_register = dev_listen_register,
	.listen_unregister = dev_listen_unregister,
	.listen_withdraw = dev_listen_unregister,
	.lookup = dev_lookup,
	.offer = dev_offer,
	.offer_late = sl_dev_offer_late,
	.take_late = sl_dev_take_late,
	.late_peer_point = sl_dev_late_peer_point,
	.late_publish = sl_dev_late_publish,
	.late_retire = dev_late_retire,
	.offer_withdraw = dev_offer_withdraw,
	.offer_revoke = dev_offer_revoke,
	/* Nothing lingers: the peer's ring lives in the peer's memory, so data
	 * sent before our close survives it without us. */
	.offer_settle = dev_nothing,
	.attach = dev_attach,
	.may_attach = dev_may_attach,
	.stimulate = dev_stimulate,
	.ring_self = dev_ring_self,
	.flush_remote = dev_flush_remote,
	.drain = dev_drain,
	.peer_gone = dev_peer_gone,
	.before_close = dev_before_close,
	.fail_over_refused = sl_dev_fail_over_refused,
	.release = dev_release,
};
