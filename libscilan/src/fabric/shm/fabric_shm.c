/* fabric_shm.c — the shared-memory fabric: segments are sealed memfds, the
 * connecting side publishes an offer file keyed by the TCP 4-tuple before its
 * kernel connect, the accepting side opens the memfd through /proc; wake-ups
 * are single bytes on two FIFOs beside the offer.
 */
#include <ifaddrs.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "conn/agree.h"
#include "conn/conn.h"
#include "conn/promote.h"
#include "process/holders.h"
#include "runtime/fallback.h"
#include "sync/barrier.h"
#include "sync/fence_policy.h"
#include "runtime/cluster_map.h"
#include "runtime/endpoint_key.h"
#include "runtime/config.h"
#include "evq/evq.h"
#include "fabric/fabric.h"
#include "runtime/log.h"
#include "fabric/shm/offer.h"
#include "fabric/shm/offer_port.h"
#include "runtime/own_fd.h"
#include "fabric/shm/registry.h"
#include "fabric/shm/rendezvous.h"
#include "fabric/shm/shm_attach.h"
#include "runtime/rundir_sweep.h"
#include "runtime/sock_diag.h"
#include "fabric/shm/seg_pool.h"
#include "ring/segment.h"
#include "fabric/shm/bells.h"
#include "fabric/shm/offer_names.h"
#include "runtime/bell_fd.h"
#include "runtime/sys.h"
#include "sync/lease_lock.h"

static bool is_dual_stack_wildcard(const struct sl_sock *s, const struct sl_key *local)
{
	static const unsigned char any[16];
	int v6only = 0;
	socklen_t len = sizeof(v6only);

	if (local->family != AF_INET6 || memcmp(local->addr, any, 16) != 0)
		return false;
	return sl_sys.getsockopt(s->fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &len) == 0 && !v6only;
}

/* The process is about to run under another user: this user's runtime
 * directory and the offer files in it will be closed to it, so its registry
 * entries must stop inviting connectors to write offers there (other
 * holders of the entry included: a forked server whose workers drop
 * privileges accepts only in them).  The rendezvous stays: offers come
 * through it as descriptors, whatever our user. */
static void shm_listen_withdraw(struct sl_sock *s)
{
	for (int i = 0; i < SL_MAX_REG; i++) {
		/* The mapping holds the entry's open file, and with it our
		 * lock: gone first, or the entry would look claimed. */
		sl_registry_unmap_flags(s->reg_flags[i]);
		s->reg_flags[i] = NULL;
		if (s->reg_fd[i] >= 0)
			sl_registry_withdraw(s->reg_fd[i], s->reg_path[i]);
		s->reg_fd[i] = -1;
	}
}

static void shm_listen_unregister(struct sl_sock *s)
{
	for (int i = 0; i < SL_MAX_REG; i++) {
		/* The mapping holds the entry's open file, and with it our
		 * lock: gone first, or the entry would look claimed. */
		sl_registry_unmap_flags(s->reg_flags[i]);
		s->reg_flags[i] = NULL;
		if (s->reg_fd[i] >= 0)
			sl_registry_remove(s->reg_fd[i], s->reg_path[i]);
		s->reg_fd[i] = -1;
		sl_rdv_forget_listener(s->rdv_fd[i]);
		sl_own_fd_close(s->rdv_fd[i]);
		s->rdv_fd[i] = -1;
		sl_lease_lock_free(s->rdv_gate[i]);
		s->rdv_gate[i] = NULL;
	}
}

/* Do connectors of our user name their offers as files for key `slot` of
 * listener s (the registry's SL_REG_NAMED)?  When it has no rendezvous for
 * that key, or another process may hold the socket and accept on it
 * without one. */
static bool offers_named(const struct sl_sock *s, int slot)
{
	return s->rdv_fd[slot] < 0 || sl_sock_maybe_shared(s);
}

/* Publish one address: its rendezvous socket, which any user of this network
 * namespace can reach, and its registry entry, which tells the user's own
 * connectors the ring size we want and is what other namespaces of the same
 * node find (emulated nodes: an abstract name does not cross namespaces).
 * Either will do. */
