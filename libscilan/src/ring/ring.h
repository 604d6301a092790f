/* ring.h — the single-producer/single-consumer byte ring of one direction:
 * the sender's view (writes into the peer's area) and the receiver's view
 * (reads its own area, publishes its read index into the peer's area).  The
 * per-call operations are inline: they are most of the data path.
 */
#ifndef SCILAN_RING_H
#define SCILAN_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ring/layout.h"

struct sl_ring_tx {
	unsigned char *data;              /* ring data in the receiver's area */
	_Atomic uint64_t *remote_write;   /* receiver's ctl->rx_write */
	const _Atomic uint64_t *read_copy;/* our ctl->peer_read, written by the receiver */
	uint64_t cap;                     /* private copy; never re-read from shared memory */
	uint64_t write;                   /* private producer index */
	uint64_t read_seen;               /* last validated read_copy: re-read only when it shows no room */
	uint64_t room;                    /* bytes we keep unread in the ring at most: cap, or less (SO_SNDBUF) */
	_Atomic uint64_t *room_word;      /* receiver's ctl->sender_room: tells it our room */
	bool write_combining;             /* stores go through a WC mapping: sfence before publishing */
	bool unfenced;                    /* the sleeping peer pays the fence (membarrier): plain store */
	uint64_t reserved;                /* ring bytes [0, reserved) have memory behind them */
	uint64_t reserved_end;            /* writes below this index need no more: reserved, or ~0 once all is */
	unsigned char *mirror;            /* device fabric: our own copy of the ring (same offsets), from
					   * which a link that went down is re-sent (failover.c); NULL: none */
};

struct sl_ring_rx {
	const unsigned char *data;        /* ring data in our area */
	const _Atomic uint64_t *write_idx;/* our ctl->rx_write, written by the sender */
	_Atomic uint64_t *remote_read;    /* sender's ctl->peer_read */
	uint64_t cap;
	uint64_t read;                    /* private consumer index */
	uint64_t write_seen;              /* last validated write_idx: re-read only when it shows no data */
	uint64_t published;               /* last index stored into remote_read */
	const _Atomic uint64_t *sender_room; /* our ctl->sender_room, written by the sender */
};

void sl_ring_tx_init(struct sl_ring_tx *tx, struct sl_area_ctl *peer_area, unsigned char *peer_data,
		     const struct sl_area_ctl *own_area, uint64_t cap);
void sl_ring_rx_init(struct sl_ring_rx *rx, const struct sl_area_ctl *own_area, const unsigned char *own_data,
		     struct sl_area_ctl *peer_area, uint64_t cap);

/* Free bytes in the peer's ring, or -1 if the peer's published read index is
 * impossible (ahead of our writes or further behind than the capacity).
 * The shared index is read only when the cached one shows less than want
 * bytes free: like the bare ring, a stream touches the peer's line rarely. */
static inline int64_t sl_ring_tx_space(struct sl_ring_tx *tx, uint64_t want)
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

/* A memfd segment's ring gets its memory as the sender first reaches it
 * (ARCHITECTURE.md, "Segment memory"): tx_init reserves it all (device
 * memory), tx_lazy only SL_RING_RESERVE_FIRST, which the creator reserved. */
void sl_ring_tx_lazy(struct sl_ring_tx *tx);
bool sl_ring_tx_extend(struct sl_ring_tx *tx, uint64_t len);

/* Before len bytes are copied in at write: false if their memory could not
 * be reserved (out of memory), and nothing may be written. */
static inline bool sl_ring_tx_reserve(struct sl_ring_tx *tx, uint64_t len)
{
	if (__builtin_expect(tx->write + len <= tx->reserved_end, 1))
		return true;
	return sl_ring_tx_extend(tx, len);
}

/* Copy len bytes of buf into ring at off, wrapping at cap. */
static inline void sl_ring_copy_in(unsigned char *ring, uint64_t cap, uint64_t off, const void *buf, size_t len)
{
	size_t first = len;

	if (first > cap - off)
		first = cap - off;
	memcpy(ring + off, buf, first);
	if (first < len) /* the wrap: rare, and an empty memcpy is still a call */
		memcpy(ring, (const unsigned char *)buf + first, len - first);
}

/* A send in two halves, so that several pieces gather into one
 * publication: copy at write+offset (not yet visible), then publish len
 * bytes (unless write_combining or unfenced, also a full fence). */
