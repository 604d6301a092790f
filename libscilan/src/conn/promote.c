/* promote.c — each end's switch from its kernel stream to its ring when a
 * live connection is promoted: the point published, the acceptor's claim,
 * the marker (promote.h; tests/model/promote.pml is the argument).
 */
#include <errno.h>

#include "conn/promote.h"
#include "conn/seam.h"
#include "runtime/log.h"

void sl_promote_seam_init(void *seg)
{
	struct sl_seg_seam *seam = sl_promote_seam(seg);

	atomic_store_explicit(&seam->x[0], SL_SEAM_UNKNOWN, memory_order_relaxed);
	atomic_store_explicit(&seam->x[1], SL_SEAM_UNKNOWN, memory_order_relaxed);
	atomic_store_explicit(&seam->late, SL_PROMOTE_LATE, memory_order_release);
}

int sl_promote_publish_seam(void *arg, uint64_t x)
{
	struct sl_seam_publish *p = arg;

	atomic_store_explicit(&p->seam->x[p->side], x, memory_order_release);
	if (p->claim && !p->claim(p->claim_arg)) {
		atomic_store_explicit(&p->seam->x[p->side], SL_SEAM_UNKNOWN, memory_order_relaxed);
		return 1;
	}
	return 0;
}

int sl_promote_switch(int fd, int side, sl_promote_publish_fn publish, void *arg)
{
	uint64_t x;
	int r;

	/* Room first: once the point is public the marker must follow, and
	 * with our send lock held nobody else fills the socket meanwhile. */
	if (!sl_seam_room(fd)) {
		errno = EAGAIN;
		return 2;
	}
	if (sl_seam_sent_total(fd, side == 0, &x) < 0)
		return 2;
	/* The point before the claim: the connector reads it once it sees the
	 * claim.  The marker after it: written before, a revoke could beat the
	 * claim and the connector would deliver the marker as data (the
	 * model's mutant MARK_BEFORE_TAKE). */
	sl_debug("fd %d: our switch point %llu", fd, (unsigned long long)x);
	r = publish(arg, x);
	if (r != 0)
		return r;
	if (sl_seam_mark(fd) == 0)
		return 0;
	if (errno == EAGAIN)
		errno = ENOBUFS; /* not "try again": the point is public */
	return -1;
}
