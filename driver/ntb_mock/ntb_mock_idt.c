// SPDX-License-Identifier: GPL-2.0
/* ntb_mock_idt.c — TEST ONLY: the mock NTB's switch model (ports=3..8), after
 * IDT's multi-port NTB (ntb_hw_idt): every port sees the others as peers
 * (pidx in ascending port number), has no scratchpads but four inbound
 * message registers (each stamped with its sender, a full/failed status, a
 * message event on arrival), one shared 32-bit doorbell register, and one
 * outbound window per peer whose translation the SENDER sets
 * (ntb_peer_mw_set_trans, with an address the receiver sent it): there is
 * no inbound translation (no mw_set_trans).  As in the pair model, a
 * window's aperture is the translated buffer itself (DMA address ==
 * physical address), so stores land in the receiver's memory.
 */
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/irq_work.h>
#include <linux/ntb.h>
#include <linux/pci.h>
#include <linux/slab.h>

#include "ntb_mock.h"

#define IDT_MSGS 4
#define IDT_INMSG_MASK GENMASK_ULL(IDT_MSGS - 1, 0)
#define IDT_OUTMSG_SHIFT 16                /* failed writes: bits 16..19, as IDT */
#define IDT_OUTMSG_MASK (IDT_INMSG_MASK << IDT_OUTMSG_SHIFT)
#define IDT_DB_MASK GENMASK_ULL(31, 0)

/* An 8-port IDT switch numbers its NT ports so (89HPES32NT8): the port
 * numbers are not the peer indices.
 */
static const int idt_port_number[MOCK_IDT_MAX_PORTS] = { 0, 2, 4, 6, 8, 12, 16, 20 };

struct idt_port {
	struct ntb_dev ntb;
	int slot;                 /* 0..ports-1: its place on the switch, in probe order */
	bool enabled;             /* the client's ntb_link_enable */
	bool cut;                 /* debugfs port<slot>: its cable pulled */
	struct {
		int target;       /* slot, -1: not translated */
		u64 addr;
		resource_size_t size;
	} out[MOCK_IDT_MAX_PORTS - 1];
	struct {
		u32 val;
		int src;          /* sender's slot */
	} in[IDT_MSGS];
	u64 msg_sts, msg_mask;
	u64 db, db_mask;
	struct irq_work db_irq, msg_irq;
	struct work_struct link_work;
};

/* One lock for the switch: operations cross ports. */
static DEFINE_SPINLOCK(idt_lock);
static struct idt_port *idt_ports[MOCK_IDT_MAX_PORTS];
static bool idt_link_allowed = true;   /* debugfs "link": every cable at once */

static struct idt_port *to_idt(struct ntb_dev *ntb)
{
	return container_of(ntb, struct idt_port, ntb);
}

static int idt_npeers(void)
{
	return mock_nports - 1;
}

/* Peers in ascending port number, which is slot order, without ourselves. */
static int idt_pidx_slot(const struct idt_port *p, int pidx)
{
	return pidx < p->slot ? pidx : pidx + 1;
}

static int idt_slot_pidx(const struct idt_port *p, int slot)
{
	return slot < p->slot ? slot : slot - 1;
}

static bool idt_pidx_valid(int pidx)
{
	return pidx >= 0 && pidx < idt_npeers();
}

static bool idt_port_up_locked(const struct idt_port *p)
{
	return p && idt_link_allowed && p->enabled && !p->cut;
}

/* The peer at pidx, when both ends are up; caller holds idt_lock. */
static struct idt_port *idt_peer_up_locked(struct idt_port *p, int pidx)
{
	struct idt_port *q;

	if (!idt_pidx_valid(pidx) || !idt_port_up_locked(p))
		return NULL;
	q = idt_ports[idt_pidx_slot(p, pidx)];
	return idt_port_up_locked(q) ? q : NULL;
}

static void idt_link_work(struct work_struct *work)
{
	ntb_link_event(&container_of(work, struct idt_port, link_work)->ntb);
}

/* A port's state changed: every port hears of it (its link to that peer). */
static void idt_links_changed_locked(void)
{
	int s;

	for (s = 0; s < mock_nports; s++)
		if (idt_ports[s])
			schedule_work(&idt_ports[s]->link_work);
}

