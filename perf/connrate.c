/* connrate.c — `scilan-bench connrate`: the cost of a whole short connection
 * (connect, one request and its response, close), as a connection-per-request
 * server sees it.  The accepting child serves a listener of its own in an
 * accept/read/write/close loop; the connecting child times each connection.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <scilan.h>

#include "bench.h"

/* The client's last connection carries this first byte: the server stops. */
#define CR_DONE 0xff

struct cr_arg {
	const struct bench_opts *o;
	struct tp_link link; /* the served listener's transport */
	size_t size;
	double seconds;
	uint32_t *samples; /* MAP_SHARED: ns per connection */
	long cap;
	long *n;     /* MAP_SHARED: samples written */
	double *secs; /* MAP_SHARED: wall time of the n connections */
};

static int cr_accept(const struct transport_desc *t, int lfd, struct tp_end *e)
{
	memset(e, 0, sizeof *e);
	e->t = t;
	e->fd = t->kind == TP_SCILAN ? scilan_accept(lfd, NULL, NULL) : accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (e->fd < 0) {
		bench_err("%s: accept: %s", t->name, strerror(errno));
		return -1;
	}
	if (t->kind == TP_SCILAN) {
		int acc = -1;
		socklen_t len = sizeof acc;
		if (scilan_getsockopt(e->fd, SOL_SCILAN, SCILAN_SO_ACCELERATED, &acc, &len) != 0 || acc != 1) {
			bench_err("%s: an accepted connection is NOT accelerated: transport aborted", t->name);
			return -1;
		}
	}
	return 0;
}

/* The control connection e only carries the port of the served listener. */
static int cr_server(struct tp_end *ctl, void *argp)
{
	struct cr_arg *a = argp;
	const struct transport_desc *t = a->link.t;
	unsigned char *buf = bench_alloc_buf(a->size);
	int lfd, port, rc = -1;

	if (!buf || tp_listen(&a->link, &lfd, &port) != 0)
		return -1;
	if (tp_send_all(ctl, &port, sizeof port) != 0)
		return -1;
	for (;;) {
		struct tp_end e;
		if (cr_accept(t, lfd, &e) != 0)
			break;
		int r = tp_recv_all(&e, buf, a->size);
		bool done = r == 0 && buf[0] == CR_DONE;
		if (r != 0 || tp_send_all(&e, buf, a->size) != 0) {
			if (r == 1)
				bench_err("%s: EOF before the request", t->name);
			tp_close(&e);
			break;
		}
		tp_close(&e);
		if (done) {
			rc = 0;
			break;
		}
	}
	if (t->kind == TP_SCILAN)
		scilan_close(lfd);
	else
		close(lfd);
	free(buf);
	return rc;
}

static int one_conn(struct cr_arg *a, int port, unsigned char *buf, unsigned char first)
{
	struct tp_end e;
	int rc = -1;

	if (tp_connect(&a->link, port, &e) == 0) {
		memset(buf, first, a->size);
		if (tp_send_all(&e, buf, a->size) == 0 && tp_recv_all(&e, buf, a->size) == 0) {
			if (buf[0] == first)
				rc = 0;
			else
				bench_err("%s: the response carried %u, expected %u", a->link.t->name, buf[0], first);
		}
	}
	tp_close(&e);
	return rc;
}

static int cr_client(struct tp_end *ctl, void *argp)
{
	struct cr_arg *a = argp;
	unsigned char *buf = bench_alloc_buf(a->size);
	int port;
	long n = 0;

	if (!buf || tp_recv_all(ctl, &port, sizeof port) != 0)
		return -1;
	memset(a->samples, 0, (size_t)a->cap * sizeof *a->samples);
	/* Warm-up: the first connections of a process create its state (stats file, caches). */
	for (int i = 0; i < 20; i++)
		if (one_conn(a, port, buf, (unsigned char)i) != 0)
			return -1;
	uint64_t start = bench_now_ns(), end = start + (uint64_t)(a->seconds * 1e9), t0 = start;
	while (n < a->cap) {
		if (one_conn(a, port, buf, (unsigned char)(n & 0x7f)) != 0)
			return -1;
		uint64_t t1 = bench_now_ns(), d = t1 - t0;
		a->samples[n++] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
		t0 = t1;
		if (t1 >= end)
			break;
	}
	*a->n = n;
	*a->secs = (double)(t0 - start) * 1e-9;
	int rc = one_conn(a, port, buf, CR_DONE);
	free(buf);
	return rc;
}

int connrate(const struct bench_opts *o)
{
	long *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	size_t bytes = (size_t)o->iters * sizeof(uint32_t);
	uint32_t *samples = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	long total[T_COUNT] = {0};
	double secs[T_COUNT] = {0};
	uint32_t *keep[T_COUNT] = {NULL};
	int rc = 0;

	if (shared == MAP_FAILED || samples == MAP_FAILED) {
		bench_err("mmap: %s", strerror(errno));
		return -1;
	}
	for (int t = 0; t < T_COUNT; t++)
		if (o->selected[t] && !(keep[t] = malloc(bytes))) {
			bench_err("out of memory");
			return -1;
		}
	/* Transports take turns, round by round, as in the other modes. */
	for (int round = 0; round < BENCH_ROUNDS; round++)
		for (int t = 0; t < T_COUNT; t++) {
			if (!o->selected[t] || total[t] < 0)
				continue;
			long cap = (o->iters - total[t]) / (BENCH_ROUNDS - round);
			struct cr_arg a = {.o = o, .size = o->pp_sizes[0], .seconds = o->seconds / BENCH_ROUNDS,
					   .samples = samples, .cap = cap, .n = &shared[0], .secs = (double *)&shared[1]};
			struct pair_job j = {.t = &bench_transports[T_UNIX], .seconds = a.seconds, .what = "connrate",
					     .server = cr_server, .client = cr_client, .arg = &a};
			shared[0] = 0;
			if (cap < 1 || tp_prepare(&a.link, &bench_transports[t], o->ring_bytes) != 0)
				continue;
			if (measure_job(o, &j) != 0 || shared[0] == 0) {
				bench_err("connrate %s: FAILED", bench_transports[t].name);
				total[t] = -1;
				rc = -1;
			} else {
				memcpy(keep[t] + total[t], samples, (size_t)shared[0] * sizeof *samples);
				total[t] += shared[0];
				secs[t] += *(double *)&shared[1];
			}
			tp_release(&a.link);
		}
	printf("connrate: connect + %zu B request/response + close, ends pinned to CPUs %d,%d\n", o->pp_sizes[0],
	       o->cpu[0], o->cpu[1]);
	printf("  %-14s %10s %12s %12s %12s\n", "transport", "conns", "conns/s", "median us", "p99 us");
	for (int t = 0; t < T_COUNT; t++) {
		struct pp_result r;
		if (!o->selected[t])
			continue;
		if (total[t] <= 0) {
			printf("  %-14s FAILED\n", bench_transports[t].name);
			continue;
		}
		pp_stats(keep[t], total[t], &r);
		printf("  %-14s %10ld %12.0f %12.1f %12.1f\n", bench_transports[t].name, total[t],
		       (double)total[t] / secs[t], r.median_us, r.p99_us);
		free(keep[t]);
	}
	munmap(samples, bytes);
	munmap(shared, 4096);
	return rc;
}
