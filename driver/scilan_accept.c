// SPDX-License-Identifier: GPL-2.0
/* scilan_accept.c — the accepting side's ioctls: ACCEPT (a listener's first
 * queued connection), ACCEPT_SOCK (the one of an accepted TCP socket, paired
 * once the client's driver vouched for it: the VERIFY round trip) and
 * ACCEPT_LATE (the same for a late connect, with the acceptor's switch
 * point), and the late client's SEAM_POINT.
 */
#include <linux/fs.h>
#include <linux/file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <net/net_namespace.h>
#include <net/sock.h>

#include "scilan.h"

/* The listener endpoint behind lfd, on the same link as the fresh endpoint
 * ep; f holds it until fdput.
 */
static long sl_listener_get(struct sl_ep *ep, int lfd, struct fd *f, struct sl_ep **lst)
{
	*f = fdget(lfd);
	if (!f->file)
		return -EBADF;
	if (f->file->f_op != &sl_fops || f->file->private_data == ep ||
	    ((struct sl_ep *)f->file->private_data)->link != ep->link) {
		fdput(*f);
		return -EINVAL;
	}
	*lst = f->file->private_data;
	return 0;
}

static bool sl_accept_ok_locked(struct sl_ep *lst, struct sl_ep *ep)
{
	return lst->state == SCILAN_EP_LISTEN && sl_ep_fresh(ep);
}

/* The fresh endpoint takes over the queued one (already off its backlog),
 * which only carried the connection until a program claimed it; the caller
 * frees q's shell (and drops its link reference) after unlocking.
 */
static void sl_take_over_locked(struct sl_link *link, struct sl_ep *ep, struct sl_ep *q)
{
	list_del(&q->node);
	ep->slice = q->slice;
	ep->peer_slice = q->peer_slice;
	ep->state = q->state;
	ep->generation = q->generation;
	ep->tokens = q->tokens;
	ep->late = q->late;
	ep->point_got = q->point_got;
	ep->accepted = true;
	link->slice_ep[ep->slice] = ep;
	/* The accepting end agreed by taking it. */
	ep->agreed = true;
	sl_slice_agree_store(link, ep->slice, SCILAN_AGREE_ATTACHED);
}

/* SCILAN_IOC_ACCEPT: the first queued connection, blocking unless the
 * listener is O_NONBLOCK.
 */
long sl_ioc_accept(struct sl_ep *ep, int __user *arg)
{
	struct sl_link *link = ep->link;
	struct sl_ep *lst, *q;
	struct fd f;
	int lfd;
	long rc;

	if (get_user(lfd, arg))
		return -EFAULT;
	rc = sl_listener_get(ep, lfd, &f, &lst);
	if (rc)
		return rc;
	for (;;) {
		spin_lock_irq(&link->lock);
		if (!sl_accept_ok_locked(lst, ep)) {
			rc = -EINVAL;
			break;
		}
		if (!list_empty(&lst->backlog)) {
			q = list_first_entry(&lst->backlog, struct sl_ep, lnode);
			list_del(&q->lnode);
			lst->backlog_len--;
			sl_take_over_locked(link, ep, q);
			spin_unlock_irq(&link->lock);
			kfree(q);
			sl_link_put(link);
			rc = 0;
			goto out;
		}
		spin_unlock_irq(&link->lock);
		if (f.file->f_flags & O_NONBLOCK) {
			rc = -EAGAIN;
			goto out;
		}
		rc = wait_event_interruptible(lst->wq, !list_empty(&lst->backlog) ||
					      READ_ONCE(lst->state) != SCILAN_EP_LISTEN);
		if (rc)
			goto out;
	}
	spin_unlock_irq(&link->lock);
out:
	fdput(f);
	return rc;
}

/* Asks the client's driver whether the socket behind q's client endpoint
 * holds q's 4-tuple (SL_MSG_VERIFY; its driver answers from its own kernel,
 * without user space: one control round trip) and waits for the answer,
 * killable and bounded by the connect timeout.  q is off its backlog, so
 * only this caller frees it.  0: proven; -EAGAIN: not (someone else's
 * connection: the accepted socket stays kernel TCP); -ETIMEDOUT, -ECONNRESET,
 * -EINTR: no answer (the caller resets the connection: a real client's bytes
 * may sit in the ring).  The caller holds the read side of map_sem.  A late
 * connect's VERIFY carries point; only the client's answer proves it (it
 * agrees as it answers), never a CLOSE.  A late VERIFY that never went out
 * (the link down first, or the control ring full), or whose link went down
 * before the answer, is -ENOLINK: nothing of the acceptor's is published,
 * and its client holds no ring bytes (a late connection's bytes stay on
 * kernel TCP until it follows); a client that did agree cannot follow, as
 * its point must cross this link's session, which is gone, so it resets
 * (and a client whose question never came stays on kernel TCP too).  A
 * plain connection's client may have written its ring already, so that
 * stays -ECONNRESET.
 */
