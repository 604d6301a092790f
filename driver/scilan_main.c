// SPDX-License-Identifier: GPL-2.0
/* scilan_main.c — the backend-independent link: module parameters, link
 * life cycle (alloc/register/unregister), the scratchpad handshake (version,
 * window and slice sizes, session nonces), link up/down, doorbell dispatch
 * and debugfs state.  Backends: scilan_ntb.c, scilan_ivshmem.c.
 */
#include <linux/bitmap.h>
#include <linux/debugfs.h>
#include <linux/device.h>
#include <linux/idr.h>
#include <linux/io.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "scilan.h"

/* 0: room for SL_DEFAULT_SLICES connections (64 MiB and 148 KiB with 64 KiB
 * slices), capped by the hardware's window; a backend that cannot get that
 * much memory gets the largest that it can (sl_setup_window).
 */
static unsigned long mw_size;
module_param(mw_size, ulong, 0444);
MODULE_PARM_DESC(mw_size, "Bytes of local memory offered as the inbound window per peer (default 0: room for 1024 connections, capped by the NTB or the ivshmem window)");

static unsigned int slice_size = 64U << 10;
module_param(slice_size, uint, 0444);
MODULE_PARM_DESC(slice_size, "Bytes per connection slice, a power of two >= 8 KiB; both sides must agree (default 64 KiB)");

unsigned int sl_connect_timeout_ms = 2000;
module_param_named(connect_timeout_ms, sl_connect_timeout_ms, uint, 0644);
MODULE_PARM_DESC(connect_timeout_ms, "Default time a connect waits for the peer's answer (ms)");

/* Half of a link's set indices: one user cannot take them all (root is
 * exempt); its further epoll sets scan their members instead.
 */
unsigned int sl_sets_per_uid = SCILAN_SETS / 2;
module_param_named(sets_per_uid, sl_sets_per_uid, uint, 0644);
MODULE_PARM_DESC(sets_per_uid, "Set indices (of 16 per link) one non-root user may hold (default 8)");

/* A link that comes back brings every connection it carried back at once,
 * whatever the listener's backlog (listen(fd, 4) serves forty connections).
 */
unsigned int sl_late_max = 1024;
module_param_named(late_max, sl_late_max, uint, 0644);
MODULE_PARM_DESC(late_max, "Late connects (live connections moving onto the link) one listener holds until its program takes them (default 1024)");

/* Tests only: the late client's driver holds its answer to a VERIFY this
 * long after it agreed, so that the client's program, which sees the
 * agreement at once, sends its point first (the point must still follow
 * the answer on the link).
 */
unsigned int sl_verify_answer_delay_ms;
module_param_named(verify_answer_delay_ms, sl_verify_answer_delay_ms, uint, 0644);
MODULE_PARM_DESC(verify_answer_delay_ms, "Tests: delay (ms) of a late connect's answer after its agreement (default 0)");

static unsigned int handshake_ms = 50;
module_param(handshake_ms, uint, 0644);
MODULE_PARM_DESC(handshake_ms, "Scratchpad handshake poll period while the link comes up (ms)");

/* 0666: every operation names a socket the caller owns (ARCHITECTURE.md,
 * "Security model"); a site that wants the slices for one group sets 0660
 * and a udev rule for the group.
 */
static ushort sl_dev_mode = 0666;
module_param_named(dev_mode, sl_dev_mode, ushort, 0444);
MODULE_PARM_DESC(dev_mode, "Mode of /dev/scilanN (default 0666; e.g. 0660 with a udev GROUP rule)");

static DEFINE_IDA(sl_ida);
static struct dentry *sl_dbg_root;

void sl_link_get(struct sl_link *link)
{
	kref_get(&link->ref);
}

static void sl_link_free(struct kref *ref)
{
	struct sl_link *link = container_of(ref, struct sl_link, ref);

	ida_free(&sl_ida, link->index);
	kvfree(link->slice_ep);
	kvfree(link->slice_cookie);
	kfree(link);
}

void sl_link_put(struct sl_link *link)
{
	kref_put(&link->ref, sl_link_free);
}

static u32 sl_new_nonce(void)
{
	u32 n;

	do
		n = get_random_u32();
	while (!n);
	return n;
}

/* The agreement word of a local slice (SCILAN_SLICE_AGREE_OFF): our memory,
 * mapped by the connection's library.
 */