static void idt_db_irq(struct irq_work *w)
{
	ntb_db_event(&container_of(w, struct idt_port, db_irq)->ntb, 0);
}

static void idt_msg_irq(struct irq_work *w)
{
	ntb_msg_event(&container_of(w, struct idt_port, msg_irq)->ntb);
}

static int idt_port_number_op(struct ntb_dev *ntb)
{
	return idt_port_number[to_idt(ntb)->slot];
}

static int idt_peer_port_count(struct ntb_dev *ntb)
{
	return idt_npeers();
}

static int idt_peer_port_number(struct ntb_dev *ntb, int pidx)
{
	if (!idt_pidx_valid(pidx))
		return -EINVAL;
	return idt_port_number[idt_pidx_slot(to_idt(ntb), pidx)];
}

static int idt_peer_port_idx(struct ntb_dev *ntb, int port)
{
	struct idt_port *p = to_idt(ntb);
	int s;

	for (s = 0; s < mock_nports; s++)
		if (idt_port_number[s] == port && s != p->slot)
			return idt_slot_pidx(p, s);
	return -EINVAL;
}

/* A bit per peer index whose link is up (both ends enabled, no cable cut). */
static u64 idt_link_is_up(struct ntb_dev *ntb, enum ntb_speed *speed, enum ntb_width *width)
{
	struct idt_port *p = to_idt(ntb);
	unsigned long flags;
	u64 up = 0;
	int pidx;

	spin_lock_irqsave(&idt_lock, flags);
	for (pidx = 0; pidx < idt_npeers(); pidx++)
		if (idt_peer_up_locked(p, pidx))
			up |= BIT_ULL(pidx);
	spin_unlock_irqrestore(&idt_lock, flags);
	if (speed)
		*speed = up ? NTB_SPEED_GEN3 : NTB_SPEED_NONE;
	if (width)
		*width = up ? NTB_WIDTH_4 : NTB_WIDTH_NONE;
	return up;
}

static int idt_link_set(struct ntb_dev *ntb, bool on)
{
	unsigned long flags;

	spin_lock_irqsave(&idt_lock, flags);
	to_idt(ntb)->enabled = on;
	idt_links_changed_locked();
	spin_unlock_irqrestore(&idt_lock, flags);
	return 0;
}

static int idt_link_enable(struct ntb_dev *ntb, enum ntb_speed s, enum ntb_width w)
{
	return idt_link_set(ntb, true);
}

static int idt_link_disable(struct ntb_dev *ntb)
{
	return idt_link_set(ntb, false);
}

/* Inbound windows "for peer pidx" are the peer's outbound windows that
 * reach us (IDT): as many as the peer has, with its restrictions.
 */
static int idt_mw_count(struct ntb_dev *ntb, int pidx)
{
	return idt_pidx_valid(pidx) ? idt_npeers() : -EINVAL;
}

static int idt_mw_get_align(struct ntb_dev *ntb, int pidx, int widx, resource_size_t *addr_align,
			    resource_size_t *size_align, resource_size_t *size_max)
{
	if (!idt_pidx_valid(pidx) || widx < 0 || widx >= idt_npeers())
		return -EINVAL;
	if (addr_align)
		*addr_align = PAGE_SIZE;
	if (size_align)
		*size_align = PAGE_SIZE;
	if (size_max)
		*size_max = mock_mw_max;
	return 0;
}

static int idt_peer_mw_count(struct ntb_dev *ntb)
{
	return idt_npeers();
}

/* The aperture of outbound window widx: where its translation points (the
 * mock has no BAR to show before that).
 */
static int idt_peer_mw_get_addr(struct ntb_dev *ntb, int widx, phys_addr_t *base,
				resource_size_t *size)
{
	struct idt_port *p = to_idt(ntb);
	unsigned long flags;
	int rc = -ENODEV;

	if (widx < 0 || widx >= idt_npeers())
		return -EINVAL;
	spin_lock_irqsave(&idt_lock, flags);
	if (p->out[widx].target >= 0) {
		*base = p->out[widx].addr;
		*size = p->out[widx].size;
		rc = 0;
	}
	spin_unlock_irqrestore(&idt_lock, flags);
	return rc;
}

