/* offer_names.h — the names the shm fabric gives in the runtime directory
 * (offer_names.c): endpoints, offers, the wake-up FIFOs beside an offer.
 */
#ifndef SCILAN_OFFER_NAMES_H
#define SCILAN_OFFER_NAMES_H

#include <stddef.h>
#include <stdint.h>

/* The descriptors a connecting side holds for its peer to open: the memfd
 * and the two wake-up FIFOs. */
#define SL_SHM_FDS 3

/* An offer's path is short (sl_sock.offer_path; a runtime directory too long
 * for it means kernel TCP), so the names built from it fit on the stack. */
#define SL_OFFER_PATH_SIZE 256
#define SL_BELL_PATH_SIZE (SL_OFFER_PATH_SIZE + 8)

struct sl_key;

/* File name for an endpoint: "<node>-<family>-<hex address>-<port>", the
 * address followed by "%<scope>" for an IPv6 link-local one named within
 * its namespace (interface numbers mean nothing in another). */
void sl_key_name(const struct sl_key *key, char *buf, size_t size);

/* <rundir>/<subdir>/<key name><suffix>; -1 with errno if no runtime dir or too long. */
int sl_key_path(const char *subdir, const struct sl_key *key, const char *suffix, char *path, size_t size);

/* The offer file of the connection from src to the listener at dst: by
 * src's address and port, or with src->port 0 by the connecting socket's
 * SO_COOKIE (an acceptor of the same network namespace asks the kernel for
 * it), "<dst name>-c<cookie>". */
int sl_shm_offer_path(const struct sl_key *dst, const struct sl_key *src, uint64_t cookie, char *path,
		      size_t size);

/* The wake-up FIFO beside an offer: which 0 wakes the connecting side.
 * -1 (ENAMETOOLONG) when it does not fit: no offer of ours has that name. */
int sl_shm_bell_path(const char *offer_path, int which, char *buf, size_t size);
/* Remove an offer file and its wake-up FIFOs. */
void sl_shm_unlink_offer(const char *offer_path);

#endif
