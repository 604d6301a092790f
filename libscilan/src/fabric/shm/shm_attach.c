/* shm_attach.c — the accepting side of the shared-memory fabric: the offer
 * for an accepted connection, through the listener's rendezvous or as our
 * user's offer file, checked, mapped and committed by the offer word.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conn/promote.h"
#include "evq/evq.h"
#include "fabric/shm/bells.h"
#include "fabric/shm/offer.h"
#include "fabric/shm/offer_names.h"
#include "fabric/shm/registry.h"
#include "fabric/shm/offer_port.h"
#include "fabric/shm/rendezvous.h"
#include "fabric/shm/shm_attach.h"
#include "ring/segment.h"
#include "runtime/cluster_map.h"
#include "runtime/config.h"
#include "runtime/endpoint_key.h"
#include "runtime/fallback.h"
#include "runtime/log.h"
#include "runtime/own_fd.h"
#include "runtime/sock_diag.h"
#include "runtime/sys.h"

/* Open the offered memfd through /proc; -1 with errno ESRCH if the offer is stale. */
static int open_offered_memfd(const struct offer *offer, struct stat *st)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)offer->pid, (int)offer->memfd);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			errno = ESRCH;
		return -1;
	}
	if (sl_segment_fd_check(fd, st) < 0) {
		sl_sys.close(fd);
		return -1;
	}
	if (st->st_ino != offer->ino || st->st_dev != offer->dev || st->st_uid != geteuid()) {
		sl_sys.close(fd);
		errno = ESRCH;
		return -1;
	}
	return fd;
}

static bool claim_offer(void *base)
{
	uint32_t offered = SL_OFFER_OFFERED;

	return atomic_compare_exchange_strong(sl_shm_offer_word(base), &offered, SL_OFFER_ATTACHED);
}

/* The offered segment fd (closed here), checked by check_segment_fd, with
 * the bells already in s: validate the header, map, and commit.  1 if the
 * rings carry the connection; 0 if it stays kernel TCP.  late: a live
 * connection's offer (promotion), whose commitment is our switch
 * (promote.h), -1 with errno when it failed half-way (reset). */
