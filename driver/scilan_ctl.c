// SPDX-License-Identifier: GPL-2.0
/* scilan_ctl.c — the per-peer control channel (connect, accept, refuse,
 * close against the listen table; verify, the client's driver vouching for
 * its socket), slice allocation, and the stimulus words
 * plus doorbells that wake exactly the endpoints the peer stimulated (the
 * sets' words: scilan_set.c).
 */
#include <linux/delay.h>
#include <linux/io.h>
#include <linux/slab.h>
#include <net/net_namespace.h>
#include <net/sock.h>

#include "scilan.h"

/* The channel is a ring of SL_CTL_SLOTS messages in page 0 of the
 * receiver's window: the sender writes a message, then (after a write
 * barrier) its producer index, then rings doorbell bit 0.  The receiver
 * acknowledges by writing its consumer index into the SENDER's page 0, so a
 * sender checks for room by reading its own memory, never across the link.
 */
static int sl_ctl_send_locked(struct sl_link *link, const struct sl_msg *msg)
{
	void __iomem *slot;
	u64 ack;
	int waited = 0, rc = 0, limit;

	lockdep_assert_held_read(&link->map_sem);
	lockdep_assert_held(&link->tx_mutex);
	/* A peer that stalled once costs one wait, not one per message: the
	 * caller holds map_sem, which link down and every close need.
	 */
	limit = link->tx_stalled ? 1 : 1000;
	for (;;) {
		if (!link->up || !link->pwin) {
			rc = -ECONNRESET;
			goto out;
		}
		ack = le64_to_cpu(READ_ONCE(*(__le64 *)(link->lwin + SL_CTL_ACK_OFF)));
		if (link->tx_prod - ack > SL_CTL_SLOTS) {
			rc = -EPROTO; /* the peer acknowledged what we never sent */
			goto out;
		}
		if (link->tx_prod - ack < SL_CTL_SLOTS) {
			link->tx_stalled = false;
			break;
		}
		/* Full: the peer's work item drains it within milliseconds
		 * unless the peer is gone, which the link watcher will see.
		 */
		if (++waited > limit) {
			link->tx_stalled = true;
			dev_warn_ratelimited(link->dev, "scilan: the peer drains no control messages\n");
			rc = -ETIMEDOUT;
			goto out;
		}
		usleep_range(500, 1000);
	}
	slot = link->pwin + SL_CTL_MSG_OFF + (link->tx_prod % SL_CTL_SLOTS) * sizeof(*msg);
	memcpy_toio(slot, msg, sizeof(*msg));
	link->tx_prod++;
	wmb(); /* the message lands before the index that publishes it */
	writeq(link->tx_prod, link->pwin + SL_CTL_PROD_OFF);
	sl_ring_peer(link, BIT_ULL(0));
	link->stat_ctl_tx++;
out:
	return rc;
}

int sl_ctl_send(struct sl_link *link, const struct sl_msg *msg)
{
	int rc;

	mutex_lock(&link->tx_mutex);
	rc = sl_ctl_send_locked(link, msg);
	mutex_unlock(&link->tx_mutex);
	return rc;
}

int sl_slice_db_bit(const struct sl_link *link, int slice)
{
	return 1 + slice % (link->db_bits - 1);
}

/* Ring the peer's doorbell bits.  With one doorbell per peer the bits are
 * words in page 0 of the peer's window, stored before the ring (posted
 * writes stay in order; wmb for the CPU's side), so the peer's interrupt
 * finds every bit rung before it.  Caller holds map_sem (pwin mapped).
 */
void sl_ring_peer(struct sl_link *link, u64 bits)
{
	int b;

	if (!link->db_words) {
		link->ops->peer_db_set(link, bits);
		return;
	}
	for (b = 0; b < SL_CTL_DB_WORDS; b++)
		if (bits & BIT_ULL(b))
			writel(1, link->pwin + SL_CTL_DB_OFF + 4 * b);
	wmb();
	link->ops->peer_db_set(link, 1);
}

/* A free slice is one no local endpoint holds and the peer cannot write
 * (it never learned it, or it closed it).  Both bits are taken: the peer
 * may write as soon as it hears of the slice.
 */
