/* fuzz_segment.c — the segment header the attaching side copies out of the
 * peer's memfd (segment.c, sl_segment_valid): an accepted header puts both
 * areas and rings inside the mapping, and binding it touches nothing else. */
#include <stdbool.h>

#include "fuzz.h"
#include "ring/layout.h"
#include "ring/segment.h"
#include "socket/sock_state.h"

#define MAP_LIMIT (1u << 20) /* larger valid segments are checked, not mapped */

static struct sl_sock sock;

/* Every byte of both rings once, through the ring operations. */
static void touch_rings(struct sl_sock *s)
{
	static unsigned char buf[SL_RING_MAX > MAP_LIMIT ? MAP_LIMIT : SL_RING_MAX];

	sl_ring_rx_peek(&s->rx, buf, s->rx.cap, 0);
	sl_ring_tx_copy(&s->tx, buf, s->tx.cap, 0);
	atomic_store(&s->own_ctl->peer_state, 0);
	atomic_store(&s->peer_ctl->peer_state, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct sl_seg_header hdr;
	uint64_t len;
	int own;
	void *base;

	if (fuzz_u8(&in) & 1) {
		/* Mostly right: a real layout with a few fields changed. */
		sl_segment_layout(&hdr, SL_RING_MIN << (fuzz_u8(&in) % 6), SL_RING_MIN << (fuzz_u8(&in) % 6));
		len = hdr.total_size;
		for (uint8_t n = fuzz_u8(&in) % 4; n; n--) {
			uint8_t at = fuzz_u8(&in) % sizeof(hdr);

			((uint8_t *)&hdr)[at] ^= fuzz_u8(&in);
		}
		len += (int8_t)fuzz_u8(&in);
	} else {
		fuzz_take(&in, &hdr, sizeof(hdr));
		len = fuzz_u64(&in);
	}
	own = fuzz_u8(&in) & 1;
	if (!sl_segment_valid(&hdr, len))
		return 0;
	FUZZ_CHECK(hdr.total_size == len, "size %llu accepted for a %llu-byte mapping",
		   (unsigned long long)hdr.total_size, (unsigned long long)len);
	for (int i = 0; i < 2; i++) {
		FUZZ_CHECK(hdr.ring_cap[i] >= SL_RING_MIN && hdr.ring_cap[i] <= SL_RING_MAX &&
				   !(hdr.ring_cap[i] & (hdr.ring_cap[i] - 1)),
			   "ring %d capacity %llu", i, (unsigned long long)hdr.ring_cap[i]);
		FUZZ_CHECK(hdr.area_off[i] >= SL_SEG_HEADER_SIZE &&
				   hdr.area_off[i] + SL_AREA_CTL_SIZE + hdr.ring_cap[i] <= len,
			   "area %d outside the mapping", i);
	}
	FUZZ_CHECK(hdr.area_off[0] + SL_AREA_CTL_SIZE + hdr.ring_cap[0] <= hdr.area_off[1] ||
			   hdr.area_off[1] + SL_AREA_CTL_SIZE + hdr.ring_cap[1] <= hdr.area_off[0],
		   "areas overlap");
	if (len > MAP_LIMIT)
		return 0;
	/* Exactly the mapping's bytes: a ring outside it is an ASan report. */
	base = aligned_alloc(SL_PAGE, len);
	FUZZ_CHECK(base != NULL, "aligned_alloc(%llu)", (unsigned long long)len);
	memset(base, 0, len);
	memcpy(base, &hdr, sizeof(hdr));
	sl_segment_bind(&sock, base, len, own, &hdr);
	touch_rings(&sock);
	sl_segment_unbind(&sock);
	free(base);
	return 0;
}
