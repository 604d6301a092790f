/* sweep.c — the measuring half of the tuning modes: pollsweep (request/response
 * with a busy-thinking server, per poll time, CPU per request from getrusage in
 * both children) and ringsweep (stream throughput per ring size), via measure_job.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "ring/ring.h" /* sl_ring_cap_for: round ring sizes exactly as the library does */
#include "sweep.h"

/* ---- competing load ---- */

static bool load_read(struct load_snap *s)
{
	struct rusage self, kids;
	unsigned long long v[8] = {0};
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return false;
	int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
		       &v[6], &v[7]);
	fclose(f);
	if (n != 8 || getrusage(RUSAGE_SELF, &self) != 0 || getrusage(RUSAGE_CHILDREN, &kids) != 0)
		return false;
	s->wall = bench_now();
	/* Every child is reaped before the next starts, so RUSAGE_CHILDREN holds them all. */
	s->own_cpu = (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec +
			      kids.ru_stime.tv_sec) +
		     (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec + kids.ru_utime.tv_usec +
			      kids.ru_stime.tv_usec) *
			     1e-6;
	s->busy = v[0] + v[1] + v[2] + v[5] + v[6]; /* user nice system irq softirq */
	s->steal = v[7];
	return true;
}

void load_start(struct load_snap *s)
{
	s->ok = load_read(s);
}

void load_finish(const struct load_snap *s, struct sweep_load *out)
{
	struct load_snap e;
	long hz = sysconf(_SC_CLK_TCK);
	memset(out, 0, sizeof *out);
	if (!s->ok || !load_read(&e) || hz <= 0 || e.wall <= s->wall)
		return;
	out->ok = true;
	out->seconds = e.wall - s->wall;
	double busy = (double)(e.busy - s->busy) / (double)hz, own = e.own_cpu - s->own_cpu;
	out->other_pct = busy > own ? 100 * (busy - own) / out->seconds : 0;
	out->steal_pct = 100 * (double)(e.steal - s->steal) / (double)hz / out->seconds;
}

/* ---- pollsweep: the two children ---- */

/* Per run, in a MAP_SHARED mapping: the parent fills the first block, the
 * children the second. */
struct ps_shared {
	uint64_t think_ns;
	double seconds;
	long cap;
	uint32_t *samples; /* MAP_SHARED, cap entries: round trips (ns), think time included */
	long n;            /* client: samples written */
	long cli_reqs, srv_reqs;
	double cli_cpu_s, srv_cpu_s;
};

static double cpu_seconds(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec * 1e-6;
}

/* The application's work before it answers: real CPU time, not a sleep. */
static void think(uint64_t ns)
{
	if (!ns)
		return;
	uint64_t end = bench_now_ns() + ns;
	while (bench_now_ns() < end)
		__asm__ volatile("" ::: "memory");
}

static int ps_server(struct tp_end *e, void *arg)
{
	struct ps_shared *p = arg;
	unsigned char *buf = bench_alloc_buf(PS_MSG_SIZE);
	if (!buf)
		return bench_err("%s: out of memory", e->t->name), -1;
	double cpu0 = cpu_seconds();
	long reqs = 0;
	for (;;) {
		int rc = tp_recv_all(e, buf, PS_MSG_SIZE);
		if (rc == 1)
			break; /* the measuring side is done */
		if (rc != 0)
			return -1;
		think(p->think_ns);
		if (tp_send_all(e, buf, PS_MSG_SIZE) != 0)
			return -1;
		reqs++;
	}
	p->srv_cpu_s = cpu_seconds() - cpu0;
	p->srv_reqs = reqs;
	free(buf);
	return 0;
}

/* Like pingpong_client in measure.c; the CPU window spans warm-up and timed
 * round trips alike, and so does the server's, so both divide by all requests. */