static int register_key(struct sl_sock *s, int slot, const struct sl_key *key)
{
	s->rdv_fd[slot] = sl_rdv_listen(key);
	if (s->rdv_fd[slot] >= 0)
		s->rdv_gate[slot] = sl_lease_lock_new();
	if (s->rdv_fd[slot] < 0 && errno == EADDRINUSE)
		sl_info("fd %d: another listener holds the scilan rendezvous for port %u; only connections "
			"of this user reach this one", s->fd, (unsigned)key->port);
	/* A socket another process may hold (inherited before this listen,
	 * passed, adopted) may be accepted on there without the rendezvous. */
	s->reg_fd[slot] = sl_registry_add(key, s->ring_bytes, offers_named(s, slot),
					  s->reg_path[slot], sizeof(s->reg_path[slot]));
	if (s->reg_fd[slot] >= 0)
		s->reg_flags[slot] = sl_registry_map_flags(s->reg_fd[slot]);
	return s->rdv_fd[slot] >= 0 || s->reg_fd[slot] >= 0 ? 0 : -1;
}

/* Is addr assigned to an interface of our network namespace? */
static bool address_is_ours(const struct sl_key *addr)
{
	struct ifaddrs *ifs, *i;
	bool ours = false;

	if (getifaddrs(&ifs) < 0)
		return false;
	for (i = ifs; i && !ours; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != addr->family)
			continue;
		if (addr->family == AF_INET)
			ours = memcmp(&((struct sockaddr_in *)i->ifa_addr)->sin_addr, addr->addr, 4) == 0;
		else
			ours = memcmp(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, addr->addr, 16) == 0;
	}
	freeifaddrs(ifs);
	return ours;
}

/* A wildcard listener is also published under each cluster-map address of
 * this namespace, the names peers on other nodes look up. */
static int register_map_aliases(struct sl_sock *s, const struct sl_key *local, bool dual_stack)
{
	static const unsigned char any[16];
	const struct sl_cluster_map *map = &sl_config()->map;
	int slot = 2;

	if (memcmp(local->addr, any, local->family == AF_INET ? 4 : 16) != 0)
		return 0;
	for (size_t i = 0; i < map->count && slot < SL_MAX_REG; i++) {
		struct sl_key alias = map->entries[i].addr;

		if (map->entries[i].fabric != SL_MAP_SHM ||
		    (alias.family != local->family && !(dual_stack && alias.family == AF_INET)) ||
		    !address_is_ours(&alias))
			continue;
		alias.port = local->port;
		if (register_key(s, slot, &alias) < 0)
			return -1;
		slot++;
	}
	return 0;
}

static int shm_listen_register(struct sl_sock *s, const struct sl_key *local)
{
	bool dual_stack = is_dual_stack_wildcard(s, local);

	struct sl_key v4_any = { .family = AF_INET, .port = local->port };

	/* Listening is rare and slow anyway: a place to tidy up after the dead. */
	sl_rundir_sweep(SL_SWEEP_BUDGET);

	if (register_key(s, 0, local) < 0)
		return -1;
	/* A dual-stack [::] listener also takes IPv4 connections. */
	if (dual_stack) {
		if (register_key(s, 1, &v4_any) < 0) {
			shm_listen_unregister(s);
			return -1;
		}
	}
	if (register_map_aliases(s, local, dual_stack) < 0) {
		shm_listen_unregister(s);
		return -1;
	}
	return 0;
}

/* The rendezvous first: it reaches listeners of any user.  The registry
 * then only says which ring size our own user's listener wants (else it
 * gets ours), and whether one of its holders accepts without the rendezvous
 * (SL_REG_NAMED): only then does the offer need its files.  Without a
 * rendezvous (another namespace of this node), the registry's offer file
 * and /proc are the way. */
