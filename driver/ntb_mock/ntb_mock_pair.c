// SPDX-License-Identifier: GPL-2.0
/* ntb_mock_pair.c — TEST ONLY: the mock NTB's default model: two ntb_devs
 * back to back inside one machine, so the unmodified NTB client (scilan.ko)
 * runs in a QEMU guest, as on a two-port Intel/AMD/Switchtec NTB.  Each side
 * is backed by one QEMU "pci-testdev" function.  Scratchpads and doorbells cross over in
 * memory; a doorbell is delivered from irq_work (hard interrupt context, like
 * an MSI).  A memory window's translation is the client's DMA buffer itself:
 * the peer's "aperture" is that buffer's physical address, so stores by one
 * side land in the other's memory as they would through a real NTB.  Needs
 * DMA address == physical address (no IOMMU in the guest; checked).
 */
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/interrupt.h>
#include <linux/irq_work.h>
#include <linux/module.h>
#include <linux/ntb.h>
#include <linux/pci.h>
#include <linux/slab.h>

#include "ntb_mock.h"

#define MOCK_SPADS 16
#define MOCK_DB_MASK GENMASK_ULL(15, 0)

struct mock_port {
	struct ntb_dev ntb;
	struct pci_dev *pdev;
	struct mock_port *peer;
	int idx;
	bool enabled;
	u32 spad[MOCK_SPADS];
	u64 db, db_mask;
	dma_addr_t trans;
	resource_size_t trans_size;
	struct irq_work db_irq;
	struct work_struct link_work;
};

/* One lock for the pair: every operation touches both sides. */
static DEFINE_SPINLOCK(mock_lock);
static struct mock_port *mock_ports[2];
static bool mock_link_allowed = true;

static struct mock_port *to_port(struct ntb_dev *ntb)
{
	return container_of(ntb, struct mock_port, ntb);
}

static void mock_link_work(struct work_struct *work)
{
	ntb_link_event(&container_of(work, struct mock_port, link_work)->ntb);
}

/* Link state changed: both clients hear of it. */
static void mock_link_changed_locked(struct mock_port *p)
{
	schedule_work(&p->link_work);
	if (p->peer)
		schedule_work(&p->peer->link_work);
}

static void mock_db_irq(struct irq_work *w)
{
	struct mock_port *p = container_of(w, struct mock_port, db_irq);

	ntb_db_event(&p->ntb, 0);
}

static u64 mock_link_is_up(struct ntb_dev *ntb, enum ntb_speed *speed, enum ntb_width *width)
{
	struct mock_port *p = to_port(ntb);
	unsigned long flags;
	bool up;

	spin_lock_irqsave(&mock_lock, flags);
	up = mock_link_allowed && p->enabled && p->peer && p->peer->enabled;
	spin_unlock_irqrestore(&mock_lock, flags);
	if (speed)
		*speed = up ? NTB_SPEED_GEN3 : NTB_SPEED_NONE;
	if (width)
		*width = up ? NTB_WIDTH_4 : NTB_WIDTH_NONE;
	return up;
}

static int mock_link_set(struct ntb_dev *ntb, bool on)
{
	struct mock_port *p = to_port(ntb);
	unsigned long flags;

	spin_lock_irqsave(&mock_lock, flags);
	p->enabled = on;
	mock_link_changed_locked(p);
	spin_unlock_irqrestore(&mock_lock, flags);
	return 0;
}

static int mock_link_enable(struct ntb_dev *ntb, enum ntb_speed s, enum ntb_width w)
{
	return mock_link_set(ntb, true);
}

static int mock_link_disable(struct ntb_dev *ntb)
{
	return mock_link_set(ntb, false);
}

static int mock_mw_count(struct ntb_dev *ntb, int pidx)
{
	return pidx == 0 ? 1 : -EINVAL;
}

static int mock_mw_get_align(struct ntb_dev *ntb, int pidx, int widx, resource_size_t *addr_align,
			     resource_size_t *size_align, resource_size_t *size_max)
{
	if (pidx || widx)
		return -EINVAL;
	if (addr_align)
		*addr_align = PAGE_SIZE;
	if (size_align)
		*size_align = PAGE_SIZE;
	if (size_max)
		*size_max = mock_mw_max;
	return 0;
}

static int mock_mw_set_trans(struct ntb_dev *ntb, int pidx, int widx, dma_addr_t addr,
			     resource_size_t size)
{
	struct mock_port *p = to_port(ntb);
	unsigned long flags;

	if (pidx || widx || size > mock_mw_max || !IS_ALIGNED(addr, PAGE_SIZE))
		return -EINVAL;
	spin_lock_irqsave(&mock_lock, flags);
	p->trans = addr;
	p->trans_size = size;
	spin_unlock_irqrestore(&mock_lock, flags);
	return 0;
}

