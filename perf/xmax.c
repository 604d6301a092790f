/* xmax.c — the SCILAN paper's throughput bound for a two-copy ring:
 * X_max = Xt*Xr/(Xt+Xr), from the single-process copy rates into (Xt) and
 * out of (Xr) a shared buffer of the default ring size, per send size.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench.h"

/* Copying at advancing, wrapping offsets is what a ring does: it keeps the
 * whole ring-sized buffer in play (cache footprint) and includes the split
 * copy at the wrap. */
static double copy_rate(unsigned char *ring, uint64_t cap, unsigned char *user, size_t size, bool into_ring,
			double seconds)
{
	uint64_t off = 0, bytes = 0;
	size_t batch = size >= 65536 ? 1 : 65536 / size;
	double t0 = bench_now(), t1;
	do {
		for (size_t b = 0; b < batch; b++) {
			size_t left = size, done = 0;
			while (left) {
				size_t o = (size_t)(off & (cap - 1));
				size_t n = left < cap - o ? left : (size_t)(cap - o);
				if (into_ring)
					memcpy(ring + o, user + done, n);
				else
					memcpy(user + done, ring + o, n);
				off += n;
				done += n;
				left -= n;
			}
			/* Keep the compiler from merging or dropping copies it can see through. */
			__asm__ volatile("" ::: "memory");
		}
		bytes += (uint64_t)batch * size;
		t1 = bench_now();
	} while (t1 - t0 < seconds);
	return (double)bytes / (t1 - t0) / 1e6;
}

int measure_xmax(const struct bench_opts *o, size_t size, struct xmax_result *r)
{
	uint64_t cap = o->ring_bytes;
	memset(r, 0, sizeof *r);
	unsigned char *ring = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ring == MAP_FAILED) {
		bench_err("xmax: mmap: %s", strerror(errno));
		return -1;
	}
	unsigned char *user = NULL;
	if (posix_memalign((void **)&user, 4096, size) != 0) {
		bench_err("xmax: out of memory");
		munmap(ring, cap);
		return -1;
	}
	memset(user, 0x5a, size);
	memset(ring, 0xa5, cap);

	/* Same CPU as the library's sending end, so caches and frequency match. */
	cpu_set_t saved, one;
	bool pinned = false;
	if (o->pin && sched_getaffinity(0, sizeof saved, &saved) == 0) {
		CPU_ZERO(&one);
		CPU_SET(o->cpu[0], &one);
		pinned = sched_setaffinity(0, sizeof one, &one) == 0;
		if (!pinned)
			bench_err("xmax: sched_setaffinity(cpu %d): %s (measuring unpinned)", o->cpu[0], strerror(errno));
	}
	double per = o->seconds / 4 < 0.25 ? o->seconds / 4 : 0.25;
	copy_rate(ring, cap, user, size, true, per / 5); /* warm caches and TLB */
	r->xt_mbps = copy_rate(ring, cap, user, size, true, per);
	r->xr_mbps = copy_rate(ring, cap, user, size, false, per);
	r->xmax_mbps = r->xt_mbps * r->xr_mbps / (r->xt_mbps + r->xr_mbps);
	r->ok = true;

	if (pinned && sched_setaffinity(0, sizeof saved, &saved) != 0)
		bench_err("xmax: restoring the CPU mask: %s", strerror(errno));
	free(user);
	munmap(ring, cap);
	return 0;
}