/* Window widx now targets peer pidx at the address that peer sent us. */
static int idt_peer_mw_set_trans(struct ntb_dev *ntb, int pidx, int widx, u64 addr,
				 resource_size_t size)
{
	struct idt_port *p = to_idt(ntb);
	unsigned long flags;

	if (!idt_pidx_valid(pidx) || widx < 0 || widx >= idt_npeers() ||
	    !IS_ALIGNED(addr, PAGE_SIZE) || !IS_ALIGNED(size, PAGE_SIZE) || size > mock_mw_max)
		return -EINVAL;
	spin_lock_irqsave(&idt_lock, flags);
	p->out[widx].target = size ? idt_pidx_slot(p, pidx) : -1;
	p->out[widx].addr = addr;
	p->out[widx].size = size;
	spin_unlock_irqrestore(&idt_lock, flags);
	return 0;
}

static int idt_peer_mw_clear_trans(struct ntb_dev *ntb, int pidx, int widx)
{
	return idt_peer_mw_set_trans(ntb, pidx, widx, 0, 0);
}

static u64 idt_db_valid_mask(struct ntb_dev *ntb)
{
	return IDT_DB_MASK;
}

static u64 idt_db_read(struct ntb_dev *ntb)
{
	return READ_ONCE(to_idt(ntb)->db);
}

static u64 idt_db_read_mask(struct ntb_dev *ntb)
{
	return READ_ONCE(to_idt(ntb)->db_mask);
}

static void idt_db_update_locked(struct idt_port *p)
{
	if (p->db & ~p->db_mask)
		irq_work_queue(&p->db_irq);
}

static int idt_db_clear(struct ntb_dev *ntb, u64 bits)
{
	unsigned long flags;

	spin_lock_irqsave(&idt_lock, flags);
	to_idt(ntb)->db &= ~bits;
	spin_unlock_irqrestore(&idt_lock, flags);
	return 0;
}

static int idt_db_set_mask(struct ntb_dev *ntb, u64 bits)
{
	unsigned long flags;

	spin_lock_irqsave(&idt_lock, flags);
	to_idt(ntb)->db_mask |= bits & IDT_DB_MASK;
	spin_unlock_irqrestore(&idt_lock, flags);
	return 0;
}

static int idt_db_clear_mask(struct ntb_dev *ntb, u64 bits)
{
	struct idt_port *p = to_idt(ntb);
	unsigned long flags;

	spin_lock_irqsave(&idt_lock, flags);
	p->db_mask &= ~bits;
	idt_db_update_locked(p);
	spin_unlock_irqrestore(&idt_lock, flags);
	return 0;
}

/* The global doorbell, routed as ntb_perf expects of an IDT switch: bit b
 * reaches the port in slot b (the b-th port number) and no other; a bit
 * without a port, or our own, goes nowhere.  The receiver cannot tell who
 * rang.
 */
static int idt_peer_db_set(struct ntb_dev *ntb, u64 bits)
{
	struct idt_port *p = to_idt(ntb), *q;
	unsigned long flags;
	int s;

	if (bits & ~IDT_DB_MASK)
		return -EINVAL;
	spin_lock_irqsave(&idt_lock, flags);
	for (s = 0; s < mock_nports; s++) {
		if (!(bits & BIT_ULL(s)) || s == p->slot)
			continue;
		q = idt_peer_up_locked(p, idt_slot_pidx(p, s));
		if (q) {
			q->db |= BIT_ULL(s);
			idt_db_update_locked(q);
		}
	}
	spin_unlock_irqrestore(&idt_lock, flags);
	return 0;
}

static int idt_msg_count(struct ntb_dev *ntb)
{
	return IDT_MSGS;
}

static u64 idt_msg_inbits(struct ntb_dev *ntb)
{
	return IDT_INMSG_MASK;
}

static u64 idt_msg_outbits(struct ntb_dev *ntb)
{
	return IDT_OUTMSG_MASK;
}

static u64 idt_msg_read_sts(struct ntb_dev *ntb)
{
	return READ_ONCE(to_idt(ntb)->msg_sts);
}

static void idt_msg_update_locked(struct idt_port *p)
{
	if (p->msg_sts & ~p->msg_mask)
		irq_work_queue(&p->msg_irq);
}

/* Clearing an inbound bit frees that register for the next sender. */
static int idt_msg_clear_sts(struct ntb_dev *ntb, u64 bits)
{
	unsigned long flags;

	spin_lock_irqsave(&idt_lock, flags);
	to_idt(ntb)->msg_sts &= ~bits;
	spin_unlock_irqrestore(&idt_lock, flags);
	return 0;
}