static void sl_queue_len_dec(struct sl_ep *lst, bool late)
{
	if (late)
		lst->late_len--;
	else
		lst->backlog_len--;
}

/* Sends m, a question about ep's connection to the peer's driver, and
 * waits until *answer is set or ep is reset, killable and bounded by the
 * connect timeout.  The caller holds the read side of map_sem, let go for
 * the wait (link down needs the write side) and taken again.  0: asked
 * (*left: the wait's result, 0 timed out, < 0 a fatal signal); else
 * -ECONNRESET or -ETIMEDOUT: it could not be sent.
 */
static long sl_ask(struct sl_link *link, struct sl_ep *ep, const struct sl_msg *m, const int *answer, long *left)
{
	long rc = sl_ctl_send(link, m);

	if (rc && rc != -ETIMEDOUT)
		rc = -ECONNRESET;
	up_read(&link->map_sem);
	*left = 1;
	if (!rc)
		*left = wait_event_killable_timeout(ep->wq, READ_ONCE(*answer) || READ_ONCE(ep->state) == SCILAN_EP_RESET,
						    msecs_to_jiffies(sl_connect_timeout_ms));
	down_read(&link->map_sem);
	return rc;
}

static long sl_verify(struct sl_link *link, struct sl_ep *q, u32 isn, u64 point)
{
	struct sl_msg m = { .type = cpu_to_le32(SL_MSG_VERIFY) };
	long left = 1, rc;

	spin_lock_irq(&link->lock);
	if (q->state == SCILAN_EP_PEER_CLOSED) {
		/* The client closed: its CLOSE said all it ever will. */
		spin_unlock_irq(&link->lock);
		return -EAGAIN;
	}
	if (q->state != SCILAN_EP_CONNECTED || !link->up || q->generation != link->generation) {
		spin_unlock_irq(&link->lock);
		return q->late ? -ENOLINK : -ECONNRESET;
	}
	do
		q->verify_cookie = ++link->next_cookie;
	while (!q->verify_cookie); /* 0: no VERIFY out */
	q->verdict = 0;
	m.dst_slice = cpu_to_le32(q->peer_slice);
	m.src_slice = cpu_to_le32(q->slice);
	m.cookie = cpu_to_le32(q->verify_cookie);
	if (q->late) {
		m.flags = cpu_to_le16(SL_MSG_F_LATE);
		m.point = cpu_to_le64(point);
	}
	spin_unlock_irq(&link->lock);
	rc = sl_ask(link, q, &m, &q->verdict, &left);
	if (rc && q->late)
		return -ENOLINK; /* never sent: the client cannot have agreed */
	spin_lock_irq(&link->lock);
	if (q->verdict > 0 || (!q->late && q->confirmed && q->isn == isn))
		rc = 0; /* proven now, or by the CLOSE that crossed the VERIFY */
	else if (q->late && (!link->up || q->generation != link->generation))
		rc = -ENOLINK; /* its session is gone: a client that agreed cannot follow */
	else if (q->state == SCILAN_EP_RESET || q->generation != link->generation)
		rc = -ECONNRESET;
	else if (q->verdict < 0)
		rc = -EAGAIN;
	else if (!rc)
		rc = left < 0 ? -EINTR : -ETIMEDOUT;
	spin_unlock_irq(&link->lock);
	return rc;
}

/* SCILAN_IOC_ACCEPT_SOCK: the queued connection of an accepted TCP socket
 * (its 4-tuple, on a listener of its namespace and port), so that
 * concurrent connects pair with the right kernel connection.  The newest
 * match is the candidate; older ones with the same tuple are stale (a
 * connection whose companion TCP connect failed: TCP never has two live
 * connections on one 4-tuple) and are closed.  The 4-tuple alone proves
 * nothing (anyone may bind a source port with SO_REUSEADDR and connect over
 * the device first), so the candidate is paired only once its client's
 * driver vouched that the client endpoint's socket is the one holding the
 * 4-tuple: in the CLOSE of a client that already left (for this connection:
 * same client ISN), else by SL_MSG_VERIFY now.  Never blocks beyond that
 * one round trip: EAGAIN if none is queued or the candidate is refused (it
 * is closed; the accepted socket stays kernel TCP, which is what its real
 * client uses).
 */