int sl_slice_alloc_locked(struct sl_link *link, struct sl_ep *ep)
{
	unsigned int s;

	for (s = find_first_zero_bit(link->slice_local, link->nslices); s < link->nslices;
	     s = find_next_zero_bit(link->slice_local, link->nslices, s + 1)) {
		if (test_bit(s, link->slice_peer))
			continue;
		set_bit(s, link->slice_local);
		set_bit(s, link->slice_peer);
		link->slice_ep[s] = ep;
		return s;
	}
	return -ENOSPC;
}

void sl_slice_release_locked(struct sl_link *link, int slice, bool local, bool peer)
{
	if (slice < 0 || slice >= (int)link->nslices)
		return;
	if (local) {
		clear_bit(slice, link->slice_local);
		link->slice_ep[slice] = NULL;
	}
	if (peer)
		clear_bit(slice, link->slice_peer);
}

/* Stimulus words: two per slice (data, space) in page 1 of each window.  The
 * peer only ever stores 1; the owner exchanges them to 0, so two stimuli of
 * different kinds never overwrite each other.
 */
void sl_stimulate(struct sl_link *link, int peer_slice, u32 tokens)
{
	void __iomem *w = link->pwin + SL_WIN_STIM_OFF + peer_slice * 8;

	lockdep_assert_held_read(&link->map_sem);
	if (tokens & SCILAN_TOKEN_DATA)
		writel(1, w);
	if (tokens & SCILAN_TOKEN_SPACE)
		writel(1, w + 4);
	wmb(); /* the words land before the doorbell (PCIe keeps posted writes in order) */
	sl_ring_peer(link, BIT_ULL(sl_slice_db_bit(link, peer_slice)));
	link->stat_stimuli++;
}

/* The slices of doorbell bit b: b - 1, b - 1 + (db_bits - 1), ...; each
 * endpoint whose words were set gets its tokens and one wake-up.
 */
static void sl_scan_slices_locked(struct sl_link *link, int b)
{
	u32 *stim = link->lwin + SL_WIN_STIM_OFF;
	unsigned int s;
	struct sl_ep *ep;
	u32 tokens;

	for (s = b - 1; s < link->nslices; s += link->db_bits - 1) {
		tokens = 0;
		if (READ_ONCE(stim[2 * s]) && xchg(&stim[2 * s], 0))
			tokens |= SCILAN_TOKEN_DATA;
		if (READ_ONCE(stim[2 * s + 1]) && xchg(&stim[2 * s + 1], 0))
			tokens |= SCILAN_TOKEN_SPACE;
		ep = link->slice_ep[s];
		if (!tokens || !ep || ep->state != SCILAN_EP_CONNECTED)
			continue;
		ep->tokens |= tokens;
		link->stat_wakeups++;
		wake_up_interruptible(&ep->wq);
	}
}

/* Interrupt context: the slices and sets of the rung doorbell bits. */
void sl_db_scan(struct sl_link *link, u64 bits)
{
	int b;

	spin_lock(&link->lock);
	for (b = 1; b < link->db_bits; b++)
		if (bits & BIT_ULL(b))
			sl_scan_slices_locked(link, b);
	sl_set_scan_locked(link, bits);
	spin_unlock(&link->lock);
}

/* The listener a CONNECT for t goes to: the best match (sl_listener_match:
 * a namespace root made over an unprivileged one, then exact address over
 * wildcard), with room in its backlog among a SO_REUSEPORT group; NULL with
 * *why when none matches, or when the best matches lie in two network
 * namespaces that both own the destination address (two containers sharing
 * it): there the driver cannot tell whose the connection is, and kernel TCP
 * can.
 */
static bool sl_queue_full(const struct sl_ep *lst, bool late)
{
	return late ? lst->late_len >= sl_late_max : lst->backlog_len >= sl_backlog_max(lst);
}

static struct sl_ep *sl_find_listener_locked(struct sl_link *link, const struct sl_tuple *t,
					     bool userns_ok, bool late, int *why)
{
	struct sl_ep *ep, *best = NULL;
	struct net *net = NULL;
	int score, top = 0;

	*why = ECONNREFUSED;
	list_for_each_entry(ep, &link->listeners, lnode) {
		if (ep->state != SCILAN_EP_LISTEN || !ep->lsk)
			continue;
		score = sl_listener_match(ep->lsk, t, userns_ok);
		if (!score || score < top)
			continue;
		if (score > top) {
			top = score;
			best = NULL;
			net = sock_net(ep->lsk);
		} else if (!net_eq(net, sock_net(ep->lsk))) {
			dev_warn_ratelimited(link->dev,
					     "scilan: port %u: listeners in two namespaces own %pI6c; refused (kernel TCP)\n",
					     t->dport, &t->daddr);
			return NULL;
		}
		if (!best || (sl_queue_full(best, late) && !sl_queue_full(ep, late)))
			best = ep;
	}
	if (best && sl_queue_full(best, late)) {
		*why = ENOBUFS; /* a full queue, not a missing listener */
		return NULL;
	}
	return best;
}