static int mock_mw_clear_trans(struct ntb_dev *ntb, int pidx, int widx)
{
	return mock_mw_set_trans(ntb, pidx, widx, 0, 0);
}

static int mock_peer_mw_count(struct ntb_dev *ntb)
{
	return 1;
}

/* The peer's aperture is where the peer translated its window to. */
static int mock_peer_mw_get_addr(struct ntb_dev *ntb, int widx, phys_addr_t *base,
				 resource_size_t *size)
{
	struct mock_port *p = to_port(ntb);
	unsigned long flags;
	int rc = -ENODEV;

	if (widx)
		return -EINVAL;
	spin_lock_irqsave(&mock_lock, flags);
	if (p->peer && p->peer->trans_size) {
		*base = p->peer->trans;
		*size = p->peer->trans_size;
		rc = 0;
	}
	spin_unlock_irqrestore(&mock_lock, flags);
	return rc;
}

static u64 mock_db_valid_mask(struct ntb_dev *ntb)
{
	return MOCK_DB_MASK;
}

static u64 mock_db_read(struct ntb_dev *ntb)
{
	return READ_ONCE(to_port(ntb)->db);
}

/* Pending, unmasked bits raise the "interrupt". */
static void mock_db_update_locked(struct mock_port *p)
{
	if (p->db & ~p->db_mask)
		irq_work_queue(&p->db_irq);
}

static int mock_db_op(struct ntb_dev *ntb, u64 bits, int op)
{
	struct mock_port *p = to_port(ntb);
	unsigned long flags;

	bits &= MOCK_DB_MASK;
	spin_lock_irqsave(&mock_lock, flags);
	switch (op) {
	case 0:
		p->db &= ~bits;
		break;
	case 1:
		p->db_mask |= bits;
		break;
	case 2:
		p->db_mask &= ~bits;
		mock_db_update_locked(p);
		break;
	case 3:
		if (p->peer) {
			p->peer->db |= bits;
			mock_db_update_locked(p->peer);
		}
		break;
	}
	spin_unlock_irqrestore(&mock_lock, flags);
	return 0;
}

static int mock_db_clear(struct ntb_dev *ntb, u64 bits) { return mock_db_op(ntb, bits, 0); }
static int mock_db_set_mask(struct ntb_dev *ntb, u64 bits) { return mock_db_op(ntb, bits, 1); }
static int mock_db_clear_mask(struct ntb_dev *ntb, u64 bits) { return mock_db_op(ntb, bits, 2); }
static int mock_peer_db_set(struct ntb_dev *ntb, u64 bits) { return mock_db_op(ntb, bits, 3); }

static u64 mock_db_read_mask(struct ntb_dev *ntb)
{
	return READ_ONCE(to_port(ntb)->db_mask);
}

static int mock_spad_count(struct ntb_dev *ntb)
{
	return MOCK_SPADS;
}

static u32 mock_spad_read(struct ntb_dev *ntb, int sidx)
{
	return sidx >= 0 && sidx < MOCK_SPADS ? READ_ONCE(to_port(ntb)->spad[sidx]) : 0;
}

static int mock_spad_write(struct ntb_dev *ntb, int sidx, u32 val)
{
	if (sidx < 0 || sidx >= MOCK_SPADS)
		return -EINVAL;
	WRITE_ONCE(to_port(ntb)->spad[sidx], val);
	return 0;
}

static u32 mock_peer_spad_read(struct ntb_dev *ntb, int pidx, int sidx)
{
	struct mock_port *p = to_port(ntb);
	unsigned long flags;
	u32 v = 0;

	if (pidx || sidx < 0 || sidx >= MOCK_SPADS)
		return 0;
	spin_lock_irqsave(&mock_lock, flags);
	if (p->peer)
		v = p->peer->spad[sidx];
	spin_unlock_irqrestore(&mock_lock, flags);
	return v;
}

static int mock_peer_spad_write(struct ntb_dev *ntb, int pidx, int sidx, u32 val)
{
	struct mock_port *p = to_port(ntb);
	unsigned long flags;
	int rc = -ENOLINK;

	if (pidx || sidx < 0 || sidx >= MOCK_SPADS)
		return -EINVAL;
	spin_lock_irqsave(&mock_lock, flags);
	if (p->peer) {
		p->peer->spad[sidx] = val;
		rc = 0;
	}
	spin_unlock_irqrestore(&mock_lock, flags);
	return rc;
}