static long sl_accept_tuple(struct sl_ep *ep, int sockfd, bool late, u64 point)
{
	struct sl_link *link = ep->link;
	struct sl_ep *lst, *q, *found = NULL, *found_lst = NULL;
	struct list_head *queue;
	struct sl_tuple t;
	struct net *net;
	LIST_HEAD(stale);
	bool proven;
	long rc;
	u32 isn;

	rc = sl_sock_accepted(sockfd, &t, &net, &isn);
	if (rc)
		return rc;
	down_read(&link->map_sem);
	spin_lock_irq(&link->lock);
	if (!sl_ep_fresh(ep)) {
		rc = -EINVAL;
		goto unlock;
	}
	list_for_each_entry(lst, &link->listeners, lnode) {
		if (lst->port != t.dport || !net_eq(sock_net(lst->lsk), net))
			continue;
		queue = late ? &lst->late_q : &lst->backlog;
		list_for_each_entry(q, queue, lnode) {
			if (!sl_tuple_equal(&q->tuple, &t))
				continue;
			if (found) {
				list_move_tail(&found->lnode, &stale);
				sl_queue_len_dec(found_lst, late);
			}
			found = q;
			found_lst = lst;
		}
	}
	if (!found) {
		rc = -EAGAIN;
		goto unlock;
	}
	list_del_init(&found->lnode);
	sl_queue_len_dec(found_lst, late);
	proven = !late && found->confirmed && found->isn == isn;
	if (!proven) {
		spin_unlock_irq(&link->lock);
		rc = sl_verify(link, found, isn, point);
		spin_lock_irq(&link->lock);
		if (!rc && !sl_ep_fresh(ep))
			rc = -EINVAL; /* another thread used the endpoint meanwhile */
	}
	if (rc) {
		list_add_tail(&found->lnode, &stale);
		found = NULL;
		goto unlock;
	}
	sl_take_over_locked(link, ep, found);
unlock:
	spin_unlock_irq(&link->lock);
	if (found) {
		kfree(found);
		sl_link_put(link);
	}
	sl_close_queued(link, &stale);
	up_read(&link->map_sem);
	return rc;
}

long sl_ioc_accept_sock(struct sl_ep *ep, void __user *arg)
{
	struct scilan_accept_sock req;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (req.flags)
		return -EINVAL;
	return sl_accept_tuple(ep, req.sockfd, false, 0);
}

/* SCILAN_IOC_ACCEPT_LATE: ACCEPT_SOCK's pairing, from the listener's late
 * connects, the acceptor's point travelling in the VERIFY.
 */
long sl_ioc_accept_late(struct sl_ep *ep, void __user *arg)
{
	struct scilan_accept_late req;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (req.flags || req.point == SCILAN_POINT_UNKNOWN)
		return -EINVAL;
	return sl_accept_tuple(ep, req.sockfd, true, req.point);
}

/* SCILAN_IOC_SEAM_POINT: the late client's point to its acceptor's driver
 * (SL_MSG_POINT), which stores it where its program reads it and answers
 * (SL_MSG_POINT_ACK); killable, bounded by the connect timeout.  Once per
 * connection: a second point could move the seam under the acceptor's reads.
 */
long sl_ioc_seam_point(struct sl_ep *ep, u64 __user *arg)
{
	struct sl_link *link = ep->link;
	struct sl_msg m = { .type = cpu_to_le32(SL_MSG_POINT) };
	long left = 1, rc = 0;
	u64 point;

	if (get_user(point, arg))
		return -EFAULT;
	if (point == SCILAN_POINT_UNKNOWN)
		return -EINVAL;
	/* Our driver's answer to the acceptor first (sl_answered): a point
	 * ahead of it would be refused, and the connection reset. */
	if (wait_event_killable_timeout(ep->wq,
					READ_ONCE(ep->answered) || READ_ONCE(ep->state) == SCILAN_EP_RESET ||
						!READ_ONCE(link->up),
					msecs_to_jiffies(sl_connect_timeout_ms)) < 0)
		return -EINTR;
	down_read(&link->map_sem);
	spin_lock_irq(&link->lock);
	if (!ep->late || !ep->sk || ep->accepted || ep->point_sent)
		rc = -EINVAL;
	else if (ep->state == SCILAN_EP_RESET || !link->up || ep->generation != link->generation)
		rc = -ECONNRESET;
	else if (!ep->agreed || ep->state != SCILAN_EP_CONNECTED)
		rc = -ENOTCONN;
	else if (!ep->answered)
		rc = -ETIMEDOUT; /* our answer never went out */
	if (rc) {
		spin_unlock_irq(&link->lock);
		up_read(&link->map_sem);
		return rc;
	}
	ep->point_sent = true;
	do
		ep->point_cookie = ++link->next_cookie;
	while (!ep->point_cookie); /* 0: none out */
	m.dst_slice = cpu_to_le32(ep->peer_slice);
	m.src_slice = cpu_to_le32(ep->slice);
	m.cookie = cpu_to_le32(ep->point_cookie);
	m.point = cpu_to_le64(point);
	spin_unlock_irq(&link->lock);
	rc = sl_ask(link, ep, &m, &ep->point_ack, &left);
	up_read(&link->map_sem);
	spin_lock_irq(&link->lock);
	if (ep->point_ack > 0)
		rc = 0;
	else if (ep->point_ack < 0)
		rc = -ECONNREFUSED;
	else if (ep->state == SCILAN_EP_RESET || ep->generation != link->generation)
		rc = -ECONNRESET;
	else if (!rc)
		rc = left < 0 ? -EINTR : -ETIMEDOUT;
	spin_unlock_irq(&link->lock);
	return rc;
}