static int sl_reply(struct sl_link *link, u32 type, u32 dst, u32 src, u32 cookie, u32 status)
{
	struct sl_msg m = {
		.type = cpu_to_le32(type),
		.dst_slice = cpu_to_le32(dst),
		.src_slice = cpu_to_le32(src),
		.cookie = cpu_to_le32(cookie),
		.status = cpu_to_le32(status),
	};

	return sl_ctl_send(link, &m);
}

/* Takes ep off whichever backlog still holds it.  It may have been accepted
 * or closed meanwhile, and its memory reused by another queued endpoint:
 * only pointers are compared until it is found, and its id (unique per
 * queued endpoint) tells it from a newcomer at the same address.
 */
static bool sl_unqueue_locked(struct sl_link *link, struct sl_ep *ep, u32 id)
{
	struct sl_ep *lst, *q;

	list_for_each_entry(lst, &link->listeners, lnode) {
		list_for_each_entry(q, &lst->backlog, lnode)
			if (q == ep && q->id == id) {
				list_del_init(&q->lnode);
				lst->backlog_len--;
				return true;
			}
		list_for_each_entry(q, &lst->late_q, lnode)
			if (q == ep && q->id == id) {
				list_del_init(&q->lnode);
				lst->late_len--;
				return true;
			}
	}
	return false;
}

static void sl_drop_queued(struct sl_link *link, struct sl_ep *ep, u32 id)
{
	LIST_HEAD(gone);

	spin_lock_irq(&link->lock);
	if (sl_unqueue_locked(link, ep, id))
		list_add(&ep->lnode, &gone);
	spin_unlock_irq(&link->lock);
	sl_close_queued(link, &gone);
}

/* A connection request: the driver completes the handshake at once (as TCP
 * does before accept()) and queues the new endpoint on the listener: on its
 * backlog, or, for a late connect, on its late queue.
 */
