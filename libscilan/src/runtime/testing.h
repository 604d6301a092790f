/* testing.h — internal accessors for tests that play a hostile peer; not part
 * of the public API (scilan.h) and not exported by libscilan.so.
 */
#ifndef SCILAN_TESTING_H
#define SCILAN_TESTING_H

#include <stddef.h>

/* For an accelerated connected socket: the base and length of its shared
 * segment mapping, and which area is ours (0 = connecting side, 1 = accepting
 * side; see struct sl_seg_header.area_off).  Returns 0, or -1 with errno. */
int sl_test_segment(int fd, void **base, size_t *len, int *own_area);

/* How long a move to kernel TCP (bypass.c) waits for the peer on the kernel
 * socket before it resets, in ms; tests that play a hostile peer shorten it. */
extern int sl_bypass_wait_ms;

/* Nonzero: every extension of a ring's memory reservation fails as if
 * memory were exhausted (ring.c). */
extern int sl_test_reserve_fail;

#endif
