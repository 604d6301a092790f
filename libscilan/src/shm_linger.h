/* shm_linger.h — segments of closed connections whose peer has not attached
 * yet: kept (memfd open, offer published) until it does, so close() after
 * send() loses nothing even when the server accepts late.
 */
#ifndef SCILAN_SHM_LINGER_H
#define SCILAN_SHM_LINGER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Keep a closed connection's segment until the peer attaches (or gives up). */
void sl_shm_linger_add(void *seg, size_t len, int memfd, const char *offer_path,
		       const _Atomic uint32_t *peer_state);
/* Release the entries whose peer attached or whose time ran out. */
void sl_shm_linger_sweep(void);
/* Entries remain. */
bool sl_shm_linger_pending(void);
/* Give up on every entry (process exit). */
void sl_shm_linger_drop_all(void);
/* Unmap a segment and drop its memfd and offer file. */
void sl_shm_unmap(void *seg, size_t len, int memfd, const char *offer_path);

#endif
