// SPDX-License-Identifier: GPL-2.0
/* scilan_ivshmem.c — the ivshmem backend: a PCI driver for QEMU's
 * ivshmem-doorbell function (1af4:1110, MSI-X) that turns the shared memory
 * of N VMs on one ivshmem server into a scilan link per peer VM: presence,
 * scratchpads and the layout in a header, a window per ordered pair of VMs,
 * doorbells as MSI-X interrupts addressed (peer id, vector).
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

static unsigned int ivshmem_nodes = 2;
module_param(ivshmem_nodes, uint, 0444);
MODULE_PARM_DESC(ivshmem_nodes, "ivshmem: VMs the shared memory is cut for, 2..16 (default 2); the first VM to come decides, the others follow");

static unsigned int ivshmem_hb_ms = 20;
module_param(ivshmem_hb_ms, uint, 0644);
MODULE_PARM_DESC(ivshmem_hb_ms, "ivshmem: heartbeat period (ms, default 20)");

static unsigned int ivshmem_timeout_ms = 1000;
module_param(ivshmem_timeout_ms, uint, 0644);
MODULE_PARM_DESC(ivshmem_timeout_ms, "ivshmem: a peer is down when its heartbeat stops this long (ms, default 1000)");

/* The cable, for tests: pulled, this VM stops its heartbeat and drops every
 * link at once, its peers theirs when the heartbeat's silence times out; put
 * back, the links come up again through a fresh handshake.
 */
static bool ivshmem_cut;
module_param(ivshmem_cut, bool, 0644);
MODULE_PARM_DESC(ivshmem_cut, "ivshmem: 1 pulls this VM's cable (every link down, no heartbeat), 0 puts it back (tests)");

/* BAR0 registers (QEMU docs/specs/ivshmem-spec.rst). */
#define IVS_REG_INTR_MASK 0
#define IVS_REG_INTR_STATUS 4
#define IVS_REG_IVPOSITION 8
#define IVS_REG_DOORBELL 12

#define IVS_VEC_DB 0    /* vector 0: a peer rang (its bits are in our window) */
#define IVS_VEC_KICK 1  /* vector 1: a peer started or stopped, look now */

/* BAR2 starts with a header: the layout word, one presence slot per VM and a
 * scratchpad mailbox per ordered pair; the windows follow, one per ordered
 * pair (receiver, sender), each written by the sender only.  The guests
 * cannot see which peers the server has connected (the spec), so presence
 * is a heartbeat in shared memory.
 */
#define IVS_MAX_NODES 16
#define IVS_MAGIC 0x53494c56u        /* "SILV": a slot's driver runs */
#define IVS_LAYOUT_MAGIC 0x53494c4eu /* "SILN": the layout word is set */
#define IVS_SPADS 8

struct ivs_slot {
	__le32 magic;         /* IVS_MAGIC while the owner's driver runs */
	__le32 pad0;
	__le64 heartbeat;     /* counted up by the owner every ivshmem_hb_ms */
	__le32 pad[12];
};

struct ivs_hdr {
	__le64 layout;                    /* IVS_LAYOUT_MAGIC << 32 | nodes */
	__le32 pad[14];
	struct ivs_slot slots[IVS_MAX_NODES];
	/* mbox[owner][from]: the scratchpads `from` writes for `owner` */
	__le32 mbox[IVS_MAX_NODES][IVS_MAX_NODES][IVS_SPADS];
};

#define IVS_HDR_SIZE (4 * PAGE_SIZE)
static_assert(sizeof(struct ivs_hdr) <= IVS_HDR_SIZE);
static_assert(SL_SPAD_COUNT < IVS_SPADS);

struct ivs_dev;

/* One peer VM: the link to it and what its heartbeat last said. */
struct ivs_peer {
	struct ivs_dev *d;
	struct sl_link *link;
	int id;
	bool alive;
	u64 last;                /* its heartbeat at the previous look */
	unsigned long seen;      /* jiffies of its last new heartbeat */
};

struct ivs_dev {
	struct pci_dev *pdev;
	void __iomem *regs;
	void *shm;               /* BAR2, memremap()ed write-back: it is host RAM */
	phys_addr_t shm_phys;
	size_t shm_size;
	struct ivs_hdr *hdr;
	int nodes;
	size_t win_size;         /* bytes of each pair's window */
	int id;                  /* our IVPosition */
	bool kicks;              /* vector 1 exists */
	int nvec;
	u64 beat;
	struct ivs_peer peers[IVS_MAX_NODES]; /* by id; .link NULL for us */
	struct delayed_work hb_work;
};

