/* rendezvous.c — offers travel as descriptors: the listener's abstract Unix
 * socket (one per network namespace and address) queues one connection per
 * offer; the acceptor takes its own, checked against the kernel's word on
 * who owns each end, and sends the others back to the queue.
 */
#include "fabric/shm/rendezvous.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fabric/shm/rdv_lock.h"
#include "fabric/shm/rdv_msg.h"
#include "fabric/shm/rdv_stash.h"
#include "ring/layout.h"
#include "runtime/bell_fd.h"
#include "runtime/endpoint_key.h"
#include "runtime/fallback.h"
#include "runtime/log.h"
#include "runtime/own_fd.h"
#include "runtime/peer_uid.h"
#include "ring/segment.h"
#include "runtime/sock_diag.h"
#include "runtime/sys.h"
#include "sync/clock.h"
#include "sync/lease_lock.h"

#define RDV_SCAN 128                   /* queue entries one accept looks at */
/* An offer nobody takes is dropped after this many returns.  Each accept
 * of a connection that is not its own returns it once, a plain client's
 * included, and a decided offer is dropped on sight (stale_offer): the
 * limit only bounds what a connector that died undecided leaves cycling. */
#define RDV_MAX_HOPS 1024
_Static_assert(SL_RDV_FDS <= RDV_MSG_FDS, "an offer's descriptors fit a message");

static socklen_t rdv_name(const struct sl_key *key, struct sockaddr_un *sun)
{
	int len = key->family == AF_INET ? 4 : 16, n;

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	/* Abstract (leading NUL): no file to leave behind or to protect, and
	 * one name space per network namespace, as TCP ports are. */
	n = 1 + snprintf(sun->sun_path + 1, sizeof(sun->sun_path) - 1, SL_RDV_NAME_PREFIX "%d-", key->family == AF_INET ? 4 : 6);
	for (int i = 0; i < len; i++)
		n += snprintf(sun->sun_path + n, sizeof(sun->sun_path) - (size_t)n, "%02x", key->addr[i]);
	/* fe80::1 on two interfaces: two listeners, two names. */
	if (key->scope)
		n += snprintf(sun->sun_path + n, sizeof(sun->sun_path) - (size_t)n, "%%%u", (unsigned)key->scope);
	n += snprintf(sun->sun_path + n, sizeof(sun->sun_path) - (size_t)n, "-%u", (unsigned)key->port);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n);
}

int sl_rdv_listen(const struct sl_key *key)
{
	struct sockaddr_un sun;
	socklen_t len = rdv_name(key, &sun);
	int fd = sl_sys.socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), err;

	if (fd < 0)
		return -1;
	/* The backlog bounds the offers waiting for acceptors (each holds a
	 * segment): beyond it, connectors use kernel TCP. */
	if (sl_sys.bind(fd, (struct sockaddr *)&sun, len) < 0 || sl_sys.listen(fd, SOMAXCONN) < 0) {
		err = errno;
		sl_sys.close(fd);
		errno = err;
		return -1;
	}
	return sl_own_fd_lasting(fd);
}

int sl_rdv_connect(const struct sl_key *dst)
{
	struct sockaddr_un sun;
	socklen_t len = rdv_name(dst, &sun);
	int fd = sl_sys.socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	/* Non-blocking: a full queue (EAGAIN) means kernel TCP, not a wait. */
	if (sl_sys.connect(fd, (struct sockaddr *)&sun, len) < 0) {
		sl_sys.close(fd);
		return -1;
	}
	return fd;
}

int sl_rdv_send_unchecked(int conn, int tcp, const struct sl_key *dst, const struct sl_key *src,
			  const int fds[SL_RDV_FDS], unsigned flags)
{
	struct rdv_msg m = { .magic = RDV_MAGIC,
			     .kind = RDV_OFFER,
			     .hops = ((flags & SL_RDV_NAMED) ? RDV_NAMED : 0) | ((flags & SL_RDV_LATE) ? RDV_LATE : 0),
			     .dst = *dst,
			     .src = *src };
	socklen_t cookie_len = sizeof(m.cookie);

	if (sl_sys.getsockopt(tcp, SOL_SOCKET, SO_COOKIE, &m.cookie, &cookie_len) < 0 || !m.cookie)
		return -1;
	return sl_rdv_msg_send(conn, &m, fds, SL_RDV_FDS) == (ssize_t)sizeof(m) ? 0 : -1;
}

