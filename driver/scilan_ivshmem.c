// SPDX-License-Identifier: GPL-2.0
/* scilan_ivshmem.c — the ivshmem backend: a PCI driver for QEMU's
 * ivshmem-doorbell function (1af4:1110, MSI-X) that turns the shared memory
 * of two VMs into a scilan link: scratchpads, doorbells and heartbeats in a
 * header page, one window per VM, doorbells as real MSI-X interrupts.
 */
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/seq_file.h>

#include "scilan.h"

static bool ivshmem = true;
module_param(ivshmem, bool, 0444);
MODULE_PARM_DESC(ivshmem, "Drive QEMU ivshmem-doorbell functions (1af4:1110) as scilan links (default on)");

static unsigned int ivshmem_hb_ms = 20;
module_param(ivshmem_hb_ms, uint, 0644);
MODULE_PARM_DESC(ivshmem_hb_ms, "ivshmem: heartbeat period (ms, default 20)");

static unsigned int ivshmem_timeout_ms = 1000;
module_param(ivshmem_timeout_ms, uint, 0644);
MODULE_PARM_DESC(ivshmem_timeout_ms, "ivshmem: the link is down when the peer's heartbeat stops this long (ms, default 1000)");

/* BAR0 registers (QEMU docs/specs/ivshmem-spec.rst). */
#define IVS_REG_INTR_MASK 0
#define IVS_REG_INTR_STATUS 4
#define IVS_REG_IVPOSITION 8
#define IVS_REG_DOORBELL 12

#define IVS_VEC_DB 0    /* vector 0: scilan doorbell bits are pending */
#define IVS_VEC_KICK 1  /* vector 1: a peer started or stopped, look now */

/* Header page at offset 0 of BAR2: one slot per IVPosition.  A VM writes
 * its own heartbeat and magic; scratchpads and pending doorbell bits of a
 * slot are written by the peer and read by the slot's owner.
 */
#define IVS_MAX_IDS 64
#define IVS_MAGIC 0x53494c56u /* "SILV" */

struct ivs_slot {
	__le32 spad[8];       /* peer -> owner: the NTB scratchpads */
	u32 db_pending;       /* peer ORs bits in, owner exchanges to 0 */
	__le32 magic;         /* IVS_MAGIC while the owner's driver runs */
	__le64 heartbeat;     /* counted up by the owner every ivshmem_hb_ms */
	__le32 pad[4];
};

#define IVS_HDR_SIZE PAGE_SIZE

struct ivs_dev {
	struct pci_dev *pdev;
	struct sl_link *link;
	void __iomem *regs;
	void *shm;               /* BAR2, memremap()ed write-back: it is host RAM */
	phys_addr_t shm_phys;
	size_t shm_size;
	size_t win_size;         /* bytes of each VM's window */
	struct ivs_slot *slots;
	int id;                  /* our IVPosition */
	int peer;                /* the peer's IVPosition, -1 while none is alive */
	int side;                /* 0: first window (the lower id), -1: not yet known */
	bool alive;
	bool kicks;              /* vector 1 exists */
	u64 beat;
	unsigned long seen;      /* jiffies of the peer's last new heartbeat */
	u64 last[IVS_MAX_IDS];   /* heartbeats at the previous look */
	struct delayed_work hb_work;
	int nvec;
};

static_assert(sizeof(struct ivs_slot) == 64);
static_assert(IVS_MAX_IDS * sizeof(struct ivs_slot) <= IVS_HDR_SIZE);

static inline struct ivs_dev *ivs(struct sl_link *link)
{
	return link->hw;
}

static void ivs_ring(struct ivs_dev *d, int peer, int vector)
{
	if (peer >= 0)
		iowrite32((u32)peer << 16 | vector, d->regs + IVS_REG_DOORBELL);
}

static bool ivs_link_is_up(struct sl_link *link)
{
	/* Acquire: the peer and side set before alive are seen with it. */
	return smp_load_acquire(&ivs(link)->alive);
}

