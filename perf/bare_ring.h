/* bare_ring.h — the reference floor: a minimal two-copy SPSC byte ring per
 * direction in one MAP_SHARED|MAP_ANONYMOUS mapping, busy-polled both ways.
 */
#ifndef SCILAN_BENCH_BARE_RING_H
#define SCILAN_BENCH_BARE_RING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct bare_ring;

/* One side's view: it sends into tx and receives from rx. */
struct bare_end {
	struct bare_ring *tx, *rx;
	uint64_t cap;
	uint64_t tx_write, tx_read_seen; /* private copies: read shared lines only when stuck */
	uint64_t rx_read, rx_write_seen;
};

/* Map both rings (cap: power of two); *len receives the mapping length. */
void *bare_shm_create(uint64_t cap, size_t *len);
/* side 0 = accepting end, 1 = connecting end: each receives on its own ring. */
void bare_end_init(struct bare_end *e, void *shm, uint64_t cap, int side);
/* Spin until some space, copy up to len bytes; returns the count. */
ssize_t bare_send(struct bare_end *e, const void *buf, size_t len);
/* Spin until data or EOF; returns bytes copied, 0 at EOF. */
ssize_t bare_recv(struct bare_end *e, void *buf, size_t len);
/* Tell the receiver nothing follows what has been sent. */
void bare_shutdown_wr(struct bare_end *e);

#endif
