// SPDX-License-Identifier: GPL-2.0
/* scilan_ntb.c — the NTB backend: an NTB client (include/linux/ntb.h) giving
 * one scilan link per peer port of each ntb_dev (two-port Intel/AMD/
 * Switchtec: one; an IDT switch: up to 7).  Each link's inbound window is a
 * coherent DMA buffer, the peer's aperture is mapped write-combining; how
 * windows, handshake values and doorbells are shared among peers is
 * chosen from what the hardware offers (sl_ntb_choose).
 */
#include <linux/dma-mapping.h>
#include <linux/io.h>
#include <linux/ioport.h>
#include <linux/module.h>
#include <linux/ntb.h>
#include <linux/pci.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "scilan_ntb.h"

static inline struct sl_ntb_peer *sl_peer(struct sl_link *link)
{
	return link->hw;
}

static inline struct ntb_dev *sl_ntb(struct sl_link *link)
{
	return sl_peer(link)->nd->ntb;
}

static bool sl_ntb_link_is_up(struct sl_link *link)
{
	return ntb_link_is_up(sl_ntb(link), NULL, NULL) & BIT_ULL(sl_peer(link)->pidx);
}

/* Scratchpads, with several peers: each peer writes its block of ours, the
 * block of its index as we see it (ntb_peer_resource_idx on its side).
 */
static u32 sl_ntb_spad_read(struct sl_link *link, int idx)
{
	struct sl_ntb_peer *p = sl_peer(link);

	if (p->nd->msgs)
		return sl_ntb_msg_read(p, idx);
	return ntb_spad_read(p->nd->ntb, p->pidx * p->nd->nvals + idx);
}

static void sl_ntb_peer_spad_write(struct sl_link *link, int idx, u32 val)
{
	struct sl_ntb_peer *p = sl_peer(link);
	struct ntb_dev *ntb = p->nd->ntb;
	int base;

	if (p->nd->msgs) {
		sl_ntb_msg_write(p, idx, val);
		return;
	}
	base = p->nd->npeers == 1 ? 0 : ntb_peer_resource_idx(ntb, p->pidx) * p->nd->nvals;
	ntb_peer_spad_write(ntb, p->pidx, base + idx, val);
	/* The address record: the nonce last, read first (sl_ntb_record). */
	if (idx == SL_SPAD_NONCE && p->nd->out_trans && link->lwin) {
		ntb_peer_spad_write(ntb, p->pidx, base + SL_NTB_ADDR_LO, lower_32_bits(link->lwin_dma));
		ntb_peer_spad_write(ntb, p->pidx, base + SL_NTB_ADDR_HI, upper_32_bits(link->lwin_dma));
		ntb_peer_spad_write(ntb, p->pidx, base + SL_NTB_ADDR_NONCE, val);
	}
}

/* The address of the peer's buffer, announced in the session we just
 * agreed on (a record of an earlier session may name freed memory).
 */
static int sl_ntb_record(struct sl_ntb_peer *p, u64 *addr)
{
	struct ntb_dev *ntb = p->nd->ntb;
	int base = p->pidx * p->nd->nvals;
	u32 nonce, again;

	if (p->nd->msgs) {
		if (!sl_ntb_msg_record(p, addr, &nonce))
			return -EAGAIN;
	} else {
		nonce = ntb_spad_read(ntb, base + SL_NTB_ADDR_NONCE);
		*addr = (u64)ntb_spad_read(ntb, base + SL_NTB_ADDR_HI) << 32 |
			ntb_spad_read(ntb, base + SL_NTB_ADDR_LO);
		again = ntb_spad_read(ntb, base + SL_NTB_ADDR_NONCE);
		if (again != nonce)
			return -EAGAIN;
	}
	return nonce == p->link->peer_nonce ? 0 : -EAGAIN;
}

static void sl_ntb_peer_db_set(struct sl_link *link, u64 bits)
{
	struct sl_ntb_peer *p = sl_peer(link);

	ntb_peer_db_set(p->nd->ntb, p->nd->db_words ? p->ring_bit : bits);
}

static void sl_ntb_db_enable(struct sl_link *link)
{
	struct sl_ntb *nd = sl_peer(link)->nd;

	ntb_db_clear_mask(nd->ntb, nd->db_words ? nd->db_mine : ntb_db_valid_mask(nd->ntb));
}

/* The window's alignment is known only with the link up (the core calls
 * this then, once): a coherent buffer the window translates to.  Where
 * the hardware translates inbound, we set it here; where the sender does
 * (IDT), the buffer must suit the sender's window and the peer gets its
 * address in the handshake.
 */