static u32 ivs_spad_read(struct sl_link *link, int idx)
{
	struct ivs_dev *d = ivs(link);

	return le32_to_cpu(READ_ONCE(d->slots[d->id].spad[idx]));
}

static void ivs_peer_spad_write(struct sl_link *link, int idx, u32 val)
{
	struct ivs_dev *d = ivs(link);
	int peer = READ_ONCE(d->peer);

	if (peer >= 0)
		WRITE_ONCE(d->slots[peer].spad[idx], cpu_to_le32(val));
}

/* The bits go into the peer's pending word first; only the sender that
 * finds it empty rings (an interrupt is already coming for the others, as
 * the receiver empties the word only in its handler).  The fully ordered
 * atomic puts the caller's stimulus words before the bits.
 */
static void ivs_peer_db_set(struct sl_link *link, u64 bits)
{
	struct ivs_dev *d = ivs(link);
	int peer = READ_ONCE(d->peer);

	if (peer < 0)
		return;
	if (!atomic_fetch_or((u32)bits, (atomic_t *)&d->slots[peer].db_pending))
		ivs_ring(d, peer, IVS_VEC_DB);
}

static size_t ivs_window_off(struct ivs_dev *d, int side)
{
	return IVS_HDR_SIZE + side * d->win_size;
}

/* Each VM's window is fixed by the order of the two IVPositions. */
static int ivs_setup_window(struct sl_link *link, size_t max)
{
	struct ivs_dev *d = ivs(link);

	if (d->side < 0)
		return -EAGAIN;
	link->lwin = d->shm + ivs_window_off(d, d->side);
	link->lwin_phys = d->shm_phys + ivs_window_off(d, d->side);
	link->lwin_size = min_t(size_t, max, d->win_size);
	return 0;
}

/* The peer's window is in the same (already mapped) BAR. */
static int ivs_map_peer(struct sl_link *link, u64 size)
{
	struct ivs_dev *d = ivs(link);

	if (d->side < 0)
		return -EAGAIN;
	if (size > d->win_size)
		return -ENOSPC;
	link->pwin = (void __iomem __force *)(d->shm + ivs_window_off(d, !d->side));
	link->pwin_phys = d->shm_phys + ivs_window_off(d, !d->side);
	link->pwin_size = size;
	link->pwin_is_ram = true;
	return 0;
}

static void ivs_unmap_peer(struct sl_link *link)
{
}

static void ivs_dbg_show(struct sl_link *link, struct seq_file *m)
{
	struct ivs_dev *d = ivs(link);

	seq_printf(m, "ivshmem_id %d\nivshmem_peer %d\nivshmem_side %d\nivshmem_shm %zu\n",
		   d->id, READ_ONCE(d->peer), d->side, d->shm_size);
	seq_printf(m, "ivshmem_heartbeat %llu\nivshmem_vectors %d\n", d->beat, d->nvec);
}

static const struct sl_link_ops ivs_ops = {
	.name = "ivshmem",
	.link_is_up = ivs_link_is_up,
	.spad_read = ivs_spad_read,
	.peer_spad_write = ivs_peer_spad_write,
	.peer_db_set = ivs_peer_db_set,
	.setup_window = ivs_setup_window,
	.map_peer = ivs_map_peer,
	.unmap_peer = ivs_unmap_peer,
	.dbg_show = ivs_dbg_show,
};

static bool ivs_slot_live(struct ivs_dev *d, int id, u64 *beat)
{
	*beat = le64_to_cpu(READ_ONCE(d->slots[id].heartbeat));
	return le32_to_cpu(READ_ONCE(d->slots[id].magic)) == IVS_MAGIC;
}

/* A peer is a slot whose heartbeat moved since the last look; it is lost
 * when its magic goes (its driver left) or its heartbeat stands still for
 * ivshmem_timeout_ms (its VM stopped).
 */