static int attach_segment(struct sl_sock *s, int fd, const struct stat *st, const char *who, bool late)
{
	struct sl_seg_header hdr;
	uint32_t offered = SL_OFFER_OFFERED, word = 0;
	void *base;

	/* Decided before we looked: a connector that closed revoked its offer,
	 * and once it let go the pages of a queued offer were punched
	 * (punch_unattached), so its header reads zero: withdrawn, not bad. */
	if (pread(fd, &word, sizeof(word), SL_SEG_OFFER_OFF) == (ssize_t)sizeof(word) && word != SL_OFFER_OFFERED) {
		if (word == SL_OFFER_LOST) {
			/* Its bytes are gone: the kernel stream would end cleanly
			 * without them, so the end must be a reset (the connector
			 * may reset its own connection; nothing else is touched). */
			sl_warn("fd %d: connection reset: %s closed it where its hook could not see it, and the bytes "
				"it had written were lost",
				s->fd, who);
			sl_sys_reset_tcp(s->fd);
		} else {
			sl_debug("offer of %s was withdrawn before this accept; connection uses kernel TCP", who);
		}
		sl_fb_hint(SL_FB_REVOKED);
		sl_sys.close(fd);
		sl_shm_close_bells(s);
		return 0;
	}
	if (pread(fd, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) || !sl_segment_valid(&hdr, (uint64_t)st->st_size)) {
		sl_warn("segment offered by %s has a bad header; connection uses kernel TCP", who);
		sl_fb_hint(SL_FB_BAD_OFFER);
		sl_segment_refuse(fd, s->bell_tx);
		sl_sys.close(fd);
		sl_shm_close_bells(s);
		return 0;
	}
	base = mmap(NULL, hdr.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED || s->bell_rx < 0 || s->bell_tx < 0) {
		sl_info("cannot map the segment or wake-up FIFOs offered by %s (%s); connection uses kernel TCP", who,
			strerror(errno));
		sl_fb_hint(base == MAP_FAILED ? sl_fb_of_errno(errno, SL_FB_OTHER) : SL_FB_BAD_OFFER);
		if (base != MAP_FAILED)
			munmap(base, hdr.total_size);
		sl_segment_refuse(fd, s->bell_tx);
		sl_sys.close(fd);
		sl_shm_close_bells(s);
		return 0;
	}
	/* A connect's offer taken for a live connection would have the peer
	 * write into a ring we never read, and the reverse would have us read
	 * the marker as data: each kind only where it belongs. */
	if ((atomic_load_explicit(&sl_promote_seam(base)->late, memory_order_acquire) == SL_PROMOTE_LATE) != late) {
		sl_warn("fd %d: %s offered the wrong kind of segment (%s); connection stays on kernel TCP", s->fd, who,
			late ? "a connect's for a live connection" : "a live connection's at a connect");
		sl_fb_hint(SL_FB_BAD_OFFER);
		munmap(base, hdr.total_size);
		sl_segment_refuse(fd, s->bell_tx);
		sl_sys.close(fd);
		sl_shm_close_bells(s);
		return 0;
	}
	/* Kept only where nothing else could hand the segment on. */
	if (sl_segment_reopenable()) {
		sl_sys.close(fd);
		fd = -1;
	}
	/* Before the commitment: the connector may wait in epoll as soon as it
	 * sees it, and decides then whether we can mark its set. */
	sl_evq_publish_marker((struct sl_area_ctl *)((unsigned char *)base + hdr.area_off[0]));
	/* The commitment: from here the rings carry the connection, unless the
	 * connecting side revoked first; then its bytes come on the kernel socket. */
	if (late) {
		struct sl_seam_publish pub = { sl_promote_seam(base), 1, claim_offer, base };
		int r = sl_promote_switch(s->fd, 1, sl_promote_publish_seam, &pub);

		if (r < 0) {
			/* Claimed, our point public, and no marker: the connector
			 * would wait at our point for ever. */
			int err = errno;

			sl_warn("fd %d: connection reset: its promotion could not send its marker (%s)", s->fd,
				strerror(err));
			sl_sys_reset_tcp(s->fd);
			munmap(base, hdr.total_size);
			if (fd >= 0)
				sl_sys.close(fd);
			sl_shm_close_bells(s);
			errno = err;
			return -1;
		}
		if (r == 2) {
			/* No room for the marker now, or no count: nothing was
			 * published; refused (the connector reads the word at its
			 * next call), it stays on kernel TCP and may offer again. */
			atomic_compare_exchange_strong(sl_shm_offer_word(base), &offered, SL_OFFER_REFUSED);
			/* Its next look waits for room first (promotion_trigger.c). */
			if (errno == EAGAIN)
				atomic_store(&s->promote_no_room, true);
		}
		offered = r == 0 ? SL_OFFER_OFFERED : SL_OFFER_REVOKED; /* r == 1: the connector revoked first */
	}
	if (late ? offered != SL_OFFER_OFFERED
		 : !atomic_compare_exchange_strong(sl_shm_offer_word(base), &offered, SL_OFFER_ATTACHED)) {
		if (offered == SL_OFFER_LOST) {
			/* Lost while we looked: a reset, as above. */
			sl_warn("fd %d: connection reset: %s closed it where its hook could not see it, and the "
				"bytes it had written were lost",
				s->fd, who);
			sl_sys_reset_tcp(s->fd);
		}
		sl_debug("offer of %s was withdrawn before this accept; connection uses kernel TCP", who);
		sl_fb_hint(SL_FB_REVOKED);
		munmap(base, hdr.total_size);
		if (fd >= 0)
			sl_sys.close(fd);
		sl_shm_close_bells(s);
		return 0;
	}
	sl_segment_bind(s, base, hdr.total_size, 1, &hdr);
	if (fd >= 0)
		s->memfd = sl_own_fd_is(fd) ? fd : sl_own_fd(fd);
	s->offer_word = sl_shm_offer_word(base); /* a later bypass is agreed on here too */
	sl_shm_publish_unfenced(s, SL_PEER_ATTACHED);
	return 1;
}