static int sl_ntb_setup_window(struct sl_link *link, size_t max)
{
	struct sl_ntb_peer *p = sl_peer(link);
	struct ntb_dev *ntb = p->nd->ntb;
	resource_size_t addr_align, size_align, size_max;
	size_t size;
	int rc;

	if (link->lwin)
		return 0;
	if (ntb_mw_count(ntb, p->pidx) <= p->in_widx) {
		dev_warn_once(&ntb->dev, "scilan: no memory window %d for peer port %d\n",
			      p->in_widx, link->peer_port);
		return -ENODEV;
	}
	rc = ntb_mw_get_align(ntb, p->pidx, p->in_widx, &addr_align, &size_align, &size_max);
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
	rc = ntb_mw_set_trans(ntb, p->pidx, p->in_widx, link->lwin_dma, size);
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
	struct sl_ntb_peer *p = sl_peer(link);
	struct ntb_dev *ntb = p->nd->ntb;
	phys_addr_t base;
	resource_size_t size;
	u64 addr;
	int rc;

	if (p->nd->out_trans) {
		rc = sl_ntb_record(p, &addr);
		if (!rc)
			rc = ntb_peer_mw_set_trans(ntb, p->pidx, p->out_widx, addr, peer_mw);
		if (rc)
			return rc;
	}
	rc = ntb_peer_mw_get_addr(ntb, p->out_widx, &base, &size);
	if (!rc && size < peer_mw)
		rc = -ENOSPC;
	if (rc)
		goto clear;
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
	rc = -ENOMEM;
	if (!link->pwin)
		goto clear;
	link->pwin_phys = base;
	link->pwin_size = peer_mw;
	return 0;
clear:
	if (p->nd->out_trans)
		ntb_peer_mw_clear_trans(ntb, p->pidx, p->out_widx);
	return rc;
}

static void sl_ntb_unmap_peer(struct sl_link *link)
{
	struct sl_ntb_peer *p = sl_peer(link);

	if (link->pwin_is_ram)
		memunmap((void __force *)link->pwin);
	else
		iounmap(link->pwin);
	/* Our stores stop reaching the lost session's memory. */
	if (p->nd->out_trans)
		ntb_peer_mw_clear_trans(p->nd->ntb, p->pidx, p->out_widx);
}

static void sl_ntb_dbg_show(struct sl_link *link, struct seq_file *m)
{
	struct sl_ntb_peer *p = sl_peer(link);
	struct sl_ntb *nd = p->nd;

	seq_printf(m, "ntb_peers %d\nntb_pidx %d\nntb_handshake %s\nntb_translation %s\n",
		   nd->npeers, p->pidx, nd->msgs ? "messages" : "scratchpads",
		   nd->out_trans ? "outbound" : "inbound");
	seq_printf(m, "ntb_windows in %d out %d\n", p->in_widx, p->out_widx);
	if (nd->db_words)
		seq_printf(m, "ntb_doorbell ring %#llx mine %#llx\n", p->ring_bit, nd->db_mine);
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
	.dbg_show = sl_ntb_dbg_show,
};

/* Each peer's link goes up and down on its own (a bit per peer index).
 * An event that changed no bit may hide a quick down and up: every link
 * then looks again.
 */
static void sl_ntb_link_event(void *ctx)
{
	struct sl_ntb *nd = ctx;
	u64 up = ntb_link_is_up(nd->ntb, NULL, NULL), changed = up ^ nd->up_seen;
	int pidx;

	nd->up_seen = up;
	for (pidx = 0; pidx < nd->npeers; pidx++) {
		if (changed && !(changed & BIT_ULL(pidx)))
			continue;
		if (nd->msgs && !(up & BIT_ULL(pidx)))
			sl_ntb_msg_forget(&nd->peer[pidx]);
		sl_link_event(nd->peer[pidx].link);
	}
}

/* A shared doorbell does not say who rang: every link looks at its words
 * (a link whose peer did not ring finds none).
 */
static void sl_ntb_db_event(void *ctx, int vector)
{
	struct sl_ntb *nd = ctx;
	u64 bits = ntb_db_read(nd->ntb);
	int pidx;

	ntb_db_clear(nd->ntb, bits);
	if (!nd->db_words) {
		sl_db_event(nd->peer[0].link, bits);
		return;
	}
	if (!(bits & nd->db_mine))
		return;
	for (pidx = 0; pidx < nd->npeers; pidx++)
		sl_db_rung(nd->peer[pidx].link);
}

static void sl_ntb_msg_event(void *ctx)
{
	sl_ntb_msg_receive(ctx);
}

