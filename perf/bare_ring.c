/* bare_ring.c — the bare shared-memory ring that scilan is judged against:
 * 64-bit indices on their own cache lines, memcpy in and out, pause-spinning.
 * Deliberately nothing else (no sleeping, no validation): it is the floor.
 */
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "bare_ring.h"

#define CL 64

struct bare_ring {
	/* Separate lines: the producer's stores to write must not invalidate the
	 * line the producer itself polls (read), and vice versa. */
	_Alignas(CL) _Atomic uint64_t write;
	_Alignas(CL) _Atomic uint64_t read;
	_Alignas(CL) _Atomic uint32_t shut;
	_Alignas(CL) unsigned char data[];
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#else
	__asm__ volatile("" ::: "memory");
#endif
}

static size_t ring_stride(uint64_t cap)
{
	return sizeof(struct bare_ring) + (size_t)cap;
}

void *bare_shm_create(uint64_t cap, size_t *len)
{
	*len = 2 * ring_stride(cap);
	void *p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	/* An anonymous mapping is zero-filled: both rings start empty and open. */
	return p == MAP_FAILED ? NULL : p;
}

void bare_end_init(struct bare_end *e, void *shm, uint64_t cap, int side)
{
	struct bare_ring *r0 = shm;
	struct bare_ring *r1 = (struct bare_ring *)((unsigned char *)shm + ring_stride(cap));
	memset(e, 0, sizeof *e);
	e->cap = cap;
	e->rx = side == 0 ? r0 : r1;
	e->tx = side == 0 ? r1 : r0;
}

ssize_t bare_send(struct bare_end *e, const void *buf, size_t len)
{
	if (len == 0)
		return 0;
	uint64_t space = e->cap - (e->tx_write - e->tx_read_seen);
	while (space == 0) {
		e->tx_read_seen = atomic_load_explicit(&e->tx->read, memory_order_acquire);
		space = e->cap - (e->tx_write - e->tx_read_seen);
		if (space == 0)
			cpu_relax();
	}
	size_t n = len < space ? len : (size_t)space;
	size_t off = (size_t)(e->tx_write & (e->cap - 1));
	size_t first = n < e->cap - off ? n : (size_t)(e->cap - off);
	memcpy(e->tx->data + off, buf, first);
	memcpy(e->tx->data, (const unsigned char *)buf + first, n - first);
	e->tx_write += n;
	atomic_store_explicit(&e->tx->write, e->tx_write, memory_order_release);
	return (ssize_t)n;
}

ssize_t bare_recv(struct bare_end *e, void *buf, size_t len)
{
	if (len == 0)
		return 0;
	uint64_t avail = e->rx_write_seen - e->rx_read;
	while (avail == 0) {
		e->rx_write_seen = atomic_load_explicit(&e->rx->write, memory_order_acquire);
		avail = e->rx_write_seen - e->rx_read;
		if (avail)
			break;
		/* shut is stored after the last write index: re-check write after
		 * seeing it so no final bytes are mistaken for EOF. */
		if (atomic_load_explicit(&e->rx->shut, memory_order_acquire)) {
			e->rx_write_seen = atomic_load_explicit(&e->rx->write, memory_order_acquire);
			if (e->rx_write_seen == e->rx_read)
				return 0;
			avail = e->rx_write_seen - e->rx_read;
			break;
		}
		cpu_relax();
	}
	size_t n = len < avail ? len : (size_t)avail;
	size_t off = (size_t)(e->rx_read & (e->cap - 1));
	size_t first = n < e->cap - off ? n : (size_t)(e->cap - off);
	memcpy(buf, e->rx->data + off, first);
	memcpy((unsigned char *)buf + first, e->rx->data, n - first);
	e->rx_read += n;
	atomic_store_explicit(&e->rx->read, e->rx_read, memory_order_release);
	return (ssize_t)n;
}

void bare_shutdown_wr(struct bare_end *e)
{
	atomic_store_explicit(&e->tx->shut, 1, memory_order_release);
}
