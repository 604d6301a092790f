// SPDX-License-Identifier: GPL-2.0
/* scilan_ep.c — endpoint files of /dev/scilanN: ioctl (listen, connect,
 * stimulate; the accepts in scilan_accept.c, sets in scilan_set.c, mappings
 * in scilan_mmap.c), poll/read of wake-up tokens, and release telling the
 * peer.
 */
#include <linux/fs.h>
#include <linux/io.h>
#include <linux/file.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <net/inet_sock.h>
#include <net/net_namespace.h>
#include <net/sock.h>

#include "scilan.h"

static atomic_t sl_ep_ids = ATOMIC_INIT(0);

void sl_ep_wake_locked(struct sl_ep *ep, int state)
{
	ep->state = state;
	if (ep->connecting) {
		ep->connecting = false;
		ep->connect_err = -ECONNRESET;
	}
	wake_up(&ep->wq); /* also an ACCEPT_SOCK verifying it (killable sleep) */
}

static int sl_open(struct inode *inode, struct file *file)
{
	struct miscdevice *misc = file->private_data;
	struct sl_link *link = container_of(misc, struct sl_link, misc);
	struct sl_ep *ep;

	if (!try_module_get(link->hw_owner))
		return -ENODEV;
	ep = kzalloc(sizeof(*ep), GFP_KERNEL);
	if (!ep) {
		module_put(link->hw_owner);
		return -ENOMEM;
	}
	init_waitqueue_head(&ep->wq);
	INIT_LIST_HEAD(&ep->backlog);
	INIT_LIST_HEAD(&ep->late_q);
	INIT_LIST_HEAD(&ep->lnode);
	ep->slice = -1;
	ep->peer_slice = -1;
	ep->set = -1;
	ep->id = atomic_inc_return(&sl_ep_ids);
	ep->mapping = file->f_mapping;
	spin_lock_irq(&link->lock);
	if (link->removing) {
		spin_unlock_irq(&link->lock);
		kfree(ep);
		module_put(link->hw_owner);
		return -ENODEV;
	}
	ep->link = link;
	sl_link_get(link);
	list_add_tail(&ep->node, &link->eps);
	spin_unlock_irq(&link->lock);
	file->private_data = ep;
	stream_open(inode, file);
	return 0;
}

/* Leaves the link's lists and the slice; true if the peer must be told. */
static bool sl_ep_detach_locked(struct sl_link *link, struct sl_ep *ep, u32 *dst, u32 *src)
{
	bool tell = (ep->state == SCILAN_EP_CONNECTED || ep->state == SCILAN_EP_PEER_CLOSED) &&
		    link->up && ep->generation == link->generation;

	*dst = ep->peer_slice;
	*src = ep->slice;
	list_del(&ep->node);
	if (ep->slice >= 0)
		sl_slice_release_locked(link, ep->slice, true, false);
	return tell;
}

static void sl_send_close(struct sl_link *link, u32 dst, u32 src, u32 status, u32 cookie)
{
	struct sl_msg m = {
		.type = cpu_to_le32(SL_MSG_CLOSE),
		.dst_slice = cpu_to_le32(dst),
		.src_slice = cpu_to_le32(src),
		.cookie = cpu_to_le32(cookie),
		.status = cpu_to_le32(status),
	};

	sl_ctl_send(link, &m);
}

/* A client's CLOSE says whether its socket still holds the connection's
 * 4-tuple (or left it to its time-wait socket), and for which connection:
 * the listener's side may then pair a connection queued there with the
 * accepted socket of that connection without asking (a short client closes
 * before the server accepts, and its time-wait socket may be gone by then).
 * The library closes the endpoint before the TCP socket; a process that
 * exits closes the socket first, which then sits in FIN_WAIT or TIME_WAIT.
 */
static u32 sl_close_status(struct sl_ep *ep, u32 *isn)
{
	*isn = 0;
	if (ep->abandoned)
		return SL_CLOSE_ABORTED;
	if (!ep->sk || !sl_sock_holds_tuple(ep->sk, &ep->tuple))
		return 0;
	*isn = sl_sock_client_isn(ep->sk, false);
	return SL_CLOSE_CONFIRMED;
}

/* Queued endpoints taken off their listener (on the list by lnode) are
 * closed and freed; the caller holds the read side of map_sem.
 */
void sl_close_queued(struct sl_link *link, struct list_head *queued)
{
	struct sl_ep *q, *tmp;
	bool tell;
	u32 dst, src;

	list_for_each_entry_safe(q, tmp, queued, lnode) {
		spin_lock_irq(&link->lock);
		tell = sl_ep_detach_locked(link, q, &dst, &src);
		spin_unlock_irq(&link->lock);
		if (tell)
			sl_send_close(link, dst, src, 0, 0);
		list_del(&q->lnode);
		kfree(q);
		sl_link_put(link);
	}
}