static const struct ntb_ctx_ops sl_ntb_ctx_ops = {
	.link_event = sl_ntb_link_event,
	.db_event = sl_ntb_db_event,
	.msg_event = sl_ntb_msg_event,
};

/* Doorbells.  One peer with two or more bits: the bits themselves (bit 0
 * the control channel, the others groups of slices).  Else one bit per
 * peer and the core's words behind it: the doorbell register of a switch
 * port is shared, and ntb_peer_db_set() names no peer, so the switch
 * routes a bit to one port: as ntb_perf expects of IDT, bit i reaches the
 * port of logical index i (its rank among the port numbers).  A peer rings
 * us with our bit, we ring it with its bit, and the receiver cannot tell
 * who rang: each of its links looks at its words.
 */
static int sl_ntb_choose_doorbells(struct sl_ntb *nd)
{
	struct ntb_dev *ntb = nd->ntb;
	u64 valid = ntb_db_valid_mask(ntb), need;
	int pidx, bit, bits = 0;

	if (nd->npeers == 1) {
		while (bits < 32 && (valid & BIT_ULL(bits)))
			bits++;
		if (bits >= 2) {
			nd->db_bits = bits;
			return 0;
		}
		if (bits == 1) {
			nd->db_words = true;
			nd->db_mine = nd->peer[0].ring_bit = BIT_ULL(0);
			return 0;
		}
		dev_err(&ntb->dev, "scilan: the NTB has no doorbell bit 0\n");
		return -ENODEV;
	}
	nd->db_words = true;
	bit = ntb_logical_port_number(ntb);
	need = bit >= 0 && bit < 64 ? BIT_ULL(bit) : 0;
	nd->db_mine = need;
	for (pidx = 0; pidx < nd->npeers && need; pidx++) {
		bit = ntb_peer_logical_port_number(ntb, pidx);
		nd->peer[pidx].ring_bit = bit >= 0 && bit < 64 ? BIT_ULL(bit) : 0;
		need = nd->peer[pidx].ring_bit ? need | nd->peer[pidx].ring_bit : 0;
	}
	if (!need || (need & ~valid)) {
		dev_err(&ntb->dev,
			"scilan: %d ports share the doorbell register and need a bit each (%#llx), the NTB has %#llx: not supported (ntb_msi would give each peer its own interrupt)\n",
			nd->npeers + 1, need, valid);
		return -ENODEV;
	}
	return 0;
}

/* What the hardware offers decides how each peer is reached; anything
 * missing is said and the device left alone.
 *   Windows: an outbound window per peer (index pidx; one peer: 0), and
 *   for each peer the inbound window its outbound window reaches (the
 *   index of us in its list, ntb_peer_resource_idx; one peer: 0).  Who
 *   translates: the receiver (ntb_mw_set_trans) or, where the hardware
 *   has only ntb_peer_mw_set_trans (IDT), the sender, with the address
 *   the receiver announced in the handshake.
 *   Handshake values: scratchpads, a block per peer, when there are
 *   enough; else message registers.
 */
static int sl_ntb_choose(struct sl_ntb *nd)
{
	struct ntb_dev *ntb = nd->ntb;
	int pidx, spads, outs = ntb_peer_mw_count(ntb);

	nd->out_trans = !ntb->ops->mw_set_trans && ntb->ops->peer_mw_set_trans;
	nd->nvals = SL_SPAD_COUNT + 1 + (nd->out_trans ? 3 : 0);
	if (outs < nd->npeers) {
		dev_err(&ntb->dev, "scilan: %d peer ports need an outbound memory window each, the NTB has %d\n",
			nd->npeers, outs);
		return -ENODEV;
	}
	spads = ntb_spad_count(ntb);
	if (spads >= nd->npeers * nd->nvals) {
		nd->msgs = false;
	} else if (ntb_msg_count(ntb) >= 1 && ntb_msg_inbits(ntb) && ntb_msg_outbits(ntb)) {
		nd->msgs = true;
	} else {
		dev_err(&ntb->dev,
			"scilan: %d peer ports need %d scratchpads (the NTB has %d) or message registers (none)\n",
			nd->npeers, nd->npeers * nd->nvals, spads);
		return -ENODEV;
	}
	for (pidx = 0; pidx < nd->npeers; pidx++) {
		struct sl_ntb_peer *p = &nd->peer[pidx];

		p->nd = nd;
		p->pidx = pidx;
		p->out_widx = nd->npeers == 1 ? 0 : pidx;
		p->in_widx = nd->npeers == 1 ? 0 : ntb_peer_resource_idx(ntb, pidx);
		if (p->in_widx < 0)
			return -ENODEV;
	}
	return sl_ntb_choose_doorbells(nd);
}

