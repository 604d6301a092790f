/* test_segment.h — test-only access to a live connection's shared segment
 * (test_segment.c), for tests that play a hostile peer.
 */
#ifndef SCILAN_TEST_SEGMENT_H
#define SCILAN_TEST_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "ring/layout.h"

/* For an accelerated connected socket: the base and length of its shared
 * segment mapping, and which area is ours (0 = connecting side, 1 = accepting
 * side; see struct sl_seg_header.area_off).  Returns 0, or -1 with errno. */
int sl_test_segment(int fd, void **base, size_t *len, int *own_area);

/* The hostile end's view of a connection's shared segment: its header, checked
 * for being inside the mapping, and the two areas' control words. */
struct sl_test_hseg {
	unsigned char *base;
	size_t len;
	int own;
	struct sl_seg_header hdr;
	struct sl_area_ctl *victim; /* the area the victim receives into: we write its words */
	struct sl_area_ctl *mine;   /* the area we receive into: the victim writes its words */
	uint64_t victim_cap;
};
/* Fill *h for the accelerated connection fd (a Criterion assertion fails
 * the test where it cannot be). */
void sl_test_hostile_view(int fd, struct sl_test_hseg *h);
/* Wake a sleeping victim the way any peer can, outside the library: a byte
 * on the kernel TCP connection. */
void sl_test_poke(int fd);

#endif
