/* shm_attach.h — the shared-memory fabric's two halves share the offer
 * word's place, the peer-facing state a new end publishes, and its bells
 * (fabric_shm.c makes offers; shm_attach.c takes them).
 */
#ifndef SCILAN_SHM_ATTACH_H
#define SCILAN_SHM_ATTACH_H

#include <stdatomic.h>
#include <stdint.h>

#include "socket/sock_state.h"

/* The offer word in a segment's header page. */
_Atomic uint32_t *sl_shm_offer_word(void *seg);
/* Before any data moves: whether our sends fence, and that we mark the
 * peer's epoll sets (and as whom), with state's SL_PEER_* bits. */
void sl_shm_publish_unfenced(struct sl_sock *s, uint32_t state);
/* Close our two bells, keeping errno. */
void sl_shm_close_bells(struct sl_sock *s);

/* sl_fabric_ops.attach of the shared-memory fabric. */
int sl_shm_attach(struct sl_sock *s, struct sl_sock *listener, struct sl_key *local, struct sl_key *peer);

/* sl_fabric_ops.take_late: a late offer for the live connection s from
 * listener, taken with our switch (promote.h). */
int sl_shm_take_late(struct sl_sock *s, struct sl_sock *listener, struct sl_key *local, struct sl_key *peer);

#endif
