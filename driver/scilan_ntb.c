// SPDX-License-Identifier: GPL-2.0
/* scilan_ntb.c — the NTB backend: an NTB client (include/linux/ntb.h) giving
 * one scilan link per ntb_dev; its inbound window translates to a coherent
 * DMA buffer, the peer's aperture is mapped write-combining.
 */
#include <linux/dma-mapping.h>
#include <linux/io.h>
#include <linux/ioport.h>
#include <linux/module.h>
#include <linux/ntb.h>
#include <linux/pci.h>

#include "scilan.h"

static inline struct ntb_dev *sl_ntb(struct sl_link *link)
{
	return link->hw;
}

static bool sl_ntb_link_is_up(struct sl_link *link)
{
	return ntb_link_is_up(sl_ntb(link), NULL, NULL);
}

static u32 sl_ntb_spad_read(struct sl_link *link, int idx)
{
	return ntb_spad_read(sl_ntb(link), idx);
}

static void sl_ntb_peer_spad_write(struct sl_link *link, int idx, u32 val)
{
	ntb_peer_spad_write(sl_ntb(link), 0, idx, val);
}

static void sl_ntb_peer_db_set(struct sl_link *link, u64 bits)
{
	ntb_peer_db_set(sl_ntb(link), bits);
}

static void sl_ntb_db_enable(struct sl_link *link)
{
	ntb_db_clear_mask(sl_ntb(link), ntb_db_valid_mask(sl_ntb(link)));
}

/* The window's alignment is known only with the link up (the core calls
 * this then, once): a coherent buffer the window translates to.
 */
static int sl_ntb_setup_window(struct sl_link *link, size_t max)
{
	struct ntb_dev *ntb = sl_ntb(link);
	resource_size_t addr_align, size_align, size_max;
	size_t size;
	int rc;

	if (link->lwin)
		return 0;
	rc = ntb_mw_get_align(ntb, 0, 0, &addr_align, &size_align, &size_max);
	if (rc)
		return rc;
	size = min_t(u64, max, size_max);
	if (size_align)
		size = round_down(size, size_align);
	if (size <= SL_WIN_SLICE_OFF)
		return -ENOSPC;
	link->dma_dev = ntb_get_dma_dev(ntb);
	/* Quietly: the core asks again for less when this much is not there. */
	link->lwin = dma_alloc_coherent(link->dma_dev, size, &link->lwin_dma,
					GFP_KERNEL | __GFP_NOWARN);
	if (!link->lwin)
		return -ENOMEM;
	link->lwin_size = size;
	/* User mappings insert the pages by pfn: the buffer must be in the
	 * linear map (true for x86 coherent allocations).
	 */
	if ((addr_align && !IS_ALIGNED(link->lwin_dma, addr_align)) ||
	    !virt_addr_valid(link->lwin)) {
		rc = -EINVAL;
		goto free;
	}
	link->lwin_phys = virt_to_phys(link->lwin);
	rc = ntb_mw_set_trans(ntb, 0, 0, link->lwin_dma, size);
	if (!rc)
		return 0;
free:
	dma_free_coherent(link->dma_dev, size, link->lwin, link->lwin_dma);
	link->lwin = NULL;
	link->lwin_size = 0;
	return rc;
}

static int sl_ntb_map_peer(struct sl_link *link, u64 peer_mw)
{
	phys_addr_t base;
	resource_size_t size;
	int rc;

	rc = ntb_peer_mw_get_addr(sl_ntb(link), 0, &base, &size);
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

static void sl_ntb_unmap_peer(struct sl_link *link)
{
	if (link->pwin_is_ram)
		memunmap((void __force *)link->pwin);
	else
		iounmap(link->pwin);
}

static const struct sl_link_ops sl_ntb_ops = {
	.name = "ntb",
	.link_is_up = sl_ntb_link_is_up,
	.spad_read = sl_ntb_spad_read,
	.peer_spad_write = sl_ntb_peer_spad_write,
	.peer_db_set = sl_ntb_peer_db_set,
	.db_enable = sl_ntb_db_enable,
	.setup_window = sl_ntb_setup_window,
	.map_peer = sl_ntb_map_peer,
	.unmap_peer = sl_ntb_unmap_peer,
};

static void sl_ntb_link_event(void *ctx)
{
	sl_link_event(ctx);
}

static void sl_ntb_db_event(void *ctx, int vector)
{
	struct sl_link *link = ctx;
	u64 bits = ntb_db_read(sl_ntb(link));

	ntb_db_clear(sl_ntb(link), bits);
	sl_db_event(link, bits);
}

static const struct ntb_ctx_ops sl_ntb_ctx_ops = {
	.link_event = sl_ntb_link_event,
	.db_event = sl_ntb_db_event,
};

static int sl_ntb_probe(struct ntb_client *client, struct ntb_dev *ntb)
{
	struct sl_link *link;
	u64 valid;
	int rc, bits = 0;

	if (ntb_peer_port_count(ntb) != 1 || ntb_mw_count(ntb, 0) < 1 ||
	    ntb_peer_mw_count(ntb) < 1 || ntb_spad_count(ntb) < SL_SPAD_COUNT + 1) {
		dev_err(&ntb->dev, "scilan: needs one peer, a memory window and %d scratchpads\n",
			SL_SPAD_COUNT + 1);
		return -ENODEV;
	}
	/* Doorbell bits in use: the contiguous low bits the device offers. */
	valid = ntb_db_valid_mask(ntb);
	while (bits < 32 && (valid & BIT_ULL(bits)))
		bits++;
	link = sl_link_alloc(&ntb->dev, &sl_ntb_ops, ntb, bits);
	if (IS_ERR(link))
		return PTR_ERR(link);
	/* Open endpoints pin the NTB hardware driver: its windows back them. */
	link->hw_owner = ntb->pdev->dev.driver ? ntb->pdev->dev.driver->owner : NULL;
	ntb_db_set_mask(ntb, valid);
	rc = ntb_set_ctx(ntb, link, &sl_ntb_ctx_ops);
	if (rc)
		goto put;
	rc = sl_link_register(link);
	if (rc)
		goto ctx;
	ntb_link_enable(ntb, NTB_SPEED_AUTO, NTB_WIDTH_AUTO);
	return 0;
ctx:
	ntb_clear_ctx(ntb);
put:
	sl_link_put(link);
	return rc;
}

static void sl_ntb_remove(struct ntb_client *client, struct ntb_dev *ntb)
{
	struct sl_link *link = ntb->ctx;

	ntb_clear_ctx(ntb);
	ntb_db_set_mask(ntb, ntb_db_valid_mask(ntb));
	sl_link_unregister(link);
	ntb_link_disable(ntb);
	/* No user mapping survives sl_link_unregister and none can be faulted
	 * in again (the link is down for good): the window may go.
	 */
	if (link->lwin) {
		ntb_mw_clear_trans(ntb, 0, 0);
		dma_free_coherent(link->dma_dev, link->lwin_size, link->lwin, link->lwin_dma);
		link->lwin = NULL;
	}
	sl_link_put(link);
}

static struct ntb_client sl_ntb_client = {
	.ops = {
		.probe = sl_ntb_probe,
		.remove = sl_ntb_remove,
	},
};

int sl_ntb_init(void)
{
	return ntb_register_client(&sl_ntb_client);
}

void sl_ntb_exit(void)
{
	ntb_unregister_client(&sl_ntb_client);
}
