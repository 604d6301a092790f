// SPDX-License-Identifier: GPL-2.0
/* scilan_main.c — the NTB client: module parameters, probe/remove of one link
 * per NTB device, the scratchpad handshake (version, window and slice sizes,
 * session nonces), link up/down, the doorbell interrupt and debugfs state.
 */
#include <linux/debugfs.h>
#include <linux/dma-mapping.h>
#include <linux/idr.h>
#include <linux/io.h>
#include <linux/ioport.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/random.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "scilan.h"

static unsigned long mw_size = 4UL << 20;
module_param(mw_size, ulong, 0444);
MODULE_PARM_DESC(mw_size, "Bytes of local memory offered as the inbound window (default 4 MiB, capped by the NTB)");

static unsigned int slice_size = 64U << 10;
module_param(slice_size, uint, 0444);
MODULE_PARM_DESC(slice_size, "Bytes per connection slice, a power of two >= 8 KiB; both sides must agree (default 64 KiB)");

unsigned int sl_backlog_default = 16;
module_param_named(backlog, sl_backlog_default, uint, 0644);
MODULE_PARM_DESC(backlog, "Default listen backlog (connections accepted by the driver, not yet by the program)");

unsigned int sl_connect_timeout_ms = 2000;
module_param_named(connect_timeout_ms, sl_connect_timeout_ms, uint, 0644);
MODULE_PARM_DESC(connect_timeout_ms, "Default time a connect waits for the peer's answer (ms)");

static unsigned int handshake_ms = 50;
module_param(handshake_ms, uint, 0644);
MODULE_PARM_DESC(handshake_ms, "Scratchpad handshake poll period while the link comes up (ms)");

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

/* Connections of the lost session are reset, listeners keep listening (the
 * next session may bring connections), slices only the peer held are free:
 * the dead peer writes no more.  Caller holds link->lock.
 */
