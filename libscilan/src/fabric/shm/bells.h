/* bells.h — the shm fabric's wake-ups (bells.c): the FIFOs beside an
 * offer, and the fabric operations that ring, drain and watch them.
 */
#ifndef SCILAN_BELLS_H
#define SCILAN_BELLS_H

#include <stdbool.h>

#include "socket/sock_state.h"

/* The FIFO `which` (0 wakes the connecting side) beside offer_path, made
 * first when create; an own descriptor, or -1 with errno. */
int sl_shm_open_bell(const char *offer_path, int which, bool create);

/* The fabric operations of fabric.h for the shm fabric. */
void sl_shm_stimulate(struct sl_sock *s, int token);
void sl_shm_ring_self(struct sl_sock *s, int token);
void sl_shm_flush_remote(struct sl_sock *s);
int sl_shm_drain(struct sl_sock *s);

#endif
