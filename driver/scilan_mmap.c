// SPDX-License-Identifier: GPL-2.0
/* scilan_mmap.c — an endpoint's mappings: the regions its mmap offsets name
 * (slices, marks and armed pages, a set's two pages), pages inserted at
 * fault, and their removal at link down, after which the peer's pages are
 * the endpoint's own sink page.
 */
#include <linux/fs.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/pagemap.h>

#include "scilan.h"

/* Every user mapping of the link's slices and set pages is removed; later
 * faults find the link down and insert our own pages again or the
 * endpoint's sink page (sl_fault).  Mappings belong to the device nodes the
 * endpoints were opened through (normally one).
 */
void sl_zap_mappings(struct sl_link *link)
{
	struct address_space *maps[4];
	struct inode *inodes[4];
	struct sl_ep *ep;
	int n, i;
	u64 gen;

	/* Up to four distinct mappings per round; each endpoint is marked
	 * with this pass, so a later round takes the next ones (containers
	 * with their own /dev give one inode each).
	 */
	spin_lock_irq(&link->lock);
	gen = ++link->zap_gen;
	spin_unlock_irq(&link->lock);
	do {
		n = 0;
		spin_lock_irq(&link->lock);
		list_for_each_entry(ep, &link->eps, node) {
			if (!ep->mapped || !ep->mapping || ep->zapped == gen)
				continue;
			for (i = 0; i < n && maps[i] != ep->mapping; i++)
				;
			if (i == n) {
				if (n == ARRAY_SIZE(maps))
					continue;
				inodes[n] = igrab(ep->mapping->host);
				if (!inodes[n]) {
					ep->zapped = gen;
					continue;
				}
				maps[n++] = ep->mapping;
			}
			ep->zapped = gen;
		}
		spin_unlock_irq(&link->lock);
		for (i = 0; i < n; i++) {
			unmap_mapping_range(maps[i], 0, 0, 1);
			iput(inodes[i]);
		}
		cond_resched();
	} while (n);
}

/* A region of an endpoint's mmap offsets: a connection's own slice, the
 * peer's slice, the peer's marks pages and our armed pages; a set's marks
 * page and its armed page in the peer's window.  A mapping lies inside one.
 */
struct sl_region {
	u64 first, pages;   /* page offsets it covers */
	size_t win_off;     /* where its first page is in its window */
	bool ours;          /* our window (else the peer's) */
	bool wc;            /* written across the link: write-combining */
	bool ro;            /* read-only (our armed pages, written by the peer) */
};

static bool sl_region_of(struct sl_link *link, struct sl_ep *ep, u64 pgoff, struct sl_region *r)
{
	u64 sp = link->slice_size >> PAGE_SHIFT;

	memset(r, 0, sizeof(*r));
	if (ep->set >= 0) {
		if (pgoff > 1)
			return false;
		r->first = pgoff; /* SCILAN_MMAP_SET_MARKS, SCILAN_MMAP_SET_ARMED */
		r->pages = 1;
		r->ours = pgoff == 0;
		r->wc = !r->ours;
		r->win_off = r->ours ? SL_WIN_MARKS_OFF(ep->set) : SL_WIN_ARMED_OFF(ep->set);
		return true;
	}
	if (ep->slice < 0)
		return false;
	if (pgoff < 2 * sp) {
		r->first = pgoff < sp ? 0 : sp;
		r->pages = sp;
		r->ours = pgoff < sp;
		r->wc = !r->ours;
		/* The peer slice is checked against the session at fault. */
		r->win_off = SL_WIN_SLICE_OFF + (size_t)(r->ours ? ep->slice : ep->peer_slice) *
			     link->slice_size;
	} else if (pgoff < 2 * sp + 2 * SCILAN_SETS) {
		r->first = pgoff < 2 * sp + SCILAN_SETS ? 2 * sp : 2 * sp + SCILAN_SETS;
		r->pages = SCILAN_SETS;
		r->ours = r->first != 2 * sp; /* SCILAN_MMAP_OUR_ARMED, else PEER_MARKS */
		r->wc = !r->ours;
		r->ro = r->ours;
		r->win_off = r->ours ? SL_WIN_ARMED_OFF(0) : SL_WIN_MARKS_OFF(0);
	} else {
		return false;
	}
	return true;
}