void sl_link_reset_locked(struct sl_link *link)
{
	struct sl_ep *ep, *tmp;
	int s;

	link->up = false;
	list_for_each_entry_safe(ep, tmp, &link->eps, node) {
		if (ep->state == SCILAN_EP_CONNECTED || ep->state == SCILAN_EP_PEER_CLOSED ||
		    ep->connecting)
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

	down_write(&link->map_sem);
	spin_lock_irq(&link->lock);
	sl_link_reset_locked(link);
	spin_unlock_irq(&link->lock);
	if (link->pwin) {
		if (link->pwin_is_ram)
			memunmap((void __force *)link->pwin);
		else
			iounmap(link->pwin);
		link->pwin = NULL;
	}
	link->nonce = sl_new_nonce();
	link->peer_nonce = 0;
	up_write(&link->map_sem);
	sl_zap_mappings(link);
	if (was_up)
		dev_info(&link->ntb->dev, "scilan: link down (%s)\n", why);
}

static int sl_map_peer(struct sl_link *link, u64 peer_mw)
{
	phys_addr_t base;
	resource_size_t size;
	int rc;

	rc = ntb_peer_mw_get_addr(link->ntb, 0, &base, &size);
	if (rc)
		return rc;
	if (size < peer_mw)
		return -ENOSPC;
	/* A peer window in RAM is the mock (the peer's translated buffer):
	 * x86 PAT forbids a write-combining alias of RAM mapped write-back,
	 * so it is mapped cached.  A real window is device memory: WC.
	 */
	link->pwin_is_ram = region_intersects(base, peer_mw, IORESOURCE_SYSTEM_RAM,
					      IORES_DESC_NONE) != REGION_DISJOINT;
	if (link->pwin_is_ram)
		link->pwin = (void __iomem __force *)memremap(base, peer_mw, MEMREMAP_WB);
	else
		link->pwin = ioremap_wc(base, peer_mw);
	if (!link->pwin)
		return -ENOMEM;
	link->pwin_phys = base;
	link->pwin_size = peer_mw;
	return 0;
}

static int sl_setup_window(struct sl_link *link);

static void sl_link_work(struct work_struct *work)
{
	struct sl_link *link = container_of(to_delayed_work(work), struct sl_link, link_work);
	struct ntb_dev *ntb = link->ntb;
	u32 magic, mw_kb, slice, nonce, ack;
	u64 peer_mw;
	int rc;

	if (link->removing)
		return;
	if (!ntb_link_is_up(ntb, NULL, NULL)) {
		sl_link_down(link, "NTB link lost");
		return; /* the next link event brings us back */
	}
	/* The window's alignment is known only with the link up; it is set up
	 * once and kept for the link's life (reused by later sessions).
	 */
	if (!link->lwin) {
		rc = sl_setup_window(link);
		if (rc) {
			dev_warn_ratelimited(&ntb->dev, "scilan: inbound window setup failed: %d\n", rc);
			goto again;
		}
		dev_info(&ntb->dev, "scilan: window %zu bytes, %u slices\n", link->lwin_size, link->nslices);
	}
	ntb_peer_spad_write(ntb, 0, SL_SPAD_MAGIC, SL_SPAD_MAGIC_VAL);
	ntb_peer_spad_write(ntb, 0, SL_SPAD_MW_KB, link->lwin_size >> 10);
	ntb_peer_spad_write(ntb, 0, SL_SPAD_SLICE, link->slice_size);
	ntb_peer_spad_write(ntb, 0, SL_SPAD_NONCE, link->nonce);

	magic = ntb_spad_read(ntb, SL_SPAD_MAGIC);
	mw_kb = ntb_spad_read(ntb, SL_SPAD_MW_KB);
	slice = ntb_spad_read(ntb, SL_SPAD_SLICE);
	nonce = ntb_spad_read(ntb, SL_SPAD_NONCE);
	ack = ntb_spad_read(ntb, SL_SPAD_COUNT);

	if (link->up) {
		if (nonce != link->peer_nonce || ack != link->nonce)
			sl_link_down(link, "peer restarted");
		goto again;
	}
	if (magic != SL_SPAD_MAGIC_VAL || !nonce)
		goto again;
	if (slice != link->slice_size) {
		dev_warn_once(&ntb->dev, "scilan: peer slice size %u != ours %u\n", slice, link->slice_size);
		goto again;
	}
	if (nonce != link->peer_nonce) {
		/* A new peer session: forget the old control channel and
		 * stimuli before telling the peer we saw it (it sends only
		 * after our acknowledgement).
		 */
		memset(link->lwin, 0, SL_WIN_SLICE_OFF);
		link->tx_prod = 0;
		link->rx_cons = 0;
		link->peer_nonce = nonce;
		ntb_peer_spad_write(ntb, 0, SL_SPAD_COUNT, nonce);
	}
	if (ack != link->nonce)
		goto again;
	peer_mw = (u64)mw_kb << 10;
	if (peer_mw < SL_WIN_SLICE_OFF + link->slice_size)
		goto again;
	down_write(&link->map_sem);
	rc = link->pwin ? 0 : sl_map_peer(link, peer_mw);
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
		dev_warn_ratelimited(&ntb->dev, "scilan: cannot map the peer window: %d\n", rc);
		goto again;
	}
	ntb_db_clear_mask(ntb, ntb_db_valid_mask(ntb));
	dev_info(&ntb->dev, "scilan: link up, %u local and %u peer slices of %u bytes\n",
		 link->nslices, link->peer_nslices, link->slice_size);
	/* Messages the peer sent before our state flipped. */
	queue_work(system_wq, &link->ctl_work);
again:
	/* Keep watching: a peer that restarts changes its nonce. */
	queue_delayed_work(system_wq, &link->link_work,
			   msecs_to_jiffies(link->up ? 10 * handshake_ms : handshake_ms));
}

static void sl_ctx_link_event(void *ctx)
{
	struct sl_link *link = ctx;

	/* A lost link stops every endpoint now (interrupt context); the work
	 * item then unmaps and zaps, which may sleep.
	 */
	if (!ntb_link_is_up(link->ntb, NULL, NULL)) {
		spin_lock(&link->lock);
		sl_link_reset_locked(link);
		spin_unlock(&link->lock);
	}
	mod_delayed_work(system_wq, &link->link_work, 0);
}

/* The doorbell interrupt: bit 0 is the control channel (handled in a work
 * item, it may sleep), the others select groups of slices whose stimulus
 * words are scanned here, waking exactly the endpoints stimulated.
 */
