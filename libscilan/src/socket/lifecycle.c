/* lifecycle.c — socket life cycle: socket, bind, listen, accept, shutdown
 * and close (the connect is connect.c's).  The kernel TCP socket does set-up,
 * ports and errno; scilan adds the rendezvous that moves the data onto
 * shared rings.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn/agree.h"
#include "process/holders.h"
#include "runtime/config.h"
#include "runtime/endpoint_key.h"
#include "conn/conn.h"
#include "conn/promotion.h"
#include "conn/promotion_trigger.h"
#include "fabric/fabric.h"
#include "fabric/shm/offer_port.h"
#include "runtime/stats_file.h"
#include "runtime/log.h"
#include "scilan.h"
#include "ring/segment.h"
#include "conn/stall.h"
#include "runtime/sys.h"
#include "sync/fence_policy.h"
#include "sync/clock.h"
#include "socket/disconnect.h"
#include "socket/lifecycle.h"
#include "socket/offer_policy.h"

void sl_become_plain(struct sl_sock *s, enum sl_fb reason, enum sl_fb_side side)
{
	sl_sock_set_state(s, SL_PLAIN);
	sl_fallback(s, sl_fb_take_hint(reason), side);
}

enum sl_fb sl_unusable_reason(void)
{
	return sl_config()->off ? SL_FB_OFF : SL_FB_NO_RUNDIR;
}

int scilan_socket(int domain, int type, int protocol)
{
	int fd = sl_sys.socket(domain, type, protocol);
	int base_type = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	const struct sl_config *cfg;
	struct sl_sock *s;

	if (fd < 0)
		return -1;
	if ((domain != AF_INET && domain != AF_INET6) || base_type != SOCK_STREAM ||
	    (protocol != 0 && protocol != IPPROTO_TCP))
		return fd;
	cfg = sl_config();
	s = sl_sock_new(fd, domain, SL_FRESH);
	if (!s) {
		sl_warn("no memory for socket state of fd %d; it uses kernel TCP", fd);
		return fd;
	}
	atomic_store(&s->poll_us, cfg->poll_us);
	sl_sock_note_nonblock(s, (type & SOCK_NONBLOCK) != 0);
	s->ring_bytes = cfg->ring_bytes;
	atomic_store(&s->rcvlowat, 1); /* a new socket's, as the kernel's */
	atomic_store(&s->tcp_inq, 0);
	return fd;
}

/* A bind that leaves the port to the kernel. */
static bool binds_any_port(const struct sockaddr *addr, socklen_t len)
{
	if (addr && addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in))
		return ((const struct sockaddr_in *)addr)->sin_port == 0;
	if (addr && addr->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6))
		return ((const struct sockaddr_in6 *)addr)->sin6_port == 0;
	return false;
}

int scilan_bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct sl_sock *s = sl_sock_get(fd);

	/* A client that fixes its source address before its connect: its
	 * port, from the offers' range, leaves the connect its offer. */
	if (s && sl_sock_state(s) == SL_FRESH && !s->own_port_range && *sl_config()->rundir &&
	    binds_any_port(addr, len))
		return sl_offer_port_bind(fd, addr, len);
	return sl_sys.bind(fd, addr, len);
}

static void become_listener(struct sl_sock *s)
{
	struct sl_key local;
	int fd = s->fd;

	pthread_mutex_lock(&s->ctl_lock);
	if (sl_sock_state(s) == SL_FRESH) {
		sl_sock_set_state(s, SL_LISTENING);
		if (!s->reg_path && !sl_config()->off)
			s->reg_path = calloc(SL_MAX_REG, sizeof(*s->reg_path));
		/* Known, so that each accept need not ask for a bound address. */
		if (sl_key_of_fd(fd, false, &local) == 0)
			s->known_local = local;
		/* When scilan is off in the process, that was reported once already. */
		if (!sl_config()->off && (!*sl_config()->rundir || !s->reg_path || !local.family ||
					  sl_fabric_listen_register(s, &local) < 0))
			sl_warn("fd %d: listener not registered with scilan (%s); its connections use kernel TCP", fd,
				*sl_config()->rundir ? strerror(errno) : "no runtime directory");
		else if (!sl_config()->off)
			sl_listener_undefer(s);
	}
	pthread_mutex_unlock(&s->ctl_lock);
}