/* The links go (their sessions end, every mapping is zapped; open
 * endpoints keep their link, not the hardware), then the windows.  Events
 * are already off.
 */
static void sl_ntb_teardown(struct sl_ntb *nd)
{
	struct ntb_dev *ntb = nd->ntb;
	struct sl_link *link;
	int pidx;

	for (pidx = 0; pidx < nd->npeers; pidx++)
		if (nd->peer[pidx].link)
			sl_link_unregister(nd->peer[pidx].link);
	if (nd->link_enabled)
		ntb_link_disable(ntb);
	for (pidx = 0; pidx < nd->npeers; pidx++) {
		link = nd->peer[pidx].link;
		if (!link)
			continue;
		/* No user mapping survives sl_link_unregister and none can be
		 * faulted in again (the link is down for good): the window may go.
		 */
		if (link->lwin) {
			ntb_mw_clear_trans(ntb, pidx, nd->peer[pidx].in_widx);
			dma_free_coherent(link->dma_dev, link->lwin_size, link->lwin, link->lwin_dma);
			link->lwin = NULL;
		}
		sl_link_put(link);
	}
	kfree(nd);
}

static void sl_ntb_quiet(struct ntb_dev *ntb, struct sl_ntb *nd)
{
	ntb_db_set_mask(ntb, ntb_db_valid_mask(ntb));
	if (nd->msgs)
		ntb_msg_set_mask(ntb, nd->msg_in | nd->msg_out);
}

static int sl_ntb_probe(struct ntb_client *client, struct ntb_dev *ntb)
{
	int npeers = ntb_peer_port_count(ntb), pidx, rc;
	struct module *owner = ntb->pdev->dev.driver ? ntb->pdev->dev.driver->owner : NULL;
	struct sl_ntb *nd;

	if (npeers < 1 || npeers > 64) {
		dev_err(&ntb->dev, "scilan: %d peer ports\n", npeers);
		return -ENODEV;
	}
	nd = kzalloc(struct_size(nd, peer, npeers), GFP_KERNEL);
	if (!nd)
		return -ENOMEM;
	nd->ntb = ntb;
	nd->npeers = npeers;
	rc = sl_ntb_choose(nd);
	if (rc) {
		kfree(nd);
		return rc;
	}
	sl_ntb_msg_init(nd);
	for (pidx = 0; pidx < npeers; pidx++) {
		struct sl_link *link = sl_link_alloc(&ntb->dev, &sl_ntb_ops, &nd->peer[pidx],
						     nd->db_words ? 1 : nd->db_bits);

		if (IS_ERR(link)) {
			rc = PTR_ERR(link);
			sl_ntb_teardown(nd);
			return rc;
		}
		/* Open endpoints pin the NTB hardware driver: its windows back them. */
		link->hw_owner = owner;
		link->local_port = ntb_port_number(ntb);
		link->peer_port = ntb_peer_port_number(ntb, pidx);
		nd->peer[pidx].link = link;
	}
	sl_ntb_quiet(ntb, nd);
	rc = ntb_set_ctx(ntb, nd, &sl_ntb_ctx_ops);
	if (rc) {
		sl_ntb_teardown(nd);
		return rc;
	}
	if (nd->msgs)
		ntb_msg_clear_mask(ntb, nd->msg_in);
	for (pidx = 0; pidx < npeers; pidx++) {
		rc = sl_link_register(nd->peer[pidx].link);
		if (rc) {
			ntb_clear_ctx(ntb);
			sl_ntb_quiet(ntb, nd);
			sl_ntb_teardown(nd);
			return rc;
		}
	}
	if (npeers > 1 || nd->msgs || nd->out_trans)
		dev_info(&ntb->dev,
			 "scilan: port %d, %d peers, handshake over %s, %s translation, %s\n",
			 ntb_port_number(ntb), npeers, nd->msgs ? "message registers" : "scratchpads",
			 nd->out_trans ? "outbound" : "inbound",
			 nd->db_words ? "a doorbell bit per port" : "doorbell bits per slice group");
	nd->link_enabled = true;
	ntb_link_enable(ntb, NTB_SPEED_AUTO, NTB_WIDTH_AUTO);
	return 0;
}

static void sl_ntb_remove(struct ntb_client *client, struct ntb_dev *ntb)
{
	struct sl_ntb *nd = ntb->ctx;

	ntb_clear_ctx(ntb);
	sl_ntb_quiet(ntb, nd);
	sl_ntb_teardown(nd);
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
