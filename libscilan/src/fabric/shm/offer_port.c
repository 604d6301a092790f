/* offer_port.c — the port mark of offers through the rendezvous: the
 * connector confines its connect's port to a fixed range, the acceptor looks
 * into its queue only for clients whose port is in it, and what happens
 * where the kernel cannot confine or the range is full or outside the
 * network namespace's own (ARCHITECTURE.md, "The accept's look").
 */
#include "fabric/shm/offer_port.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "runtime/endpoint_key.h"
#include "runtime/log.h"
#include "runtime/sys.h"
#include "sync/clock.h"

/* After a connect took a port outside the range (the namespace's
 * ip_local_port_range leaves it out, Linux then ignores the socket's), the
 * offers that would follow it are not made for a while: each would wait in
 * the queue, withdrawn, until a look happened to drain it. */
#define OUTSIDE_BACKOFF_NS (10ll * 1000000000)

/* IP_LOCAL_PORT_RANGE's value for the range, and for none (the whole one). */
static const uint32_t offer_range = (uint32_t)SL_OFFER_PORT_HI << 16 | SL_OFFER_PORT_LO, whole_range = 0;

/* 1 the kernel confines a connect's port, -1 it cannot, 0 not asked yet. */
static _Atomic int kernel_confines;
static _Atomic int64_t outside_until;

/* A port an offer at connect may come from: one of the range, or one below
 * 1024, which no kernel-picked port is (a client that binds one, SunRPC's
 * bindresvport or rsh, chose it and needs the privilege). */
static bool marked(uint16_t port)
{
	return (port >= SL_OFFER_PORT_LO && port <= SL_OFFER_PORT_HI) || (port > 0 && port < SL_OFFER_PORT_PRIVILEGED);
}

bool sl_offer_port_look(int listener, uint16_t port)
{
	int known = atomic_load_explicit(&kernel_confines, memory_order_relaxed);
	uint32_t range;
	socklen_t len = sizeof(range);

	if (marked(port))
		return true;
	if (known == 0) {
		/* Asked once.  Any failure (ENOPROTOOPT, or a sandbox's filter
		 * that hides the answer) looks at every accept, which is safe. */
		known = sl_sys.getsockopt(listener, IPPROTO_IP, IP_LOCAL_PORT_RANGE, &range, &len) == 0 ? 1 : -1;
		atomic_store_explicit(&kernel_confines, known, memory_order_relaxed);
	}
	return known != 1;
}

static uint16_t port_of(int tcp)
{
	struct sl_key me;

	return sl_key_of_fd(tcp, false, &me) == 0 ? me.port : 0;
}

int sl_offer_port_confine(int tcp)
{
	uint16_t bound;

	if (sl_mono_ns() < atomic_load_explicit(&outside_until, memory_order_relaxed)) {
		errno = EADDRNOTAVAIL;
		return -1;
	}
	/* The program's own bind (or an earlier connect's): the kernel's
	 * connect keeps that port. */
	bound = port_of(tcp);
	if (bound && !marked(bound)) {
		errno = EADDRNOTAVAIL;
		return -1;
	}
	if (sl_sys.setsockopt(tcp, IPPROTO_IP, IP_LOCAL_PORT_RANGE, &offer_range, sizeof(offer_range)) == 0) {
		atomic_store_explicit(&kernel_confines, 1, memory_order_relaxed);
		return 1;
	}
	if (errno == ENOPROTOOPT) {
		atomic_store_explicit(&kernel_confines, -1, memory_order_relaxed);
		return 0;
	}
	return -1;
}

int sl_offer_port_bind(int tcp, const struct sockaddr *addr, socklen_t len)
{
	int r, err;

	if (atomic_load_explicit(&kernel_confines, memory_order_relaxed) < 0 ||
	    sl_sys.setsockopt(tcp, IPPROTO_IP, IP_LOCAL_PORT_RANGE, &offer_range, sizeof(offer_range)) < 0)
		return sl_sys.bind(tcp, addr, len);
	r = sl_sys.bind(tcp, addr, len);
	err = errno;
	sl_sys.setsockopt(tcp, IPPROTO_IP, IP_LOCAL_PORT_RANGE, &whole_range, sizeof(whole_range));
	/* With port 0, EADDRINUSE says no port of the range was free. */
	if (r < 0 && err == EADDRINUSE) {
		r = sl_sys.bind(tcp, addr, len);
		err = errno;
	}
	errno = err;
	return r;
}

bool sl_offer_port_settle(int tcp, bool connected)
{
	uint16_t port;
	int saved = errno;

	sl_sys.setsockopt(tcp, IPPROTO_IP, IP_LOCAL_PORT_RANGE, &whole_range, sizeof(whole_range));
	port = connected ? port_of(tcp) : 0;
	errno = saved;
	if (!connected || marked(port))
		return true;
	/* At notice level once: every back-off would say it again. */
	bool first = atomic_exchange_explicit(&outside_until, sl_mono_ns() + OUTSIDE_BACKOFF_NS,
					      memory_order_relaxed) == 0;

	sl_log(first ? SL_LOG_NOTICE : SL_LOG_INFO,
	       "fd %d: connect took port %u, outside %u-%u (net.ipv4.ip_local_port_range leaves it out, or the "
	       "program bound it): connections to listeners of this namespace start on kernel TCP and move "
	       "onto the rings if they last",
	       tcp, (unsigned)port, SL_OFFER_PORT_LO, SL_OFFER_PORT_HI);
	return false;
}