static int shm_lookup(struct sl_sock *s, const struct sl_key *dst, uint64_t *peer_ring)
{
	int conn = sl_rdv_connect(dst);
	uint32_t flags = 0;

	if (conn < 0) {
		/* An entry named within our namespace, or one of an address the
		 * cluster map gives a node, which is here when the address is. */
		s->listener_here = !sl_cluster_map_find(&sl_config()->map, dst) || address_is_ours(dst);
		if (!sl_registry_find(dst, peer_ring, &flags))
			return 0;
		/* The offer file's pid would name nobody there (or someone
		 * else): the acceptor could not open our segment, and we would
		 * wait out the agreement's second for nothing. */
		if (flags & SL_REG_OTHER_PIDNS) {
			sl_info("the listener for port %u is in another pid namespace; connection uses kernel TCP",
				(unsigned)dst->port);
			sl_fb_hint(SL_FB_PID_NAMESPACE);
			return 0;
		}
		return 1;
	}
	s->listener_here = true; /* an abstract name lives in one namespace */
	if (s->rdv_conn >= 0)
		sl_sys.close(s->rdv_conn);
	s->rdv_conn = conn;
	if (!sl_registry_find(dst, peer_ring, &flags)) {
		/* Not our user's listener, or one that withdrew its entry
		 * (it changed user): our runtime directory is closed to it. */
		*peer_ring = s->ring_bytes;
		s->rdv_only = true;
		return 1;
	}
	if (!*peer_ring)
		*peer_ring = s->ring_bytes;
	/* Named offers are opened through /proc, by our pid: not by an
	 * acceptor of another pid namespace. */
	s->rdv_only = !(flags & SL_REG_NAMED) || (flags & SL_REG_OTHER_PIDNS);
	return 1;
}

/* A listener of our network namespace: its acceptor asks the kernel for
 * the socket at the other end, through the rendezvous or for an offer file
 * named by it.  Another namespace's kernel does not answer: its acceptors
 * find our offer file by the 4-tuple. */
static bool shm_offer_by_socket(const struct sl_sock *s)
{
	return s->listener_here;
}

static int write_offer(const char *path, const struct offer *offer)
{
	char tmp[SL_OFFER_PATH_SIZE + 24];
	int fd, err;

	if (snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, offer->memfd) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -1;
	if (sl_sys.write(fd, offer, sizeof(*offer)) != (ssize_t)sizeof(*offer)) {
		err = errno ? errno : ENOSPC;
		goto fail;
	}
	sl_sys.close(fd);
	/* link, not rename: the accepting side sees the whole offer or none of
	 * it, and an offer of the same name is never replaced (EEXIST). */
	err = link(tmp, path) < 0 ? errno : 0;
	unlink(tmp);
	errno = err;
	return err ? -1 : 0;
fail:
	sl_sys.close(fd);
	unlink(tmp);
	errno = err;
	return -1;
}

_Atomic uint32_t *sl_shm_offer_word(void *seg)
{
	return (_Atomic uint32_t *)((unsigned char *)seg + SL_SEG_OFFER_OFF);
}

/* Before any data moves: tell the peer whether our sends fence, so that it
 * knows to pay for the fence with membarrier when it sleeps (barrier.h),
 * and that we mark its epoll sets (evq.c), as whom. */
void sl_shm_publish_unfenced(struct sl_sock *s, uint32_t state)
{
	sl_evq_publish_marker(s->peer_ctl);
	s->fence_owner = sl_barrier_unfenced_ok();
	s->tx.unfenced = s->fence_owner && sl_fence_start_unfenced();
	if (s->tx.unfenced)
		state |= SL_PEER_UNFENCED;
	sl_segment_set_state(s, state | SL_PEER_EVQ);
}

void sl_shm_close_bells(struct sl_sock *s)
{
	int err = errno;

	sl_own_fd_close(s->bell_rx);
	sl_own_fd_close(s->bell_tx);
	s->bell_rx = s->bell_tx = -1;
	errno = err;
}

/* Only the FIFOs we made are ours to remove: the offer name was not taken. */
static void unlink_own_bells(struct sl_sock *s)
{
	int err = errno;

	for (int i = 0; i < 2; i++) {
		char bell[SL_BELL_PATH_SIZE];

		if ((i == 0 ? s->bell_rx : s->bell_tx) < 0)
			continue;
		if (sl_shm_bell_path(s->offer_path, i, bell, sizeof(bell)) == 0)
			unlink(bell);
	}
	errno = err;
}

/* late: a live connection's offer (promotion): its segment says so, and
 * the agreement does not start, as the connection stays on kernel TCP until
 * the acceptor's claim (conn/promotion.c). */