static int sl_release(struct inode *inode, struct file *file)
{
	struct sl_ep *ep = file->private_data;
	struct sl_link *link = ep->link;
	LIST_HEAD(queued);
	bool tell;
	u32 dst, src, status, isn;

	down_read(&link->map_sem);
	spin_lock_irq(&link->lock);
	if (ep->state == SCILAN_EP_LISTEN) {
		list_del(&ep->lnode);
		list_splice_init(&ep->backlog, &queued);
		list_splice_init(&ep->late_q, &queued);
	}
	sl_set_release_locked(link, ep);
	tell = sl_ep_detach_locked(link, ep, &dst, &src);
	spin_unlock_irq(&link->lock);
	if (tell) {
		status = sl_close_status(ep, &isn);
		sl_send_close(link, dst, src, status, isn);
	}
	/* Connections the program never accepted are closed like TCP's. */
	sl_close_queued(link, &queued);
	up_read(&link->map_sem);
	if (ep->lsk)
		sock_put(ep->lsk);
	if (ep->net)
		put_net(ep->net);
	if (ep->sink)
		__free_page(ep->sink); /* no mapping is left: each held the file */
	if (ep->sk)
		sock_put(ep->sk);
	kfree(ep);
	module_put(link->hw_owner);
	sl_link_put(link);
	return 0;
}

static __poll_t sl_poll(struct file *file, poll_table *wait)
{
	struct sl_ep *ep = file->private_data;
	__poll_t mask = 0;

	poll_wait(file, &ep->wq, wait);
	spin_lock_irq(&ep->link->lock);
	switch (ep->state) {
	case SCILAN_EP_LISTEN:
		if (ep->backlog_len)
			mask |= EPOLLIN | EPOLLRDNORM;
		break;
	case SCILAN_EP_CONNECTED:
		mask |= EPOLLOUT | EPOLLWRNORM;
		break;
	case SCILAN_EP_PEER_CLOSED:
		mask |= EPOLLIN | EPOLLRDNORM | EPOLLHUP;
		break;
	case SCILAN_EP_RESET:
		mask |= EPOLLIN | EPOLLERR | EPOLLHUP;
		break;
	}
	if (ep->tokens)
		mask |= EPOLLIN | EPOLLRDNORM;
	spin_unlock_irq(&ep->link->lock);
	return mask;
}

/* read() returns the pending tokens as a u32 and clears them; 0 bytes once
 * the peer closed and nothing is pending; ECONNRESET after link down.  A set
 * endpoint waits like a connection.
 */
static ssize_t sl_read(struct file *file, char __user *buf, size_t count, loff_t *ppos)
{
	struct sl_ep *ep = file->private_data;
	struct sl_link *link = ep->link;
	int rc, state;
	u32 tokens;

	if (count < sizeof(tokens))
		return -EINVAL;
	for (;;) {
		spin_lock_irq(&link->lock);
		tokens = ep->tokens;
		ep->tokens = 0;
		state = ep->state;
		spin_unlock_irq(&link->lock);
		if (tokens)
			break;
		if (state == SCILAN_EP_PEER_CLOSED)
			return 0;
		if (state == SCILAN_EP_RESET)
			return -ECONNRESET;
		if (state != SCILAN_EP_CONNECTED && state != SCILAN_EP_SET)
			return -ENOTCONN;
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		rc = wait_event_interruptible(ep->wq, READ_ONCE(ep->tokens) ||
					      READ_ONCE(ep->state) != state);
		if (rc)
			return rc;
	}
	if (copy_to_user(buf, &tokens, sizeof(tokens)))
		return -EFAULT;
	return sizeof(tokens);
}

/* The caller's listening TCP socket is the listen key (its namespace,
 * address and port): only who holds the port's listener takes its
 * connections, and several entries may share a port (IPv4 and IPv6
 * listeners, a SO_REUSEPORT group, namespaces).
 */
static long sl_ioc_listen(struct sl_ep *ep, void __user *arg)
{
	struct sl_link *link = ep->link;
	struct scilan_listen req;
	struct sock *sk;
	long rc;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (req.backlog > 1024)
		return -EINVAL;
	rc = sl_sock_listener(req.sockfd, &sk);
	if (rc)
		return rc;
	spin_lock_irq(&link->lock);
	if (!sl_ep_fresh(ep)) {
		spin_unlock_irq(&link->lock);
		sock_put(sk);
		return -EINVAL;
	}
	ep->lsk = sk;
	ep->owner = sock_i_uid(sk);
	ep->port = inet_sk(sk)->inet_num;
	ep->backlog_max = req.backlog; /* 0: the socket's own (sl_backlog_max) */
	ep->state = SCILAN_EP_LISTEN;
	list_add_tail(&ep->lnode, &link->listeners);
	spin_unlock_irq(&link->lock);
	return 0;
}