static int ps_client(struct tp_end *e, void *arg)
{
	struct ps_shared *p = arg;
	unsigned char *buf = bench_alloc_buf(PS_MSG_SIZE);
	if (!buf)
		return bench_err("%s: out of memory", e->t->name), -1;
	memset(p->samples, 0, (size_t)p->cap * sizeof *p->samples);
	double cpu0 = cpu_seconds();
	uint64_t seq = 0, start = bench_now_ns();
	uint64_t warm_end = start + (uint64_t)(0.1 * p->seconds * 1e9);
	uint64_t end = start + (uint64_t)(p->seconds * 1e9);
	do {
		if (bench_round_trip(e, buf, PS_MSG_SIZE, seq++) != 0)
			return -1;
	} while (seq < 10 || bench_now_ns() < warm_end);
	long n = 0;
	uint64_t t0 = bench_now_ns();
	while (n < p->cap) {
		if (bench_round_trip(e, buf, PS_MSG_SIZE, seq++) != 0)
			return -1;
		uint64_t t1 = bench_now_ns(), d = t1 - t0;
		p->samples[n++] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
		t0 = t1;
		if (t1 >= end)
			break;
	}
	p->cli_cpu_s = cpu_seconds() - cpu0;
	p->cli_reqs = (long)seq;
	p->n = n;
	free(buf);
	return 0;
}

/* ---- pollsweep: the driver ---- */

struct ps_column {
	struct transport_desc desc;
	char name[32];
	uint32_t *samples;
	long n, cli_reqs, srv_reqs;
	double cli_cpu_s, srv_cpu_s;
	bool bad;
};

static void ps_finish(struct ps_column *c, long think_us, struct ps_point *pt)
{
	char line[256];
	memset(pt, 0, sizeof *pt);
	if (c->bad || c->n == 0 || c->cli_reqs == 0 || c->srv_reqs == 0) {
		snprintf(line, sizeof line, "FAILED");
	} else {
		struct pp_result r;
		pp_stats(c->samples, c->n, &r);
		pt->ok = true;
		pt->median_us = r.median_us - (double)think_us;
		pt->p99_us = r.p99_us - (double)think_us;
		pt->cpu_client_us = c->cli_cpu_s * 1e6 / (double)c->cli_reqs;
		pt->cpu_server_us = c->srv_cpu_s * 1e6 / (double)c->srv_reqs;
		pt->cpu_us = pt->cpu_client_us + pt->cpu_server_us;
		pt->samples = c->n;
		pt->requests = c->cli_reqs;
		snprintf(line, sizeof line, "RTT-T median %8.2f us  p99 %8.2f us  CPU %8.2f us/req  (%ld round trips)",
			 pt->median_us, pt->p99_us, pt->cpu_us, pt->samples);
	}
	fprintf(stderr, "[pollsweep] T=%4ld us  %-11s  %s\n", think_us, c->desc.name, line);
	fflush(stderr);
}

int sweep_poll(const struct bench_opts *o)
{
	static struct ps_results res;
	static struct ps_column col[BENCH_MAX_SIZES + 1];
	int nc = o->n_polls + 1; /* the poll times, then tcp */
	size_t bytes = (size_t)o->iters * sizeof(uint32_t);

	struct ps_shared *sh = mmap(NULL, (size_t)nc * sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
				    -1, 0);
	if (sh == MAP_FAILED)
		return bench_err("mmap: %s", strerror(errno)), -1;
	for (int c = 0; c < nc; c++) {
		if (c < o->n_polls) {
			snprintf(col[c].name, sizeof col[c].name, "scilan-P%ld", o->polls_us[c]);
			col[c].desc = (struct transport_desc){col[c].name, TP_SCILAN, (int)o->polls_us[c]};
		} else {
			col[c].desc = bench_transports[T_TCP];
		}
		col[c].samples = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE,
				      -1, 0);
		if (col[c].samples == MAP_FAILED) {
			bench_err("mmap of %zu bytes for samples: %s", bytes, strerror(errno));
			for (int k = 0; k < c; k++)
				munmap(col[k].samples, bytes);
			munmap(sh, (size_t)nc * sizeof *sh);
			return -1;
		}
	}

	struct load_snap snap;
	load_start(&snap);
	/* Think-time-major, rounds inside: every poll time and tcp of one T run
	 * close together in time, taking turns, so the comparison within a row
	 * survives a change of host state. */
	for (int ti = 0; ti < o->n_think; ti++) {
		long T = o->think_us[ti];
		char what[64];
		snprintf(what, sizeof what, "pollsweep T=%ldus", T);
		for (int c = 0; c < nc; c++) {
			col[c].n = col[c].cli_reqs = col[c].srv_reqs = 0;
			col[c].cli_cpu_s = col[c].srv_cpu_s = 0;
			col[c].bad = false;
		}
		for (int round = 0; round < BENCH_ROUNDS; round++)
			for (int c = 0; c < nc; c++) {
				struct ps_column *k = &col[c];
				long cap = (o->iters - k->n) / (BENCH_ROUNDS - round);
				if (k->bad || cap < 1)
					continue;
				memset(&sh[c], 0, sizeof sh[c]);
				sh[c].think_ns = (uint64_t)T * 1000;
				sh[c].seconds = o->seconds / BENCH_ROUNDS;
				sh[c].cap = cap;
				sh[c].samples = k->samples + k->n;
				struct pair_job job = {.t = &k->desc, .seconds = sh[c].seconds, .what = what,
						       .server = ps_server, .client = ps_client, .arg = &sh[c]};
				if (measure_job(o, &job) != 0) {
					k->bad = true;
					continue;
				}
				k->n += sh[c].n;
				k->cli_reqs += sh[c].cli_reqs;
				k->srv_reqs += sh[c].srv_reqs;
				k->cli_cpu_s += sh[c].cli_cpu_s;
				k->srv_cpu_s += sh[c].srv_cpu_s;
			}
		for (int c = 0; c < nc; c++)
			ps_finish(&col[c], T, c < o->n_polls ? &res.scilan[c][ti] : &res.tcp[ti]);
	}
	load_finish(&snap, &res.load);
	for (int c = 0; c < nc; c++)
		munmap(col[c].samples, bytes);
	munmap(sh, (size_t)nc * sizeof *sh);
	return ps_report(o, &res);
}

