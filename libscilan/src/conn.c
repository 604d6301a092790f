/* conn.c — the state of an established connection as both ends see it:
 * readiness from ring indices and peer flags, the stimulate side of the sleep
 * protocol, and resets when the peer breaks the protocol or dies.
 */
#include "conn.h"

#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agree.h"
#include "fabric.h"
#include "log.h"
#include "segment.h"
#include "sys.h"

void sl_conn_reset(struct sl_sock *s, const char *why)
{
	if (atomic_exchange(&s->reset, true))
		return;
	sl_warn("fd %d: connection reset: %s", s->fd, why);
	sl_conn_note_error(s);
	if (s->peer_ctl) {
		pthread_mutex_lock(&s->ctl_lock);
		sl_segment_set_state(s, SL_PEER_RESET | SL_PEER_CLOSED | SL_PEER_SHUT_WR);
		pthread_mutex_unlock(&s->ctl_lock);
		sl_fabric()->stimulate(s, SL_TOKEN_DATA | SL_TOKEN_SPACE);
	}
	sl_conn_wake_local(s);
}

bool sl_conn_peer_died(struct sl_sock *s)
{
	uint32_t ps = atomic_load_explicit(&s->own_ctl->peer_state, memory_order_acquire);

	if (ps & SL_PEER_RESET)
		return true;
	return atomic_load(&s->peer_gone) && !(ps & SL_PEER_CLOSED);
}

void sl_conn_note_error(struct sl_sock *s)
{
	if (!atomic_exchange(&s->error_noted, true))
		atomic_store(&s->pending_error, ECONNRESET);
}

short sl_conn_ready(struct sl_sock *s, short events)
{
	short rev = 0;
	uint32_t ps;
	int64_t avail, space;
	bool peer_fin, shut_wr;

	/* Our offer out and undecided, or the peer's bytes on the kernel
	 * socket: a poll or epoll wait is where a program that never calls
	 * recv learns that the connection is kernel TCP now. */
	if (sl_agree_plain(s, SL_AGREE_POLL))
		return sl_agree_kernel_ready(s, events);
	shut_wr = atomic_load(&s->shut_wr);
	if (atomic_load(&s->reset))
		return (short)((events & (POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM | POLLRDHUP)) | POLLHUP |
			       (atomic_load(&s->pending_error) ? POLLERR : 0));
	/* State before indices: data written before the peer's FIN is then visible. */
	ps = atomic_load_explicit(&s->own_ctl->peer_state, memory_order_acquire);
	sl_lock(&s->rx_lock);
	avail = sl_rx_waiting(s);
	sl_unlock(&s->rx_lock);
	if (avail < 0) {
		sl_conn_reset(s, "peer wrote an impossible write index");
		return sl_conn_ready(s, events);
	}
	if (sl_conn_peer_died(s) && avail == 0) {
		/* POLLERR only while the error is pending: once a recv, send or
		 * SO_ERROR took it, the kernel shows IN|OUT|HUP|RDHUP. */
		sl_conn_note_error(s);
		return (short)((events & (POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM | POLLRDHUP)) | POLLHUP |
			       (atomic_load(&s->pending_error) ? POLLERR : 0));
	}
	peer_fin = (ps & (SL_PEER_SHUT_WR | SL_PEER_CLOSED)) || atomic_load(&s->peer_gone);
	if (avail > 0 || peer_fin || atomic_load(&s->shut_rd))
		rev |= POLLIN | POLLRDNORM;
	if (peer_fin || atomic_load(&s->shut_rd)) /* tcp_poll: any RCV_SHUTDOWN */
		rev |= POLLRDHUP;
	if (shut_wr || (ps & SL_PEER_CLOSED) || atomic_load(&s->peer_gone)) {
		rev |= POLLOUT | POLLWRNORM;
	} else {
		sl_lock(&s->tx_lock);
		space = sl_tx_room(s, s->tx.cap / 4);
		sl_unlock(&s->tx_lock);
		if (space < 0) {
			sl_conn_reset(s, "peer published an impossible read index");
			return sl_conn_ready(s, events);
		}
		/* Like the kernel's minimum write space: no POLLOUT for a sliver. */
		if ((uint64_t)space >= s->tx.cap / 4)
			rev |= POLLOUT | POLLWRNORM;
	}
	if ((peer_fin || atomic_load(&s->shut_rd)) && shut_wr)
		rev |= POLLHUP;
	return (short)(rev & (events | POLLHUP | POLLERR));
}

void sl_conn_wake_local(struct sl_sock *s)
{
	sl_fabric()->ring_self(s, SL_TOKEN_LOCAL);
}

void sl_conn_after_produce(struct sl_sock *s, bool fenced)
{
	/* Step 1-2 of the stimulate side: our index store must be visible before
	 * we read the peer's arm word, or both of us could miss the other. */
	if (!fenced)
		atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&s->own_ctl->wake_on_data, memory_order_relaxed) &&
	    atomic_exchange(&s->own_ctl->wake_on_data, 0))
		sl_fabric()->stimulate(s, SL_TOKEN_DATA);
}

bool sl_conn_after_consume_locked(struct sl_sock *s)
{
	/* Only a published index can unblock the sender; publishing is batched
	 * (ring.c), so a sleeping sender gets the index at once. */
	if (s->rx.published != s->rx.read) {
		if (!atomic_load_explicit(&s->own_ctl->wake_on_space, memory_order_relaxed))
			return false;
		sl_ring_rx_publish(&s->rx);
	}
	atomic_thread_fence(memory_order_seq_cst);
	return atomic_load_explicit(&s->own_ctl->wake_on_space, memory_order_relaxed) &&
	       atomic_exchange(&s->own_ctl->wake_on_space, 0);
}

void sl_conn_wake_peer(struct sl_sock *s)
{
	int tokens = 0;

	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_exchange(&s->own_ctl->wake_on_data, 0))
		tokens |= SL_TOKEN_DATA;
	if (atomic_exchange(&s->own_ctl->wake_on_space, 0))
		tokens |= SL_TOKEN_SPACE;
	if (tokens)
		sl_fabric()->stimulate(s, tokens);
}

bool sl_conn_check_peer(struct sl_sock *s)
{
	/* While our offer is out the kernel socket may carry a plain
	 * acceptor's bytes, which only the fall-back may read. */
	if (atomic_load(&s->peer_gone) || sl_agree_pending(s))
		return false;
	if (!sl_fabric()->peer_gone(s))
		return false;
	atomic_store(&s->peer_gone, true);
	return true;
}