static void sl_on_connect(struct sl_link *link, const struct sl_msg *m)
{
	u32 peer_slice = le32_to_cpu(m->src_slice), cookie = le32_to_cpu(m->cookie);
	u32 port = le32_to_cpu(m->port), flags = le16_to_cpu(m->flags);
	bool late = flags & SL_MSG_F_LATE;
	struct sl_msg accept = {
		.type = cpu_to_le32(SL_MSG_ACCEPT),
		.dst_slice = cpu_to_le32(peer_slice),
		.cookie = cpu_to_le32(cookie),
	};
	struct sl_tuple t = {};
	struct sl_ep *lst, *ep, *q, *tmp;
	int slice = -ECONNREFUSED, why, rc;
	LIST_HEAD(stale);
	u32 id;
	bool userns_ok;
	u64 gen;

	if (peer_slice >= link->peer_nslices)
		return; /* garbage: nobody to answer */
	if (!port || port > 65535 || (flags & ~SL_MSG_F_LATE)) {
		sl_reply(link, SL_MSG_REFUSE, peer_slice, 0, cookie, EINVAL);
		return;
	}
	memcpy(&t.saddr, m->saddr, sizeof(t.saddr));
	memcpy(&t.daddr, m->daddr, sizeof(t.daddr));
	t.sport = le16_to_cpu(m->sport);
	t.dport = port;
	ep = kzalloc(sizeof(*ep), GFP_KERNEL);
	if (!ep) {
		sl_reply(link, SL_MSG_REFUSE, peer_slice, 0, cookie, ENOMEM);
		return;
	}
	init_waitqueue_head(&ep->wq);
	INIT_LIST_HEAD(&ep->backlog);
	INIT_LIST_HEAD(&ep->late_q);
	ep->link = link;
	ep->peer_slice = peer_slice;
	ep->slice = -1;
	ep->set = -1;
	ep->tuple = t; /* only ever compared with an accepted socket's */
	userns_ok = sl_userns_may_take(link, &t);
	spin_lock_irq(&link->lock);
	gen = link->generation;
	lst = sl_find_listener_locked(link, &t, userns_ok, late, &why);
	slice = lst ? sl_slice_alloc_locked(link, ep) : -why;
	spin_unlock_irq(&link->lock);
	if (slice < 0) {
		kfree(ep);
		sl_reply(link, SL_MSG_REFUSE, peer_slice, 0, cookie, -slice);
		return;
	}
	/* Clean control words before anyone uses the slice: the peer learns
	 * it only from the ACCEPT below, our program only once it is queued.
	 * The endpoint is IDLE meanwhile, so stimuli for it are dropped.
	 */
	memset(link->lwin + SL_WIN_SLICE_OFF + (size_t)slice * link->slice_size, 0, link->slice_size);
	sl_slice_point_store(link, slice, SCILAN_POINT_UNKNOWN);
	/* The ACCEPT leaves before any CLOSE of this connection can: a program
	 * may accept and close it the moment it is queued, and a CLOSE that
	 * overtook the ACCEPT would be ignored by the peer (its slice leaks).
	 */
	mutex_lock(&link->tx_mutex);
	spin_lock_irq(&link->lock);
	/* The listener may have closed, or the session changed, meanwhile. */
	lst = sl_find_listener_locked(link, &t, userns_ok, late, &why);
	if (!lst || !link->up || link->generation != gen) {
		sl_slice_release_locked(link, slice, true, true);
		spin_unlock_irq(&link->lock);
		mutex_unlock(&link->tx_mutex);
		kfree(ep);
		sl_reply(link, SL_MSG_REFUSE, peer_slice, 0, cookie, ECONNREFUSED);
		return;
	}
	ep->slice = slice;
	accept.src_slice = cpu_to_le32(slice);
	ep->state = SCILAN_EP_CONNECTED;
	ep->generation = gen;
	ep->queued = true;
	ep->late = late;
	ep->id = ++link->next_cookie;
	id = ep->id;
	list_add_tail(&ep->node, &link->eps);
	if (late) {
		/* Not the listener's to poll: the acceptor's library looks.
		 * Nothing else drains this queue: the late connects that can
		 * never be taken (their client closed, an earlier session's)
		 * go as a new one comes.
		 */
		list_for_each_entry_safe(q, tmp, &lst->late_q, lnode)
			if (q->state != SCILAN_EP_CONNECTED || q->generation != gen) {
				list_move_tail(&q->lnode, &stale);
				lst->late_len--;
			}
		list_add_tail(&ep->lnode, &lst->late_q);
		lst->late_len++;
	} else {
		list_add_tail(&ep->lnode, &lst->backlog);
		lst->backlog_len++;
		wake_up_interruptible(&lst->wq);
	}
	sl_link_get(link);
	spin_unlock_irq(&link->lock);
	rc = sl_ctl_send_locked(link, &accept);
	mutex_unlock(&link->tx_mutex);
	sl_close_queued(link, &stale);
	/* An ACCEPT the peer never gets: nobody will claim the connection. */
	if (rc)
		sl_drop_queued(link, ep, id);
}

/* The acceptor's driver asks to pair our client endpoint (VERIFY, its
 * socket proven): this answer is the agreement.  Unless the library revoked
 * first (SCILAN_IOC_ABANDON: it is moving its ring bytes to kernel TCP),
 * the endpoint is agreed from now on, which no later ABANDON undoes, and
 * the slice's agreement word says so to the library without a system call.
 * Both under the link lock, so exactly one of the two wins.  False: revoked
 * (or gone), the acceptor stays kernel TCP.  A late connect's pairing (late)
 * brings the acceptor's switch point, stored before the agreement word: a
 * library that reads ATTACHED finds the point.  A late VERIFY for a plain
 * connect, or the reverse, is no.
 */