static const struct ntb_dev_ops mock_ops = {
	.link_is_up = mock_link_is_up,
	.link_enable = mock_link_enable,
	.link_disable = mock_link_disable,
	.mw_count = mock_mw_count,
	.mw_get_align = mock_mw_get_align,
	.mw_set_trans = mock_mw_set_trans,
	.mw_clear_trans = mock_mw_clear_trans,
	.peer_mw_count = mock_peer_mw_count,
	.peer_mw_get_addr = mock_peer_mw_get_addr,
	.db_valid_mask = mock_db_valid_mask,
	.db_read = mock_db_read,
	.db_clear = mock_db_clear,
	.db_read_mask = mock_db_read_mask,
	.db_set_mask = mock_db_set_mask,
	.db_clear_mask = mock_db_clear_mask,
	.peer_db_set = mock_peer_db_set,
	.spad_count = mock_spad_count,
	.spad_read = mock_spad_read,
	.spad_write = mock_spad_write,
	.peer_spad_read = mock_peer_spad_read,
	.peer_spad_write = mock_peer_spad_write,
};

/* debugfs "link": write 0 to cut the cable, 1 to plug it back in. */
static int mock_link_get(void *data, u64 *val)
{
	*val = mock_link_allowed;
	return 0;
}

static int mock_link_put(void *data, u64 val)
{
	unsigned long flags;
	int i;

	spin_lock_irqsave(&mock_lock, flags);
	mock_link_allowed = !!val;
	for (i = 0; i < 2; i++)
		if (mock_ports[i])
			schedule_work(&mock_ports[i]->link_work);
	spin_unlock_irqrestore(&mock_lock, flags);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(mock_link_fops, mock_link_get, mock_link_put, "%llu\n");

int mock_pair_probe(struct pci_dev *pdev)
{
	struct mock_port *p;
	unsigned long flags;
	int idx, rc;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->pdev = pdev;
	p->db_mask = MOCK_DB_MASK;
	init_irq_work(&p->db_irq, mock_db_irq);
	INIT_WORK(&p->link_work, mock_link_work);
	spin_lock_irqsave(&mock_lock, flags);
	idx = !mock_ports[0] ? 0 : !mock_ports[1] ? 1 : -1;
	if (idx >= 0) {
		p->idx = idx;
		mock_ports[idx] = p;
		if (mock_ports[!idx]) {
			p->peer = mock_ports[!idx];
			p->peer->peer = p;
		}
	}
	spin_unlock_irqrestore(&mock_lock, flags);
	if (idx < 0) {
		kfree(p);
		return -ENODEV; /* a pair already: further functions stay unused */
	}
	p->ntb.pdev = pdev;
	p->ntb.topo = idx ? NTB_TOPO_B2B_DSD : NTB_TOPO_B2B_USD;
	p->ntb.ops = &mock_ops;
	pci_set_drvdata(pdev, p);
	rc = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (!rc)
		rc = ntb_register_device(&p->ntb);
	if (rc) {
		spin_lock_irqsave(&mock_lock, flags);
		mock_ports[idx] = NULL;
		if (p->peer)
			p->peer->peer = NULL;
		spin_unlock_irqrestore(&mock_lock, flags);
		kfree(p);
		return rc;
	}
	dev_info(&pdev->dev, "ntb_mock: side %d%s\n", idx, p->peer ? ", paired" : "");
	return 0;
}

void mock_pair_remove(struct pci_dev *pdev)
{
	struct mock_port *p = pci_get_drvdata(pdev);
	unsigned long flags;

	/* Cut the cable first: the peer's client stops using our side's
	 * memory (its link-down work runs at once) before ours goes away.
	 */
	spin_lock_irqsave(&mock_lock, flags);
	p->enabled = false;
	mock_link_changed_locked(p);
	spin_unlock_irqrestore(&mock_lock, flags);
	msleep(100);
	ntb_unregister_device(&p->ntb);
	spin_lock_irqsave(&mock_lock, flags);
	if (p->peer) {
		p->peer->peer = NULL;
		schedule_work(&p->peer->link_work);
	}
	mock_ports[p->idx] = NULL;
	spin_unlock_irqrestore(&mock_lock, flags);
	irq_work_sync(&p->db_irq);
	cancel_work_sync(&p->link_work);
	kfree(p);
}

void mock_pair_debugfs(void)
{
	debugfs_create_file_unsafe("link", 0644, mock_dbg, NULL, &mock_link_fops);
}