static inline struct ivs_peer *ivs_peer(struct sl_link *link)
{
	return link->hw;
}

static void ivs_ring(struct ivs_dev *d, int peer, int vector)
{
	iowrite32((u32)peer << 16 | vector, d->regs + IVS_REG_DOORBELL);
}

static bool ivs_link_is_up(struct sl_link *link)
{
	return READ_ONCE(ivs_peer(link)->alive);
}

static u32 ivs_spad_read(struct sl_link *link, int idx)
{
	struct ivs_peer *p = ivs_peer(link);

	return le32_to_cpu(READ_ONCE(p->d->hdr->mbox[p->d->id][p->id][idx]));
}

static void ivs_peer_spad_write(struct sl_link *link, int idx, u32 val)
{
	struct ivs_peer *p = ivs_peer(link);

	WRITE_ONCE(p->d->hdr->mbox[p->id][p->d->id][idx], cpu_to_le32(val));
}

/* One doorbell per peer (the core stores the bits into the peer's window
 * first): ring vector 0 of that VM.
 */
static void ivs_peer_db_set(struct sl_link *link, u64 bits)
{
	struct ivs_peer *p = ivs_peer(link);

	ivs_ring(p->d, p->id, IVS_VEC_DB);
}

/* Windows of the ordered pairs, receiver-major, a receiver's own pair left
 * out.
 */
static size_t ivs_window_off(struct ivs_dev *d, int receiver, int sender)
{
	int i = receiver * (d->nodes - 1) + (sender < receiver ? sender : sender - 1);

	return IVS_HDR_SIZE + (size_t)i * d->win_size;
}

static int ivs_setup_window(struct sl_link *link, size_t max)
{
	struct ivs_peer *p = ivs_peer(link);
	size_t off = ivs_window_off(p->d, p->d->id, p->id);

	link->lwin = p->d->shm + off;
	link->lwin_phys = p->d->shm_phys + off;
	link->lwin_size = min_t(size_t, max, p->d->win_size);
	return 0;
}

/* The peer's window is in the same (already mapped) BAR. */
static int ivs_map_peer(struct sl_link *link, u64 size)
{
	struct ivs_peer *p = ivs_peer(link);
	size_t off = ivs_window_off(p->d, p->id, p->d->id);

	if (size > p->d->win_size)
		return -ENOSPC;
	link->pwin = (void __iomem __force *)(p->d->shm + off);
	link->pwin_phys = p->d->shm_phys + off;
	link->pwin_size = size;
	link->pwin_is_ram = true;
	return 0;
}

static void ivs_unmap_peer(struct sl_link *link)
{
}

