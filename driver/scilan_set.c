// SPDX-License-Identifier: GPL-2.0
/* scilan_set.c — set endpoints, the event queues of epoll sets (ABI v4):
 * creating one on a set index of the link (at most sets_per_uid indices per
 * user, so that one user cannot take them all), ringing a peer's set from a
 * connection (its stimulus word and doorbell), the interrupt scan that
 * wakes our sets, and giving the index back at release.
 */
#include <linux/bitmap.h>
#include <linux/cred.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/uaccess.h>
#include <linux/user_namespace.h>

#include "scilan.h"

/* User mappings insert the set pages one page per mmap page offset, and the
 * marks of every slice fit in the page after the stimulus word.
 */
static_assert(PAGE_SIZE == SCILAN_SET_PAGE);
static_assert(SCILAN_SET_MARKS_OFF >= sizeof(u32));
static_assert(SCILAN_SET_MARKS_OFF + SL_MAX_SLICES <= SCILAN_SET_PAGE);
static_assert(SCILAN_SETS <= 64);

/* Sets share the doorbell bits 1.. with the slices, spread the same way. */
static int sl_set_db_bit(const struct sl_link *link, u32 set)
{
	return sl_slice_db_bit(link, set);
}

/* Who a set is charged to: the caller's real uid, except inside a user
 * namespace a user other than root made (top level), whose every uid (a
 * newuidmap range from /etc/subuid) is that user's: the namespace's owner.
 */
static kuid_t sl_set_charged_uid(void)
{
	const struct user_namespace *ns = current_user_ns();

	while (ns != &init_user_ns && ns->parent != &init_user_ns)
		ns = ns->parent;
	if (ns != &init_user_ns && !uid_eq(ns->owner, GLOBAL_ROOT_UID))
		return ns->owner;
	return current_uid();
}

/* Has uid reached its share of the link's set indices?  Root is exempt
 * (it could unload the module); everyone else is charged by
 * sl_set_charged_uid, so a user's processes, setuid or in namespaces of its
 * own, share one count.  Caller holds link->lock.
 */
static bool sl_set_quota_reached_locked(struct sl_link *link, kuid_t uid)
{
	unsigned int held = 0, i;

	if (uid_eq(uid, GLOBAL_ROOT_UID))
		return false;
	for_each_set_bit(i, link->set_busy, SCILAN_SETS)
		held += uid_eq(link->set_uid[i], uid);
	return held >= READ_ONCE(sl_sets_per_uid);
}

/* SCILAN_IOC_SET_CREATE: a fresh endpoint takes a free set index of the
 * link (reserved first, so the index can be handed out before the endpoint
 * shows up as a set), its marks page in our window is cleared and its armed
 * word in the peer's window zeroed (a previous owner's count would make the
 * peer's senders ring for nothing).  The index is held until release, also
 * after link down.  EAGAIN when none is free or the caller holds its share.
 */
long sl_ioc_set_create(struct sl_ep *ep, u32 __user *arg)
{
	struct sl_link *link = ep->link;
	kuid_t uid = sl_set_charged_uid();
	long rc = -ENETUNREACH;
	bool ok;
	int i;

	spin_lock_irq(&link->lock);
	if (!sl_ep_fresh(ep)) {
		spin_unlock_irq(&link->lock);
		return -EINVAL;
	}
	if (!link->up) {
		spin_unlock_irq(&link->lock);
		return -ENETUNREACH;
	}
	i = find_first_zero_bit(link->set_busy, SCILAN_SETS);
	if (i >= SCILAN_SETS || sl_set_quota_reached_locked(link, uid)) {
		spin_unlock_irq(&link->lock);
		return -EAGAIN;
	}
	__set_bit(i, link->set_busy);
	link->set_uid[i] = uid;
	ep->set = i;
	ep->generation = link->generation;
	spin_unlock_irq(&link->lock);

	/* Outside map_sem: the store may fault into one of our own mappings. */
	if (put_user((u32)i, arg)) {
		rc = -EFAULT;
		goto undo;
	}
	down_read(&link->map_sem);
	spin_lock_irq(&link->lock);
	ok = link->up && link->pwin && link->generation == ep->generation;
	spin_unlock_irq(&link->lock);
	if (ok) {
		memset(link->lwin + SL_WIN_MARKS_OFF(i), 0, PAGE_SIZE);
		writel(0, link->pwin + SL_WIN_ARMED_OFF(i));
	}
	spin_lock_irq(&link->lock);
	ok = ok && link->up && link->generation == ep->generation;
	if (ok) {
		ep->state = SCILAN_EP_SET;
		link->set_ep[i] = ep;
	}
	spin_unlock_irq(&link->lock);
	up_read(&link->map_sem);
	if (ok)
		return 0;
undo:
	spin_lock_irq(&link->lock);
	__clear_bit(i, link->set_busy);
	ep->set = -1;
	spin_unlock_irq(&link->lock);
	return rc;
}

