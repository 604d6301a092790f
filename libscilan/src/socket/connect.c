/* connect.c — the connecting side of the life cycle: finding a listener,
 * naming our end, the offer, the kernel's connect and what its outcome
 * leaves (an agreement to wait for, or kernel TCP and why).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>

#include "conn/agree.h"
#include "conn/conn.h"
#include "conn/promotion_trigger.h"
#include "fabric/fabric.h"
#include "runtime/config.h"
#include "runtime/endpoint_key.h"
#include "runtime/log.h"
#include "runtime/own_fd.h"
#include "runtime/sys.h"
#include "scilan.h"
#include "socket/disconnect.h"
#include "socket/lifecycle.h"
#include "socket/offer_policy.h"
#include "sync/clock.h"

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

/* A connection the kernel's connect made (or is making) without an offer. */
static void connected_plain(struct sl_sock *s, enum sl_fb reason)
{
	int err = errno;

	reason = sl_fb_take_hint(reason);
	sl_become_plain(s, reason, SL_FB_CONNECTOR);
	/* Kept off the rings for being like the short ones before it, or for
	 * its port: it offers late if it lives longer (promotion_trigger.c);
	 * a short one tells the policy at its close whether it did. */
	if (reason == SL_FB_SHORT || reason == SL_FB_PORT_RANGE)
		sl_promote_arm_connector(s, SL_OFFER_LIFE_PAID_NS);
	if (reason == SL_FB_SHORT) {
		s->policy_dst = s->known_peer;
		s->policy_since_ns = sl_mono_ns();
	}
	errno = err;
}

static int connect_plain(struct sl_sock *s, const struct sockaddr *addr, socklen_t len, enum sl_fb reason)
{
	int r = sl_sys.connect(s->fd, addr, len);

	if (r == 0 || errno == EINPROGRESS || errno == EINTR)
		connected_plain(s, reason);
	else
		sl_fb_take_hint(SL_FB_NONE); /* no connection, nothing fell back */
	return r;
}

/* The offer it made is gone before the connection was on the rings: it
 * tells the offer policy nothing. */
static void withdraw_offer(struct sl_sock *s)
{
	s->fabric->offer_withdraw(s);
	s->policy_dst.family = 0;
	atomic_store_explicit(&s->counting_turns, false, memory_order_relaxed);
}

/* The kernel's connect after our offer: r and err its outcome. */
static int offered_connect_returned(struct sl_sock *s, const struct sockaddr *addr, socklen_t len, int r, int err)
{
	bool taken = r == 0 || err == EINPROGRESS || err == EINTR;
	bool confined = s->port_confined;

	if (confined && !s->fabric->offer_port_settle(s, taken)) {
		/* Our port is not one its acceptor looks for offers from. */
		withdraw_offer(s);
		connected_plain(s, SL_FB_PORT_RANGE);
		errno = err;
		return r;
	}
	if (r == 0) {
		sl_conn_became_connected(s);
	} else if (taken) {
		sl_sock_set_state(s, SL_CONNECTING);
	} else {
		withdraw_offer(s);
		/* Every port of the range taken (TIME_WAIT included, or held by
		 * someone who wants us off the rings): the whole range, as
		 * without us, on kernel TCP, and promoted if it lasts. */
		if (confined && err == EADDRNOTAVAIL) {
			sl_info("fd %d: every port of the offers' range is taken; connection uses kernel TCP", s->fd);
			return connect_plain(s, addr, len, SL_FB_PORT_RANGE);
		}
	}
	errno = err;
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
		why = sl_unusable_reason();
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
		/* An offer that failed after it confined our port: the whole
		 * range again, as without us. */
		if (s->port_confined)
			s->fabric->offer_port_settle(s, false);
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
	r = offered_connect_returned(s, addr, len, r, errno);
	err = errno;
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
