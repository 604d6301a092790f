/* bench.h — shared declarations of scilan-bench: the transport table, the
 * options, the result tables, and the entry points of each perf source file.
 */
#ifndef SCILAN_BENCH_H
#define SCILAN_BENCH_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "bare_ring.h"

#define BENCH_PROG "scilan-bench"
#define BENCH_MAX_SIZES 32
#define BENCH_MAX_MSG (64u << 20)      /* largest --sizes entry: keeps buffers sane */
#define BENCH_MAX_ITERS 10000000L      /* samples are kept in memory (4 B each per transport) */
/* Each point is measured in this many rounds, the transports taking turns,
 * so a change of host state mid-run (vCPU placement) hits all transports
 * alike instead of skewing one ratio. */
#define BENCH_ROUNDS 3

enum tp_kind { TP_SCILAN, TP_TCP, TP_UNIX, TP_BARE };

/* Index order is the column order of every table and CSV. */
enum tp_id { T_POLL, T_HYBRID, T_INTR, T_TCP, T_UNIX, T_BARE, T_COUNT };

/* Poll time that never expires within a run, so the scilan ends never sleep. */
#define BENCH_POLL_FOREVER_US 10000000
#define BENCH_POLL_DEFAULT (-1) /* leave the library's default alone */

struct transport_desc {
	const char *name;
	enum tp_kind kind;
	int poll_us; /* scilan only: SCILAN_SO_POLL_US value, or BENCH_POLL_DEFAULT */
};
extern const struct transport_desc bench_transports[T_COUNT];

struct bench_opts {
	bool do_pingpong, do_stream, do_xmax;
	bool quick;
	const char *mode; /* as given on the command line, for the report heading */
	const char *out_dir;
	size_t pp_sizes[BENCH_MAX_SIZES];
	int n_pp;
	size_t st_sizes[BENCH_MAX_SIZES];
	int n_st;
	long iters;      /* cap on timed round trips per size */
	double seconds;  /* time budget per transport per size */
	bool selected[T_COUNT];
	bool pin;        /* false: one CPU only, run unpinned */
	int cpu[2];      /* [0] accepting/serving end, [1] connecting/measuring end */
	uint64_t ring_bytes; /* bare ring and xmax buffer size: the scilan default ring */
};

struct pp_result {
	bool ok;
	double median_us, p99_us;
	long iters;
};

struct st_result {
	bool ok;
	double mbps;
};

struct xmax_result {
	bool ok;
	double xt_mbps, xr_mbps, xmax_mbps;
};

struct bench_results {
	struct pp_result pp[T_COUNT][BENCH_MAX_SIZES];
	struct st_result st[T_COUNT][BENCH_MAX_SIZES];
	struct xmax_result xm[BENCH_MAX_SIZES]; /* indexed like opts->st_sizes */
};

/* ---- transport.c: one connection over any transport ---- */

/* What must exist before the fork (shared mapping, socket address). */
struct tp_link {
	const struct transport_desc *t;
	void *shm;         /* bare: both rings */
	size_t shm_len;
	uint64_t ring_cap;
	char unix_name[64]; /* abstract AF_UNIX name (no file to clean up) */
};

struct tp_end {
	const struct transport_desc *t;
	int fd;
	struct bare_end bare;
};

int tp_prepare(struct tp_link *l, const struct transport_desc *t, uint64_t ring_cap);
void tp_release(struct tp_link *l);
/* Serving side: *lfd is the listening fd (-1 for bare), *port the port to dial. */
int tp_listen(struct tp_link *l, int *lfd, int *port);
int tp_accept(struct tp_link *l, int lfd, struct tp_end *e);
int tp_connect(struct tp_link *l, int port, struct tp_end *e);
ssize_t tp_send(struct tp_end *e, const void *buf, size_t len);
ssize_t tp_recv(struct tp_end *e, void *buf, size_t len);
int tp_shutdown_wr(struct tp_end *e);
void tp_close(struct tp_end *e);
/* 0 once all len bytes moved; -1 on error (reported); 1 on EOF (recv only). */
int tp_send_all(struct tp_end *e, const void *buf, size_t len);
int tp_recv_all(struct tp_end *e, void *buf, size_t len);

/* ---- measure.c: the two-process runs ---- */
/* One round of one transport at one size, within `seconds`: pingpong writes
 * up to cap round-trip times (ns) into samples, which must be a MAP_SHARED
 * mapping (the measuring child writes it); stream returns the bytes the
 * receiver got and the time they took. 0 on success. */
int measure_pingpong(const struct bench_opts *o, enum tp_id t, size_t size, double seconds, uint32_t *samples,
		     long cap, long *n);
int measure_stream(const struct bench_opts *o, enum tp_id t, size_t size, double seconds, double *bytes,
		   double *secs);
/* Sorts samples; fills median, p99, iters. */
void pp_stats(uint32_t *samples, long n, struct pp_result *out);
double bench_now(void);

/* ---- xmax.c ---- */
int measure_xmax(const struct bench_opts *o, size_t size, struct xmax_result *r);

/* ---- report.c ---- */
void report_tables(const struct bench_opts *o, const struct bench_results *res);
int report_csv(const struct bench_opts *o, const struct bench_results *res);
void report_plots(const struct bench_opts *o, const struct bench_results *res);
void report_targets(const struct bench_opts *o, const struct bench_results *res);
const char *fmt_size(size_t size, char *buf, size_t len);

/* ---- main.c ---- */
void bench_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