static void ivs_hb_work(struct work_struct *work)
{
	struct ivs_dev *d = container_of(to_delayed_work(work), struct ivs_dev, hb_work);
	struct ivs_slot *me = &d->slots[d->id];
	bool change = false;
	u64 beat;
	int id;

	WRITE_ONCE(me->heartbeat, cpu_to_le64(++d->beat));
	WRITE_ONCE(me->magic, cpu_to_le32(IVS_MAGIC));
	if (d->peer < 0) {
		for (id = 0; id < IVS_MAX_IDS && d->peer < 0; id++) {
			bool live = ivs_slot_live(d, id, &beat);
			int side = d->id < id ? 0 : 1;

			if (id == d->id || !live || beat == d->last[id]) {
				d->last[id] = beat;
				continue;
			}
			d->last[id] = beat;
			if (d->side >= 0 && side != d->side) {
				dev_warn_ratelimited(&d->pdev->dev,
						     "scilan: peer %d would swap the windows of this link; reload to use it\n",
						     id);
				continue;
			}
			d->side = side;
			d->seen = jiffies;
			WRITE_ONCE(d->peer, id);
			/* Pairs with ivs_link_is_up(): side and peer first. */
			smp_store_release(&d->alive, true);
			change = true;
			dev_info(&d->pdev->dev, "scilan: ivshmem peer %d (we are %d)\n", id, d->id);
		}
	} else {
		bool live = ivs_slot_live(d, d->peer, &beat);

		if (live && beat != d->last[d->peer]) {
			d->last[d->peer] = beat;
			d->seen = jiffies;
		} else if (!live ||
			   time_after(jiffies, d->seen + msecs_to_jiffies(ivshmem_timeout_ms))) {
			dev_info(&d->pdev->dev, "scilan: ivshmem peer %d %s\n", d->peer,
				 live ? "stopped its heartbeat" : "left");
			WRITE_ONCE(d->alive, false);
			WRITE_ONCE(d->peer, -1);
			change = true;
		}
	}
	if (change)
		sl_link_event(d->link);
	queue_delayed_work(system_wq, &d->hb_work, msecs_to_jiffies(max(ivshmem_hb_ms, 1U)));
}

static irqreturn_t ivs_db_irq(int irq, void *data)
{
	struct ivs_dev *d = data;
	u32 bits = xchg(&d->slots[d->id].db_pending, 0);

	if (bits)
		sl_db_event(d->link, bits);
	return IRQ_HANDLED;
}

static irqreturn_t ivs_kick_irq(int irq, void *data)
{
	struct ivs_dev *d = data;

	mod_delayed_work(system_wq, &d->hb_work, 0);
	return IRQ_HANDLED;
}