int scilan_listen(int fd, int backlog)
{
	struct sl_sock *s = sl_sock_get(fd);

	if (sl_sys.listen(fd, backlog) < 0)
		return -1;
	if (s) {
		become_listener(s);
	} else {
		/* A TCP socket made elsewhere (received with SCM_RIGHTS, bound
		 * by Node.js's cluster primary for its workers) listens here:
		 * it is registered as ours, else clients would not find it. */
		int domain = 0;
		socklen_t len = sizeof(domain);

		if (sl_sys.getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0)
			sl_listener_adopt(fd, domain);
	}
	return 0;
}

int sl_listener_adopt(int fd, int domain)
{
	const struct sl_config *cfg = sl_config();
	int listening = 0, type = 0, proto = 0;
	socklen_t len = sizeof(int);
	struct sl_sock *s;

	/* Only what really is a TCP listener of that family becomes one. */
	if (sl_sys.getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0 || !listening ||
	    (len = sizeof(int), sl_sys.getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len)) < 0 || type != SOCK_STREAM ||
	    (len = sizeof(int), sl_sys.getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len)) < 0 ||
	    proto != IPPROTO_TCP || (domain != AF_INET && domain != AF_INET6))
		return -1;
	s = sl_sock_new(fd, domain, SL_FRESH);
	if (!s)
		return -1;
	atomic_store(&s->poll_us, cfg->poll_us);
	s->ring_bytes = cfg->ring_bytes;
	s->maybe_shared = true; /* made elsewhere: its maker may accept too */
	become_listener(s);
	return 0;
}

/* The kernel's accept, with the peer's key from the address it returns
 * (family 0 if it did not: read later if needed).  The program's own
 * buffer is the kernel's to fill, faults and truncation as without us;
 * without one, ours. */
static int accept_with_peer(int fd, struct sockaddr *addr, socklen_t *len, int flags, struct sl_key *peer)
{
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof(ss), given = len ? *len : 0;
	int nfd;

	memset(peer, 0, sizeof(*peer));
	if (addr) {
		nfd = sl_sys.accept4(fd, addr, len, flags);
		if (nfd >= 0 && len && *len <= given)
			sl_key_from_sockaddr(addr, *len, peer);
		return nfd;
	}
	nfd = sl_sys.accept4(fd, (struct sockaddr *)&ss, &sslen, flags);
	if (nfd >= 0)
		sl_key_from_sockaddr((struct sockaddr *)&ss, sslen, peer);
	return nfd;
}

int scilan_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	struct sl_sock *s = sl_sock_get(fd), *ns;
	struct sl_key peer;
	struct linger abort_now = { .l_onoff = 1, .l_linger = 0 };
	int nfd, r;

	if (!s)
		return sl_sys.accept4(fd, addr, len, flags);
	nfd = accept_with_peer(fd, addr, len, flags, &peer);
	if (nfd < 0)
		return nfd;
	/* Another process holding the socket made it listen (it was passed
	 * on, or inherited, bound): clients may have found that process's
	 * registration, so this accept must attach their offers too. */
	if (sl_sock_state(s) == SL_FRESH) {
		s->maybe_shared = true;
		become_listener(s);
	}
	if (sl_sock_state(s) != SL_LISTENING)
		return nfd;
	ns = sl_sock_new(nfd, s->domain, SL_FRESH);
	if (!ns) {
		sl_warn("no memory for socket state of fd %d; it uses kernel TCP", nfd);
		sl_fallback(NULL, SL_FB_RESOURCE, SL_FB_ACCEPTOR);
		return nfd;
	}
	atomic_store(&ns->poll_us, atomic_load(&s->poll_us));
	sl_sock_note_nonblock(ns, (flags & SOCK_NONBLOCK) != 0);
	ns->ring_bytes = s->ring_bytes;
	/* The kernel's accepted socket starts with its listener's options. */
	ns->sndbuf = s->sndbuf;
	atomic_store(&ns->rcvlowat, atomic_load(&s->rcvlowat));
	sl_fb_take_hint(SL_FB_NONE);
	if (!sl_fabric_listener_published(s)) {
		sl_become_plain(ns, *sl_config()->rundir ? SL_FB_UNREGISTERED : sl_unusable_reason(), SL_FB_ACCEPTOR);
		return nfd;
	}
	/* The local key is the listener's own when it is bound to one
	 * address; else read only if an offer needs it (fabric attach). */
	if (!sl_key_is_wildcard(&s->known_local))
		ns->known_local = s->known_local;
	ns->known_peer = peer;
	r = sl_fabric_attach(ns, s, &ns->known_local, &ns->known_peer);
	if (r > 0) {
		sl_conn_became_connected(ns);
		/* Where it looks for its return if its link goes down. */
		sl_promote_note_listener(ns, s);
		return nfd;
	}
	if (r == 0) {
		sl_become_plain(ns, SL_FB_NO_OFFER, SL_FB_ACCEPTOR);
		/* Its connector may offer later (promotion_trigger.c). */
		sl_promote_arm_acceptor(ns, s, SL_OFFER_LIFE_PAID_NS);
		return nfd;
	}
	/* The peer offered something we cannot use: reset it rather than leave
	 * it writing into a ring nobody reads. */
	sl_sock_forget(ns);
	sl_sys.setsockopt(nfd, SOL_SOCKET, SO_LINGER, &abort_now, sizeof(abort_now));
	sl_sys.close(nfd);
	errno = ECONNABORTED;
	return -1;
}

