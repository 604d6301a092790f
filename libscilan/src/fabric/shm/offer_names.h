/* offer_names.h — the names and descriptors of a shm connection's offer
 * (wake-up FIFOs, offer file) and the unmapping of its segment.
 */
#ifndef SCILAN_OFFER_NAMES_H
#define SCILAN_OFFER_NAMES_H

#include <stddef.h>

/* The descriptors a connecting side holds for its peer to open: the memfd
 * and the two wake-up FIFOs. */
#define SL_SHM_FDS 3

/* An offer's path is short (sl_sock.offer_path; a runtime directory too long
 * for it means kernel TCP), so the names built from it fit on the stack. */
#define SL_OFFER_PATH_SIZE 256
#define SL_BELL_PATH_SIZE (SL_OFFER_PATH_SIZE + 8)

/* Unmap a segment and close its descriptors (-1 entries skipped) and offer file. */
void sl_shm_unmap(void *seg, size_t len, const int fds[SL_SHM_FDS], const char *offer_path);

/* The wake-up FIFO beside an offer: which 0 wakes the connecting side.
 * -1 (ENAMETOOLONG) when it does not fit: no offer of ours has that name. */
int sl_shm_bell_path(const char *offer_path, int which, char *buf, size_t size);
/* Remove an offer file and its wake-up FIFOs. */
void sl_shm_unlink_offer(const char *offer_path);

#endif
