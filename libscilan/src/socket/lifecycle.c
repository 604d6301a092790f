/* lifecycle.c — socket life cycle: socket, bind, listen, accept, connect,
 * shutdown and close.  The kernel TCP socket does set-up, ports and errno;
 * scilan adds the rendezvous that moves the data onto shared rings.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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
#include "runtime/stats_file.h"
#include "runtime/log.h"
#include "runtime/own_fd.h"
#include "scilan.h"
#include "ring/segment.h"
#include "conn/stall.h"
#include "runtime/sys.h"
#include "sync/fence_policy.h"
#include "sync/clock.h"
#include "socket/disconnect.h"
#include "socket/offer_policy.h"

/* reason: unless a fabric said better (sl_fb_hint). */
static void become_plain(struct sl_sock *s, enum sl_fb reason, enum sl_fb_side side)
{
	sl_sock_set_state(s, SL_PLAIN);
	sl_fallback(s, sl_fb_take_hint(reason), side);
}

/* Why a process with scilan off or without a runtime directory does not try. */
static enum sl_fb unusable_reason(void)
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

int scilan_bind(int fd, const struct sockaddr *addr, socklen_t len)
{
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
		become_plain(ns, *sl_config()->rundir ? SL_FB_UNREGISTERED : unusable_reason(), SL_FB_ACCEPTOR);
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
		become_plain(ns, SL_FB_NO_OFFER, SL_FB_ACCEPTOR);
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

/* Linux connects the unspecified address to loopback; so must the lookup. */
static void unspecified_to_loopback(struct sl_key *key)
{
	static const unsigned char zero[16];

	if (memcmp(key->addr, zero, key->family == AF_INET ? 4 : 16) != 0)
		return;
	if (key->family == AF_INET)
		key->addr[0] = 127, key->addr[3] = 1;
	else
		key->addr[15] = 1;
}

/* The source address the kernel will pick for dst: a UDP connect only asks
 * the routing table, sending nothing. */
static int route_source(int domain, const struct sockaddr *dst, socklen_t len, struct sl_key *src)
{
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof(ss);
	int probe = sl_sys.socket(domain, SOCK_DGRAM | SOCK_CLOEXEC, 0), r;

	if (probe < 0)
		return -1;
	r = sl_sys.connect(probe, dst, len) == 0 && sl_sys.getsockname(probe, (struct sockaddr *)&ss, &sslen) == 0 &&
	    sl_key_from_sockaddr((struct sockaddr *)&ss, sslen, src) == 0;
	sl_sys.close(probe);
	return r ? 0 : -1;
}

/* Is dst an address of this node (this network namespace)?  A destination
 * of ours is routed to ourselves, and the kernel then picks that very address
 * as the source.  Not a bind() probe: with ip_nonlocal_bind set, bind accepts
 * any address.  A local address the kernel would answer from another source
 * (a custom local route) reads as not ours: plain TCP, the safe side. */
static bool address_is_local(int domain, const struct sockaddr *addr, socklen_t len, const struct sl_key *dst)
{
	struct sl_key src;

	if (sl_key_is_loopback(dst))
		return true;
	return route_source(domain, addr, len, &src) == 0 && sl_key_same_addr(&src, dst);
}

/* A scilan listener reachable at dst: exact address first, then a wildcard
 * listener, which only this node's own addresses reach: the kernel connects
 * anything else to another host, whose port a listener here merely shares.
 * A listener found is remembered (offer_policy.c); none, once the kernel's
 * connect shows a plain server there (scilan_connect). */
static int find_listener(struct sl_sock *s, const struct sockaddr *addr, socklen_t len, const struct sl_key *dst,
			 uint64_t *peer_ring)
{
	struct sl_key any = { .family = dst->family, .port = dst->port };
	int found = s->fabric->lookup(s, dst, peer_ring) ||
		    (s->fabric->lookup(s, &any, peer_ring) && address_is_local(s->domain, addr, len, dst));

	if (found)
		sl_listener_note(dst, true);
	return found;
}

/* A way to a listener that lookup kept and offer did not use. */
static void drop_rendezvous(struct sl_sock *s)
{
	if (s->rdv_conn >= 0)
		sl_sys.close(s->rdv_conn);
	s->rdv_conn = -1;
}

/* An offer keyed by the whole 4-tuple needs our end before the kernel
 * connect: an ephemeral port is bound now, and the source address is the
 * one the application bound or the one routing will pick.  The price: a
 * port bucket made by bind, which the kernel's connect never reuses while
 * any socket, TIME_WAIT included, holds it (so offers name the socket
 * instead wherever the fabric can: our_end).
 * The port getsockname shows is not proof of a binding: a failed connect
 * releases a port the kernel chose but (Linux 6.18) still shows it, and the
 * next connect takes another one, so an offer keyed by the shown port is never
 * found.  So we always bind the shown address with port 0: on a bound socket
 * that fails with EINVAL and changes nothing; on one that is not, it takes a
 * fresh port on the same address (the application's, if it bound one). */
static int source_of(struct sl_sock *s, const struct sockaddr *dst, socklen_t len, struct sl_key *src)
{
	static const unsigned char zero[16];
	struct sockaddr_storage name;
	socklen_t name_len = sizeof(name);
	struct sl_key local;

	if (sl_sys.getsockname(s->fd, (struct sockaddr *)&name, &name_len) < 0)
		return -1;
	if (name.ss_family == AF_INET)
		((struct sockaddr_in *)&name)->sin_port = 0;
	else if (name.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&name)->sin6_port = 0;
	else
		return -1;
	if (sl_sys.bind(s->fd, (struct sockaddr *)&name, name_len) < 0 && errno != EINVAL)
		return -1;
	if (sl_key_of_fd(s->fd, false, &local) < 0 || local.port == 0)
		return -1;
	if (memcmp(local.addr, zero, local.family == AF_INET ? 4 : 16) != 0) {
		*src = local;
		return 0;
	}
	if (route_source(s->domain, dst, len, src) < 0)
		return -1;
	src->port = local.port;
	return 0;
}

/* Our end as the offer names it: the socket alone where the acceptor can ask
 * the kernel who holds the other end (port 0: the kernel's connect picks it,
 * reusing TIME_WAIT ports as it does without us), else the 4-tuple. */
static int our_end(struct sl_sock *s, const struct sockaddr *dst, socklen_t len, const struct sl_key *dst_key,
		   struct sl_key *src)
{
	if (s->fabric->offer_by_socket && s->fabric->offer_by_socket(s)) {
		/* Only the listener's owner check reads the address: a local
		 * destination is its own source. */
		*src = *dst_key;
		src->port = 0;
		return 0;
	}
	return source_of(s, dst, len, src);
}

/* TCP Fast Open's connect sends no SYN: the first write carries it, and ours
 * go to the ring, so the acceptor, which accepts at the handshake, would
 * never see the connection and the offer would wait out its second.  An
 * offered connect shakes hands as without the option (its saving, one
 * round trip at connect, is the kernel path's); a plain one keeps it. */
static bool handshake_at_connect(struct sl_sock *s)
{
	int off = 0;

	if (sl_sys.setsockopt(s->fd, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &off, sizeof(off)) == 0)
		return true;
	sl_info("fd %d: TCP_FASTOPEN_CONNECT stays on (%m): kernel TCP", s->fd);
	return false;
}

static int connect_plain(struct sl_sock *s, const struct sockaddr *addr, socklen_t len, enum sl_fb reason)
{
	int r = sl_sys.connect(s->fd, addr, len);

	if (r == 0 || errno == EINPROGRESS || errno == EINTR) {
		int err = errno;

		become_plain(s, reason, SL_FB_CONNECTOR);
		/* Kept off the rings for being like the short ones before it:
		 * it offers late if it lives longer (promotion_trigger.c), and
		 * tells the policy at its close whether it did. */
		if (reason == SL_FB_SHORT) {
			sl_promote_arm_connector(s, SL_OFFER_LIFE_PAID_NS);
			s->policy_dst = s->known_peer;
			s->policy_since_ns = sl_mono_ns();
		}
		errno = err;
	} else {
		sl_fb_take_hint(SL_FB_NONE); /* no connection, nothing fell back */
	}
	return r;
}

int scilan_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct sl_sock *s = sl_sock_get(fd);
	struct sl_key dst, src;
	uint64_t peer_ring = 0;
	enum sl_fb why = SL_FB_NONE;
	int r, err;

	if (!s)
		return sl_sys.connect(fd, addr, len);
	if (sl_is_disconnect(addr, len))
		return sl_sock_state(s) == SL_FRESH ? sl_sys.connect(fd, addr, len) : sl_sock_disconnect(s, fd, addr, len);
	if (sl_sock_state(s) != SL_FRESH) {
		r = sl_sys.connect(fd, addr, len);
		if (sl_sock_state(s) == SL_CONNECTING)
			sl_connect_progress(s);
		return r;
	}
	pthread_mutex_lock(&s->ctl_lock);
	sl_fb_take_hint(SL_FB_NONE);
	if (sl_key_from_sockaddr(addr, len, &dst) == 0) {
		unspecified_to_loopback(&dst);
		sl_key_scope_from_fd(fd, &dst);
	}
	s->known_peer = dst; /* as getpeername will fold it (family 0 if not IP) */
	if (dst.family)
		s->fabric = sl_fabric_for(&dst);
	if (!dst.family)
		why = SL_FB_OTHER;
	else if (!*sl_config()->rundir)
		why = unusable_reason();
	else if (sl_config()->learn_short_conns && !sl_offer_worth_it(&dst, sl_promote_connector_possible(s)))
		why = SL_FB_SHORT;
	else if (sl_listener_absent(&dst))
		why = SL_FB_NO_LISTENER;
	else if (!find_listener(s, addr, len, &dst, &peer_ring))
		why = SL_FB_NO_LISTENER;
	else if (!sl_own_fd_room(fd))
		why = SL_FB_RESOURCE;
	else if (s->fastopen_connect && !handshake_at_connect(s))
		why = SL_FB_OTHER;
	if (why == SL_FB_NONE) {
		/* Found, maybe through the wildcard: the exact address's hint is void. */
		sl_fb_take_hint(SL_FB_NONE);
		if (our_end(s, addr, len, &dst, &src) < 0) {
			/* No port free for the bind before the offer (every one
			 * held, TIME_WAIT included): the kernel's connect may still
			 * reuse a TIME_WAIT port, on kernel TCP. */
			why = errno == EADDRINUSE || errno == EADDRNOTAVAIL ? SL_FB_RESOURCE
									   : sl_fb_of_errno(errno, SL_FB_OTHER);
			sl_info("fd %d: no local port for the offer (%m)", fd);
		} else if (s->fabric->offer(s, &dst, &src, sl_ring_cap_for(peer_ring)) < 0) {
			why = sl_fb_of_errno(errno, SL_FB_OTHER);
		} else {
			s->policy_dst = dst;
			s->policy_since_ns = sl_mono_ns();
			atomic_store_explicit(&s->counting_turns, sl_config()->learn_short_conns, memory_order_relaxed);
		}
	}
	if (why != SL_FB_NONE) {
		drop_rendezvous(s);
		/* Ending plain after all (no port for the offer, a failed offer,
		 * a retry): Fast Open as the program asked. */
		if (s->fastopen_connect)
			sl_sys.setsockopt(fd, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &(int){ 1 }, sizeof(int));
		r = connect_plain(s, addr, len, why);
		err = errno;
		/* A plain server answers there: its next connects need not look.
		 * Not a refused connect: a client retrying until its server is
		 * up must find the listener as soon as it is.  Nor a fabric's
		 * own reason (not-in-map, link-down): remembered, the next ones
		 * would be told as no-listener, and a link coming back would go
		 * unnoticed for up to a second. */
		if (why == SL_FB_NO_LISTENER && s->fb_reason == SL_FB_NO_LISTENER && (r == 0 || err == EINPROGRESS))
			sl_listener_note(&dst, false);
		pthread_mutex_unlock(&s->ctl_lock);
		errno = err;
		return r;
	}
	r = sl_sys.connect(fd, addr, len);
	err = errno;
	if (r == 0)
		sl_conn_became_connected(s);
	else if (err == EINPROGRESS || err == EINTR)
		sl_sock_set_state(s, SL_CONNECTING);
	else
		s->fabric->offer_withdraw(s);
	pthread_mutex_unlock(&s->ctl_lock);
	errno = err;
	return r;
}

void sl_connect_progress(struct sl_sock *s)
{
	struct pollfd pfd = { .fd = s->fd, .events = POLLOUT };
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int saved = errno;

	pthread_mutex_lock(&s->ctl_lock);
	if (sl_sock_state(s) == SL_CONNECTING && sl_sys.poll(&pfd, 1, 0) == 1) {
		/* getpeername, unlike SO_ERROR, leaves the error for the application. */
		if (sl_sys.getpeername(s->fd, (struct sockaddr *)&ss, &len) == 0) {
			sl_conn_became_connected(s);
		} else {
			s->fabric->offer_withdraw(s);
			sl_sock_set_state(s, SL_FRESH);
		}
	}
	pthread_mutex_unlock(&s->ctl_lock);
	errno = saved;
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