int sl_rdv_send(int conn, int tcp, const struct sl_key *dst, const struct sl_key *src, const int fds[SL_RDV_FDS],
		unsigned flags)
{
	struct ucred listener;
	socklen_t len = sizeof(listener);
	uid_t owner;

	/* Anyone may bind an abstract name first: the segment goes only to the
	 * process that made the listener the kernel connects us to. */
	if (sl_sys.getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &listener, &len) < 0 ||
	    sl_diag_tcp_listener_owner(tcp, dst, src, &owner) < 0)
		return -1;
	/* In a user namespace that leaves uids unmapped, a squatter of
	 * another unmapped user would read as the listener's owner. */
	if (!sl_uids_name_users(listener.uid, owner)) {
		sl_info("the scilan listener for port %u or its TCP listener is of a user this user namespace "
			"does not map (uid %u, uid %u), who cannot be told from others; connection uses kernel TCP",
			(unsigned)dst->port, (unsigned)listener.uid, (unsigned)owner);
		sl_fb_hint(SL_FB_UNMAPPED_USER);
		errno = EPERM;
		return -1;
	}
	if (!sl_uid_may_speak_for(listener.uid, owner)) {
		sl_warn("the scilan listener for port %u runs as uid %u but the TCP listener belongs to uid %u; "
			"connection uses kernel TCP", (unsigned)dst->port, (unsigned)listener.uid, (unsigned)owner);
		errno = EPERM;
		return -1;
	}
	return sl_rdv_send_unchecked(conn, tcp, dst, src, fds, flags);
}

/* The offer word of a passed segment; false if it is not one, or cannot be
 * read.  Checked before the read: anyone can queue here, and a file on a
 * mount that never answers (FUSE, a hung NFS) would hold our accept. */
static bool read_offer_word(int seg, uint32_t *word)
{
	struct stat st;

	*word = 0;
	return sl_segment_fd_check(seg, &st) == 0 &&
	       pread(seg, word, sizeof(*word), SL_SEG_OFFER_OFF) == (ssize_t)sizeof(*word);
}

/* Decided by its connector (revoked, refused, attached elsewhere, or zeros
 * once punched): nobody's to take.  LOST is not: its acceptor must see it. */
static bool offer_decided(uint32_t word)
{
	return word != SL_OFFER_OFFERED && word != SL_OFFER_LOST;
}

/* An offer for another connection that is no longer worth returning. */
static bool stale_offer(int e)
{
	struct rdv_msg m;
	int fds[SL_RDV_FDS];
	uint32_t word;
	bool stale;

	if (sl_rdv_msg_recv(e, &m, fds, SL_RDV_FDS, MSG_PEEK, false) < 0)
		return true;
	stale = !read_offer_word(fds[0], &word) || offer_decided(word);
	sl_rdv_close_fds(fds, SL_RDV_FDS);
	return stale;
}

static void send_back(int l, int e, uint32_t hops)
{
	struct sockaddr_un sun;
	socklen_t len = sizeof(sun);

	if (sl_sys.getsockname(l, (struct sockaddr *)&sun, &len) == 0)
		sl_rdv_requeue(&sun, len, e, hops);
	else
		sl_sys.close(e);
}

void sl_rdv_send_back(int l, int e)
{
	send_back(l, e, 0);
}

/* Entries that are not ours go back to the queue only when the scan ends:
 * queued again at once, one would meet us again in the same scan, and again,
 * until its hop limit dropped it (an accept of a plain client's connection
 * finds no offer of its own and so scans to the end).  Two kinds:
 * - a connector between its rendezvous connect and its send (it sends before
 *   its TCP connect, so this is never the offer of a connection we
 *   accepted); dropping it, as a malformed entry, lost that offer (EPIPE on
 *   its send);
 * - an offer for another connection, where the process does not keep them
 *   (the stash).
 * One scan takes at most RDV_SCAN entries from the queues, so all fit. */
#define RDV_LATER RDV_SCAN

