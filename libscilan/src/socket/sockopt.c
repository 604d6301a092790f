/* sockopt.c — socket options: scilan's own (SOL_SCILAN), the ones whose
 * meaning moves to the rings (SO_RCVBUF, SO_ERROR, TCP_NODELAY), a listener's
 * TCP_DEFER_ACCEPT, a client's TCP_FASTOPEN_CONNECT, and the rest passed to
 * the kernel socket unchanged.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>

#include "runtime/config.h"
#include "runtime/log.h"
#include "conn/conn.h"
#include "fabric/fabric.h"
#include "scilan.h"
#include "ring/segment.h"
#include "fabric/shm/offer_port.h"
#include "runtime/sys.h"
#include "ring/urgent.h"

static int put_int(void *val, socklen_t *len, int v)
{
	if (!val || !len) {
		errno = EFAULT;
		return -1;
	}
	if (*len < (socklen_t)sizeof(int)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(val, &v, sizeof(v));
	*len = sizeof(int);
	return 0;
}

static int get_int(const void *val, socklen_t len, int *v)
{
	if (!val) {
		errno = EFAULT;
		return -1;
	}
	if (len < (socklen_t)sizeof(int)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(v, val, sizeof(*v));
	return 0;
}

/* fd must be a live descriptor; scilan options need a scilan socket. */
static struct sl_sock *scilan_only(int fd)
{
	struct sl_sock *s = sl_sock_get(fd);
	int type;
	socklen_t len = sizeof(type);

	if (s)
		return s;
	if (sl_sys.getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0)
		errno = ENOPROTOOPT;
	return NULL;
}

static bool published(const struct sl_sock *s)
{
	return sl_sock_state(s) == SL_LISTENING && sl_fabric_listener_published(s);
}

void sl_listener_undefer(struct sl_sock *s)
{
	int v = 0, off = 0;
	socklen_t len = sizeof(v);

	if (!published(s) || sl_sys.getsockopt(s->fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &v, &len) < 0 || v <= 0)
		return;
	/* Clients not on scilan are accepted at the handshake instead of at
	 * their first bytes: what a server without the option sees. */
	if (sl_sys.setsockopt(s->fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &off, sizeof(off)) < 0) {
		sl_warn("fd %d: TCP_DEFER_ACCEPT stays on (%s): its scilan clients are accepted only once "
			"they give up the rings", s->fd, strerror(errno));
		return;
	}
	s->defer_accept = v;
}

/* The 64-bit time_t numbers of SO_RCVTIMEO/SO_SNDTIMEO (asm-generic/socket.h),
 * which a 32-bit build's libc uses and our headers may not name. */
#define SL_SO_RCVTIMEO_NEW 66
#define SL_SO_SNDTIMEO_NEW 67