static inline void sl_ring_tx_copy(const struct sl_ring_tx *tx, const void *buf, size_t len, uint64_t offset)
{
	uint64_t off = (tx->write + offset) & (tx->cap - 1);

	sl_ring_copy_in(tx->data, tx->cap, off, buf, len);
	/* Local memory, written while the bytes are in the cache: the price
	 * of re-sending what a link that failed may not have delivered. */
	if (tx->mirror)
		sl_ring_copy_in(tx->mirror, tx->cap, off, buf, len);
}

/* A fill source wrote len bytes at write+offset straight into the ring:
 * the mirror takes them from there (a read of the peer's memory, on the
 * rare path of sendfile). */
static inline void sl_ring_tx_mirror_filled(const struct sl_ring_tx *tx, size_t len, uint64_t offset)
{
	uint64_t off = (tx->write + offset) & (tx->cap - 1);
	size_t first = len;

	if (!tx->mirror)
		return;
	if (first > tx->cap - off)
		first = tx->cap - off;
	memcpy(tx->mirror + off, tx->data + off, first);
	if (first < len)
		memcpy(tx->mirror, tx->data, len - first);
}

static inline void sl_ring_tx_commit(struct sl_ring_tx *tx, size_t len)
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

/* Bytes waiting in our ring, or -1 if the sender's write index is
 * impossible, always reading the shared index (state checks, poll). */
static inline int64_t sl_ring_rx_avail_fresh(struct sl_ring_rx *rx)
{
	uint64_t write = atomic_load_explicit(rx->write_idx, memory_order_acquire);
	uint64_t avail = write - rx->read;

	if (avail > rx->cap)
		return -1;
	rx->write_seen = write;
	return (int64_t)avail;
}

/* The same, reading the shared index only when the cached one shows no data. */
static inline int64_t sl_ring_rx_avail(struct sl_ring_rx *rx)
{
	if (rx->write_seen != rx->read)
		return (int64_t)(rx->write_seen - rx->read);
	return sl_ring_rx_avail_fresh(rx);
}

/* Copy len bytes starting offset bytes past the read index (len+offset <= avail). */
static inline void sl_ring_rx_peek(const struct sl_ring_rx *rx, void *buf, size_t len, uint64_t offset)
{
	uint64_t off = (rx->read + offset) & (rx->cap - 1);
	size_t first = len;

	if (first > rx->cap - off)
		first = rx->cap - off;
	memcpy(buf, rx->data + off, first);
	if (first < len)
		memcpy((unsigned char *)buf + first, rx->data, len - first);
}

/* Store our read index into the sender's area, if it moved. */
static inline void sl_ring_rx_publish(struct sl_ring_rx *rx)
{
	if (rx->published == rx->read)
		return;
	rx->published = rx->read;
	atomic_store_explicit(rx->remote_read, rx->read, memory_order_release);
}

/* Advance the read index by len; publishes it to the sender when a quarter
 * ring is unpublished or when force is set.  Returns whether that publish
 * may be what a sender waiting for room needs (false for a publish made
 * only because the ring drained, and for none). */
static inline bool sl_ring_rx_consume(struct sl_ring_rx *rx, size_t len, bool force_publish)
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
	bool for_room = force_publish || rx->read - rx->published >= batch || rx->published == 0;

	/* A drained ring is published too, as TCP acknowledges what it has
	 * read: a sender waiting for our answer must not take a slow answer
	 * for a peer that reads the kernel socket instead (stall.c).  That
	 * publish never frees the room a waiting sender needs: it waits only
	 * with more than 3/4 of its room in flight (POLLOUT wants a quarter
	 * free), so draining all we saw of that is a batch, and what we have
	 * not seen yet ends in one too. */
	if (for_room || rx->read == rx->write_seen)
		sl_ring_rx_publish(rx);
	return for_room;
}

/* Round a requested ring size to the capacity actually used (power of two in
 * [SL_RING_MIN, SL_RING_MAX]). */
uint64_t sl_ring_cap_for(uint64_t requested);
/* A sender's SO_SNDBUF caps what it keeps in flight, as the kernel's send
 * buffer does (the kernel doubles the value, 4608 at least; 0: the ring);
 * the receiver is told, so that it publishes its read index in time. */
void sl_ring_tx_limit(struct sl_ring_tx *tx, int sndbuf);

#endif
