/* ring.c — setting up a ring's two views, the sender's room (SO_SNDBUF) and
 * capacity rounding; the per-call operations (index validation, wrap-around
 * copies, batched read-index publication) are inline in ring.h.
 */
#include "ring.h"

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

void sl_ring_tx_put(struct sl_ring_tx *tx, const void *buf, size_t len)
{
	sl_ring_tx_copy(tx, buf, len, 0);
	sl_ring_tx_commit(tx, len);
}

uint64_t sl_ring_cap_for(uint64_t requested)
{
	uint64_t cap = SL_RING_MIN;

	while (cap < requested && cap < SL_RING_MAX)
		cap <<= 1;
	return cap;
}