static void ivs_dbg_show(struct sl_link *link, struct seq_file *m)
{
	struct ivs_peer *p = ivs_peer(link);

	seq_printf(m, "ivshmem_id %d\nivshmem_peer %d\nivshmem_nodes %d\nivshmem_shm %zu\n",
		   p->d->id, p->id, p->d->nodes, p->d->shm_size);
	seq_printf(m, "ivshmem_window %zu\nivshmem_heartbeat %llu\nivshmem_vectors %d\n",
		   p->d->win_size, p->d->beat, p->d->nvec);
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

/* A peer is alive while its heartbeat moves; it is lost when its magic goes
 * (its driver left) or its heartbeat stands still for ivshmem_timeout_ms
 * (its VM stopped).  Each peer's link comes and goes on its own.
 */
static void ivs_watch_peer(struct ivs_peer *p)
{
	struct ivs_slot *slot = &p->d->hdr->slots[p->id];
	bool live = le32_to_cpu(READ_ONCE(slot->magic)) == IVS_MAGIC;
	u64 beat = le64_to_cpu(READ_ONCE(slot->heartbeat));
	bool moved = beat != p->last;

	p->last = beat;
	if (!p->alive) {
		if (!live || !moved)
			return;
		p->seen = jiffies;
		WRITE_ONCE(p->alive, true);
		dev_info(&p->d->pdev->dev, "scilan: ivshmem peer %d up (we are %d)\n", p->id, p->d->id);
	} else if (live && moved) {
		p->seen = jiffies;
		return;
	} else if (!live || time_after(jiffies, p->seen + msecs_to_jiffies(ivshmem_timeout_ms))) {
		WRITE_ONCE(p->alive, false);
		dev_info(&p->d->pdev->dev, "scilan: ivshmem peer %d %s\n", p->id,
			 live ? "stopped its heartbeat" : "left");
	} else {
		return;
	}
	sl_link_event(p->link);
}

static void ivs_hb_work(struct work_struct *work)
{
	struct ivs_dev *d = container_of(to_delayed_work(work), struct ivs_dev, hb_work);
	struct ivs_slot *me = &d->hdr->slots[d->id];
	int id;

	if (READ_ONCE(ivshmem_cut)) {
		for (id = 0; id < d->nodes; id++) {
			struct ivs_peer *p = &d->peers[id];

			if (p->link && p->alive) {
				WRITE_ONCE(p->alive, false);
				dev_info(&d->pdev->dev, "scilan: ivshmem peer %d cut off (ivshmem_cut)\n", id);
				sl_link_event(p->link);
			}
		}
		queue_delayed_work(system_wq, &d->hb_work, msecs_to_jiffies(max(ivshmem_hb_ms, 1U)));
		return;
	}
	WRITE_ONCE(me->heartbeat, cpu_to_le64(++d->beat));
	WRITE_ONCE(me->magic, cpu_to_le32(IVS_MAGIC));
	for (id = 0; id < d->nodes; id++)
		if (d->peers[id].link)
			ivs_watch_peer(&d->peers[id]);
	queue_delayed_work(system_wq, &d->hb_work, msecs_to_jiffies(max(ivshmem_hb_ms, 1U)));
}

/* The ring does not say who rang: every link looks at its doorbell words. */
static irqreturn_t ivs_db_irq(int irq, void *data)
{
	struct ivs_dev *d = data;
	int id;

	for (id = 0; id < d->nodes; id++)
		if (d->peers[id].link)
			sl_db_rung(d->peers[id].link);
	return IRQ_HANDLED;
}

static irqreturn_t ivs_kick_irq(int irq, void *data)
{
	struct ivs_dev *d = data;

	mod_delayed_work(system_wq, &d->hb_work, 0);
	return IRQ_HANDLED;
}

/* The first VM to come writes the layout; the others take it, as it is what
 * the windows already are.  The word is the peers' too: checked, not trusted.
 */
static int ivs_layout(struct ivs_dev *d)
{
	u64 want = (u64)IVS_LAYOUT_MAGIC << 32 | clamp(ivshmem_nodes, 2U, (unsigned int)IVS_MAX_NODES);
	u64 old = cmpxchg64((u64 *)&d->hdr->layout, 0, cpu_to_le64(want));
	u64 got = old ? le64_to_cpu(old) : want;
	size_t pairs;

	d->nodes = (int)(got & 0xffffffffu);
	if (got >> 32 != IVS_LAYOUT_MAGIC || d->nodes < 2 || d->nodes > IVS_MAX_NODES) {
		dev_err(&d->pdev->dev, "scilan: ivshmem layout word %#llx is not ours\n", got);
		return -EPROTO;
	}
	if (old && d->nodes != ivshmem_nodes)
		dev_notice(&d->pdev->dev, "scilan: ivshmem cut for %d VMs by the first one (ivshmem_nodes=%u here)\n",
			   d->nodes, ivshmem_nodes);
	if (d->id >= d->nodes) {
		dev_err(&d->pdev->dev, "scilan: ivshmem id %d, but the memory is cut for ids 0..%d (ivshmem_nodes)\n",
			d->id, d->nodes - 1);
		return -ENODEV;
	}
	pairs = (size_t)d->nodes * (d->nodes - 1);
	d->win_size = d->shm_size > IVS_HDR_SIZE ?
		      round_down((d->shm_size - IVS_HDR_SIZE) / pairs, PAGE_SIZE) : 0;
	if (d->win_size < SL_WIN_SLICE_OFF + 8192) {
		dev_err(&d->pdev->dev, "scilan: ivshmem BAR2 of %zu bytes is too small for %d VMs\n",
			d->shm_size, d->nodes);
		return -ENOSPC;
	}
	return 0;
}

static void ivs_put_links(struct ivs_dev *d, bool registered)
{
	int id;

	for (id = 0; id < IVS_MAX_NODES; id++) {
		struct sl_link *link = d->peers[id].link;

		if (!link)
			continue;
		if (registered) {
			sl_link_unregister(link);
			/* The window is the BAR, unmapped by devres after remove. */
			link->lwin = NULL;
			link->lwin_size = 0;
		}
		d->peers[id].link = NULL;
		sl_link_put(link);
	}
}

/* A link for every other id the memory is cut for, present or not: a VM
 * that comes later is that link coming up.
 */
static int ivs_make_links(struct ivs_dev *d)
{
	struct sl_link *link;
	int id;

	for (id = 0; id < d->nodes; id++) {
		struct ivs_peer *p = &d->peers[id];

		if (id == d->id)
			continue;
		p->d = d;
		p->id = id;
		link = sl_link_alloc(&d->pdev->dev, &ivs_ops, p, 1);
		if (IS_ERR(link)) {
			ivs_put_links(d, false);
			return PTR_ERR(link);
		}
		link->local_port = d->id;
		link->peer_port = id;
		p->link = link;
	}
	return 0;
}

static int ivs_register_links(struct ivs_dev *d)
{
	int id, rc;

	for (id = 0; id < d->nodes; id++) {
		if (!d->peers[id].link)
			continue;
		rc = sl_link_register(d->peers[id].link);
		if (rc)
			return rc;
	}
	return 0;
}

static int ivs_probe(struct pci_dev *pdev, const struct pci_device_id *ent)
{
	struct ivs_dev *d;
	int rc;

	d = devm_kzalloc(&pdev->dev, sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	d->pdev = pdev;
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
	if (!d->regs || d->shm_size <= IVS_HDR_SIZE) {
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
	d->hdr = d->shm;
	d->id = ioread32(d->regs + IVS_REG_IVPOSITION);
	if (d->id < 0 || d->id >= IVS_MAX_NODES) {
		dev_err(&pdev->dev, "scilan: ivshmem id %d out of 0..%d\n", d->id, IVS_MAX_NODES - 1);
		return -ENODEV;
	}
	rc = ivs_layout(d);
	if (rc)
		return rc;
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
	rc = ivs_make_links(d);
	if (rc)
		goto vectors;
	rc = request_irq(pci_irq_vector(pdev, IVS_VEC_DB), ivs_db_irq, 0, "scilan-ivshmem-db", d);
	if (rc)
		goto put;
	if (d->kicks) {
		rc = request_irq(pci_irq_vector(pdev, IVS_VEC_KICK), ivs_kick_irq, 0,
				 "scilan-ivshmem-kick", d);
		if (rc)
			goto irq;
	}
	pci_set_drvdata(pdev, d);
	rc = ivs_register_links(d);
	if (rc)
		goto unregister;
	queue_delayed_work(system_wq, &d->hb_work, 0);
	dev_info(&pdev->dev, "scilan: ivshmem id %d of %d, %zu bytes shared, %zu-byte windows, %d vectors\n",
		 d->id, d->nodes, d->shm_size, d->win_size, d->nvec);
	return 0;
unregister:
	/* sl_link_unregister is safe for a link never registered. */
	if (d->kicks)
		free_irq(pci_irq_vector(pdev, IVS_VEC_KICK), d);
	free_irq(pci_irq_vector(pdev, IVS_VEC_DB), d);
	ivs_put_links(d, true);
	goto vectors;
irq:
	free_irq(pci_irq_vector(pdev, IVS_VEC_DB), d);
put:
	ivs_put_links(d, false);
vectors:
	pci_free_irq_vectors(pdev);
	return rc;
}

static void ivs_remove(struct pci_dev *pdev)
{
	struct ivs_dev *d = pci_get_drvdata(pdev);
	int id;

	if (d->kicks)
		free_irq(pci_irq_vector(pdev, IVS_VEC_KICK), d);
	cancel_delayed_work_sync(&d->hb_work);
	free_irq(pci_irq_vector(pdev, IVS_VEC_DB), d);
	/* Tell the peers at once rather than after their timeout. */
	WRITE_ONCE(d->hdr->slots[d->id].magic, 0);
	for (id = 0; id < d->nodes; id++) {
		if (!d->peers[id].link)
			continue;
		if (d->kicks && READ_ONCE(d->peers[id].alive))
			ivs_ring(d, id, IVS_VEC_KICK);
		WRITE_ONCE(d->peers[id].alive, false);
	}
	ivs_put_links(d, true);
	pci_free_irq_vectors(pdev);
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
