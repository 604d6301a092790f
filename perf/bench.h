/* bench.h — shared declarations of scilan-bench: the transport table, the
 * options, the result tables, and the entry points of each perf source file
 * (sweep.c and sweep_report.c: the pollsweep/ringsweep tuning modes).
 */
#ifndef SCILAN_BENCH_H
#define SCILAN_BENCH_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
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
	bool do_pollsweep, do_ringsweep; /* the tuning modes: sweep.c instead of the transport table */
	bool do_pathcount; /* pathcount.c: both ends in this process, for an instruction counter */
	bool do_connrate;  /* connrate.c: short connections, connect to close */
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
	long think_us[BENCH_MAX_SIZES]; /* pollsweep: server think times (us), ascending */
	int n_think;
	long polls_us[BENCH_MAX_SIZES]; /* pollsweep: SCILAN_SO_POLL_US values, ascending */
	int n_polls;
	uint64_t rings[BENCH_MAX_SIZES]; /* ringsweep: ring capacities (bytes, powers of two), ascending */
	int n_rings;
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
	uint64_t scilan_ring; /* scilan: 0 = library default, else SO_RCVBUF on both ends, checked after connect */
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
/* Stream over any transport description; ring_cap as in struct pair_job. */
int measure_stream_on(const struct bench_opts *o, const struct transport_desc *t, uint64_t ring_cap, size_t size,
		      double seconds, double *bytes, double *secs);
/* A two-process run with the caller's own loops, under the same forking,
 * pinning and watchdog as the runs above: server runs in the accepting child,
 * client in the connecting child; each returns 0 on success and reports
 * through memory the caller mapped MAP_SHARED. */
struct pair_job {
	const struct transport_desc *t;
	uint64_t ring_cap; /* 0: defaults (o->ring_bytes for bare, the library's for scilan); else both */
	double seconds;    /* the loops' own time budget; the watchdog allows 2x + 5 s */
	const char *what;  /* names the run in failure messages */
	int (*server)(struct tp_end *e, void *arg);
	int (*client)(struct tp_end *e, void *arg);
	void *arg;
};
int measure_job(const struct bench_opts *o, const struct pair_job *j);
/* Sorts samples; fills median, p99, iters. */
void pp_stats(uint32_t *samples, long n, struct pp_result *out);
double bench_now(void);
uint64_t bench_now_ns(void);
/* Page-aligned buffer of size bytes, faulted in; NULL when out of memory. */
void *bench_alloc_buf(size_t size);
/* One stamped request/response exchange (seq checked in the echo); 0 on success. */
int bench_round_trip(struct tp_end *e, unsigned char *buf, size_t size, uint64_t seq);

/* ---- sweep.c: the tuning modes (measure, then sweep_report.c) ---- */
int sweep_poll(const struct bench_opts *o);
int sweep_ring(const struct bench_opts *o);
/* --rings: KiB -> ring capacities rounded as the library rounds them (powers of two), deduplicated. */
void sweep_set_rings(struct bench_opts *o, const long *kb, int n);

/* ---- xmax.c ---- */
int measure_xmax(const struct bench_opts *o, size_t size, struct xmax_result *r);

/* ---- report.c ---- */
void report_tables(const struct bench_opts *o, const struct bench_results *res);
int report_csv(const struct bench_opts *o, const struct bench_results *res);
void report_plots(const struct bench_opts *o, const struct bench_results *res);
void report_targets(const struct bench_opts *o, const struct bench_results *res);
const char *fmt_size(size_t size, char *buf, size_t len);
const char *fmt_num(double v, char *buf, size_t len);
/* <out>/<name>, opened for writing (NULL after a message); path receives the name. */
FILE *report_open(const struct bench_opts *o, const char *name, char *path, size_t len);
int report_close(FILE *f, const char *path);
/* The gnuplot lines choosing a PNG terminal (pngcairo, else png) and the output. */
void report_gp_terminal(FILE *f, const char *png);
/* Runs <out>/<base>.gp, which writes <out>/<base>.png: 0 done, 1 no gnuplot, -1 failed. */
int report_gnuplot(const struct bench_opts *o, const char *base);

/* ---- main.c ---- */
void bench_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* pathcount.c: `scilan-bench pathcount`. */
int pathcount(const struct bench_opts *o);
/* connrate.c: `scilan-bench connrate`. */
int connrate(const struct bench_opts *o);

#endif