static int ivs_probe(struct pci_dev *pdev, const struct pci_device_id *ent)
{
	struct ivs_dev *d;
	struct sl_link *link;
	int rc;

	d = devm_kzalloc(&pdev->dev, sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	d->pdev = pdev;
	d->peer = -1;
	d->side = -1;
	INIT_DELAYED_WORK(&d->hb_work, ivs_hb_work);
	rc = pcim_enable_device(pdev);
	if (rc)
		return rc;
	rc = pci_request_regions(pdev, "scilan-ivshmem");
	if (rc)
		return rc;
	d->regs = pcim_iomap(pdev, 0, 0);
	d->shm_phys = pci_resource_start(pdev, 2);
	d->shm_size = pci_resource_len(pdev, 2);
	if (!d->regs || d->shm_size < IVS_HDR_SIZE + 2 * (SL_WIN_SLICE_OFF + 8192)) {
		dev_err(&pdev->dev, "scilan: ivshmem BAR0/BAR2 missing or too small (%zu bytes)\n",
			d->shm_size);
		return -ENODEV;
	}
	/* Host RAM behind a BAR: cached, and user mappings get the same
	 * memtype (PAT looks up this mapping's).
	 */
	d->shm = devm_memremap(&pdev->dev, d->shm_phys, d->shm_size, MEMREMAP_WB);
	if (IS_ERR(d->shm))
		return PTR_ERR(d->shm);
	d->slots = d->shm;
	d->win_size = round_down((d->shm_size - IVS_HDR_SIZE) / 2, PAGE_SIZE);
	d->id = ioread32(d->regs + IVS_REG_IVPOSITION);
	if (d->id < 0 || d->id >= IVS_MAX_IDS) {
		dev_err(&pdev->dev, "scilan: ivshmem id %d out of 0..%d\n", d->id, IVS_MAX_IDS - 1);
		return -ENODEV;
	}
	/* Without bus mastering the MSI-X messages are silently dropped. */
	pci_set_master(pdev);
	rc = pci_alloc_irq_vectors(pdev, 1, 2, PCI_IRQ_MSIX);
	if (rc < 0) {
		dev_err(&pdev->dev, "scilan: ivshmem without MSI-X (ivshmem-doorbell with vectors=2 wanted): %d\n",
			rc);
		return rc;
	}
	d->nvec = rc;
	d->kicks = d->nvec > 1;

	link = sl_link_alloc(&pdev->dev, &ivs_ops, d, 32);
	if (IS_ERR(link)) {
		rc = PTR_ERR(link);
		goto vectors;
	}
	d->link = link;
	/* Nothing pending from an earlier life of this slot. */
	WRITE_ONCE(d->slots[d->id].db_pending, 0);
	rc = request_irq(pci_irq_vector(pdev, IVS_VEC_DB), ivs_db_irq, 0, "scilan-ivshmem-db", d);
	if (rc)
		goto put;
	if (d->kicks) {
		rc = request_irq(pci_irq_vector(pdev, IVS_VEC_KICK), ivs_kick_irq, 0,
				 "scilan-ivshmem-kick", d);
		if (rc)
			goto irq;
	}
	rc = sl_link_register(link);
	if (rc)
		goto kick;
	pci_set_drvdata(pdev, d);
	queue_delayed_work(system_wq, &d->hb_work, 0);
	dev_info(&pdev->dev, "scilan: ivshmem id %d, %zu bytes shared, %zu-byte windows, %d vectors\n",
		 d->id, d->shm_size, d->win_size, d->nvec);
	return 0;
kick:
	if (d->kicks)
		free_irq(pci_irq_vector(pdev, IVS_VEC_KICK), d);
irq:
	free_irq(pci_irq_vector(pdev, IVS_VEC_DB), d);
put:
	sl_link_put(link);
vectors:
	pci_free_irq_vectors(pdev);
	return rc;
}

static void ivs_remove(struct pci_dev *pdev)
{
	struct ivs_dev *d = pci_get_drvdata(pdev);
	struct sl_link *link = d->link;
	int peer;

	if (d->kicks)
		free_irq(pci_irq_vector(pdev, IVS_VEC_KICK), d);
	cancel_delayed_work_sync(&d->hb_work);
	free_irq(pci_irq_vector(pdev, IVS_VEC_DB), d);
	/* Tell the peer at once rather than after its timeout. */
	WRITE_ONCE(d->slots[d->id].magic, 0);
	peer = READ_ONCE(d->peer);
	WRITE_ONCE(d->alive, false);
	WRITE_ONCE(d->peer, -1);
	if (d->kicks)
		ivs_ring(d, peer, IVS_VEC_KICK);
	sl_link_unregister(link);
	/* The window is the BAR, unmapped by devres after this returns. */
	link->lwin = NULL;
	link->lwin_size = 0;
	pci_free_irq_vectors(pdev);
	sl_link_put(link);
}

static const struct pci_device_id ivs_ids[] = {
	{ PCI_DEVICE(0x1af4, 0x1110) },
	{ }
};
MODULE_DEVICE_TABLE(pci, ivs_ids);

static struct pci_driver ivs_driver = {
	.name = "scilan-ivshmem",
	.id_table = ivs_ids,
	.probe = ivs_probe,
	.remove = ivs_remove,
};

int sl_ivshmem_init(void)
{
	return ivshmem ? pci_register_driver(&ivs_driver) : 0;
}

void sl_ivshmem_exit(void)
{
	if (ivshmem)
		pci_unregister_driver(&ivs_driver);
}