void sl_slice_agree_store(struct sl_link *link, int slice, u32 value)
{
	if (link->lwin && slice >= 0 && slice < (int)link->nslices)
		WRITE_ONCE(*(u32 *)(link->lwin + SL_WIN_SLICE_OFF + (size_t)slice * link->slice_size +
				    SCILAN_SLICE_AGREE_OFF), value);
}

/* The peer's switch point in a local slice (SCILAN_SLICE_POINT_OFF), as the
 * agreement word: our memory, read by the connection's library.
 */
void sl_slice_point_store(struct sl_link *link, int slice, u64 value)
{
	if (link->lwin && slice >= 0 && slice < (int)link->nslices)
		WRITE_ONCE(*(u64 *)(link->lwin + SL_WIN_SLICE_OFF + (size_t)slice * link->slice_size +
				    SCILAN_SLICE_POINT_OFF), value);
}

/* Connections and sets of the lost session are reset (a set keeps its
 * index until it closes), listeners keep listening (the
 * next session may bring connections), slices only the peer held are free:
 * the dead peer writes no more.  Caller holds link->lock.
 */
void sl_link_reset_locked(struct sl_link *link)
{
	struct sl_ep *ep, *tmp;
	int s;

	link->up = false;
	list_for_each_entry_safe(ep, tmp, &link->eps, node) {
		/* Agreed connections fail over (the library's failover.c). */
		if (ep->agreed && !ep->queued &&
		    (ep->state == SCILAN_EP_CONNECTED || ep->state == SCILAN_EP_PEER_CLOSED))
			sl_slice_agree_store(link, ep->slice, SCILAN_AGREE_LINK_DOWN);
		if (ep->state == SCILAN_EP_CONNECTED || ep->state == SCILAN_EP_PEER_CLOSED ||
		    ep->state == SCILAN_EP_SET || ep->connecting)
			sl_ep_wake_locked(ep, SCILAN_EP_RESET);
	}
	for (s = 0; s < (int)link->nslices; s++)
		if (test_bit(s, link->slice_peer))
			sl_slice_release_locked(link, s, false, true);
}

/* Leave the session: endpoints reset and woken, user mappings zapped, the
 * peer window unmapped, and a new nonce so the peer resets as well.
 */
static void sl_link_down(struct sl_link *link, const char *why)
{
	bool was_up = link->pwin;

	/* Down before waiting for map_sem: a sender waiting for room in the
	 * control ring (under the read side) sees it and gives up.
	 */
	spin_lock_irq(&link->lock);
	sl_link_reset_locked(link);
	spin_unlock_irq(&link->lock);
	down_write(&link->map_sem);
	spin_lock_irq(&link->lock);
	sl_link_reset_locked(link);
	spin_unlock_irq(&link->lock);
	if (link->pwin) {
		link->ops->unmap_peer(link);
		link->pwin = NULL;
	}
	link->nonce = sl_new_nonce();
	link->peer_nonce = 0;
	up_write(&link->map_sem);
	sl_zap_mappings(link);
	WRITE_ONCE(link->stat_zaps, link->stat_zaps + 1); /* tests wait for it */
	if (was_up)
		dev_info(link->dev, "scilan: link down (%s)\n", why);
}

static size_t sl_mw_wanted(const struct sl_link *link)
{
	return mw_size ?: SL_WIN_SLICE_OFF + (size_t)SL_DEFAULT_SLICES * link->slice_size;
}

/* The inbound window, from the backend; it must hold the control,
 * stimulus and set pages and at least one slice.  Contiguous DMA memory
 * of 64 MiB needs an IOMMU or CMA: without them the window halves until
 * the allocation succeeds, and says what it got.
 */
static int sl_setup_window(struct sl_link *link)
{
	size_t want = sl_mw_wanted(link), min = SL_WIN_SLICE_OFF + link->slice_size;
	int rc;

	for (;;) {
		rc = link->ops->setup_window(link, want);
		if (rc != -ENOMEM)
			break;
		/* Powers of two: the page allocator's orders. */
		want = is_power_of_2(want) ? want / 2 : rounddown_pow_of_two(want);
		if (want < min)
			break;
	}
	if (rc)
		return rc;
	if (link->lwin_size < sl_mw_wanted(link) && !mw_size)
		dev_notice(link->dev,
			   "scilan: window %zu KiB, less than the %zu KiB wanted: fewer connections (an IOMMU or cma= gives more)\n",
			   link->lwin_size >> 10, sl_mw_wanted(link) >> 10);
	link->nslices = min_t(u64, link->lwin_size > SL_WIN_SLICE_OFF ?
			      (link->lwin_size - SL_WIN_SLICE_OFF) / link->slice_size : 0,
			      SL_MAX_SLICES);
	return link->nslices ? 0 : -ENOSPC;
}

