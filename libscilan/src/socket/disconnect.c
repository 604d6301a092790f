/* disconnect.c — a connect() to AF_UNSPEC: the kernel aborts the socket's
 * connection (an RST) or its listen, and the number may connect or listen
 * again; our state for it follows, so that nothing of the old connection
 * carries a byte of the next one (ARCHITECTURE.md, "The program's disconnect").
 */
#include "socket/disconnect.h"

#include <pthread.h>
#include <stdatomic.h>

#include "conn/agree.h"
#include "conn/conn.h"
#include "conn/promotion.h"
#include "conn/promotion_trigger.h"
#include "fabric/fabric.h"
#include "runtime/stats_file.h"
#include "runtime/sys.h"

static void set_state(struct sl_sock *s, enum sl_state state)
{
	atomic_store_explicit(&s->state, (int)state, memory_order_release);
}

/* The rings' half of the kernel's RST: the peer reads ECONNRESET, and every
 * call of ours after it is the kernel's, on a socket with no connection.
 * The segment stays mapped until close, for threads racing this, and the
 * connection's statistics row closes now: it is over, not a fallback. */
static void abort_rings(struct sl_sock *s)
{
	sl_conn_abort(s);
	sl_lock(&s->tx_lock);
	sl_lock(&s->rx_lock);
	pthread_mutex_lock(&s->ctl_lock);
	if (sl_sock_state(s) == SL_CONNECTED) {
		sl_agree_mark_plain(s);
		sl_stats_conn_close(s);
		set_state(s, SL_PLAIN);
	}
	pthread_mutex_unlock(&s->ctl_lock);
	sl_unlock(&s->rx_lock);
	sl_unlock(&s->tx_lock);
}

int sl_sock_disconnect(struct sl_sock *s, int fd, const struct sockaddr *addr, socklen_t len)
{
	/* The next connection on this number is not the one a promotion (or a
	 * return after a fail-over) was armed for; a late offer out is decided
	 * first, and a claimed one followed: on the rings then, reset below. */
	if (sl_sock_state(s) == SL_PLAIN)
		sl_promote_stop(s);
	if (sl_sock_state(s) == SL_CONNECTING)
		sl_connect_progress(s);
	switch (sl_sock_state(s)) {
	case SL_LISTENING:
		/* As a close does: an accepted connection's look holds ctl_lock
		 * and checks the generation before it scans the queues. */
		pthread_mutex_lock(&s->ctl_lock);
		atomic_fetch_add(&s->listen_gen, 1);
		sl_fabric_listen_unregister(s);
		set_state(s, SL_FRESH);
		pthread_mutex_unlock(&s->ctl_lock);
		break;
	case SL_CONNECTING:
		pthread_mutex_lock(&s->ctl_lock);
		s->fabric->offer_withdraw(s);
		set_state(s, SL_PLAIN);
		pthread_mutex_unlock(&s->ctl_lock);
		sl_promote_forbid(s);
		break;
	case SL_CONNECTED:
		abort_rings(s);
		sl_promote_forbid(s);
		break;
	default:
		break;
	}
	return sl_sys.connect(fd, addr, len);
}
