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

/* The descriptors a connecting side holds for its peer to open: the memfd
 * and the two wake-up eventfds. */
#define SL_SHM_FDS 3

/* Keep a closed connection's segment until the peer attaches (or gives up). */
void sl_shm_linger_add(void *seg, size_t len, const int fds[SL_SHM_FDS], const char *offer_path,
		       const _Atomic uint32_t *peer_state);
/* Release the entries whose peer attached or whose time ran out. */
void sl_shm_linger_sweep(void);
/* One of our descriptors moved to another number (own_fd.c). */
void sl_shm_linger_renumber(int from, int to);
/* fork: held across it, so a child never inherits a half-updated list. */
void sl_shm_linger_fork_lock(void);
void sl_shm_linger_fork_unlock(bool child);
/* Entries remain. */
bool sl_shm_linger_pending(void);
/* Give up on every entry (process exit). */
void sl_shm_linger_drop_all(void);
/* Unmap a segment and close its descriptors (-1 entries skipped) and offer file. */
void sl_shm_unmap(void *seg, size_t len, const int fds[SL_SHM_FDS], const char *offer_path);

/* The wake-up FIFO beside an offer: which 0 wakes the connecting side. */
void sl_shm_bell_path(const char *offer_path, int which, char *buf, size_t size);
/* Remove an offer file and its wake-up FIFOs. */
void sl_shm_unlink_offer(const char *offer_path);

#endif