static int make_offer(struct sl_sock *s, const struct sl_key *dst, const struct sl_key *src, uint64_t peer_ring,
		      bool late)
{
	struct sl_seg_header hdr;
	struct offer offer = { .magic = OFFER_MAGIC, .pid = sl_self_pid };
	struct sl_made made;
	void *base;
	int fd, err;
	/* Named (an offer file and FIFOs in our runtime directory) when the
	 * listener has no rendezvous, or the registry says a holder of it
	 * accepts without one (an SO_REUSEPORT sibling, a process that made a
	 * passed socket listen): that process of our user finds the offer
	 * there.  Passed through the rendezvous when the listener has one:
	 * that reaches any user.  Whichever way the acceptor comes, the offer
	 * word decides once.  Names cost a third of a short connection's
	 * set-up (a file written, linked and removed, two FIFOs). */
	uint64_t cookie = 0;
	socklen_t cookie_len = sizeof(cookie);
	bool via_rdv = false;
	/* A late offer travels through the rendezvous alone: the acceptor's
	 * look reads nothing else. */
	bool named = !late && !(s->rdv_conn >= 0 && s->rdv_only) &&
		     (src->port || sl_sys.getsockopt(s->fd, SOL_SOCKET, SO_COOKIE, &cookie, &cookie_len) == 0) &&
		     sl_shm_offer_path(dst, src, cookie, s->offer_path, sizeof(s->offer_path)) == 0;

	if (!named && s->rdv_conn < 0) {
		errno = ENOENT; /* no name and no rendezvous: nobody to offer to */
		return -1;
	}
	/* Its acceptor looks into the queue only for a marked client port
	 * (offer_port.h): ours must be one, or no offer is made at connect (a
	 * file, which a look by socket finds, would cost that acceptor more
	 * than the look we save others). */
	s->port_confined = false;
	if (s->rdv_conn >= 0 && !late) {
		/* A range the program set is its own to keep. */
		int confined = s->own_port_range ? (errno = EADDRNOTAVAIL, -1) : sl_offer_port_confine(s->fd);

		if (confined < 0) {
			sl_info("fd %d: no offer at connect from a port outside %u-%u (%m)", s->fd,
				SL_OFFER_PORT_LO, SL_OFFER_PORT_HI);
			sl_fb_hint(SL_FB_PORT_RANGE);
			return -1;
		}
		s->port_confined = confined > 0;
	}
	if (!named)
		s->offer_path[0] = '\0';
	/* The janitor's round, at our next wait: not on the connect path. */
	sl_rundir_sweep_soon();
	sl_segment_layout(&hdr, s->ring_bytes, peer_ring);
	/* Made ahead while we waited after our last connect, if it fits. */
	if (sl_seg_make(&hdr, !named, &made) < 0)
		goto fail_path;
	fd = made.fd;
	base = made.base;
	/* Before anything publishes the segment: an acceptor tells a late
	 * offer from a connect's by it, and takes each only where it fits. */
	if (late)
		sl_promote_seam_init(base);
	s->bell_rx = made.bell_rx;
	s->bell_tx = made.bell_tx;
	offer.memfd = fd;
	offer.ino = made.ino;
	offer.dev = made.dev;
	if (named) {
		s->bell_rx = sl_shm_open_bell(s->offer_path, 0, true);
		if (s->bell_rx >= 0)
			s->bell_tx = sl_shm_open_bell(s->offer_path, 1, true);
		if (s->bell_rx < 0 || s->bell_tx < 0 || write_offer(s->offer_path, &offer) < 0) {
			/* The directory is not ours to write any more (we changed
			 * user since it was chosen), or the name is taken: the
			 * rendezvous alone, if there is one. */
			if (s->rdv_conn < 0)
				goto fail_bells;
			unlink_own_bells(s);
			sl_shm_close_bells(s);
			s->offer_path[0] = '\0';
			named = false;
			s->bell_rx = sl_anon_bell();
			s->bell_tx = sl_anon_bell();
			if (s->bell_rx < 0 || s->bell_tx < 0)
				goto fail_map;
		}
	}
	if (s->rdv_conn >= 0) {
		/* Other descriptions of our bells than the ones we use: flags
		 * are a description's, and the acceptor (maybe another user)
		 * could clear O_NONBLOCK on ours. */
		int fds[SL_RDV_FDS] = { fd, sl_bell_reopen(s->bell_rx, SL_BELL_OUR_USER),
					sl_bell_reopen(s->bell_tx, SL_BELL_OUR_USER) };
		int sent = fds[1] >= 0 && fds[2] >= 0 ? sl_rdv_send(s->rdv_conn, s->fd, dst, src, fds,
										  (named ? SL_RDV_NAMED : 0) |
										      (late ? SL_RDV_LATE : 0))
								    : -1;

		err = errno;
		for (int i = 1; i < SL_RDV_FDS; i++)
			if (fds[i] >= 0)
				sl_sys.close(fds[i]);
		errno = err;
		/* Refused (a listener we do not trust, a full queue): the offer
		 * file alone, for our own user's acceptors. */
		if (sent < 0 && !named)
			goto fail_map;
		via_rdv = sent >= 0;
		/* The offer waits in the listener's queue, not in our socket. */
		sl_sys.close(s->rdv_conn);
		s->rdv_conn = -1;
	}
	/* Only as files: a holder of the rendezvous, which looks for files
	 * only when told, must look for this one (registry.h). */
	if (named && !via_rdv)
		sl_registry_note_file_only(dst);
	s->memfd = fd;
	sl_segment_bind(s, base, hdr.total_size, 0, &hdr);
	if (late)
		s->offer_word = sl_shm_offer_word(base);
	else
		sl_agree_start(s, sl_shm_offer_word(base));
	sl_shm_publish_unfenced(s, 0);
	sl_seg_pool_note_offer(&hdr, !named);
	return 0;
fail_bells:
	unlink_own_bells(s);
fail_map:
	sl_shm_close_bells(s);
	err = errno;
	munmap(base, hdr.total_size);
	sl_own_fd_close(fd);
	errno = err;
fail_path:
	if (errno != EPERM) /* EPERM: a listener we do not trust, said already */
		sl_warn("cannot offer a shared segment (%s); connection uses kernel TCP", strerror(errno));
	s->offer_path[0] = '\0';
	return -1;
}