static void sl_link_work(struct work_struct *work)
{
	struct sl_link *link = container_of(to_delayed_work(work), struct sl_link, link_work);
	const struct sl_link_ops *ops = link->ops;
	u32 magic, mw_kb, slice, nonce, ack;
	u64 peer_mw;
	int rc;

	if (link->removing)
		return;
	if (!ops->link_is_up(link)) {
		sl_link_down(link, "link lost");
		return; /* the next link event brings us back */
	}
	/* The window's alignment is known only with the link up; it is set up
	 * once and kept for the link's life (reused by later sessions).
	 */
	if (!link->nslices) {
		rc = sl_setup_window(link);
		if (rc) {
			dev_warn_ratelimited(link->dev, "scilan: inbound window setup failed: %d\n",
					     rc);
			goto again;
		}
		dev_info(link->dev, "scilan: %s window %zu bytes, %u slices\n", ops->name,
			 link->lwin_size, link->nslices);
	}
	ops->peer_spad_write(link, SL_SPAD_MAGIC, SL_SPAD_MAGIC_VAL);
	ops->peer_spad_write(link, SL_SPAD_MW_KB, link->lwin_size >> 10);
	ops->peer_spad_write(link, SL_SPAD_SLICE, link->slice_size);
	ops->peer_spad_write(link, SL_SPAD_NONCE, link->nonce);

	magic = ops->spad_read(link, SL_SPAD_MAGIC);
	mw_kb = ops->spad_read(link, SL_SPAD_MW_KB);
	slice = ops->spad_read(link, SL_SPAD_SLICE);
	nonce = ops->spad_read(link, SL_SPAD_NONCE);
	ack = ops->spad_read(link, SL_SPAD_COUNT);

	if (link->up) {
		if (nonce != link->peer_nonce || ack != link->nonce)
			sl_link_down(link, "peer restarted");
		goto again;
	}
	if (magic != SL_SPAD_MAGIC_VAL || !nonce)
		goto again;
	if (slice != link->slice_size) {
		dev_warn_once(link->dev, "scilan: peer slice size %u != ours %u\n", slice,
			      link->slice_size);
		goto again;
	}
	if (nonce != link->peer_nonce) {
		/* A new peer session: forget the old control channel,
		 * stimuli, set marks and armed words (every page before the
		 * slices) before telling the peer we saw it (it sends only
		 * after our acknowledgement).
		 */
		memset(link->lwin, 0, SL_WIN_SLICE_OFF);
		link->tx_prod = 0;
		link->rx_cons = 0;
		link->tx_stalled = false;
		link->peer_nonce = nonce;
		ops->peer_spad_write(link, SL_SPAD_COUNT, nonce);
	}
	if (ack != link->nonce)
		goto again;
	peer_mw = (u64)mw_kb << 10;
	if (peer_mw < SL_WIN_SLICE_OFF + link->slice_size)
		goto again;
	down_write(&link->map_sem);
	rc = link->pwin ? 0 : ops->map_peer(link, peer_mw);
	if (!rc && !link->pwin)
		rc = -ENOMEM;
	if (!rc) {
		spin_lock_irq(&link->lock);
		link->peer_nslices = min_t(u64, (peer_mw - SL_WIN_SLICE_OFF) / link->slice_size,
					   SL_MAX_SLICES);
		link->up = true;
		link->generation++;
		spin_unlock_irq(&link->lock);
	}
	up_write(&link->map_sem);
	if (rc) {
		dev_warn_ratelimited(link->dev, "scilan: cannot map the peer window: %d\n", rc);
		goto again;
	}
	if (ops->db_enable)
		ops->db_enable(link);
	dev_info(link->dev, "scilan: %s link up, %u local and %u peer slices of %u bytes\n",
		 ops->name, link->nslices, link->peer_nslices, link->slice_size);
	/* Messages the peer sent before our state flipped. */
	queue_work(system_wq, &link->ctl_work);
again:
	/* Keep watching: a peer that restarts changes its nonce. */
	queue_delayed_work(system_wq, &link->link_work,
			   msecs_to_jiffies(link->up ? 10 * handshake_ms : handshake_ms));
}

