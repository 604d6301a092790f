/* ring.c — setting up a ring's two views, the sender's room (SO_SNDBUF) and
 * capacity rounding; the per-call operations (index validation, wrap-around
 * copies, batched read-index publication) are inline in ring.h.
 */
#include "ring/ring.h"

#include <errno.h>
#include <sys/mman.h>

#include "runtime/testing.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

int sl_test_reserve_fail;

void sl_ring_tx_init(struct sl_ring_tx *tx, struct sl_area_ctl *peer_area, unsigned char *peer_data,
		     const struct sl_area_ctl *own_area, uint64_t cap)
{
	tx->data = peer_data;
	tx->remote_write = &peer_area->rx_write;
	tx->read_copy = &own_area->peer_read;
	tx->cap = cap;
	tx->write = 0;
	tx->read_seen = 0;
	tx->room = cap;
	tx->room_word = &peer_area->sender_room;
	tx->write_combining = false;
	tx->unfenced = false;
	tx->reserved = cap;
	tx->reserved_end = UINT64_MAX;
	tx->mirror = NULL;
}

void sl_ring_tx_lazy(struct sl_ring_tx *tx)
{
	if (tx->cap <= SL_RING_RESERVE_FIRST)
		return;
	tx->reserved = SL_RING_RESERVE_FIRST;
	tx->reserved_end = SL_RING_RESERVE_FIRST;
}

/* Doubling: a stream pays log2(cap / SL_RING_RESERVE_FIRST) calls, once.
 * MADV_POPULATE_WRITE allocates the pages as a write fault would, but says
 * ENOMEM or EFAULT where the fault would raise SIGBUS or wake the OOM
 * killer.  The pages are the memfd's: a process taking the ring over later
 * (fork, exec, SCM_RIGHTS) starts from SL_RING_RESERVE_FIRST again and
 * re-populating present pages only maps them. */
bool sl_ring_tx_extend(struct sl_ring_tx *tx, uint64_t len)
{
	uint64_t need = tx->write + len, to = tx->reserved;

	/* Past the first lap the copy may land anywhere: all of it. */
	if (need > tx->cap)
		need = tx->cap;
	while (to < need)
		to <<= 1;
	if (to > tx->cap)
		to = tx->cap;
	if (sl_test_reserve_fail) {
		errno = ENOMEM;
		return false;
	}
	while (madvise(tx->data + tx->reserved, to - tx->reserved, MADV_POPULATE_WRITE) < 0) {
		if (errno == EINTR)
			continue;
		/* A kernel before 5.14: the creator then reserved the whole segment. */
		if (errno == EINVAL) {
			to = tx->cap;
			break;
		}
		return false;
	}
	tx->reserved = to;
	tx->reserved_end = to == tx->cap ? UINT64_MAX : to;
	return true;
}

void sl_ring_rx_init(struct sl_ring_rx *rx, const struct sl_area_ctl *own_area, const unsigned char *own_data,
		     struct sl_area_ctl *peer_area, uint64_t cap)
{
	rx->data = own_data;
	rx->write_idx = &own_area->rx_write;
	rx->remote_read = &peer_area->peer_read;
	rx->cap = cap;
	rx->read = 0;
	rx->write_seen = 0;
	rx->published = 0;
	rx->sender_room = &own_area->sender_room;
}

void sl_ring_tx_limit(struct sl_ring_tx *tx, int sndbuf)
{
	uint64_t bytes = sndbuf > 0 ? 2 * (uint64_t)sndbuf : 0;

	if (bytes && bytes < 4608)
		bytes = 4608;
	tx->room = bytes && bytes < tx->cap ? bytes : tx->cap;
	/* Before any send that relies on it: the receiver publishes its read
	 * index once half of the room was consumed, not a quarter ring. */
	atomic_store_explicit(tx->room_word, tx->room < tx->cap ? tx->room : 0, memory_order_release);
}

uint64_t sl_ring_cap_for(uint64_t requested)
{
	uint64_t cap = SL_RING_MIN;

	while (cap < requested && cap < SL_RING_MAX)
		cap <<= 1;
	return cap;
}
