/* seg_pool.h — the connecting side's segment and anonymous wake-up bells,
 * made at connect or ahead of need: one set per process, made while the
 * process waits after a connect, so that its next connect finds it ready.
 */
#ifndef SCILAN_SEG_POOL_H
#define SCILAN_SEG_POOL_H

#include <stdbool.h>
#include <sys/types.h>

#include "layout.h"

/* A sealed memfd segment of hdr's layout, mapped, its header written and
 * its offer word OFFERED; with bells, two anonymous bells (else -1).  All
 * descriptors are the library's own (own_fd.h). */
struct sl_made {
	int fd;
	void *base;
	struct sl_seg_header hdr;
	ino_t ino;
	dev_t dev;
	int bell_rx, bell_tx;
};

/* The set for hdr's layout: the one made ahead if it fits, else made now.
 * 0, or -1 with errno (nothing left open). */
int sl_seg_make(const struct sl_seg_header *hdr, bool bells, struct sl_made *m);
/* An offer was made with hdr (and anonymous bells or not): from this
 * process's second offer on, the next set is made ahead, like this one. */
void sl_seg_pool_note_offer(const struct sl_seg_header *hdr, bool bells);
/* The calling thread is about to wait (an empty ring, a poll that would
 * block): make the next set now if one is wanted.  One load otherwise. */
void sl_seg_pool_idle(void);
/* In a fork child: the parent's set is the parent's to hand out. */
void sl_seg_pool_after_fork_child(void);
/* own_fd.c, under its eviction lock: a descriptor of ours moved. */
void sl_seg_pool_renumber(int from, int to);
/* A pipe reopened O_RDWR through /proc/self: one descriptor for both ends,
 * as a FIFO opened O_RDWR is (never EOF, no blocking open), without a name. */
int sl_anon_bell(void);

#endif