int scilan_accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	return scilan_accept4(fd, addr, len, 0);
}

int scilan_shutdown(int fd, int how)
{
	struct sl_sock *s = sl_sock_get(fd);

	if (s && sl_sock_state(s) == SL_CONNECTING)
		sl_connect_progress(s);
	/* A late offer out: decided first (a FIN on the kernel stream would
	 * break the seam's counts), then shut down where the connection is. */
	if (s && sl_sock_promoting(s))
		sl_promote_settle(s);
	if (!s || !sl_sock_on_rings(s))
		return sl_sys.shutdown(fd, how);
	/* Our offer out and the kernel socket stirred (a plain acceptor spoke,
	 * or the kernel reset the connection: ENOTCONN): the kernel answers. */
	if (sl_agree_pending(s) && sl_agree_plain(s, SL_AGREE_WAIT))
		return sl_sys.shutdown(fd, how);
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) {
		errno = EINVAL;
		return -1;
	}
	if (how != SHUT_WR)
		atomic_store(&s->shut_rd, true);
	if (how != SHUT_RD && !atomic_load(&s->shut_wr)) {
		/* Under the send lock: the FIN goes after every byte already sent. */
		sl_lock(&s->tx_lock);
		pthread_mutex_lock(&s->ctl_lock);
		atomic_store(&s->shut_wr, true);
		sl_segment_set_state(s, SL_PEER_SHUT_WR);
		pthread_mutex_unlock(&s->ctl_lock);
		sl_unlock(&s->tx_lock);
		sl_conn_after_produce(s, false);
	}
	sl_conn_wake_local(s);
	/* The connection fell back to kernel TCP meanwhile (agree.c): the
	 * kernel must see the shutdown too. */
	if (sl_fell_back(s))
		return sl_sys.shutdown(fd, how);
	return 0;
}

/* Wake our sleepers and wait for them to leave their poll, and for any
 * copy in progress, before the mapping and the bells go. */
static void release_segment(struct sl_sock *s)
{
	sl_conn_wake_local(s);
	pthread_mutex_lock(&s->sleep_lock[0]);
	pthread_mutex_lock(&s->sleep_lock[1]);
	sl_lock(&s->tx_lock);
	sl_lock(&s->rx_lock);
	s->fabric->release(s);
	sl_unlock(&s->rx_lock);
	sl_unlock(&s->tx_lock);
	pthread_mutex_unlock(&s->sleep_lock[1]);
	pthread_mutex_unlock(&s->sleep_lock[0]);
}

/* What a connection this process connected carried (offered, or kept plain
 * as short), for its destination's next connects (offer_policy.c).  Once. */
