/* seg_pool.h — segment memory outside a connection's life: the connecting
 * side's segment and anonymous wake-up bells, made at connect or ahead of
 * need (one set per process, made while the process waits after a
 * connect, so that its next connect finds it ready), and closed
 * connections' segments, let go of at the process's next wait.
 */
#ifndef SCILAN_SEG_POOL_H
#define SCILAN_SEG_POOL_H

#include <stdbool.h>
#include <sys/types.h>

#include "ring/layout.h"

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
 * block): let go of closed connections' segments, and make the next set
 * now if one is wanted.  Two loads otherwise. */
void sl_seg_pool_idle(void);
/* A closed connection's segment and descriptors (SL_SHM_FDS, -1 skipped):
 * unmapped and closed at the process's next wait (sl_seg_pool_idle), or
 * when more are waiting than a few. */
/* Unmap a segment and close its descriptors (-1 entries skipped) and offer file. */
void sl_shm_unmap(void *seg, size_t len, const int fds[3], const char *offer_path);

void sl_seg_retire(void *seg, size_t len, const int fds[3]);
/* fork handlers: the parent's set is the parent's to hand out, and what it
 * lets go of later, a child lets go of at once (its copies). */
void sl_seg_pool_before_fork(void);
void sl_seg_pool_after_fork_parent(void);
void sl_seg_pool_after_fork_child(void);
/* own_fd.c, under its eviction lock: a descriptor of ours moved. */
void sl_seg_pool_renumber(int from, int to);
/* A pipe reopened O_RDWR through /proc/self: one descriptor for both ends,
 * as a FIFO opened O_RDWR is (never EOF, no blocking open), without a name. */
int sl_anon_bell(void);

#endif
