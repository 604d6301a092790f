/* pathcount.c — `scilan-bench pathcount`: the data path alone, for an
 * instruction counter.  Both ends of one scilan connection live in this
 * process and take turns, as do both ends of a bare ring, so nothing ever
 * waits and a callgrind count repeats exactly; scripts/pathcount.sh runs it
 * and divides the counts per round trip and per streamed message.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <scilan.h>

#include "bare_ring.h"
#include "bench.h"

/* Messages a stream batch sends before the receiver takes them all. */
static size_t batch_for(const struct bench_opts *o, size_t size)
{
	size_t k = (size_t)(o->ring_bytes / 2) / size;

	return k < 1 ? 1 : k > 64 ? 64 : k;
}

/* Each loop is one callgrind --toggle-collect target: n round trips (or n
 * batches of k messages) and nothing else. */
__attribute__((noinline)) int pathcount_scilan_pingpong(int c, int s, long n, unsigned char *buf, size_t size)
{
	for (long i = 0; i < n; i++)
		if (scilan_send(c, buf, size, 0) != (ssize_t)size || scilan_recv(s, buf, size, MSG_WAITALL) != (ssize_t)size ||
		    scilan_send(s, buf, size, 0) != (ssize_t)size || scilan_recv(c, buf, size, MSG_WAITALL) != (ssize_t)size)
			return -1;
	return 0;
}

__attribute__((noinline)) int pathcount_scilan_stream(int c, int s, long n, size_t k, unsigned char *buf, size_t size)
{
	for (long i = 0; i < n; i++) {
		for (size_t j = 0; j < k; j++)
			if (scilan_send(c, buf, size, 0) != (ssize_t)size)
				return -1;
		for (size_t j = 0; j < k; j++)
			if (scilan_recv(s, buf, size, MSG_WAITALL) != (ssize_t)size)
				return -1;
	}
	return 0;
}

/* bare_send and bare_recv move what fits (the sender re-reads the read
 * index only once its cached view shows a full ring): loop as the bench's
 * transports do. */
static inline int bare_all(struct bare_end *e, unsigned char *buf, size_t size, bool sending)
{
	for (size_t done = 0; done < size;) {
		ssize_t n = sending ? bare_send(e, buf + done, size - done) : bare_recv(e, buf + done, size - done);

		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

__attribute__((noinline)) int pathcount_bare_pingpong(struct bare_end *c, struct bare_end *s, long n,
						      unsigned char *buf, size_t size)
{
	for (long i = 0; i < n; i++)
		if (bare_all(c, buf, size, true) || bare_all(s, buf, size, false) || bare_all(s, buf, size, true) ||
		    bare_all(c, buf, size, false))
			return -1;
	return 0;
}

__attribute__((noinline)) int pathcount_bare_stream(struct bare_end *c, struct bare_end *s, long n, size_t k,
						    unsigned char *buf, size_t size)
{
	for (long i = 0; i < n; i++) {
		for (size_t j = 0; j < k; j++)
			if (bare_all(c, buf, size, true))
				return -1;
		for (size_t j = 0; j < k; j++)
			if (bare_all(s, buf, size, false))
				return -1;
	}
	return 0;
}

/* Both ends of one accelerated connection, in this process. */
static int scilan_pair(int *c, int *s)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a), vlen = sizeof(int);
	int l = scilan_socket(AF_INET, SOCK_STREAM, 0), acc = 0;

	*c = scilan_socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || *c < 0 || scilan_bind(l, (struct sockaddr *)&a, len) || scilan_listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &len) || scilan_connect(*c, (struct sockaddr *)&a, len) ||
	    (*s = scilan_accept(l, NULL, NULL)) < 0)
		return bench_err("pathcount: connection set-up: %s", strerror(errno)), -1;
	scilan_close(l);
	if (scilan_getsockopt(*c, SOL_SCILAN, SCILAN_SO_ACCELERATED, &acc, &vlen) || acc != 1)
		return bench_err("pathcount: the connection is not accelerated"), -1;
	return 0;
}

int pathcount(const struct bench_opts *o)
{
	/* Under callgrind each round trip costs microseconds: keep a run short. */
	long n = o->iters < 20000 ? o->iters : 20000;
	size_t shm_len;
	void *shm = bare_shm_create(o->ring_bytes, &shm_len);
	struct bare_end bc, bs;
	int rc = 0;

	if (!shm)
		return bench_err("pathcount: mmap: %s", strerror(errno)), -1;
	bare_end_init(&bc, shm, o->ring_bytes, 1);
	bare_end_init(&bs, shm, o->ring_bytes, 0);
	for (int i = 0; i < o->n_pp && rc == 0; i++) {
		size_t size = o->pp_sizes[i], k = batch_for(o, size);
		unsigned char *buf = bench_alloc_buf(size);
		int c, s;

		if (!buf || scilan_pair(&c, &s) != 0) {
			free(buf);
			rc = -1;
			break;
		}
		/* Warm (outside the counted loops): the offer decided, the ring
		 * locks biased, the pages touched. */
		rc = pathcount_scilan_pingpong(c, s, 100, buf, size) | pathcount_bare_pingpong(&bc, &bs, 100, buf, size);
		rc |= pathcount_scilan_pingpong(c, s, n, buf, size) | pathcount_scilan_stream(c, s, n, k, buf, size);
		rc |= pathcount_bare_pingpong(&bc, &bs, n, buf, size) | pathcount_bare_stream(&bc, &bs, n, k, buf, size);
		if (rc)
			bench_err("pathcount: %zu B: a send or recv fell short", size);
		else
			printf("pathcount %zu B: %ld round trips and %ld streamed messages each way (batches of %zu)\n",
			       size, n, n * (long)k, k);
		scilan_close(c);
		scilan_close(s);
		free(buf);
	}
	munmap(shm, shm_len);
	return rc;
}