static void note_offer_outcome(struct sl_sock *s)
{
	struct sl_offer_outcome outcome;

	if (!s->policy_dst.family || s->owner != sl_self_pid || !sl_config()->learn_short_conns)
		return;
	outcome.turns = atomic_load_explicit(&s->turns, memory_order_relaxed);
	outcome.bytes = atomic_load_explicit(&sl_ctr(s)->tx_bytes, memory_order_relaxed) +
			atomic_load_explicit(&sl_ctr(s)->rx_bytes, memory_order_relaxed);
	/* A plain connection's length says nothing of the rings: its peer
	 * may merely be slow (a server under load), and counted, every stall
	 * would bring the short run's offers back.  Promoted, it paid. */
	outcome.lifetime_ns = sl_sock_state(s) == SL_PLAIN ? 0 : sl_mono_ns() - s->policy_since_ns;
	sl_offer_note(&s->policy_dst, &outcome);
	s->policy_dst.family = 0;
}

static void close_connected(struct sl_sock *s)
{
	bool unread;

	unread = sl_conn_unread(s);
	if (!atomic_load(&s->peer_waited))
		sl_fence_note(false);
	note_offer_outcome(s);
	pthread_mutex_lock(&s->ctl_lock);
	atomic_store(&s->shut_rd, true);
	atomic_store(&s->shut_wr, true);
	/* Only the last process holding the connection closes it for the peer
	 * (fork shares it). */
	if (sl_segment_release_holder(s))
		sl_segment_set_state(s, sl_conn_close_bits(s, unread));
	pthread_mutex_unlock(&s->ctl_lock);
	sl_conn_wake_peer(s);
	release_segment(s);
	sl_stats_conn_close(s);
}


void sl_sock_release(int fd)
{
	struct sl_sock *s = sl_sock_get(fd);

	if (s && sl_sock_unalias(fd, s))
		return; /* another descriptor still names this socket */
	if (s) {
		switch (sl_sock_state(s)) {
		case SL_LISTENING:
			/* Under ctl_lock, with a new generation: an accepted
			 * connection's look (promotion_trigger.c) holds it while it
			 * scans the queues this closes. */
			pthread_mutex_lock(&s->ctl_lock);
			atomic_fetch_add(&s->listen_gen, 1);
			sl_fabric_listen_unregister(s);
			pthread_mutex_unlock(&s->ctl_lock);
			break;
		case SL_CONNECTING:
			pthread_mutex_lock(&s->ctl_lock);
			s->fabric->offer_withdraw(s);
			pthread_mutex_unlock(&s->ctl_lock);
			break;
		case SL_CONNECTED:
			/* Promoted, the peer's marker maybe still unread. */
			sl_promote_before_close(s);
			/* Before anything reads the connection's memory: the
			 * device fabric swaps out the mappings of a link that
			 * went down (and may mark the connection for fail-over,
			 * which the move below then makes before the FIN). */
			if (s->fabric->before_close)
				s->fabric->before_close(s);
			/* The last holder's close decides an offer still out: its
			 * bytes go onto the kernel socket before the kernel's FIN. */
			if (sl_agree_pending(s) && !sl_holders_others(s) && sl_agree_decide(s, SL_AGREE_FORCE)) {
				release_segment(s);
				break;
			}
			/* Moved to kernel TCP by a bypass (bypass.c): what we wrote
			 * into the peer's ring since goes onto the kernel socket
			 * before the FIN.  Closed where no hook saw it while
			 * another process holds it: an offer still out is that
			 * process's to decide (it has the kernel socket). */
			if ((s->fd >= 0 || !sl_holders_others(s) || !sl_agree_pending(s)) &&
			    sl_agree_plain(s, SL_AGREE_POLL)) {
				release_segment(s);
				break;
			}
			/* Agreed, but the peer took nothing: if it reads the kernel
			 * socket (io_uring, a holder without the hook), our close
			 * would leave it EOF without our bytes, and nobody watches
			 * the ring after us.  A hooked peer merely slow to read
			 * follows the move at its next call (stall.c).  Closed
			 * where no hook saw it (fd -1, sl_sock_release_stale),
			 * the kernel socket is gone: the ring keeps the bytes. */
			if (s->fd >= 0 && !sl_holders_others(s) && sl_stall_at_close(s) &&
			    sl_bypass_leave(s, SL_FB_CLOSED_UNREAD)) {
				release_segment(s);
				break;
			}
			close_connected(s);
			break;
		case SL_PLAIN:
			/* A late offer still out (promotion): revoked, or, claimed
			 * already, followed, so that the acceptor meets our marker
			 * before our FIN, and closed as a ring connection (whose
			 * close reports it promoted).  Not where another process
			 * holds the socket: it decides. */
			if (sl_sock_promoting(s) && !sl_sock_maybe_shared(s) && sl_promote_settle(s)) {
				sl_promote_before_close(s);
				close_connected(s);
				break;
			}
			note_offer_outcome(s);
			/* Fell back (agree.c): the segment stayed mapped for threads
			 * racing the fall-back, gone once we hold the locks. */
			if (s->seg)
				release_segment(s);
			break;
		default:
			break;
		}
		/* Listed as a fallback (fallback.c) until now, also one this close
		 * decided; or still waiting for the statistics file (young.h), which
		 * must not list it after this close, and whose counts join the
		 * totals here. */
		if (sl_sock_state(s) == SL_PLAIN &&
		    (s->stats_slot >= 0 || atomic_load_explicit(&s->stats_wanted, memory_order_relaxed)))
			sl_stats_conn_close(s);
		sl_sock_forget(s);
	}
}

