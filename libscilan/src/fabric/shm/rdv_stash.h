/* rdv_stash.h — the offers for other connections that a process accepting
 * alone on a listener keeps for its own later accepts, instead of sending
 * them back to the listener's queue (rdv_stash.c).
 */
#ifndef SCILAN_RDV_STASH_H
#define SCILAN_RDV_STASH_H

#include <stdbool.h>
#include <stdint.h>

#include "fabric/shm/rdv_msg.h"

#define SL_RDV_STASH 1024 /* offers a process that accepts alone keeps for later */

/* Keep e (an offer, m, for another connection of queue l); false if it
 * cannot. */
bool sl_rdv_stash_put(int l, int e, uint32_t hops, const struct rdv_msg *m);
/* Is anything kept?  (Read without the lock: only to skip an empty stash.) */
bool sl_rdv_stash_any(void);
/* Does a kept offer of this kind (late or not) name its connector's socket
 * alone, so that matching it needs the kernel's word on our other end?
 * Late ones whose time is over are dropped on the way. */
bool sl_rdv_stash_names_socket(bool late);
/* Is the offer for (dst, src, cookie) the caller's? */
typedef bool sl_rdv_stash_match_fn(void *ctx, const struct sl_key *dst, const struct sl_key *src,
				   uint64_t cookie);
/* The kept offer of this kind that match says is the caller's (its entry,
 * now the caller's, hops in *hops), or -1. */
int sl_rdv_stash_take(bool late, sl_rdv_stash_match_fn *match, void *ctx, uint32_t *hops);
/* Offers kept from queue l: back into it (to_queue), or dropped. */
void sl_rdv_stash_release(int l, bool to_queue);
/* fork: everything kept goes back to its queue (a child may accept). */
void sl_rdv_stash_fork_lock(void);
void sl_rdv_stash_fork_unlock(bool child);

#endif
