/* sweep.h — the results of the two tuning modes (pollsweep, ringsweep) as
 * sweep.c measures them and sweep_report.c prints, writes and judges them.
 */
#ifndef SCILAN_BENCH_SWEEP_H
#define SCILAN_BENCH_SWEEP_H

#include "bench.h"

#define PS_MSG_SIZE 64 /* pollsweep request and response size (bytes) */
#define PS_LAT_SLACK 1.10 /* "within ~10% of the best median" ... */
/* ... or this close: a spin that misses costs a whole wake-up (tens of us),
 * while a caught reply's median moves between 0.2 and 0.8 us with where the
 * host puts the two vCPUs, whatever P is. */
#define PS_LAT_FLOOR_US 1.0
#define RS_TPUT_SLACK 0.95 /* "within ~5% of the best throughput" */
/* ringsweep: a point is the median of this many interleaved rounds, so one
 * round hit by a host hiccup cannot move a 5% comparison. */
#define RS_ROUNDS 5

/* What else ran during a sweep: on two vCPUs any other busy process (or the
 * host taking the vCPUs away: steal) moves the figures more than the knob. */
struct sweep_load {
	bool ok;
	double seconds;   /* wall time of the sweep */
	double other_pct; /* CPU time of processes not ours, % of one CPU */
	double steal_pct; /* steal time, % of one CPU */
};
#define SWEEP_LOAD_LIMIT_PCT 10.0 /* above this the recommendation carries a caution */

/* One (poll time, think time) point, or tcp at one think time. */
struct ps_point {
	bool ok;
	double median_us, p99_us; /* round trip minus the think time T */
	double cpu_us;            /* user+sys of both processes per request (includes the server's T) */
	double cpu_client_us, cpu_server_us;
	long samples;  /* timed round trips */
	long requests; /* round trips the CPU time was divided by (warm-up included) */
};

struct ps_results {
	struct ps_point scilan[BENCH_MAX_SIZES][BENCH_MAX_SIZES]; /* [poll index][think index] */
	struct ps_point tcp[BENCH_MAX_SIZES];                     /* [think index] */
	struct sweep_load load;
};

enum { RS_POLL, RS_BARE, RS_TP };

struct rs_results {
	const struct transport_desc *tp[RS_TP];
	struct st_result st[RS_TP][BENCH_MAX_SIZES][BENCH_MAX_SIZES]; /* [transport][ring][send size]: median */
	double rounds[RS_TP][BENCH_MAX_SIZES][BENCH_MAX_SIZES][RS_ROUNDS]; /* per round, ascending */
	struct sweep_load load;
};

/* sweep.c: snapshot at the start, then fill load at the end. */
struct load_snap {
	bool ok;
	double wall, own_cpu;
	unsigned long long busy, steal; /* /proc/stat ticks, all CPUs */
};
void load_start(struct load_snap *s);
void load_finish(const struct load_snap *s, struct sweep_load *out);

/* sweep_report.c: tables on stdout, CSV and PNG in --out, the recommendation. 0 = CSV written. */
int ps_report(const struct bench_opts *o, const struct ps_results *r);
int rs_report(const struct bench_opts *o, const struct rs_results *r);

#endif