static int idt_msg_set_mask(struct ntb_dev *ntb, u64 bits)
{
	unsigned long flags;

	spin_lock_irqsave(&idt_lock, flags);
	to_idt(ntb)->msg_mask |= bits & (IDT_INMSG_MASK | IDT_OUTMSG_MASK);
	spin_unlock_irqrestore(&idt_lock, flags);
	return 0;
}

static int idt_msg_clear_mask(struct ntb_dev *ntb, u64 bits)
{
	struct idt_port *p = to_idt(ntb);
	unsigned long flags;

	spin_lock_irqsave(&idt_lock, flags);
	p->msg_mask &= ~bits;
	idt_msg_update_locked(p);
	spin_unlock_irqrestore(&idt_lock, flags);
	return 0;
}

static u32 idt_msg_read(struct ntb_dev *ntb, int *pidx, int midx)
{
	struct idt_port *p = to_idt(ntb);
	unsigned long flags;
	u32 val;

	if (midx < 0 || midx >= IDT_MSGS)
		return ~0u;
	spin_lock_irqsave(&idt_lock, flags);
	val = p->in[midx].val;
	if (pidx)
		*pidx = idt_slot_pidx(p, p->in[midx].src);
	spin_unlock_irqrestore(&idt_lock, flags);
	return val;
}

/* Into the peer's inbound register midx, if it is free and the link up;
 * else the write fails and says so in our outbound status (as IDT: the
 * sender checks ntb_msg_read_sts()).
 */
static int idt_peer_msg_write(struct ntb_dev *ntb, int pidx, int midx, u32 msg)
{
	struct idt_port *p = to_idt(ntb), *q;
	unsigned long flags;

	if (midx < 0 || midx >= IDT_MSGS || !idt_pidx_valid(pidx))
		return -EINVAL;
	spin_lock_irqsave(&idt_lock, flags);
	q = idt_peer_up_locked(p, pidx);
	if (!q || (q->msg_sts & BIT_ULL(midx))) {
		p->msg_sts |= BIT_ULL(IDT_OUTMSG_SHIFT + midx);
		idt_msg_update_locked(p);
	} else {
		q->in[midx].val = msg;
		q->in[midx].src = p->slot;
		q->msg_sts |= BIT_ULL(midx);
		idt_msg_update_locked(q);
	}
	spin_unlock_irqrestore(&idt_lock, flags);
	return 0;
}

static const struct ntb_dev_ops idt_ops = {
	.port_number = idt_port_number_op,
	.peer_port_count = idt_peer_port_count,
	.peer_port_number = idt_peer_port_number,
	.peer_port_idx = idt_peer_port_idx,
	.link_is_up = idt_link_is_up,
	.link_enable = idt_link_enable,
	.link_disable = idt_link_disable,
	.mw_count = idt_mw_count,
	.mw_get_align = idt_mw_get_align,
	.peer_mw_count = idt_peer_mw_count,
	.peer_mw_get_addr = idt_peer_mw_get_addr,
	.peer_mw_set_trans = idt_peer_mw_set_trans,
	.peer_mw_clear_trans = idt_peer_mw_clear_trans,
	.db_valid_mask = idt_db_valid_mask,
	.db_read = idt_db_read,
	.db_clear = idt_db_clear,
	.db_read_mask = idt_db_read_mask,
	.db_set_mask = idt_db_set_mask,
	.db_clear_mask = idt_db_clear_mask,
	.peer_db_set = idt_peer_db_set,
	.msg_count = idt_msg_count,
	.msg_inbits = idt_msg_inbits,
	.msg_outbits = idt_msg_outbits,
	.msg_read_sts = idt_msg_read_sts,
	.msg_clear_sts = idt_msg_clear_sts,
	.msg_set_mask = idt_msg_set_mask,
	.msg_clear_mask = idt_msg_clear_mask,
	.msg_read = idt_msg_read,
	.peer_msg_write = idt_peer_msg_write,
};

/* debugfs "link": every cable at once (0 cut, 1 plugged), as in the pair. */
static int idt_all_get(void *data, u64 *val)
{
	*val = idt_link_allowed;
	return 0;
}