/* The backend saw the link change (any context): a lost link stops every
 * endpoint now; the work item then unmaps and zaps, which may sleep.
 */
void sl_link_event(struct sl_link *link)
{
	unsigned long flags;

	if (!link->ops->link_is_up(link)) {
		spin_lock_irqsave(&link->lock, flags);
		sl_link_reset_locked(link);
		spin_unlock_irqrestore(&link->lock, flags);
	}
	mod_delayed_work(system_wq, &link->link_work, 0);
}

/* The peer rang our one doorbell (db_words): its bits are the words it
 * stored into page 0 of our window.  Any context; a link whose peer did
 * not ring finds none set.
 */
void sl_db_rung(struct sl_link *link)
{
	u32 *w = link->lwin + SL_CTL_DB_OFF;
	u64 bits = 0;
	int b;

	if (!link->lwin)
		return;
	for (b = 0; b < SL_CTL_DB_WORDS; b++)
		if (READ_ONCE(w[b]) && xchg(&w[b], 0))
			bits |= BIT_ULL(b);
	if (bits)
		sl_db_event(link, bits);
}

/* Doorbell bits from the backend's interrupt: bit 0 is the control channel
 * (handled in a work item, it may sleep), the others select groups of slices
 * whose stimulus words are scanned here, waking exactly the endpoints
 * stimulated.
 */
void sl_db_event(struct sl_link *link, u64 bits)
{
	link->stat_db_irqs++;
	if (bits & 1)
		queue_work(system_wq, &link->ctl_work);
	if (bits & ~1ULL)
		sl_db_scan(link, bits);
}