static int shm_offer(struct sl_sock *s, const struct sl_key *dst, const struct sl_key *src, uint64_t peer_ring)
{
	return make_offer(s, dst, src, peer_ring, false);
}

static int shm_offer_late(struct sl_sock *s, const struct sl_key *dst, const struct sl_key *src, uint64_t peer_ring)
{
	return make_offer(s, dst, src, peer_ring, true);
}

/* In the segment's header page, each side's word (promote.h). */
static const _Atomic uint64_t *shm_late_peer_point(struct sl_sock *s, int side)
{
	return &sl_promote_seam(s->seg)->x[side ^ 1];
}

static int shm_late_publish(struct sl_sock *s, uint64_t x)
{
	struct sl_seam_publish pub = { sl_promote_seam(s->seg), 0, NULL, NULL };

	return sl_promote_publish_seam(&pub, x);
}

static void forget_segment(struct sl_sock *s)
{
	sl_segment_unbind(s);
	s->memfd = s->bell_rx = s->bell_tx = -1;
	s->offer_path[0] = '\0';
}

static bool shm_offer_port_settle(struct sl_sock *s, bool taken)
{
	uint32_t offered = SL_OFFER_OFFERED;

	s->port_confined = false;
	if (sl_offer_port_settle(s->fd, taken))
		return true;
	/* An acceptor may have looked all the same (its accept gave it no
	 * address, or it found the offer's file) and decided already: that
	 * decision stands, and the agreement follows it.  Only a revoke that
	 * wins the offer word takes it back. */
	if (!s->offer_word || !atomic_compare_exchange_strong(s->offer_word, &offered, SL_OFFER_REVOKED))
		return true;
	sl_fb_hint(SL_FB_PORT_RANGE);
	return false;
}

static void shm_offer_withdraw(struct sl_sock *s)
{
	int fds[SL_SHM_FDS] = { s->memfd, s->bell_rx, s->bell_tx };
	void *seg = s->seg;
	size_t len = s->seg_len;
	char path[sizeof(s->offer_path)];

	memcpy(path, s->offer_path, sizeof(path));
	atomic_fetch_and(&s->agree, ~SL_AGREE_PENDING); /* no connection: nothing to agree on */
	/* A passed offer waits in the listener's queue: marked decided, it is
	 * dropped there instead of travelling on (rendezvous.c). */
	if (s->offer_word) {
		uint32_t offered = SL_OFFER_OFFERED;

		atomic_compare_exchange_strong(s->offer_word, &offered, SL_OFFER_REVOKED);
	}
	forget_segment(s); /* before the unmap: racing readers see the stand-in */
	sl_shm_unmap(seg, len, fds, path);
}

