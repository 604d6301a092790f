/* test_segment.c — test-only: the shared segment behind a live connection,
 * for tests that play a hostile peer.  Linked into the test binaries only,
 * never into libscilan.so, libscilan.a or the preload library.
 */
#include "test_segment.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "socket/sock_state.h"

int sl_test_segment(int fd, void **base, size_t *len, int *own_area)
{
	struct sl_sock *s = sl_sock_get(fd);

	if (!s || sl_sock_state(s) != SL_CONNECTED || !s->seg) {
		errno = ENOTCONN;
		return -1;
	}
	*base = s->seg;
	*len = s->seg_len;
	*own_area = s->own_area;
	return 0;
}

void sl_test_hostile_view(int fd, struct sl_test_hseg *h)
{
	void *base;

	memset(h, 0, sizeof(*h));
	cr_assert_eq(sl_test_segment(fd, &base, &h->len, &h->own), 0, "sl_test_segment: %s", strerror(errno));
	h->base = base;
	cr_assert(h->own == 0 || h->own == 1, "own area %d", h->own);
	cr_assert_geq(h->len, sizeof(h->hdr));
	memcpy(&h->hdr, h->base, sizeof(h->hdr));
	cr_assert_eq(h->hdr.magic, SL_SEG_MAGIC, "segment header magic");
	for (int i = 0; i < 2; i++)
		cr_assert_leq(h->hdr.area_off[i] + SL_AREA_CTL_SIZE + h->hdr.ring_cap[i], h->len,
			      "area %d outside the mapping", i);
	h->victim = (struct sl_area_ctl *)(h->base + h->hdr.area_off[1 - h->own]);
	h->mine = (struct sl_area_ctl *)(h->base + h->hdr.area_off[h->own]);
	h->victim_cap = h->hdr.ring_cap[1 - h->own];
}

void sl_test_poke(int fd)
{
	cr_assert_eq(send(fd, "!", 1, MSG_NOSIGNAL), 1, "raw send on the kernel socket: %s", strerror(errno));
}