/* The offer came through the rendezvous (checked there: made for this
 * connection by the owner of its other end): fds are the segment, the
 * connector's bell and ours.  They came from another process, maybe another
 * user: the bells were made ours there (pipes, through descriptions only we
 * hold; -1 if they were not pipes), and the segment must be one. */
static int attach_passed(struct sl_sock *s, int fds[SL_RDV_FDS], bool late)
{
	struct stat st;

	s->bell_rx = fds[2];
	s->bell_tx = fds[1];
	if (sl_segment_fd_check(fds[0], &st) < 0) {
		sl_warn("fd %d: the segment passed with the offer is not one (%s); connection uses kernel TCP",
			s->fd, strerror(errno));
		sl_fb_hint(SL_FB_BAD_OFFER);
		sl_segment_refuse(fds[0], fds[1]); /* if its word can be reached safely */
		sl_own_fd_close(fds[0]);
		sl_shm_close_bells(s);
		return 0;
	}
	return attach_segment(s, fds[0], &st, "the connector", late);
}

/* Give up the segment the rendezvous gave us without its bells (EMFILE):
 * refused, closed. */
static void refuse_held(int *seg, int *bell)
{
	if (*seg >= 0) {
		sl_fb_hint(SL_FB_RESOURCE);
		sl_segment_refuse(*seg, *bell);
		sl_own_fd_close(*seg);
	}
	sl_own_fd_close(*bell);
	*seg = *bell = -1;
}

/* The segment the offer file names, opened; or the one the rendezvous gave
 * us without its bells (held, taken over here) if it is that one. */
static int offered_memfd(const struct offer *offer, int *held, struct stat *st)
{
	int fd;

	if (*held >= 0) {
		/* Checked before anything else: it came from the rendezvous,
		 * and an fstat of a file on a mount that never answers waits. */
		if (sl_segment_fd_check(*held, st) == 0 && st->st_ino == offer->ino && st->st_dev == offer->dev) {
			fd = *held;
			*held = -1;
			return fd;
		}
		/* Another segment for the same connection: not the one this
		 * offer names, and not one we use. */
		refuse_held(held, &(int){ -1 });
	}
	return open_offered_memfd(offer, st);
}

/* Might a connector have named its offer by our socket?  Only if one of
 * our registry entries asked connectors to (SL_REG_NAMED, which they read
 * at their lookup and which stays set while the entry has other holders):
 * the entry's word, not our own view of the listener (a listener forked
 * after it registered is shared, yet its connectors were never asked: every
 * accept of a plain client's connection paid a sock_diag query and a
 * failed open, some 5 system calls, for an offer nobody could have named). */
static bool offers_named_for(const struct sl_sock *listener)
{
	for (int i = 0; i < SL_MAX_REG; i++)
		if (listener->reg_fd[i] >= 0 &&
		    sl_registry_named_at(listener->reg_flags[i], listener->reg_fd[i], listener->rdv_fd[i] >= 0))
			return true;
	return false;
}

/* Can a connector have named its offer to local by the 4-tuple?  Only one
 * in another namespace of the node (emulated nodes), which names the
 * address after its cluster-map node: an address the map does not give to
 * an shm node has no such offer, and its accepts skip the open. */
static bool tuple_offer_possible(const struct sl_key *local)
{
	const struct sl_map_entry *node = sl_cluster_map_find(&sl_config()->map, local);

	return node && node->fabric == SL_MAP_SHM;
}

static bool map_has_shm_nodes(void)
{
	const struct sl_cluster_map *map = &sl_config()->map;

	for (size_t i = 0; i < map->count; i++)
		if (map->entries[i].fabric == SL_MAP_SHM)
			return true;
	return false;
}

/* Can a connector have named an offer file for this listener at all?  Only
 * one that found one of its registry entries: none has when it holds none
 * (withdrawn because this process changed user, as a worker that dropped
 * root does; never made, when it listened after the change).  Then the
 * directory is not even ours to read: every accept of a plain client's
 * connection failed to open a file there (EACCES) and called it `other`. */