/* An offer that no acceptor ever attached (refused, or revoked and moved
 * onto the kernel socket) was mapped by our side only, but its descriptor
 * may wait in a listener's rendezvous queue that no hooked accept drains (an
 * io_uring acceptor): once our last process lets go, its pages are freed,
 * and what waits there is an empty file whose offer word reads decided. */
static void punch_unattached(struct sl_sock *s)
{
	uint32_t w;

	if (s->own_area != 0 || !s->offer_word || sl_holders_others(s))
		return;
	w = atomic_load(s->offer_word);
	if (w == SL_OFFER_REFUSED || w == SL_OFFER_REVOKED || w == SL_OFFER_PLAIN)
		madvise(s->seg, s->seg_len, MADV_REMOVE);
	else if (w == SL_OFFER_LOST) /* the header page keeps the word the acceptor must read */
		madvise((unsigned char *)s->seg + SL_SEG_HEADER_SIZE, s->seg_len - SL_SEG_HEADER_SIZE, MADV_REMOVE);
}

/* The last of our processes closes: an offer still out was revoked by
 * close (agree.c), so nothing here waits for a late acceptor. */
static void shm_release(struct sl_sock *s)
{
	int fds[SL_SHM_FDS];
	void *seg;
	size_t len;

	if (!s->seg)
		return;
	fds[0] = s->memfd;
	fds[1] = s->bell_rx;
	fds[2] = s->bell_tx;
	seg = s->seg;
	len = s->seg_len;
	punch_unattached(s);
	forget_segment(s); /* before the unmap: racing readers see the stand-in */
	/* The names were removed by the acceptor that attached or by whoever
	 * decided against the offer; while undecided, another process of our
	 * side still holds the connection and its offer.  Unmapped at our next
	 * wait: the last unmap frees the pages, which a close need not wait for. */
	sl_seg_retire(seg, len, fds);
}

/* The offer is decided: the acceptor attached (it removed the names), or
 * the connection moved to kernel TCP (agree.c): then the names go, and the
 * memfd closes so that a late acceptor's open fails and it stays plain. */
static void shm_offer_settle(struct sl_sock *s)
{
	uint32_t w;

	if (s->memfd < 0 || !s->offer_word)
		return;
	w = atomic_load_explicit(s->offer_word, memory_order_acquire);
	if (w == SL_OFFER_ATTACHED) {
		/* Kept where nothing else could hand the segment on, or where
		 * nobody asked yet (the probe is made at our next wait, not on
		 * the first connection's path). */
		if (sl_segment_reopenable_known() == 1) {
			sl_own_fd_close(s->memfd);
			s->memfd = -1;
		}
		/* An acceptor of another user, or one that came through the
		 * rendezvous, left the names: they are ours (our socket holds
		 * the 4-tuple, so no other connection can have them meanwhile). */
		if (s->offer_path[0])
			sl_shm_unlink_offer(s->offer_path);
		s->offer_path[0] = '\0';
	} else if (w == SL_OFFER_PLAIN || w == SL_OFFER_LOST) {
		sl_own_fd_close(s->memfd);
		s->memfd = -1;
		if (s->offer_path[0])
			sl_shm_unlink_offer(s->offer_path);
		s->offer_path[0] = '\0';
	}
}

const struct sl_fabric_ops sl_fabric_shm = {
	.name = "shm",
	.listen_register = shm_listen_register,
	.listen_unregister = shm_listen_unregister,
	.listen_withdraw = shm_listen_withdraw,
	.lookup = shm_lookup,
	.offer_by_socket = shm_offer_by_socket,
	.offer_port_settle = shm_offer_port_settle,
	.offer = shm_offer,
	.offer_late = shm_offer_late,
	.take_late = sl_shm_take_late,
	.late_peer_point = shm_late_peer_point,
	.late_publish = shm_late_publish,
	.offer_withdraw = shm_offer_withdraw,
	.offer_settle = shm_offer_settle,
	.attach = sl_shm_attach,
	.stimulate = sl_shm_stimulate,
	.ring_self = sl_shm_ring_self,
	.flush_remote = sl_shm_flush_remote,
	.drain = sl_shm_drain,
	.peer_gone = sl_conn_kernel_ended,
	.release = shm_release,
};
