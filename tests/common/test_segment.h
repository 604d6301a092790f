/* test_segment.h — test-only access to a live connection's shared segment
 * (test_segment.c), for tests that play a hostile peer.
 */
#ifndef SCILAN_TEST_SEGMENT_H
#define SCILAN_TEST_SEGMENT_H

#include <stddef.h>

/* For an accelerated connected socket: the base and length of its shared
 * segment mapping, and which area is ours (0 = connecting side, 1 = accepting
 * side; see struct sl_seg_header.area_off).  Returns 0, or -1 with errno. */
int sl_test_segment(int fd, void **base, size_t *len, int *own_area);

#endif