/* One live outgoing connection per 4-tuple and namespace: a second CONNECT
 * with a tuple in use would be the one the listener pairs (the newest wins).
 */
static bool sl_tuple_busy_locked(struct sl_link *link, struct net *net, const struct sl_tuple *t)
{
	struct sl_ep *o;

	list_for_each_entry(o, &link->eps, node) {
		if (o->net != net || !sl_tuple_equal(&o->tuple, t))
			continue;
		if (o->connecting || o->state == SCILAN_EP_CONNECTED ||
		    o->state == SCILAN_EP_PEER_CLOSED)
			return true;
	}
	return false;
}

static long sl_ioc_connect(struct sl_ep *ep, void __user *arg)
{
	struct sl_link *link = ep->link;
	struct scilan_connect req;
	struct sl_msg m = { .type = cpu_to_le32(SL_MSG_CONNECT) };
	unsigned long timeout;
	struct sl_tuple t;
	struct net *net;
	struct sock *sk;
	long rc, left;
	int slice;
	bool late;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (!req.dport || (req.flags & ~SCILAN_CONNECT_LATE) || req.pad || req.timeout_ms > 600000)
		return -EINVAL;
	late = req.flags & SCILAN_CONNECT_LATE;
	rc = sl_sock_connecting(req.sockfd, &req, &t, &net, &sk);
	if (rc)
		return rc;
	timeout = msecs_to_jiffies(req.timeout_ms ? req.timeout_ms : sl_connect_timeout_ms);
	down_read(&link->map_sem);
	spin_lock_irq(&link->lock);
	if (!sl_ep_fresh(ep)) {
		rc = ep->connecting ? -EALREADY : -EISCONN;
		goto unlock;
	}
	if (!link->up) {
		rc = -ENETUNREACH;
		goto unlock;
	}
	if (sl_tuple_busy_locked(link, net, &t)) {
		rc = -EADDRINUSE;
		goto unlock;
	}
	slice = sl_slice_alloc_locked(link, ep);
	if (slice < 0) {
		rc = -EAGAIN; /* every slice in use: like running out of ports */
		goto unlock;
	}
	if (ep->net)
		put_net(ep->net); /* an earlier connect that failed */
	if (ep->sk)
		sock_put(ep->sk);
	ep->net = net;
	ep->sk = sk;
	ep->tuple = t;
	ep->slice = slice;
	ep->late = late;
	ep->connecting = true;
	ep->connect_err = 0;
	ep->cookie = ++link->next_cookie;
	link->slice_cookie[slice] = ep->cookie;
	ep->generation = link->generation;
	spin_unlock_irq(&link->lock);
	memset(link->lwin + SL_WIN_SLICE_OFF + (size_t)slice * link->slice_size, 0, link->slice_size);
	sl_slice_point_store(link, slice, SCILAN_POINT_UNKNOWN);
	m.port = cpu_to_le32(t.dport);
	m.flags = cpu_to_le16(late ? SL_MSG_F_LATE : 0);
	m.src_slice = cpu_to_le32(slice);
	m.cookie = cpu_to_le32(ep->cookie);
	m.sport = cpu_to_le16(t.sport);
	memcpy(m.saddr, &t.saddr, sizeof(m.saddr));
	memcpy(m.daddr, &t.daddr, sizeof(m.daddr));
	rc = sl_ctl_send(link, &m);
	up_read(&link->map_sem);
	left = rc ? 0 : wait_event_interruptible_timeout(ep->wq, !READ_ONCE(ep->connecting), timeout);
	spin_lock_irq(&link->lock);
	if (ep->connecting || rc) {
		/* No answer: the peer may still accept and write into the
		 * slice, so only our hold on it goes (its ACCEPT will be
		 * answered with a CLOSE that frees it).
		 */
		ep->connecting = false;
		/* Interrupted: -ERESTARTSYS, so that a restarting handler or
		 * io_uring's task work (TIF_NOTIFY_SIGNAL) restarts the connect
		 * rather than failing it with EINTR.
		 */
		rc = rc ? rc : left < 0 ? left : -ETIMEDOUT;
	} else if (ep->connect_err) {
		rc = ep->connect_err;
	} else {
		spin_unlock_irq(&link->lock);
		return 0;
	}
	sl_slice_release_locked(link, ep->slice, true, false);
	ep->slice = -1;
	ep->state = SCILAN_EP_IDLE;
	spin_unlock_irq(&link->lock);
	return rc;
unlock:
	spin_unlock_irq(&link->lock);
	up_read(&link->map_sem);
	put_net(net);
	sock_put(sk);
	return rc;
}