static int idt_all_put(void *data, u64 val)
{
	unsigned long flags;

	spin_lock_irqsave(&idt_lock, flags);
	idt_link_allowed = !!val;
	idt_links_changed_locked();
	spin_unlock_irqrestore(&idt_lock, flags);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(idt_all_fops, idt_all_get, idt_all_put, "%llu\n");

/* debugfs "port<slot>": that port's cable (0 cut, 1 plugged); its peers
 * all lose it, the other pairs carry on.
 */
static int idt_port_get(void *data, u64 *val)
{
	struct idt_port *p;
	unsigned long flags;

	spin_lock_irqsave(&idt_lock, flags);
	p = idt_ports[(long)data];
	*val = p && !p->cut;
	spin_unlock_irqrestore(&idt_lock, flags);
	return 0;
}

static int idt_port_put(void *data, u64 val)
{
	struct idt_port *p;
	unsigned long flags;
	int rc = -ENODEV;

	spin_lock_irqsave(&idt_lock, flags);
	p = idt_ports[(long)data];
	if (p) {
		p->cut = !val;
		idt_links_changed_locked();
		rc = 0;
	}
	spin_unlock_irqrestore(&idt_lock, flags);
	return rc;
}
DEFINE_DEBUGFS_ATTRIBUTE(idt_port_fops, idt_port_get, idt_port_put, "%llu\n");

void mock_idt_debugfs(void)
{
	char name[16];
	long s;

	debugfs_create_file_unsafe("link", 0644, mock_dbg, NULL, &idt_all_fops);
	for (s = 0; s < mock_nports; s++) {
		snprintf(name, sizeof(name), "port%ld", s);
		debugfs_create_file_unsafe(name, 0644, mock_dbg, (void *)s, &idt_port_fops);
	}
}

int mock_idt_probe(struct pci_dev *pdev)
{
	struct idt_port *p;
	unsigned long flags;
	int s, w, rc;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->db_mask = IDT_DB_MASK;
	p->msg_mask = IDT_INMSG_MASK | IDT_OUTMSG_MASK;
	for (w = 0; w < ARRAY_SIZE(p->out); w++)
		p->out[w].target = -1;
	init_irq_work(&p->db_irq, idt_db_irq);
	init_irq_work(&p->msg_irq, idt_msg_irq);
	INIT_WORK(&p->link_work, idt_link_work);
	spin_lock_irqsave(&idt_lock, flags);
	for (s = 0; s < mock_nports && idt_ports[s]; s++)
		;
	if (s < mock_nports) {
		p->slot = s;
		idt_ports[s] = p;
	}
	spin_unlock_irqrestore(&idt_lock, flags);
	if (s == mock_nports) {
		kfree(p);
		return -ENODEV; /* every port taken: further functions stay unused */
	}
	p->ntb.pdev = pdev;
	p->ntb.topo = NTB_TOPO_SWITCH;
	p->ntb.ops = &idt_ops;
	pci_set_drvdata(pdev, p);
	rc = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (!rc)
		rc = ntb_register_device(&p->ntb);
	if (rc) {
		spin_lock_irqsave(&idt_lock, flags);
		idt_ports[s] = NULL;
		spin_unlock_irqrestore(&idt_lock, flags);
		kfree(p);
		return rc;
	}
	dev_info(&pdev->dev, "ntb_mock: switch port %d (slot %d of %d)\n", idt_port_number[s], s,
		 mock_nports);
	return 0;
}

void mock_idt_remove(struct pci_dev *pdev)
{
	struct idt_port *p = pci_get_drvdata(pdev);
	unsigned long flags;

	/* Pull the cable first: the peers' clients stop using this port's
	 * memory (their link-down work runs at once) before it goes away.
	 */
	spin_lock_irqsave(&idt_lock, flags);
	p->enabled = false;
	idt_links_changed_locked();
	spin_unlock_irqrestore(&idt_lock, flags);
	msleep(100);
	ntb_unregister_device(&p->ntb);
	spin_lock_irqsave(&idt_lock, flags);
	idt_ports[p->slot] = NULL;
	idt_links_changed_locked();
	spin_unlock_irqrestore(&idt_lock, flags);
	irq_work_sync(&p->db_irq);
	irq_work_sync(&p->msg_irq);
	cancel_work_sync(&p->link_work);
	kfree(p);
}
