/* ring.c — SPSC byte ring operations on the shared layout: index validation,
 * wrap-around copies and batched read-index publication (flow control).
 */
#include "ring.h"

#include <string.h>

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

int64_t sl_ring_tx_space(struct sl_ring_tx *tx, uint64_t want)
{
	uint64_t read, used = tx->write - tx->read_seen;

	/* The cached index is trusted only while it is possible: a process
	 * taking the ring over (sl_claim_tx, the exec hand-over) copies it
	 * straight from the peer's words. */
	if (want && used <= tx->room && tx->room - used >= want)
		return (int64_t)(tx->room - used);
	read = atomic_load_explicit(tx->read_copy, memory_order_acquire);
	used = tx->write - read; /* wraps to a huge value if read > write */
	if (used > tx->cap)
		return -1;
	tx->read_seen = read;
	return used >= tx->room ? 0 : (int64_t)(tx->room - used);
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

void sl_ring_tx_copy(const struct sl_ring_tx *tx, const void *buf, size_t len, uint64_t offset)
{
	uint64_t off = (tx->write + offset) & (tx->cap - 1);
	size_t first = len;

	if (first > tx->cap - off)
		first = tx->cap - off;
	memcpy(tx->data + off, buf, first);
	if (first < len) /* the wrap: rare, and an empty memcpy is still a call */
		memcpy(tx->data, (const unsigned char *)buf + first, len - first);
}

void sl_ring_tx_commit(struct sl_ring_tx *tx, size_t len)
{
	tx->write += len;
	if (tx->write_combining) {
		/* Locked operations are not for MMIO: flush the WC buffers, then
		 * a plain store; the caller fences before reading the arm word. */
		__builtin_ia32_sfence();
		atomic_store_explicit(tx->remote_write, tx->write, memory_order_release);
	} else if (tx->unfenced) {
		atomic_store_explicit(tx->remote_write, tx->write, memory_order_release);
	} else {
		/* xchg: the store and the full fence the sleep protocol needs
		 * before the arm-word load, in one locked instruction. */
		atomic_exchange_explicit(tx->remote_write, tx->write, memory_order_seq_cst);
	}
}

void sl_ring_tx_put(struct sl_ring_tx *tx, const void *buf, size_t len)
{
	sl_ring_tx_copy(tx, buf, len, 0);
	sl_ring_tx_commit(tx, len);
}

int64_t sl_ring_rx_avail_fresh(struct sl_ring_rx *rx)
{
	uint64_t write = atomic_load_explicit(rx->write_idx, memory_order_acquire);
	uint64_t avail = write - rx->read;

	if (avail > rx->cap)
		return -1;
	rx->write_seen = write;
	return (int64_t)avail;
}

int64_t sl_ring_rx_avail(struct sl_ring_rx *rx)
{
	if (rx->write_seen != rx->read)
		return (int64_t)(rx->write_seen - rx->read);
	return sl_ring_rx_avail_fresh(rx);
}

void sl_ring_rx_peek(const struct sl_ring_rx *rx, void *buf, size_t len, uint64_t offset)
{
	uint64_t off = (rx->read + offset) & (rx->cap - 1);
	size_t first = len;

	if (first > rx->cap - off)
		first = rx->cap - off;
	memcpy(buf, rx->data + off, first);
	if (first < len)
		memcpy((unsigned char *)buf + first, rx->data, len - first);
}

void sl_ring_rx_publish(struct sl_ring_rx *rx)
{
	if (rx->published == rx->read)
		return;
	rx->published = rx->read;
	atomic_store_explicit(rx->remote_read, rx->read, memory_order_release);
}

void sl_ring_rx_consume(struct sl_ring_rx *rx, size_t len, bool force_publish)
{
	rx->read += len;
	/* Batched like a TCP window update: a sender that finds the ring full
	 * sees at least a quarter ring freed at once, and a sleeping sender is
	 * given the index immediately by the caller (force). */
	/* The first consume is published at once: a published 0 then means
	 * "nothing consumed", which bypass.c relies on. */
	/* A sender whose SO_SNDBUF keeps less than the ring in flight sees
	 * "full" sooner: half its room is then the batch, so a full sender
	 * still always leaves unread data whose consume publishes.  The word is
	 * the peer's: garbage only changes how often we publish. */
	uint64_t batch = rx->cap / 4, room = atomic_load_explicit(rx->sender_room, memory_order_relaxed);

	if (room && room / 2 < batch)
		batch = room / 2;
	if (force_publish || rx->read - rx->published >= batch || rx->published == 0)
		sl_ring_rx_publish(rx);
}

uint64_t sl_ring_cap_for(uint64_t requested)
{
	uint64_t cap = SL_RING_MIN;

	while (cap < requested && cap < SL_RING_MAX)
		cap <<= 1;
	return cap;
}