static int sl_dbg_show(struct seq_file *m, void *v)
{
	struct sl_link *link = m->private;
	struct sl_ep *ep;
	unsigned int held = 0, s;

	spin_lock_irq(&link->lock);
	for (s = 0; s < link->nslices; s++)
		held += test_bit(s, link->slice_local) || test_bit(s, link->slice_peer);
	seq_printf(m, "backend %s\nlocal_port %d\npeer_port %d\ndoorbell %s\n", link->ops->name,
		   link->local_port, link->peer_port, link->db_words ? "words" : "bits");
	seq_printf(m, "link %s\nproto %u\nmw_size %zu\nslice_size %u\nslices %u\npeer_slices %u\n",
		   link->up ? "up" : "down", SL_PROTO_VERSION, link->lwin_size, link->slice_size,
		   link->nslices, link->peer_nslices);
	seq_printf(m, "slices_busy %u\nsets_busy %u\ndb_bits %d\ngeneration %llu\n", held,
		   bitmap_weight(link->set_busy, SCILAN_SETS), link->db_bits, link->generation);
	seq_printf(m, "db_irqs %llu\nwakeups %llu\nstimuli %llu\nset_wakeups %llu\nset_stimuli %llu\n",
		   link->stat_db_irqs, link->stat_wakeups, link->stat_stimuli, link->stat_set_wakeups,
		   link->stat_set_stimuli);
	seq_printf(m, "ctl_rx %llu\nctl_tx %llu\nzaps %llu\n", link->stat_ctl_rx, link->stat_ctl_tx,
		   READ_ONCE(link->stat_zaps));
	s = 0;
	list_for_each_entry(ep, &link->eps, node)
		s++;
	seq_printf(m, "endpoints %u\n", s);
	list_for_each_entry(ep, &link->eps, node)
		seq_printf(m, "ep %u state %d slice %d peer_slice %d port %u tokens %#x set %d\n",
			   ep->id, ep->state, ep->slice, ep->peer_slice, ep->port, ep->tokens, ep->set);
	list_for_each_entry(ep, &link->listeners, lnode)
		sl_listener_show(m, ep);
	spin_unlock_irq(&link->lock);
	if (link->ops->dbg_show)
		link->ops->dbg_show(link, m);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(sl_dbg);

/* A link for one peer behind a backend; db_bits doorbell bits (bit 0 the
 * control channel), or 1: one doorbell for this peer, the bits carried as
 * words in the window (db_words).  Not yet visible: sl_link_register().
 */
struct sl_link *sl_link_alloc(struct device *dev, const struct sl_link_ops *ops, void *hw,
			      int db_bits)
{
	struct sl_link *link;
	int rc;

	if (slice_size < 8192 || !is_power_of_2(slice_size)) {
		dev_err(dev, "scilan: slice_size %u is not a power of two >= 8192\n", slice_size);
		return ERR_PTR(-EINVAL);
	}
	if (db_bits < 1) {
		dev_err(dev, "scilan: needs a doorbell\n");
		return ERR_PTR(-ENODEV);
	}
	link = kzalloc(sizeof(*link), GFP_KERNEL);
	if (!link)
		return ERR_PTR(-ENOMEM);
	kref_init(&link->ref);
	link->slice_ep = kvcalloc(SL_MAX_SLICES, sizeof(*link->slice_ep), GFP_KERNEL);
	link->slice_cookie = kvcalloc(SL_MAX_SLICES, sizeof(*link->slice_cookie), GFP_KERNEL);
	rc = link->slice_ep && link->slice_cookie ? ida_alloc(&sl_ida, GFP_KERNEL) : -ENOMEM;
	if (rc < 0) {
		kvfree(link->slice_ep);
		kvfree(link->slice_cookie);
		kfree(link);
		return ERR_PTR(rc);
	}
	link->index = rc;
	link->ops = ops;
	link->hw = hw;
	link->dev = dev;
	link->db_words = db_bits == 1;
	link->db_bits = link->db_words ? SL_CTL_DB_WORDS : min(db_bits, 32);
	link->local_port = -1;
	link->peer_port = -1;
	link->slice_size = slice_size;
	link->nonce = sl_new_nonce();
	spin_lock_init(&link->lock);
	INIT_LIST_HEAD(&link->eps);
	INIT_LIST_HEAD(&link->listeners);
	mutex_init(&link->tx_mutex);
	init_rwsem(&link->map_sem);
	INIT_WORK(&link->ctl_work, sl_ctl_work);
	INIT_DELAYED_WORK(&link->link_work, sl_link_work);
	snprintf(link->name, sizeof(link->name), "scilan%d", link->index);
	return link;
}

/* /dev/scilanN and its debugfs state appear; the handshake starts. */
int sl_link_register(struct sl_link *link)
{
	int rc;

	link->misc.minor = MISC_DYNAMIC_MINOR;
	link->misc.name = link->name;
	link->misc.fops = &sl_fops;
	link->misc.mode = sl_dev_mode & 0666;
	rc = misc_register(&link->misc);
	if (rc)
		return rc;
	link->misc_registered = true;
	link->dbg = debugfs_create_dir(link->name, sl_dbg_root);
	debugfs_create_file("state", 0444, link->dbg, link, &sl_dbg_fops);
	queue_delayed_work(system_wq, &link->link_work, 0);
	dev_info(link->dev, "scilan: /dev/%s (%s)\n", link->name, link->ops->name);
	return 0;
}

/* The backend goes away (its events already stopped): no new opens, the
 * session ends, every mapping is zapped.  Open endpoints keep the link
 * (not the hardware) until they close; the backend then frees its window
 * and drops its reference.
 */
void sl_link_unregister(struct sl_link *link)
{
	link->removing = true;
	if (link->misc_registered)
		misc_deregister(&link->misc);
	link->misc_registered = false;
	cancel_delayed_work_sync(&link->link_work);
	cancel_work_sync(&link->ctl_work);
	sl_link_down(link, "removed");
	debugfs_remove_recursive(link->dbg);
	link->dbg = NULL;
}

static int __init sl_init(void)
{
	int rc;

	sl_dbg_root = debugfs_create_dir("scilan", NULL);
	rc = sl_ntb_init();
	if (rc)
		goto dbg;
	rc = sl_ivshmem_init();
	if (rc)
		goto ntb;
	return 0;
ntb:
	sl_ntb_exit();
dbg:
	debugfs_remove_recursive(sl_dbg_root);
	return rc;
}

static void __exit sl_exit(void)
{
	sl_ivshmem_exit();
	sl_ntb_exit();
	debugfs_remove_recursive(sl_dbg_root);
}

module_init(sl_init);
module_exit(sl_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("scilan: sockets over PCIe NTB shared memory (or two VMs over ivshmem)");
MODULE_VERSION("0.1");