void sl_sock_release_stale(int fd)
{
	struct sl_sock *s = sl_sock_get(fd);

	/* The connection's kernel socket is gone: a move of its ring bytes, a
	 * shutdown or a reset (the close paths above) made on the number would
	 * land in the new file, silently (a socketpair carried a dead
	 * connection's bytes).  On -1 each fails with EBADF instead.  Another
	 * alias still names the socket: the release only drops this number. */
	if (s && s->fd == fd && atomic_load(&s->fd_refs) <= 1)
		s->fd = -1;
	sl_sock_release(fd);
}

int scilan_close(int fd)
{
	sl_sock_release(fd);
	return sl_sys.close(fd);
}

static bool withdraw_listener(struct sl_sock *s)
{
	if (sl_sock_state(s) == SL_LISTENING) {
		pthread_mutex_lock(&s->ctl_lock);
		sl_fabric_listen_withdraw(s);
		pthread_mutex_unlock(&s->ctl_lock);
	}
	return false;
}

void sl_user_changing(void)
{
	sl_segment_reopen_forget();
	sl_sock_any(withdraw_listener);
}

/* sl_reclaim_descriptors' count.  One pass at a time: a program's threads
 * failing at once share it. */
static pthread_mutex_t reclaim_lock = PTHREAD_MUTEX_INITIALIZER;
static int reclaimed;

/* A connector that has not looked at its offer since the acceptor took it
 * still holds the segment's memfd (a client that sends and reads later, a
 * pool warming up): settling the offer gives that back. */
static bool settle_one(struct sl_sock *s)
{
	if (!sl_sock_on_rings(s) || !sl_agree_pending(s) || s->memfd < 0)
		return false;
	sl_agree_decide(s, SL_AGREE_POLL);
	if (s->memfd < 0)
		reclaimed++;
	return false;
}

/* A fork child of a thread that was reclaiming: the lock is the dead
 * thread's, and the sockets it was settling are reset anyway. */
void sl_reclaim_after_fork_child(void)
{
	pthread_mutex_init(&reclaim_lock, NULL);
}

int sl_reclaim_descriptors(void)
{
	int n;

	/* Not by moving live connections to kernel TCP: a peer that wrote
	 * into our ring and then closed, or that makes no call on the
	 * connection again (an idle server that answered), would never
	 * re-send what we had not read yet. */
	pthread_mutex_lock(&reclaim_lock);
	reclaimed = 0;
	sl_sock_any(settle_one);
	n = reclaimed;
	pthread_mutex_unlock(&reclaim_lock);
	if (n)
		sl_debug("out of descriptors: %d agreed offer(s) gave their segment's descriptor back", n);
	return n;
}

int scilan_is_socket(int fd)
{
	return sl_sock_get(fd) != NULL;
}