static bool offers_filed_for(const struct sl_sock *listener)
{
	for (int i = 0; i < SL_MAX_REG; i++)
		if (listener->reg_fd[i] >= 0)
			return true;
	return false;
}

/* Our user's offer file for the connection (local, peer), open, its name in
 * path: by the 4-tuple (a connector in another namespace of the node,
 * emulated nodes), else by the other end's socket (one of our namespace,
 * which names it before the kernel's connect picks its port).  -1 with
 * errno (ENOENT: none).  Decided from memory where it can be: a plain
 * client's accept on a listener nobody names offers for, at an address no
 * other namespace reaches, asks the kernel nothing. */
static int open_offer_file(struct sl_sock *s, struct sl_sock *listener, struct sl_key *local, struct sl_key *peer,
			   char *path, size_t size)
{
	struct sl_key by_socket;
	uint64_t cookie;
	uid_t owner;
	int fd;
	bool named = offers_named_for(listener);

	if ((!named && !map_has_shm_nodes()) || sl_conn_keys(s->fd, local, peer) < 0) {
		errno = ENOENT; /* none can have been made, or the connection is gone */
		return -1;
	}
	if (tuple_offer_possible(local)) {
		if (sl_shm_offer_path(local, peer, 0, path, size) < 0) {
			errno = ENOENT; /* no offer can have a name that does not fit */
			return -1;
		}
		/* O_NONBLOCK: a FIFO under the name would hold a plain open. */
		fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0 || errno != ENOENT)
			return fd;
	}
	if (!named) {
		errno = ENOENT;
		return -1;
	}
	by_socket = *peer;
	by_socket.port = 0;
	if (sl_diag_tcp_identity(s->fd, peer, local, &owner, &cookie) < 0 ||
	    sl_shm_offer_path(local, &by_socket, cookie, path, size) < 0) {
		errno = ENOENT;
		return -1;
	}
	return open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
}

/* Every way out but a won compare-and-swap leaves the connection plain:
 * the connecting side revokes its offer (or finds it refused) and moves its
 * bytes onto the kernel socket, which we read as any TCP server would. */
