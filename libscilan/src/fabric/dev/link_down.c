/* link_down.c — what a device connection does when its link goes down under
 * it: fail over to kernel TCP (failover.c makes the move), keep a closed
 * peer's tail readable, or reset behind private memory; one notice per link.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "uapi/scilan.h" /* the driver's ABI (-Idriver) */
#include "conn/agree.h"
#include "conn/conn.h"
#include "conn/promotion_trigger.h"
#include "evq/evq_dev.h"
#include "fabric/dev/link_down.h"
#include "fabric/dev/link_seen.h"
#include "process/holders.h"
#include "ring/segment.h"
#include "runtime/log.h"
#include "runtime/sys.h"
#include "sync/clock.h"

/* One line per link that goes down, not one per connection: the first of
 * our connections to see it says it; the same link down again a second or
 * more later says it again. */
static void say_link_down(const struct sl_sock *s)
{
	static _Atomic int64_t said_ns[64];
	int64_t now = sl_mono_ns(), was;
	int l = s->dev_link;

	if (l < 0 || l >= 64)
		return;
	was = atomic_load(&said_ns[l]);
	if (now - was < 1000000000 || !atomic_compare_exchange_strong(&said_ns[l], &was, now))
		return;
	sl_notice("/dev/scilan%d: the link went down; its connections continue on kernel TCP (reason link-down)", l);
}

/* The link went down: the driver reset the endpoint and zapped our mappings.
 * A connection agreed on, whose sends we mirrored, whose peer had not closed
 * and whose companion kernel connection is still open fails over
 * (failover.c).  Its mappings stay: our slice is our memory, held by the
 * endpoint until its close, so what landed in our ring still reads (a
 * reader racing with us consumes real bytes, which the move counts), and
 * the peer's slice refaults to the endpoint's sink page, which takes our
 * stores harmlessly.  Our own area then shows the peer moved (PLAIN), which
 * sends the next guard of any call to the move; the read index the peer
 * last published there is where our re-send starts.  A connection whose
 * peer had closed keeps its mappings too, for the tail in our ring.  Any
 * other is reset, behind private memory at the same addresses (after a
 * device's removal even our slice would raise SIGBUS), and with an RST on
 * its kernel connection, so that both ends see the reset. */
static void decide_link_lost(struct sl_sock *s)
{
	struct sl_area_ctl *own;
	uint32_t ps;
	const char *refused;
	bool movable;
	void *m;

	/* Moved already (the peer failed over first, or a bypass): the
	 * mappings are not used any more, and refault harmlessly. */
	if (sl_fell_back(s))
		return;
	ps = atomic_load(&s->own_ctl->peer_state);
	/* The peer had closed: all it sent landed before its CLOSED (posted
	 * writes keep their order), in our own slice, which stays ours until
	 * our close.  The reader takes that tail, then the end, as TCP would
	 * deliver it; a send gets EPIPE, as to any closed peer. */
	if ((ps & SL_PEER_CLOSED) && !(ps & SL_PEER_RESET) && !atomic_load(&s->reset)) {
		uint32_t down = SL_OFFER_LINK_DOWN;

		/* Nothing to move: the driver's mark goes, or every guard
		 * would take it for a move still to make. */
		if (s->offer_word)
			atomic_compare_exchange_strong(s->offer_word, &down, SL_OFFER_ATTACHED);
		sl_evq_dev_unmap(s, true);
		sl_conn_wake_local(s);
		return;
	}
	/* Held by several processes (fork): each would re-send and strip on
	 * its own, and which of them goes first cannot be agreed without the
	 * link; the peer would read a second header as data.  A loud reset. */
	movable = s->tx.mirror && sl_agree_on_rings(s) && !atomic_load(&s->reset) &&
		  !(ps & (SL_PEER_CLOSED | SL_PEER_RESET | SL_PEER_PLAIN)) &&
		  !(sl_agree_kernel_ready(s, POLLOUT) & (POLLERR | POLLHUP));
	refused = movable ? sl_dev_fail_over_refused(s) : NULL;
	if (movable && !refused) {
		sl_evq_dev_unmap(s, true);
		say_link_down(s);
		atomic_store(&s->fail_over_due, true);
		atomic_fetch_or(&s->own_ctl->peer_state, SL_PEER_PLAIN);
		sl_conn_wake_local(s);
		return;
	}
	for (int i = 0; i < 2; i++) {
		m = mmap(s->dev_map[i], s->dev_slice, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
		if (m == MAP_FAILED)
			sl_err("fd %d: cannot replace the device mapping (%s)", s->fd, strerror(errno));
	}
	sl_evq_dev_unmap(s, true);
	own = s->dev_map[0];
	atomic_store(&own->rx_write, s->rx.read);
	atomic_store(&own->peer_read, s->tx.write);
	atomic_store(&own->peer_state, SL_PEER_SHUT_WR | SL_PEER_CLOSED | SL_PEER_RESET);
	sl_conn_reset(s, refused ? refused : "the device link went down");
	/* And the kernel connection: a peer that failed over (or had moved)
	 * waits there for our bytes, until our close otherwise. */
	sl_sys_reset_tcp(s->fd);
}

const char *sl_dev_fail_over_refused(struct sl_sock *s)
{
	return sl_holders_others(s) ? "the device link went down under a connection several processes hold (fork): "
				      "it cannot fail over"
				    : NULL;
}

/* Once per connection.  Another thread of ours that finds the link down
 * while the first decides waits for the decision: it must not read the
 * driver's mark in the agreement word as the peer's corruption, nor the
 * reset endpoint as the peer's death (linkcut repeat: a receiver beside a
 * sender).  Never called with our ring or ctl locks held; the decision
 * takes ctl_lock (a reset) and the set-map lock. */
void sl_dev_link_lost(struct sl_sock *s)
{
	struct scilan_info in;

	if (!s->dev_map[0])
		return;
	pthread_mutex_lock(&s->lost_lock);
	if (!atomic_exchange(&s->dev_lost, true)) {
		/* Once per connection, and only for a link that is down (not
		 * an endpoint reset alone): the tries of the connections it
		 * left skip it for a while (link_seen.c). */
		if (sl_sys.ioctl(s->bell_rx, SCILAN_IOC_INFO, &in) == 0 && !in.link_up)
			sl_dev_link_note(s->dev_link, false);
		decide_link_lost(s);
	}
	pthread_mutex_unlock(&s->lost_lock);
}