/* An entry taken from a queue that is not ours: sent back as the scan ends. */
struct set_aside {
	int l, e;
	uint32_t hops;
};

struct scan {
	bool keep; /* others' offers go to the stash, not back to the queue */
	bool late; /* a look for a late offer (promotion), not an accept */
	int tcp;
	/* The accepted connection's keys, read from tcp when an offer is
	 * first compared (sl_conn_keys): a plain client's costs none. */
	struct sl_key *local, *peer;
	/* The kernel's word on the other end of tcp, asked once, when an
	 * offer needs it: asked (1 known, -1 unknown with err), its owner
	 * and its socket. */
	int end_asked, end_err;
	uid_t end_uid;
	uint64_t end_cookie;
	int *fds;
	bool *named;
	int nlater;
	struct set_aside *later; /* RDV_LATER of them, [0, nlater) in use */
};

/* Who holds the other end of the connection we accepted: 0, or -1 with errno. */
static int other_end(struct scan *sc)
{
	if (!sc->end_asked) {
		sc->end_asked = sl_conn_keys(sc->tcp, sc->local, sc->peer) == 0 &&
						sl_diag_tcp_identity(sc->tcp, sc->peer, sc->local, &sc->end_uid,
								     &sc->end_cookie) == 0
					? 1
					: -1;
		sc->end_err = errno;
	}
	errno = sc->end_err;
	return sc->end_asked > 0 ? 0 : -1;
}

/* Is an offer for (dst, src) by socket cookie the one for our connection?
 * By its port when the connector knew it, else by its socket. */
static bool for_us(struct scan *sc, const struct sl_key *dst, const struct sl_key *src, uint64_t cookie)
{
	if (sl_conn_keys(sc->tcp, sc->local, sc->peer) < 0 || !sl_key_same(dst, sc->local))
		return false;
	if (src->port)
		return sl_key_same(src, sc->peer);
	return cookie && other_end(sc) == 0 && cookie == sc->end_cookie;
}

/* One scan at a time in this process (see "Offers in flight"), taken first. */
static pthread_mutex_t scan_mutex = PTHREAD_MUTEX_INITIALIZER;

static bool stash_match(void *ctx, const struct sl_key *dst, const struct sl_key *src, uint64_t cookie)
{
	return for_us(ctx, dst, src, cookie);
}

/* The kept offer of our kind for our connection, or -1. */
static int stash_take(struct scan *sc, uint32_t *hops)
{
	/* Asked outside the stash's lock: a kept offer that names its socket
	 * needs it.  Only then: a late offer kept for another connection must
	 * not cost every later accept a question to sock_diag. */
	if (sl_rdv_stash_any() && sl_rdv_stash_names_socket(sc->late))
		other_end(sc);
	return sl_rdv_stash_take(sc->late, stash_match, sc, hops);
}

void sl_rdv_forget_listener(int l)
{
	if (l >= 0)
		sl_rdv_stash_release(l, false);
}

void sl_rdv_fork_lock(void)
{
	pthread_mutex_lock(&scan_mutex);
	sl_rdv_stash_fork_lock();
}

void sl_rdv_fork_unlock(bool child)
{
	sl_rdv_stash_fork_unlock(child);
	if (child)
		pthread_mutex_init(&scan_mutex, NULL);
	else
		pthread_mutex_unlock(&scan_mutex);
}

static bool is_unix_stream(int fd)
{
	int domain = 0, type = 0;
	socklen_t len = sizeof(int);

	return sl_sys.getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 && domain == AF_UNIX &&
	       (len = sizeof(int), sl_sys.getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len)) == 0 &&
	       type == SOCK_STREAM;
}

static void set_aside(struct scan *sc, int l, int e, uint32_t hops)
{
	if (hops >= RDV_MAX_HOPS) {
		sl_sys.close(e);
	} else if (sc->nlater == RDV_LATER) {
		send_back(l, e, hops);
	} else {
		sc->later[sc->nlater].l = l;
		sc->later[sc->nlater].e = e;
		sc->later[sc->nlater].hops = hops;
		sc->nlater++;
	}
}

/* One queue entry e (ours to close): 1 if it was our offer (fds filled),
 * SL_RDV_PARTIAL if it was but not all of its descriptors fit. */