/* The set's stimulus word (first word of its marks page in the peer's
 * window) is stored 1, then its doorbell rung: the peer's interrupt wakes
 * the set endpoint.
 */
static void sl_stimulate_set(struct sl_link *link, u32 set)
{
	lockdep_assert_held_read(&link->map_sem);
	writel(1, link->pwin + SL_WIN_MARKS_OFF(set));
	wmb(); /* the word lands before the doorbell (PCIe keeps posted writes in order) */
	sl_ring_peer(link, BIT_ULL(sl_set_db_bit(link, set)));
	link->stat_set_stimuli++;
}

/* SCILAN_IOC_STIMULATE_SET: from a connection (or one the peer closed: its
 * FIN is news for the set), ring set `set` of the peer node.  Errors as
 * SCILAN_IOC_STIMULATE's, except that a peer-closed connection may ring.
 */
long sl_ioc_stimulate_set(struct sl_ep *ep, u32 __user *arg)
{
	struct sl_link *link = ep->link;
	long rc = 0;
	u32 set;

	if (get_user(set, arg))
		return -EFAULT;
	if (set >= SCILAN_SETS)
		return -EINVAL;
	down_read(&link->map_sem);
	if (ep->state == SCILAN_EP_RESET || (ep->slice >= 0 && ep->generation != link->generation))
		rc = -ECONNRESET;
	else if (ep->state != SCILAN_EP_CONNECTED && ep->state != SCILAN_EP_PEER_CLOSED)
		rc = -ENOTCONN;
	else if (!link->up || !link->pwin)
		rc = -ECONNRESET;
	else
		sl_stimulate_set(link, set);
	up_read(&link->map_sem);
	return rc;
}

/* At release of a set endpoint (its mappings are gone): its armed word in
 * the peer's window is zeroed while the session lasts, so the peer's
 * senders stop ringing, and the index is free again.  Caller holds the read
 * side of map_sem and link->lock.
 */
void sl_set_release_locked(struct sl_link *link, struct sl_ep *ep)
{
	lockdep_assert_held_read(&link->map_sem);
	if (ep->set < 0)
		return;
	if (ep->state == SCILAN_EP_SET && link->up && link->pwin &&
	    ep->generation == link->generation)
		writel(0, link->pwin + SL_WIN_ARMED_OFF(ep->set));
	if (link->set_ep[ep->set] == ep)
		link->set_ep[ep->set] = NULL;
	__clear_bit(ep->set, link->set_busy);
	ep->set = -1;
}

/* Interrupt context, link->lock held: each set of a rung doorbell bit whose
 * stimulus word was set gets SCILAN_TOKEN_DATA and one wake-up.
 */
void sl_set_scan_locked(struct sl_link *link, u64 bits)
{
	struct sl_ep *ep;
	u32 *w;
	u32 i;

	for (i = 0; i < SCILAN_SETS; i++) {
		if (!(bits & BIT_ULL(sl_set_db_bit(link, i))))
			continue;
		w = link->lwin + SL_WIN_MARKS_OFF(i);
		if (!READ_ONCE(*w) || !xchg(w, 0))
			continue;
		ep = link->set_ep[i];
		if (!ep || ep->state != SCILAN_EP_SET)
			continue;
		ep->tokens |= SCILAN_TOKEN_DATA;
		link->stat_set_wakeups++;
		wake_up_interruptible(&ep->wq);
	}
}