int scilan_setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	struct sl_sock *s;
	int v;

	if (level == SOL_SCILAN) {
		s = scilan_only(fd);
		if (!s)
			return -1;
		if (name != SCILAN_SO_POLL_US) {
			errno = ENOPROTOOPT;
			return -1;
		}
		if (get_int(val, len, &v) < 0)
			return -1;
		/* SL_POLL_ADAPTIVE (-1) hands the spin back to the learning. */
		if (v < SL_POLL_ADAPTIVE || v > SL_MAX_POLL_US) {
			errno = EINVAL;
			return -1;
		}
		atomic_store(&s->poll_us, v);
		return 0;
	}
	s = sl_sock_get(fd);
	if (s && sl_sock_on_rings(s) && level == IPPROTO_TCP && name == TCP_NODELAY) {
		/* The kernel socket carries wake-ups only and keeps NODELAY set. */
		if (get_int(val, len, &v) < 0)
			return -1;
		s->nodelay = v != 0;
		return 0;
	}
	if (sl_sys.setsockopt(fd, level, name, val, len) < 0)
		return -1;
	/* Any of the timeouts' option numbers (old and 64-bit time): the next
	 * sleep asks the kernel, which keeps them (wait.c). */
	if (s && level == SOL_SOCKET &&
	    (name == SO_RCVTIMEO || name == SO_SNDTIMEO || name == SL_SO_RCVTIMEO_NEW || name == SL_SO_SNDTIMEO_NEW))
		sl_sock_forget_timeouts(s);
	if (!s || get_int(val, len, &v) < 0)
		return 0;
	if (level == SOL_SOCKET && name == SO_RCVBUF && v > 0 && !sl_sock_on_rings(s))
		s->ring_bytes = sl_ring_cap_for((uint64_t)v);
	else if (level == SOL_SOCKET && name == SO_SNDBUF) {
		s->sndbuf = v;
		sl_lock(&s->tx_lock);
		if (s->seg)
			sl_ring_tx_limit(&s->tx, v);
		sl_unlock(&s->tx_lock);
	}
	else if (level == IPPROTO_TCP && name == TCP_NODELAY)
		s->nodelay = v != 0;
	else if (level == SOL_SOCKET && name == SO_OOBINLINE)
		sl_urg_set_inline(s, v != 0);
	else if (level == SOL_SOCKET && name == SO_RCVLOWAT)
		atomic_store(&s->rcvlowat, 0); /* the kernel rounds and caps it: asked at first need */
	else if (level == IPPROTO_TCP && name == TCP_INQ)
		atomic_store(&s->tcp_inq, v != 0);
	else if (level == IPPROTO_TCP && name == TCP_FASTOPEN_CONNECT)
		s->fastopen_connect = v != 0;
	else if (level == IPPROTO_IP && name == IP_LOCAL_PORT_RANGE)
		s->own_port_range = v != 0;
	else if (level == IPPROTO_TCP && name == TCP_DEFER_ACCEPT && published(s)) {
		/* Set on the kernel socket first: it checks and rounds the value. */
		s->defer_accept = 0;
		sl_listener_undefer(s);
	}
	return 0;
}

int scilan_getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	struct sl_sock *s;
	enum sl_state state;
	int err;

	if (level == SOL_SCILAN) {
		s = scilan_only(fd);
		if (!s)
			return -1;
		if (sl_sock_state(s) == SL_CONNECTING)
			sl_connect_progress(s);
		state = sl_sock_state(s);
		switch (name) {
		case SCILAN_SO_POLL_US:
			return put_int(val, len, atomic_load(&s->poll_us));
		case SCILAN_SO_ACCELERATED:
			return put_int(val, len, state == SL_CONNECTED);
		case SCILAN_SO_RING_FILL: {
			int64_t avail = 0;

			if (state == SL_CONNECTED) {
				sl_lock(&s->rx_lock);
				avail = sl_rx_waiting(s);
				sl_unlock(&s->rx_lock);
			}

			return put_int(val, len, avail > 0 ? (int)avail : 0);
		}
		case SCILAN_SO_RING_SIZE:
			return put_int(val, len, (int)(state == SL_CONNECTED ? s->rx.cap : s->ring_bytes));
		default:
			errno = ENOPROTOOPT;
			return -1;
		}
	}
	s = sl_sock_get(fd);
	if (s && sl_sock_state(s) == SL_CONNECTING)
		sl_connect_progress(s);
	if (s && s->fastopen_connect && level == IPPROTO_TCP && name == TCP_FASTOPEN_CONNECT)
		return put_int(val, len, 1);
	if (!s || sl_sock_state(s) == SL_PLAIN)
		return sl_sys.getsockopt(fd, level, name, val, len);
	state = sl_sock_state(s);
	if (state == SL_LISTENING && level == IPPROTO_TCP && name == TCP_DEFER_ACCEPT && s->defer_accept > 0)
		return put_int(val, len, s->defer_accept);
	/* SO_RCVBUF sizes the ring, but reads back as the kernel reports it
	 * (doubled, clamped): programs compare what they set with what they get. */
	if (state == SL_CONNECTED && level == IPPROTO_TCP && name == TCP_NODELAY)
		return put_int(val, len, s->nodelay);
	if (state == SL_CONNECTED && level == SOL_SOCKET && name == SO_ERROR) {
		/* The kernel sets sk_err when the RST arrives; SO_ERROR takes it,
		 * and recv then ends in 0, poll drops POLLERR. */
		if (atomic_load(&s->reset) || sl_conn_peer_died(s))
			sl_conn_note_error(s);
		err = atomic_exchange(&s->pending_error, 0);
		if (err)
			return put_int(val, len, err);
	}
	return sl_sys.getsockopt(fd, level, name, val, len);
}