int sl_shm_attach(struct sl_sock *s, struct sl_sock *listener, struct sl_key *local, struct sl_key *peer)
{
	struct offer offer;
	unsigned char raw[sizeof(offer) + 1];
	struct stat st;
	char path[SL_OFFER_PATH_SIZE]; /* a longer name was never offered */
	char who[32];
	int ofd, fd, passed[SL_RDV_FDS], held = -1, held_bell = -1, took, err;
	bool named = true;
	ssize_t got;

	/* An offer in the queue comes from a marked port (offer_port.h): for
	 * any other client port (the kernel's word, from the accept), the look,
	 * a system call, would find nothing of this connection's. */
	took = peer->family && !sl_offer_port_look(listener->fd, peer->port)
		       ? 0
		       : sl_rdv_take(listener->rdv_fd, listener->rdv_gate, SL_MAX_REG, s->fd, local, peer, passed,
				     &named, !sl_sock_maybe_shared(listener), false);
	if (took == 1 && !sl_own_fd_room(s->fd)) {
		/* Our descriptors would crowd the program's: refused at once,
		 * the client continues on kernel TCP (lifecycle.c's connect, the
		 * same rule). */
		sl_fb_hint(SL_FB_RESOURCE);
		sl_segment_refuse(passed[0], passed[1]);
		for (int i = 0; i < SL_RDV_FDS; i++)
			sl_own_fd_close(passed[i]);
		return 0;
	}
	if (took == 1) {
		/* The names of the same offer (our user's connector) are not
		 * needed any more; another user's are not ours to see. */
		if (named && sl_shm_offer_path(local, peer, 0, path, sizeof(path)) == 0)
			sl_shm_unlink_offer(path);
		return attach_passed(s, passed, false);
	}
	if (took == SL_RDV_PARTIAL) {
		/* Out of descriptors (EMFILE) for its bells: the offer file of
		 * the same offer, if there is one, names the bells; else it is
		 * refused below. */
		held = passed[0];
		held_bell = passed[1];
	}
	if (!offers_filed_for(listener)) {
		refuse_held(&held, &held_bell);
		return 0;
	}
	ofd = open_offer_file(s, listener, local, peer, path, sizeof(path));
	if (ofd < 0) {
		if (errno != ENOENT) {
			/* EACCES: our runtime directory is not ours to read any
			 * more (we changed user where scilan could not see it). */
			sl_fb_hint(errno == EACCES || errno == EPERM ? SL_FB_UNREADABLE_OFFER
								     : sl_fb_of_errno(errno, SL_FB_OTHER));
			sl_info("cannot read the connect offer %s (%s); connection uses kernel TCP", path,
				strerror(errno));
		}
		refuse_held(&held, &held_bell);
		return 0;
	}
	got = sl_sys.read(ofd, raw, sizeof(raw));
	sl_sys.close(ofd);
	/* Room for the two bells the file names. */
	sl_own_fd_close(held_bell);
	held_bell = -1;
	if ((s->bell_rx = sl_shm_open_bell(path, 1, false)) < 0 && errno == EMFILE)
		sl_fb_hint(SL_FB_RESOURCE);
	if ((s->bell_tx = sl_shm_open_bell(path, 0, false)) < 0 && errno == EMFILE)
		sl_fb_hint(SL_FB_RESOURCE);
	sl_shm_unlink_offer(path);
	if (got < 0 || !sl_offer_parse(raw, (size_t)got, &offer)) {
		sl_warn("malformed connect offer %s ignored; connection uses kernel TCP", path);
		sl_fb_hint(SL_FB_BAD_OFFER);
		refuse_held(&held, &s->bell_tx);
		sl_shm_close_bells(s);
		return 0;
	}
	fd = offered_memfd(&offer, &held, &st);
	if (fd < 0 && errno == EMFILE) {
		/* Our bells took the last descriptors: without them the segment
		 * can still be opened and refused (unheard: the connector's
		 * sleeps are short while its offer is out). */
		sl_shm_close_bells(s);
		fd = open_offered_memfd(&offer, &st);
		if (fd >= 0) {
			sl_segment_refuse(fd, -1);
			sl_sys.close(fd);
		}
		sl_fb_hint(SL_FB_RESOURCE);
		sl_debug("no descriptor left for the segment offered by pid %d; connection uses kernel TCP",
			 (int)offer.pid);
		return 0;
	}
	if (fd < 0) {
		/* EACCES (the connecting process is not dumpable for us), or it
		 * withdrew the offer (ESRCH): it finds out by itself. */
		err = errno;
		sl_debug("cannot open the segment offered by pid %d (%s); connection uses kernel TCP", (int)offer.pid,
			 strerror(err));
		sl_fb_hint(err == EACCES ? SL_FB_OTHER_USER
			   : err == ESRCH ? SL_FB_REVOKED
			   : err == EPERM ? SL_FB_BAD_OFFER
					  : sl_fb_of_errno(err, SL_FB_OTHER));
		sl_shm_close_bells(s);
		return 0;
	}
	snprintf(who, sizeof(who), "pid %d", (int)offer.pid);
	return attach_segment(s, fd, &st, who, false);
}

int sl_shm_take_late(struct sl_sock *s, struct sl_sock *listener, struct sl_key *local, struct sl_key *peer)
{
	int passed[SL_RDV_FDS], took;
	char path[SL_OFFER_PATH_SIZE];
	bool named = true;

	took = sl_rdv_take(listener->rdv_fd, listener->rdv_gate, SL_MAX_REG, s->fd, local, peer, passed, &named,
			   !sl_sock_maybe_shared(listener), true);
	if (took == SL_RDV_PARTIAL)
		refuse_held(&passed[0], &passed[1]);
	if (took != 1)
		return 0;
	if (!sl_own_fd_room(s->fd)) {
		sl_segment_refuse(passed[0], passed[1]);
		for (int i = 0; i < SL_RDV_FDS; i++)
			sl_own_fd_close(passed[i]);
		return 0;
	}
	if (named && sl_shm_offer_path(local, peer, 0, path, sizeof(path)) == 0)
		sl_shm_unlink_offer(path);
	return attach_passed(s, passed, true);
}
