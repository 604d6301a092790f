/* promote.h — the switch of a live kernel TCP connection onto the rings
 * (issue 26 part 3): each end's switch, its point published the fabric's
 * way (the acceptor's with its claim), then its marker; and the shm
 * fabric's way, a late offer's words in its segment's header page
 * (promote.c; the reads across the seam are seam.c's).
 */
#ifndef SCILAN_PROMOTE_H
#define SCILAN_PROMOTE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ring/layout.h"

/* In the header page, after the offer word: each side's switch point
 * (0 the connector's, 1 the acceptor's), SL_SEAM_UNKNOWN until that side
 * publishes it, and written by that side only; `late` is SL_PROMOTE_LATE
 * when the creator offered a live connection (it stays on kernel TCP until
 * the acceptor's claim).  The peer's words: the seam checks them. */
#define SL_SEG_SEAM_OFF 1088
#define SL_PROMOTE_LATE 0x4c415445u /* "LATE" */
struct sl_seg_seam {
	_Atomic uint64_t x[2];
	_Atomic uint32_t late;
};
_Static_assert(SL_SEG_OFFER_OFF + sizeof(uint32_t) <= SL_SEG_SEAM_OFF, "seam words after the offer word");
_Static_assert(SL_SEG_SEAM_OFF + sizeof(struct sl_seg_seam) <= SL_SEG_HOLDERS_OFF, "holders after the seam words");

static inline struct sl_seg_seam *sl_promote_seam(void *seg)
{
	return (struct sl_seg_seam *)((unsigned char *)seg + SL_SEG_SEAM_OFF);
}

/* The creator of a late offer's segment, before it is published. */
void sl_promote_seam_init(void *seg);

/* How an end publishes its switch point x where the peer reads it, the
 * acceptor claiming the offer in the same step: 0 published (and claimed);
 * 1 the claim was lost (the connector revoked first), nothing published;
 * -1 with errno: unknown whether it was (the caller resets). */
typedef int (*sl_promote_publish_fn)(void *arg, uint64_t x);

/* The shm fabric's publish (arg: this): the point into seam->x[side], then,
 * for the acceptor, claim(claim_arg) (the offer word's compare-and-swap). */
struct sl_seam_publish {
	struct sl_seg_seam *seam;
	int side;
	bool (*claim)(void *claim_arg);
	void *claim_arg;
};
int sl_promote_publish_seam(void *arg, uint64_t x);

/* One end's switch on kernel socket fd (no other call of ours in flight on
 * it, our send lock held; side 0 the connector, 1 the acceptor): publish
 * our point (publish(arg, x)), then the marker.  0: switched, our sends go
 * to the ring from now on.  1: the claim was lost, nothing sent.  2:
 * nothing was published, with errno: EAGAIN, the kernel socket has no room
 * for the marker now (try again later); else the kernel cannot count (then
 * it never will).  -1 with errno: the point is (or may be) public but the
 * marker could not follow: the caller resets. */
int sl_promote_switch(int fd, int side, sl_promote_publish_fn publish, void *arg);

#endif