static int consider(struct scan *sc, int l, int e, uint32_t hops)
{
	struct rdv_msg m;
	struct ucred who;
	socklen_t len = sizeof(who);
	uint32_t word;
	int inner, r;
	bool ours;
	enum sl_bell_from from;
	ssize_t got = sl_sys.recv(e, &m, sizeof(m), MSG_PEEK | MSG_DONTWAIT);

	if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		set_aside(sc, l, e, hops);
		return 0;
	}
	if (got != (ssize_t)sizeof(m) || m.magic != RDV_MAGIC)
		goto drop;
	if (m.kind == RDV_CARRIER) {
		/* Carriers carry offers, never carriers. */
		if (hops || sl_rdv_msg_recv(e, &m, &inner, 1, 0, false) < 0)
			goto drop;
		sl_sys.close(e);
		if (!is_unix_stream(inner)) {
			sl_sys.close(inner);
			return 0;
		}
		return consider(sc, l, inner, m.hops ? m.hops : 1);
	}
	if (m.kind != RDV_OFFER)
		goto drop;
	/* The other kind for our connection: a late offer at its accept (the
	 * connection is not live yet), or a connect's offer at a look (its
	 * accept took or refused it): never ours to take, and no one else's. */
	ours = for_us(sc, &m.dst, &m.src, m.cookie);
	if (ours && ((m.hops & RDV_LATE) != 0) != sc->late)
		goto drop;
	if (!ours) {
		if (hops >= RDV_MAX_HOPS)
			goto drop;
		if (sc->keep && sl_rdv_stash_put(l, e, hops, &m))
			return 0;
		if (stale_offer(e))
			goto drop;
		set_aside(sc, l, e, hops);
		return 0;
	}
	/* For our connection: only from whoever owns its other end, by the
	 * kernel's word (SO_PEERCRED of the connector, sock_diag of the socket);
	 * anything else local could have connected here and said so. */
	if (sl_sys.getsockopt(e, SOL_SOCKET, SO_PEERCRED, &who, &len) < 0 ||
	    (r = sl_rdv_msg_recv(e, &m, sc->fds, SL_RDV_FDS, 0, true)) < 0)
		goto drop;
	sl_sys.close(e);
	if (other_end(sc) < 0) {
		sl_info("cannot tell who owns the other end of port %u (%s); connection uses kernel TCP",
			(unsigned)sc->local->port, strerror(errno));
		sl_fb_hint(SL_FB_OTHER); /* an offer came: not `no-offer` */
		sl_rdv_close_fds(sc->fds, SL_RDV_FDS);
		return 0;
	}
	/* Both uids read as the overflow uid where our user namespace leaves
	 * theirs unmapped: a stranger would pass for the connection's owner.
	 * Refused, so that the real client, which cannot be told from one,
	 * moves to kernel TCP at once instead of waiting out its agreement:
	 * written only into the offer's own segment (sl_segment_refuse checks
	 * it first), and a stranger learns that the connection exists, which
	 * sock_diag tells anyone in this namespace. */
	if (!sl_uids_name_users(who.uid, sc->end_uid)) {
		sl_info("offer for a connection of uid %u made by pid %d (uid %u): one of them is a user this "
			"user namespace does not map, who cannot be told from others; refused, connection uses "
			"kernel TCP",
			(unsigned)sc->end_uid, (int)who.pid, (unsigned)who.uid);
		sl_fb_hint(SL_FB_UNMAPPED_USER);
		sl_segment_refuse(sc->fds[0], sc->fds[1]);
		sl_rdv_close_fds(sc->fds, SL_RDV_FDS);
		return 0;
	}
	/* Not the offer for this connection as far as we can tell: nothing is
	 * written into it (its maker may have named our 4-tuple to see what
	 * we do); a real client whose user changed between its socket and its
	 * connect finds out after its agreement bound. */
	if (!sl_uid_may_speak_for(who.uid, sc->end_uid)) {
		sl_warn("offer for a connection of uid %u made by pid %d (uid %u) ignored", (unsigned)sc->end_uid,
			(int)who.pid, (unsigned)who.uid);
		sl_fb_hint(SL_FB_BAD_OFFER);
		sl_rdv_close_fds(sc->fds, SL_RDV_FDS);
		return 0;
	}
	/* Withdrawn before we looked, maybe by an earlier connect of the same
	 * socket (tried again after a timeout: the same cookie), whose own
	 * offer waits behind this one: taking this alone put us on kernel TCP
	 * while that connector waited out its agreement on the rings.  So it
	 * is passed over in this same scan.  (Withdrawn after this look, it is
	 * the connection's own: attach_segment says kernel TCP then.) */
	if (!sc->late && read_offer_word(sc->fds[0], &word) && offer_decided(word)) {
		sl_fb_hint(SL_FB_REVOKED);
		sl_rdv_close_fds(sc->fds, SL_RDV_FDS);
		return 0;
	}
	/* The bells become ours (runtime/bell_fd.c): the connector keeps the
	 * descriptions it passed and could turn them against us later. */
	sc->fds[0] = sl_own_fd(sc->fds[0]);
	from = who.uid == geteuid() ? SL_BELL_OUR_USER : SL_BELL_STRANGER;
	for (int i = 1; i < SL_RDV_FDS; i++) {
		bool missing = sc->fds[i] < 0;

		sc->fds[i] = sl_bell_adopt(sc->fds[i], from);
		if (sc->fds[i] >= 0 || missing)
			continue;
		/* Its user's named FIFO (an offer named for a listener another
		 * process may hold), which ours may not open, or not where we
		 * may (our runtime directory's mount): no attack, but an offer
		 * of another user that this process may not read. */
		if (from == SL_BELL_STRANGER && (errno == EACCES || errno == EPERM)) {
			sl_fb_hint(SL_FB_UNREADABLE_OFFER);
			sl_info("offer by pid %d (uid %u) passed a wake-up FIFO this user may not open (%s); "
				"connection uses kernel TCP", (int)who.pid, (unsigned)who.uid, strerror(errno));
		} else {
			sl_warn("offer by pid %d (uid %u) passed a wake-up bell we cannot use (%s); connection uses "
				"kernel TCP", (int)who.pid, (unsigned)who.uid, strerror(errno));
		}
	}
	*sc->named = (m.hops & RDV_NAMED) != 0;
	return r == 1 ? SL_RDV_PARTIAL : 1;