/* The page that stands in for the peer's window (and, after the backend's
 * remove, for ours) in this endpoint's mappings once the session is gone:
 * the endpoint's own, allocated at the first such fault and freed at
 * release, when no mapping is left (every VMA holds the file).  A store a
 * ring copy makes after the cut lands here, and only holders of this
 * endpoint (the connection's own processes: fork, exec handover) map it.
 */
static struct page *sl_ep_sink(struct sl_ep *ep)
{
	struct page *page = READ_ONCE(ep->sink), *old;

	if (page)
		return page;
	page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!page)
		return NULL;
	old = cmpxchg(&ep->sink, NULL, page); /* a concurrent fault of another thread */
	if (old) {
		__free_page(page);
		return old;
	}
	return page;
}

/* Pages are inserted one fault at a time under the read side of map_sem, so
 * a link going down (write side, then zap) leaves no mapping of the peer's
 * window behind.  No fault ever raises SIGBUS on a permitted mapping: after
 * link down (or on a stale session) pages of the peer's window refault to
 * the endpoint's sink page, where stores vanish from everyone else's view,
 * and pages of our own window (our slice, a set's marks page, our armed
 * pages) stay our own memory, which the endpoint holds until it closes (the
 * backend frees the window only after remove zapped it: then the sink as
 * well).  The program learns of the reset from the endpoint (read, poll,
 * INFO), not from a signal in the middle of a ring copy.
 */
static vm_fault_t sl_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct sl_ep *ep = vma->vm_private_data;
	struct sl_link *link = ep->link;
	struct page *sink;
	unsigned long pfn;
	struct sl_region r;
	vm_fault_t ret;
	bool live;
	u64 off;

	down_read(&link->map_sem);
	if (!sl_region_of(link, ep, vmf->pgoff, &r)) {
		ret = VM_FAULT_SIGBUS; /* mmap allowed no such mapping */
		goto out;
	}
	off = (vmf->pgoff - r.first) << PAGE_SHIFT;
	if (ep->set >= 0)
		live = ep->state == SCILAN_EP_SET;
	else
		live = (ep->state == SCILAN_EP_CONNECTED || ep->state == SCILAN_EP_PEER_CLOSED) &&
		       ep->peer_slice >= 0 && ep->peer_slice < (int)link->peer_nslices;
	live = live && link->up && ep->generation == link->generation && link->pwin;
	if (r.ours && !READ_ONCE(link->removing) && link->lwin) {
		pfn = PHYS_PFN(link->lwin_phys + r.win_off + off);
	} else if (!r.ours && live) {
		pfn = PHYS_PFN(link->pwin_phys + r.win_off + off);
	} else {
		sink = sl_ep_sink(ep);
		if (!sink) {
			ret = VM_FAULT_OOM;
			goto out;
		}
		pfn = page_to_pfn(sink);
	}
	ret = vmf_insert_pfn(vma, vmf->address, pfn);
out:
	up_read(&link->map_sem);
	return ret;
}

static const struct vm_operations_struct sl_vm_ops = {
	.fault = sl_fault,
};

int sl_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct sl_ep *ep = file->private_data;
	struct sl_link *link = ep->link;
	struct sl_region r;
	int rc = 0;

	/* Private (copy-on-write) mappings of device pages make no sense. */
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	spin_lock_irq(&link->lock);
	if (ep->state != SCILAN_EP_CONNECTED && ep->state != SCILAN_EP_PEER_CLOSED &&
	    ep->state != SCILAN_EP_SET)
		rc = -ENOTCONN;
	else if (!sl_region_of(link, ep, vma->vm_pgoff, &r) ||
		 vma->vm_pgoff + vma_pages(vma) > r.first + r.pages)
		rc = -EINVAL;
	else if (r.ro && (vma->vm_flags & VM_WRITE))
		rc = -EACCES;
	else
		ep->mapped = true;
	spin_unlock_irq(&link->lock);
	if (rc)
		return rc;
	vma->vm_flags |= VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP;
	if (r.ro)
		vma->vm_flags &= ~VM_MAYWRITE; /* mprotect cannot add PROT_WRITE */
	/* Stores into the peer's window are combined into PCIe bursts; the
	 * PAT memtype of the window decides in the end (RAM of the mock
	 * stays write-back).
	 */
	if (r.wc)
		vma->vm_page_prot = pgprot_writecombine(vma->vm_page_prot);
	vma->vm_private_data = ep;
	vma->vm_ops = &sl_vm_ops;
	return 0;
}
