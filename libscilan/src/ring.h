/* ring.h — the single-producer/single-consumer byte ring of one direction:
 * the sender's view (writes into the peer's area) and the receiver's view
 * (reads its own area, publishes its read index into the peer's area).
 */
#ifndef SCILAN_RING_H
#define SCILAN_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"

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
int64_t sl_ring_tx_space(struct sl_ring_tx *tx, uint64_t want);
/* Copy len bytes (len <= space) into the ring and publish the new write
 * index; unless write_combining or unfenced, the publication is also a full
 * fence. */
void sl_ring_tx_put(struct sl_ring_tx *tx, const void *buf, size_t len);
/* The two halves of put, for gathering several pieces into one publication:
 * copy at write+offset (not yet visible), then publish len bytes. */
void sl_ring_tx_copy(const struct sl_ring_tx *tx, const void *buf, size_t len, uint64_t offset);
void sl_ring_tx_commit(struct sl_ring_tx *tx, size_t len);

/* Bytes waiting in our ring, or -1 if the sender's write index is impossible;
 * the shared index is read only when the cached one shows no data. */
int64_t sl_ring_rx_avail(struct sl_ring_rx *rx);
/* The same, always reading the shared index (state checks, poll). */
int64_t sl_ring_rx_avail_fresh(struct sl_ring_rx *rx);
/* Copy len bytes starting offset bytes past the read index (len+offset <= avail). */
void sl_ring_rx_peek(const struct sl_ring_rx *rx, void *buf, size_t len, uint64_t offset);
/* Advance the read index by len; publishes it to the sender when a quarter
 * ring is unpublished or when force is set. */
void sl_ring_rx_consume(struct sl_ring_rx *rx, size_t len, bool force_publish);
void sl_ring_rx_publish(struct sl_ring_rx *rx);

/* Round a requested ring size to the capacity actually used (power of two in
 * [SL_RING_MIN, SL_RING_MAX]). */
uint64_t sl_ring_cap_for(uint64_t requested);
/* A sender's SO_SNDBUF caps what it keeps in flight, as the kernel's send
 * buffer does (the kernel doubles the value, 4608 at least; 0: the ring);
 * the receiver is told, so that it publishes its read index in time. */
void sl_ring_tx_limit(struct sl_ring_tx *tx, int sndbuf);

#endif