drop:
	sl_sys.close(e);
	return 0;
}

/* Before the unlock: the next acceptor must find them in the queue. */
static void scan_end(struct scan *sc, const int *ls, struct sl_lease_lock *const *gates, int n, uint64_t held)
{
	for (int i = 0; i < sc->nlater; i++)
		send_back(sc->later[i].l, sc->later[i].e, sc->later[i].hops);
	sc->nlater = 0;
	sl_rdv_queues_unlock(ls, gates, n, held);
}

/* Which of ls[0..n) have a connection queued, in waiting[].  An accept4
 * that finds a queue empty costs several times a poll of it (the kernel
 * makes the new socket and its file before it looks), and most accepts of
 * a server with plain or short-lived clients find every queue empty.  What
 * a poll cannot tell (it failed: a sandbox's filter) counts as waiting. */
static void queues_waiting(const int *ls, int n, bool *waiting)
{
	struct pollfd p[SL_MAX_REG];
	int at[SL_MAX_REG], k = 0;

	for (int i = 0; i < n; i++) {
		waiting[i] = false;
		if (ls[i] >= 0) {
			p[k] = (struct pollfd){ .fd = ls[i], .events = POLLIN };
			at[k++] = i;
		}
	}
	if (k && sl_sys.poll(p, (nfds_t)k, 0) < 0) {
		for (int j = 0; j < k; j++)
			waiting[at[j]] = true;
		return;
	}
	for (int j = 0; j < k; j++)
		waiting[at[j]] = p[j].revents != 0;
}

