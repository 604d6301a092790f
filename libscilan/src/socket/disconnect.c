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
#include "conn/failover.h"
#include "conn/promotion_trigger.h"
#include "fabric/fabric.h"
#include "runtime/stats_file.h"
#include "runtime/sys.h"

/* The rings' half of the kernel's RST: the peer reads ECONNRESET, and every
 * call of ours after it is the kernel's, on a socket with no connection.
 * The segment stays mapped until close, for threads racing this, and the
 * connection's statistics row closes now: it is over, not a fallback. */
static void abort_rings(struct sl_sock *s)
{
	sl_conn_reset(s, NULL);
	sl_lock(&s->tx_lock);
	sl_lock(&s->rx_lock);
	pthread_mutex_lock(&s->ctl_lock);
	if (sl_sock_state(s) == SL_CONNECTED) {
		sl_agree_mark_plain(s);
		sl_stats_conn_close(s);
		sl_sock_set_state(s, SL_PLAIN);
	}
	pthread_mutex_unlock(&s->ctl_lock);
	sl_unlock(&s->rx_lock);
	sl_unlock(&s->tx_lock);
}

/* Nothing of the old connection is read through us on the next: a seam it
 * had not crossed (promotion), a fail-over header it had not stripped. */
static void drop_old_stream(struct sl_sock *s)
{
	sl_promote_forbid(s);
	sl_lock(&s->rx_lock);
	sl_promote_drop(s);
	atomic_store(&s->strip_pending, false);
	atomic_store(&s->fail_over_due, false);
	sl_fail_over_forget(s);
	sl_unlock(&s->rx_lock);
}

int sl_sock_disconnect(struct sl_sock *s, int fd, const struct sockaddr *addr, socklen_t len)
{
	enum sl_state st = sl_sock_state(s);

	/* Settled first, while the kernel connection lives: a late offer out
	 * (revoked, or followed if claimed: on the rings then), a connect in
	 * progress, an offer the acceptor has not answered (revoked as a close
	 * revokes it; the RST then discards what that put on the kernel
	 * socket, as the kernel's disconnect discards what it had queued). */
	if (st == SL_PLAIN || st == SL_CONNECTED)
		sl_promote_stop(s);
	if (sl_sock_state(s) == SL_CONNECTING)
		sl_connect_progress(s);
	if (sl_sock_state(s) == SL_CONNECTED && sl_agree_pending(s))
		sl_agree_decide(s, SL_AGREE_FORCE);
	/* The kernel's first: where it refuses (a security module, a filter),
	 * the connection or the listen goes on, and ours with it. */
	if (sl_sys.connect(fd, addr, len) < 0)
		return -1;
	/* Each state decided under its lock: another thread's connect progress
	 * may have moved it since we looked. */
	for (;;) {
		st = sl_sock_state(s);
		if (st == SL_CONNECTED) {
			abort_rings(s);
			continue;
		}
		if (st == SL_PLAIN) {
			drop_old_stream(s);
			break;
		}
		if (st != SL_LISTENING && st != SL_CONNECTING)
			break;
		pthread_mutex_lock(&s->ctl_lock);
		if (sl_sock_state(s) != st) {
			pthread_mutex_unlock(&s->ctl_lock);
			continue;
		}
		if (st == SL_LISTENING) {
			/* As a close does: an accepted connection's look holds
			 * ctl_lock and checks the generation before it scans the
			 * queues this closes. */
			atomic_fetch_add(&s->listen_gen, 1);
			sl_fabric_listen_unregister(s);
			sl_sock_set_state(s, SL_FRESH);
		} else {
			/* Not fresh, as a connect that failed is: the withdrawn
			 * offer may still wait in the listener's queue under this
			 * socket's cookie, which the next connect's offer would
			 * carry too.  The shm acceptor passes over it (rendezvous.c);
			 * the device fabric's was not looked at for it. */
			s->fabric->offer_withdraw(s);
			sl_sock_set_state(s, SL_PLAIN);
		}
		pthread_mutex_unlock(&s->ctl_lock);
		if (st == SL_LISTENING)
			break;
	}
	/* Threads asleep on it look again, at what it is now. */
	sl_conn_wake_local(s);
	return 0;
}