static bool sl_agree_locked_out(struct sl_link *link, u32 slice, u32 peer_slice, bool late, u64 point)
{
	struct sl_ep *ep;
	bool agreed = false;

	spin_lock_irq(&link->lock);
	ep = link->slice_ep[slice];
	if (ep && ep->peer_slice == (int)peer_slice && ep->sk && !ep->abandoned && ep->late == late &&
	    (!late || (!ep->agreed && point != SCILAN_POINT_UNKNOWN)) &&
	    (ep->state == SCILAN_EP_CONNECTED || ep->state == SCILAN_EP_PEER_CLOSED)) {
		ep->agreed = true;
		if (late) {
			sl_slice_point_store(link, slice, point);
			smp_wmb(); /* the point before the word that says it is there */
		}
		sl_slice_agree_store(link, slice, SCILAN_AGREE_ATTACHED);
		agreed = true;
	}
	spin_unlock_irq(&link->lock);
	return agreed;
}

/* Our answer to the acceptor's VERIFY is out (or the link took it): the
 * client's program saw the agreement in its word before we sent it, and a
 * SEAM_POINT it makes meanwhile waits for this, so that the acceptor's
 * driver reads the answer before the point (the control ring keeps the
 * order), not a point for a connection it has no verdict on.
 */
static void sl_answered(struct sl_link *link, u32 slice, u32 peer_slice)
{
	struct sl_ep *ep;

	spin_lock_irq(&link->lock);
	ep = link->slice_ep[slice];
	if (ep && ep->peer_slice == (int)peer_slice && ep->agreed && !ep->answered) {
		ep->answered = true;
		wake_up(&ep->wq); /* a killable sleeper in sl_ioc_seam_point */
	}
	spin_unlock_irq(&link->lock);
}

static void sl_handle(struct sl_link *link, const struct sl_msg *m)
{
	u32 type = le32_to_cpu(m->type), dst = le32_to_cpu(m->dst_slice);
	u32 src = le32_to_cpu(m->src_slice), cookie = le32_to_cpu(m->cookie);
	u32 status = le32_to_cpu(m->status);
	bool late = le16_to_cpu(m->flags) & SL_MSG_F_LATE;
	u64 point = le64_to_cpu(m->point);
	struct sl_ep *ep;
	struct sock *client_sk = NULL;
	struct sl_tuple t;
	bool orphan = false, aborted = false, verify = false, point_stored = false, point_answer = false;
	u32 aborted_id = 0;

	if (type == SL_MSG_CONNECT) {
		sl_on_connect(link, m);
		return;
	}
	if (dst >= link->nslices || (type != SL_MSG_REFUSE && src >= link->peer_nslices))
		return;
	spin_lock_irq(&link->lock);
	ep = link->slice_ep[dst];
	switch (type) {
	case SL_MSG_ACCEPT:
		if (ep && ep->connecting && ep->cookie == cookie) {
			ep->peer_slice = src;
			ep->state = SCILAN_EP_CONNECTED;
			ep->connecting = false;
			wake_up_interruptible(&ep->wq);
		} else {
			orphan = true; /* the connect gave up: close the peer's side */
		}
		break;
	case SL_MSG_REFUSE:
		if (ep && ep->connecting && ep->cookie == cookie) {
			ep->connect_err = (status == ENOSPC || status == ENOMEM || status == ENOBUFS) ?
					  -status : -ECONNREFUSED;
			ep->connecting = false;
			wake_up_interruptible(&ep->wq);
			sl_slice_release_locked(link, dst, false, true);
		} else if (!test_bit(dst, link->slice_local) && test_bit(dst, link->slice_peer) &&
			   link->slice_cookie[dst] == cookie) {
			/* The connect gave up before this answer came. */
			sl_slice_release_locked(link, dst, false, true);
		}
		break;
	case SL_MSG_CLOSE:
		if (ep && ep->peer_slice == (int)src && ep->queued && (status & SL_CLOSE_ABORTED)) {
			aborted = true; /* a connect that gave up: never claimed */
			aborted_id = ep->id;
			sl_slice_release_locked(link, dst, false, true);
			break;
		}
		if (ep && ep->peer_slice == (int)src && ep->state == SCILAN_EP_CONNECTED) {
			ep->state = SCILAN_EP_PEER_CLOSED;
			/* What a queued connection's client proved as it left. */
			ep->confirmed = status & SL_CLOSE_CONFIRMED;
			ep->isn = cookie;
			wake_up_interruptible(&ep->wq);
		}
		if (!ep || ep->peer_slice == (int)src)
			sl_slice_release_locked(link, dst, false, true);
		break;
	case SL_MSG_VERIFY:
		/* Our client endpoint's socket is checked after unlocking; any
		 * other slice (no client socket, or not the peer's) is "no".
		 */
		verify = true;
		if (ep && ep->peer_slice == (int)src && ep->sk &&
		    (ep->state == SCILAN_EP_CONNECTED || ep->state == SCILAN_EP_PEER_CLOSED)) {
			client_sk = ep->sk;
			sock_hold(client_sk);
			t = ep->tuple;
		}
		break;
	case SL_MSG_VERIFIED:
		if (ep && ep->peer_slice == (int)src && cookie && ep->verify_cookie == cookie &&
		    !ep->verdict) {
			ep->verdict = status == SL_VERIFY_OK ? 1 : -1;
			wake_up(&ep->wq); /* a killable sleeper in sl_verify */
		}
		break;
	case SL_MSG_POINT:
		/* Our accepted end of a late connect, paired, or still queued
		 * but proven (the client sends its point as soon as it sees its
		 * agreement, which may be before our ACCEPT_LATE's thread took
		 * the connection over): the client's point, once (a second one
		 * could move it under our reads), never the unknown one.
		 */
		point_answer = true;
		if (ep && ep->peer_slice == (int)src && ep->late && !ep->point_got && point != SCILAN_POINT_UNKNOWN &&
		    ((ep->agreed && !ep->queued) || (ep->queued && ep->verdict > 0)) &&
		    (ep->state == SCILAN_EP_CONNECTED || ep->state == SCILAN_EP_PEER_CLOSED)) {
			ep->point_got = true;
			sl_slice_point_store(link, dst, point);
			point_stored = true;
		}
		break;
	case SL_MSG_POINT_ACK:
		if (ep && ep->peer_slice == (int)src && ep->point_sent && cookie && ep->point_cookie == cookie &&
		    !ep->point_ack) {
			ep->point_ack = status == SL_VERIFY_OK ? 1 : -1;
			wake_up(&ep->wq); /* a killable sleeper in sl_ioc_seam_point */
		}
		break;
	}
	spin_unlock_irq(&link->lock);
	if (verify) {
		status = client_sk && sl_sock_holds_tuple(client_sk, &t) ? SL_VERIFY_OK : 0;
		if (client_sk)
			sock_put(client_sk);
		if (status == SL_VERIFY_OK && !sl_agree_locked_out(link, dst, src, late, point))
			status = 0;
		if (status == SL_VERIFY_OK && late && READ_ONCE(sl_verify_answer_delay_ms))
			msleep(READ_ONCE(sl_verify_answer_delay_ms));
		sl_reply(link, SL_MSG_VERIFIED, src, dst, cookie, status);
		sl_answered(link, dst, src);
	}
	/* Stored (our program reads it) before the client hears so. */
	if (point_answer)
		sl_reply(link, SL_MSG_POINT_ACK, src, dst, cookie, point_stored ? SL_VERIFY_OK : 0);
	if (orphan)
		sl_reply(link, SL_MSG_CLOSE, src, dst, 0, SL_CLOSE_ABORTED);
	if (aborted)
		sl_drop_queued(link, ep, aborted_id);
}