/* locked: no other acceptor holds an entry of these queues. */
static int scan_queues(struct scan *sc, const int *ls, int n, bool locked)
{
	/* Kept offers are looked at once each: the whole queue may be. */
	int budget = sc->keep ? SL_RDV_STASH : RDV_SCAN, r;
	uint32_t hops;
	int e;

	if (sc->keep && (e = stash_take(sc, &hops)) >= 0 && (r = consider(sc, -1, e, hops)))
		return r;

	/* Unlocked, a second look when the first saw others' offers: another
	 * acceptor may have been sending ours back to the queue meanwhile. */
	for (int pass = 0;; pass++) {
		bool others = false, waiting[SL_MAX_REG];

		queues_waiting(ls, n, waiting);
		for (int i = 0; i < n; i++) {
			if (!waiting[i])
				continue;
			while (budget > 0) {
				int e = sl_sys.accept4(ls[i], NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

				if (e < 0) {
					/* No number for a look into the queue (the kernel
					 * asks for one first): whatever waits there is lost
					 * to us for want of descriptors. */
					if (errno == EMFILE || errno == ENFILE)
						sl_fb_hint(SL_FB_RESOURCE);
					break;
				}
				budget--;
				if ((r = consider(sc, ls[i], e, 0)))
					return r;
				others = true;
			}
		}
		if (!others || locked || pass == 1)
			break;
		sched_yield();
	}
	return 0;
}

int sl_rdv_take(const int *ls, struct sl_lease_lock *const *gates, int n, int tcp, struct sl_key *local,
		struct sl_key *peer, int fds[SL_RDV_FDS], bool *named, bool alone, bool late)
{
	/* Apart from sc, which an initializer zeroes whole: 1.5 KiB cleared
	 * at every accept, nearly always to set nothing aside. */
	struct set_aside later[RDV_LATER];
	struct scan sc = { .keep = alone, .late = late, .tcp = tcp, .local = local, .peer = peer,
			   .fds = fds, .named = named, .later = later };
	int64_t deadline = sl_mono_ns() + (int64_t)RDV_LOCK_WAIT_MS * 1000000;
	struct timespec until;
	uint64_t held = 0;
	bool mine, locked;
	int r;

	_Static_assert(4 * SL_MAX_REG <= sizeof(held) * 8, "four bits of held per queue");
	if (n > SL_MAX_REG)
		n = SL_MAX_REG;
	/* Bounded too (an accept in a signal handler that interrupted ours).
	 * Without it the record lock is not ours to take: it is the process's,
	 * and its holder is the thread that has scan_mutex. */
	/* timedlock's clock is the wall clock (a step of it moves this bound
	 * only); clocklock would take the monotonic one, but the thread
	 * sanitizer does not know it and reports every unlock. */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += (long)RDV_LOCK_WAIT_MS * 1000000;
	until.tv_sec += until.tv_nsec / 1000000000;
	until.tv_nsec %= 1000000000;
	mine = pthread_mutex_timedlock(&scan_mutex, &until) == 0;
	/* Alone, the process's own threads are all the acceptors there are. */
	locked = mine && (alone || sl_rdv_queues_lock(ls, gates, n, deadline, &held));
	if (!alone) /* shared since it kept some: its other acceptors look there */
		for (int i = 0; i < n; i++)
			if (ls[i] >= 0)
				sl_rdv_stash_release(ls[i], true);
	if (!locked && !alone)
		sl_rdv_unlocked_scan_say(ls, n, &held);
	r = scan_queues(&sc, ls, n, locked);
	if (!r && mine && !alone && sl_rdv_scan_maybe_robbed(ls, gates, n, held, locked)) {
		/* An acceptor that waited too long for the locks scanned beside
		 * us and may hold the offer for our connection, which it sends
		 * back as its scan ends: wait for that, then look again.  With
		 * nothing held meanwhile (the others' offers we set aside, the
		 * locks), or the acceptors behind us would lose their terms, and
		 * their offers, to our wait. */
		int64_t until = sl_mono_ns() + (int64_t)RDV_STRANDED_WAIT_MS * 1000000;

		scan_end(&sc, ls, gates, n, held);
		sl_rdv_await_others(ls, gates, n, until);
		locked = sl_rdv_queues_lock(ls, gates, n, until, &held);
		if (!locked)
			sl_rdv_unlocked_scan_say(ls, n, &held);
		r = scan_queues(&sc, ls, n, locked);
	}
	scan_end(&sc, ls, gates, n, held);
	if (mine)
		pthread_mutex_unlock(&scan_mutex);
	return r;
}