static void sl_ctx_db_event(void *ctx, int vector)
{
	struct sl_link *link = ctx;
	u64 bits = ntb_db_read(link->ntb);

	ntb_db_clear(link->ntb, bits);
	link->stat_db_irqs++;
	if (bits & 1)
		queue_work(system_wq, &link->ctl_work);
	if (bits & ~1ULL)
		sl_db_scan(link, bits);
}

static const struct ntb_ctx_ops sl_ctx_ops = {
	.link_event = sl_ctx_link_event,
	.db_event = sl_ctx_db_event,
};

static int sl_dbg_show(struct seq_file *m, void *v)
{
	struct sl_link *link = m->private;
	struct sl_ep *ep;
	unsigned int held = 0, s;

	spin_lock_irq(&link->lock);
	for (s = 0; s < link->nslices; s++)
		held += test_bit(s, link->slice_local) || test_bit(s, link->slice_peer);
	seq_printf(m, "link %s\nproto %u\nmw_size %zu\nslice_size %u\nslices %u\npeer_slices %u\n",
		   link->up ? "up" : "down", SL_PROTO_VERSION, link->lwin_size, link->slice_size,
		   link->nslices, link->peer_nslices);
	seq_printf(m, "slices_busy %u\ndb_bits %d\ngeneration %llu\n", held, link->db_bits, link->generation);
	seq_printf(m, "db_irqs %llu\nwakeups %llu\nstimuli %llu\nctl_rx %llu\nctl_tx %llu\n",
		   link->stat_db_irqs, link->stat_wakeups, link->stat_stimuli, link->stat_ctl_rx,
		   link->stat_ctl_tx);
	s = 0;
	list_for_each_entry(ep, &link->eps, node)
		s++;
	seq_printf(m, "endpoints %u\n", s);
	list_for_each_entry(ep, &link->eps, node)
		seq_printf(m, "ep %u state %d slice %d peer_slice %d port %u tokens %#x\n", ep->id,
			   ep->state, ep->slice, ep->peer_slice, ep->port, ep->tokens);
	spin_unlock_irq(&link->lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(sl_dbg);

static int sl_setup_window(struct sl_link *link)
{
	struct ntb_dev *ntb = link->ntb;
	resource_size_t addr_align, size_align, size_max;
	size_t size;
	int rc;

	rc = ntb_mw_get_align(ntb, 0, 0, &addr_align, &size_align, &size_max);
	if (rc)
		return rc;
	size = min_t(u64, mw_size, size_max);
	if (size_align)
		size = round_down(size, size_align);
	link->nslices = min_t(u64, size > SL_WIN_SLICE_OFF ? (size - SL_WIN_SLICE_OFF) / link->slice_size : 0,
			      SL_MAX_SLICES);
	if (!link->nslices)
		return -ENOSPC;
	link->dma_dev = ntb_get_dma_dev(ntb);
	link->lwin = dma_alloc_coherent(link->dma_dev, size, &link->lwin_dma, GFP_KERNEL);
	if (!link->lwin)
		return -ENOMEM;
	link->lwin_size = size;
	/* User mappings insert the pages by pfn: the buffer must be in the
	 * linear map (true for x86 coherent allocations).
	 */
	if ((addr_align && !IS_ALIGNED(link->lwin_dma, addr_align)) || !virt_addr_valid(link->lwin)) {
		rc = -EINVAL;
		goto free;
	}
	rc = ntb_mw_set_trans(ntb, 0, 0, link->lwin_dma, size);
	if (!rc)
		return 0;
free:
	dma_free_coherent(link->dma_dev, size, link->lwin, link->lwin_dma);
	link->lwin = NULL;
	return rc;
}

static int sl_probe(struct ntb_client *client, struct ntb_dev *ntb)
{
	struct sl_link *link;
	u64 valid;
	int rc;

	if (ntb_peer_port_count(ntb) != 1 || ntb_mw_count(ntb, 0) < 1 || ntb_peer_mw_count(ntb) < 1 ||
	    ntb_spad_count(ntb) < SL_SPAD_COUNT + 1) {
		dev_err(&ntb->dev, "scilan: needs one peer, a memory window and %d scratchpads\n",
			SL_SPAD_COUNT + 1);
		return -ENODEV;
	}
	if (slice_size < 8192 || !is_power_of_2(slice_size)) {
		dev_err(&ntb->dev, "scilan: slice_size %u is not a power of two >= 8192\n", slice_size);
		return -EINVAL;
	}
	link = kzalloc(sizeof(*link), GFP_KERNEL);
	if (!link)
		return -ENOMEM;
	kref_init(&link->ref);
	rc = ida_alloc(&sl_ida, GFP_KERNEL);
	if (rc < 0) {
		kfree(link);
		return rc;
	}
	link->index = rc;
	link->ntb = ntb;
	/* Open endpoints pin the NTB hardware driver: its windows back them. */
	link->hw_owner = ntb->pdev->dev.driver ? ntb->pdev->dev.driver->owner : NULL;
	link->slice_size = slice_size;
	link->nonce = sl_new_nonce();
	spin_lock_init(&link->lock);
	INIT_LIST_HEAD(&link->eps);
	INIT_LIST_HEAD(&link->listeners);
	mutex_init(&link->tx_mutex);
	init_rwsem(&link->map_sem);
	INIT_WORK(&link->ctl_work, sl_ctl_work);
	INIT_DELAYED_WORK(&link->link_work, sl_link_work);

	/* Doorbell bits in use: the contiguous low bits the device offers. */
	valid = ntb_db_valid_mask(ntb);
	while (link->db_bits < 32 && (valid & BIT_ULL(link->db_bits)))
		link->db_bits++;
	if (link->db_bits < 2) {
		dev_err(&ntb->dev, "scilan: needs two doorbell bits\n");
		rc = -ENODEV;
		goto put;
	}
	ntb_db_set_mask(ntb, valid);
	rc = ntb_set_ctx(ntb, link, &sl_ctx_ops);
	if (rc)
		goto put;
	snprintf(link->name, sizeof(link->name), "scilan%d", link->index);
	link->misc.minor = MISC_DYNAMIC_MINOR;
	link->misc.name = link->name;
	link->misc.fops = &sl_fops;
	link->misc.mode = 0666;
	rc = misc_register(&link->misc);
	if (rc)
		goto ctx;
	link->misc_registered = true;
	link->dbg = debugfs_create_dir(link->name, sl_dbg_root);
	debugfs_create_file("state", 0444, link->dbg, link, &sl_dbg_fops);
	ntb_link_enable(ntb, NTB_SPEED_AUTO, NTB_WIDTH_AUTO);
	queue_delayed_work(system_wq, &link->link_work, 0);
	dev_info(&ntb->dev, "scilan: /dev/%s\n", link->name);
	return 0;
ctx:
	ntb_clear_ctx(ntb);
put:
	sl_link_put(link);
	return rc;
}

static void sl_remove(struct ntb_client *client, struct ntb_dev *ntb)
{
	struct sl_link *link = ntb->ctx;

	link->removing = true;
	misc_deregister(&link->misc);
	ntb_clear_ctx(ntb);
	ntb_db_set_mask(ntb, ntb_db_valid_mask(ntb));
	cancel_delayed_work_sync(&link->link_work);
	cancel_work_sync(&link->ctl_work);
	sl_link_down(link, "removed");
	debugfs_remove_recursive(link->dbg);
	ntb_link_disable(ntb);
	/* No user mapping survives sl_link_down and none can be faulted in
	 * again (the link is down for good): the window may go.
	 */
	if (link->lwin) {
		ntb_mw_clear_trans(ntb, 0, 0);
		dma_free_coherent(link->dma_dev, link->lwin_size, link->lwin, link->lwin_dma);
		link->lwin = NULL;
	}
	sl_link_put(link);
}

static struct ntb_client sl_client = {
	.ops = {
		.probe = sl_probe,
		.remove = sl_remove,
	},
};

static int __init sl_init(void)
{
	int rc;

	sl_dbg_root = debugfs_create_dir("scilan", NULL);
	rc = ntb_register_client(&sl_client);
	if (rc)
		debugfs_remove_recursive(sl_dbg_root);
	return rc;
}

static void __exit sl_exit(void)
{
	ntb_unregister_client(&sl_client);
	debugfs_remove_recursive(sl_dbg_root);
}

module_init(sl_init);
module_exit(sl_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("scilan: sockets over PCIe NTB shared memory");
MODULE_VERSION("0.1");