/* ---- ringsweep ---- */

void sweep_set_rings(struct bench_opts *o, const long *kb, int n)
{
	o->n_rings = 0;
	for (int i = 0; i < n; i++) {
		uint64_t want = (uint64_t)kb[i] << 10, cap = sl_ring_cap_for(want);
		if (cap != want)
			bench_err("--rings: %ld KiB is not a power of two; the library makes it %llu KiB", kb[i],
				  (unsigned long long)(cap >> 10));
		if (o->n_rings == 0 || o->rings[o->n_rings - 1] != cap)
			o->rings[o->n_rings++] = cap;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int sweep_ring(const struct bench_opts *o)
{
	static struct rs_results res;
	res.tp[RS_POLL] = &bench_transports[T_POLL];
	res.tp[RS_BARE] = &bench_transports[T_BARE];
	struct load_snap snap;
	load_start(&snap);
	/* Size-major with rounds inside, like stream: the ring sizes of one send
	 * size take turns, so "within 5% of the best ring" compares like with like. */
	for (int s = 0; s < o->n_st; s++) {
		double mbps[RS_TP][BENCH_MAX_SIZES][RS_ROUNDS];
		bool bad[RS_TP][BENCH_MAX_SIZES] = {{false}};
		for (int round = 0; round < RS_ROUNDS; round++)
			for (int r = 0; r < o->n_rings; r++)
				for (int t = 0; t < RS_TP; t++) {
					double bytes, secs;
					if (bad[t][r])
						continue;
					if (measure_stream_on(o, res.tp[t], o->rings[r], o->st_sizes[s],
							      o->seconds / RS_ROUNDS, &bytes, &secs) == 0 && secs > 0)
						mbps[t][r][round] = bytes / secs / 1e6;
					else
						bad[t][r] = true;
				}
		for (int r = 0; r < o->n_rings; r++)
			for (int t = 0; t < RS_TP; t++) {
				struct st_result *st = &res.st[t][r][s];
				char sz[32], line[64];
				st->ok = !bad[t][r];
				if (st->ok) {
					qsort(mbps[t][r], RS_ROUNDS, sizeof(double), cmp_double);
					st->mbps = mbps[t][r][RS_ROUNDS / 2];
					memcpy(res.rounds[t][r][s], mbps[t][r], sizeof mbps[t][r]);
				}
				if (st->ok)
					snprintf(line, sizeof line, "%10.1f MB/s", st->mbps);
				else
					snprintf(line, sizeof line, "FAILED");
				fprintf(stderr, "[ringsweep] ring %5llu KiB  send %8s  %-11s  %s\n",
					(unsigned long long)(o->rings[r] >> 10),
					fmt_size(o->st_sizes[s], sz, sizeof sz), res.tp[t]->name, line);
			}
	}
	load_finish(&snap, &res.load);
	return rs_report(o, &res);
}