static long sl_ioc_stimulate(struct sl_ep *ep, u32 __user *arg)
{
	struct sl_link *link = ep->link;
	u32 tokens;
	long rc = 0;

	if (get_user(tokens, arg))
		return -EFAULT;
	if (!tokens || tokens & ~(SCILAN_TOKEN_DATA | SCILAN_TOKEN_SPACE))
		return -EINVAL;
	down_read(&link->map_sem);
	if (ep->state == SCILAN_EP_RESET || (ep->slice >= 0 && ep->generation != link->generation))
		rc = -ECONNRESET;
	else if (ep->state == SCILAN_EP_PEER_CLOSED)
		rc = -EPIPE;
	else if (ep->state != SCILAN_EP_CONNECTED)
		rc = -ENOTCONN;
	else if (!link->up || !link->pwin)
		rc = -ECONNRESET;
	else
		sl_stimulate(link, ep->peer_slice, tokens);
	up_read(&link->map_sem);
	return rc;
}

static void sl_fill_info(struct sl_ep *ep, struct scilan_info *info)
{
	struct sl_link *link = ep->link;

	memset(info, 0, sizeof(*info));
	spin_lock_irq(&link->lock);
	info->abi_version = SCILAN_ABI_VERSION;
	info->link_up = link->up;
	info->mw_size = link->lwin_size;
	info->slice_size = link->slice_size;
	info->nslices = link->nslices;
	info->peer_nslices = link->peer_nslices;
	info->ep_state = ep->state;
	/* A set endpoint (also after its reset) reports its set index. */
	info->slice = ep->set >= 0 && ep->state != SCILAN_EP_IDLE ? ep->set : ep->slice;
	info->peer_slice = ep->peer_slice;
	info->local_port = link->local_port;
	info->peer_port = link->peer_port;
	spin_unlock_irq(&link->lock);
}

static long sl_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct sl_ep *ep = file->private_data;
	void __user *uarg = (void __user *)arg;
	struct scilan_info info;
	u32 tokens;

	switch (cmd) {
	case SCILAN_IOC_INFO:
		sl_fill_info(ep, &info);
		return copy_to_user(uarg, &info, sizeof(info)) ? -EFAULT : 0;
	case SCILAN_IOC_LISTEN:
		return sl_ioc_listen(ep, uarg);
	case SCILAN_IOC_CONNECT:
		return sl_ioc_connect(ep, uarg);
	case SCILAN_IOC_ACCEPT:
		return sl_ioc_accept(ep, uarg);
	case SCILAN_IOC_ACCEPT_SOCK:
		return sl_ioc_accept_sock(ep, uarg);
	case SCILAN_IOC_ACCEPT_LATE:
		return sl_ioc_accept_late(ep, uarg);
	case SCILAN_IOC_SEAM_POINT:
		return sl_ioc_seam_point(ep, uarg);
	case SCILAN_IOC_STIMULATE:
		return sl_ioc_stimulate(ep, uarg);
	case SCILAN_IOC_SET_CREATE:
		return sl_ioc_set_create(ep, uarg);
	case SCILAN_IOC_STIMULATE_SET:
		return sl_ioc_stimulate_set(ep, uarg);
	case SCILAN_IOC_ABANDON:
		/* The program never used the connection (it fell back to kernel
		 * TCP), or revokes its offer (the acceptor did not agree in
		 * time): the close tells the peer to drop its queued side, and
		 * a VERIFY meanwhile is answered no, so nobody pairs it.
		 */
		spin_lock_irq(&ep->link->lock);
		if (ep->agreed) {
			/* The acceptor took it first: the rings carry it. */
			spin_unlock_irq(&ep->link->lock);
			return -EALREADY;
		}
		ep->abandoned = ep->state == SCILAN_EP_CONNECTED || ep->state == SCILAN_EP_PEER_CLOSED;
		spin_unlock_irq(&ep->link->lock);
		return ep->abandoned ? 0 : -ENOTCONN;
	case SCILAN_IOC_RING_SELF:
		if (get_user(tokens, (u32 __user *)uarg))
			return -EFAULT;
		if (!tokens || tokens & ~SCILAN_TOKENS_ALL)
			return -EINVAL;
		spin_lock_irq(&ep->link->lock);
		ep->tokens |= tokens;
		wake_up_interruptible(&ep->wq);
		spin_unlock_irq(&ep->link->lock);
		return 0;
	}
	return -ENOTTY;
}

const struct file_operations sl_fops = {
	.owner = THIS_MODULE,
	.open = sl_open,
	.release = sl_release,
	.read = sl_read,
	.poll = sl_poll,
	.unlocked_ioctl = sl_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = sl_mmap,
	.llseek = no_llseek,
};