void sl_ctl_work(struct work_struct *work)
{
	struct sl_link *link = container_of(work, struct sl_link, ctl_work);
	struct sl_msg m;
	u64 prod;
	int n = 0;

	down_read(&link->map_sem);
	if (!link->up || !link->pwin)
		goto out;
	prod = le64_to_cpu(READ_ONCE(*(__le64 *)(link->lwin + SL_CTL_PROD_OFF)));
	if (prod - link->rx_cons > SL_CTL_SLOTS) {
		dev_warn_ratelimited(link->dev, "scilan: corrupt control index from the peer\n");
		goto out;
	}
	rmb(); /* messages after the index that published them */
	while (link->rx_cons != prod) {
		memcpy(&m, link->lwin + SL_CTL_MSG_OFF + (link->rx_cons % SL_CTL_SLOTS) * sizeof(m),
		       sizeof(m));
		link->rx_cons++;
		link->stat_ctl_rx++;
		/* Acknowledge before handling: a reply may need a free slot
		 * in the peer's ring while the peer waits for one in ours.
		 */
		writeq(link->rx_cons, link->pwin + SL_CTL_ACK_OFF);
		sl_handle(link, &m);
		if (++n == 64) { /* let other work run; come back */
			queue_work(system_wq, &link->ctl_work);
			break;
		}
	}
out:
	up_read(&link->map_sem);
}
