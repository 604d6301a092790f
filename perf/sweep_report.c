/* sweep_report.c — what the tuning modes print and write: the pollsweep and
 * ringsweep tables, their CSV files and PNGs, and the rule that turns each
 * table into a one-line recommendation for SCILAN_POLL_US / SCILAN_RING_KB.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/config.h" /* SL_DEFAULT_POLL_US, SL_DEFAULT_RING_KB: the defaults being judged */
#include "sweep.h"

#ifndef SL_DEFAULT_POLL_US
#define SL_DEFAULT_POLL_US 50
#endif
#ifndef SL_DEFAULT_RING_KB
#define SL_DEFAULT_RING_KB 256
#endif

static void heading(const struct bench_opts *o, const char *what, int rounds)
{
	printf("\n=== scilan-bench %s (%s; %.3g s per point in %d rounds; ", o->mode, what, o->seconds, rounds);
	if (o->pin)
		printf("accepting end on CPU %d, measuring end on CPU %d) ===\n", o->cpu[0], o->cpu[1]);
	else
		printf("both ends unpinned) ===\n");
}

/* The line saying what else ran; returns the caution to append to the
 * recommendation ("" when the run was clean). */
static const char *load_check(const struct sweep_load *l, char *caution, size_t len)
{
	caution[0] = 0;
	if (!l->ok) {
		printf("competing load: not measured (/proc/stat unreadable)\n");
		return caution;
	}
	printf("competing load over the %.0f s sweep: other processes %.1f%% of one CPU, host steal %.1f%%\n",
	       l->seconds, l->other_pct, l->steal_pct);
	if (l->other_pct > SWEEP_LOAD_LIMIT_PCT || l->steal_pct > SWEEP_LOAD_LIMIT_PCT)
		snprintf(caution, len,
			 " CAUTION: other load (%.0f%% of a CPU) or steal (%.0f%%) disturbed this run; repeat it on "
			 "an idle machine.",
			 l->other_pct, l->steal_pct);
	return caution;
}

/* ---- pollsweep ---- */

enum ps_metric { PS_MEDIAN, PS_P99, PS_CPU };

static double ps_value(const struct ps_point *p, enum ps_metric m)
{
	return m == PS_MEDIAN ? p->median_us : m == PS_P99 ? p->p99_us : p->cpu_us;
}

static void ps_table(const struct bench_opts *o, const struct ps_results *r, enum ps_metric m)
{
	static const char *const title[] = {
		"median round trip minus T (us), lower is better",
		"p99 round trip minus T (us), same runs",
		"CPU per request, user+sys of both processes (us; includes the server's T of thinking)",
	};
	char b[32], h[32];
	printf("\npollsweep: %s\n%8s", title[m], "T (us)");
	for (int p = 0; p < o->n_polls; p++)
		printf(" %9s", (snprintf(h, sizeof h, "P=%ld", o->polls_us[p]), h));
	printf(" %9s\n", "tcp");
	for (int t = 0; t < o->n_think; t++) {
		printf("%8ld", o->think_us[t]);
		for (int p = 0; p < o->n_polls; p++) {
			const struct ps_point *pt = &r->scilan[p][t];
			printf(" %9s", pt->ok ? fmt_num(ps_value(pt, m), b, sizeof b) : "failed");
		}
		printf(" %9s\n", r->tcp[t].ok ? fmt_num(ps_value(&r->tcp[t], m), b, sizeof b) : "failed");
	}
}

static int ps_csv(const struct bench_opts *o, const struct ps_results *r)
{
	char path[4200];
	FILE *f = report_open(o, "pollsweep.csv", path, sizeof path);
	if (!f)
		return -1;
	fprintf(f, "transport,poll_us,think_us,median_us,p99_us,cpu_us_per_req,cpu_client_us,cpu_server_us,"
		   "samples,requests\n");
	for (int p = 0; p <= o->n_polls; p++)
		for (int t = 0; t < o->n_think; t++) {
			const struct ps_point *pt = p < o->n_polls ? &r->scilan[p][t] : &r->tcp[t];
			if (!pt->ok)
				continue;
			if (p < o->n_polls)
				fprintf(f, "scilan,%ld,", o->polls_us[p]);
			else
				fprintf(f, "tcp,,");
			fprintf(f, "%ld,%.4f,%.4f,%.4f,%.4f,%.4f,%ld,%ld\n", o->think_us[t], pt->median_us, pt->p99_us,
				pt->cpu_us, pt->cpu_client_us, pt->cpu_server_us, pt->samples, pt->requests);
		}
	int rc = report_close(f, path);
	if (rc == 0)
		printf("wrote %s\n", path);
	return rc;
}

static void ps_plot(const struct bench_opts *o, const struct ps_results *r)
{
	char gp[4200], png[4200];
	snprintf(png, sizeof png, "%s/pollsweep.png", o->out_dir);
	FILE *f = report_open(o, "pollsweep.gp", gp, sizeof gp);
	if (!f)
		return;
	report_gp_terminal(f, png);
	/* The think times are categories (0 has no place on a log axis). */
	fprintf(f, "set multiplot layout 1,2 title "
		   "'scilan-bench pollsweep: %d B request/response, server thinks T us'\n"
		   "set grid\nset logscale y\nset xlabel 'think time T (us)'\nset xtics (",
		PS_MSG_SIZE);
	for (int t = 0; t < o->n_think; t++)
		fprintf(f, "%s'%ld' %d", t ? ", " : "", o->think_us[t], t);
	fprintf(f, ")\n");
	for (int p = 0; p <= o->n_polls; p++) {
		fprintf(f, "$d%d << EOD\n", p);
		for (int t = 0; t < o->n_think; t++) {
			const struct ps_point *pt = p < o->n_polls ? &r->scilan[p][t] : &r->tcp[t];
			if (pt->ok) /* log axis: a floor for a median that rounds to 0 */
				fprintf(f, "%d %.4f %.4f\n", t, pt->median_us > 0.01 ? pt->median_us : 0.01,
					pt->cpu_us);
		}
		fprintf(f, "EOD\n");
	}
	for (int col = 2; col <= 3; col++) {
		/* Left: the flat spin floor and the wake-up plateau leave the middle free. */
		fprintf(f, "set key %s\nset ylabel '%s'\nplot ", col == 2 ? "center left" : "bottom right",
			col == 2 ? "median round trip - T (us)" : "CPU per request, both processes (us)");
		for (int p = 0; p <= o->n_polls; p++) {
			if (p < o->n_polls)
				fprintf(f, "%s$d%d using 1:%d with linespoints lw 2 title 'P=%ld us'", p ? ", " : "", p,
					col, o->polls_us[p]);
			else
				fprintf(f, ", $d%d using 1:%d with linespoints lw 2 dt 2 title 'tcp'", p, col);
		}
		fprintf(f, "\n");
	}
	fprintf(f, "unset multiplot\n");
	if (report_close(f, gp) == 0)
		report_gnuplot(o, "pollsweep");
}

static int find_long(const long *v, int n, long want)
{
	for (int i = 0; i < n; i++)
		if (v[i] == want)
			return i;
	return -1;
}

/* Classic spin-then-block (Karlin et al.): a wait of unknown length t costs
 * an oracle min(t, W), W being one sleep/wake-up; spinning P, then sleeping,
 * costs t if t <= P, else P + W, so its worst case is 1 + max(P/W, W/P) times
 * the oracle's: best when P ~ W (2x), worse either way, symmetric in P/W.
 * Among the measured P whose spin really works (median within 10% of the
 * best, or PS_LAT_FLOOR_US, at every T it can catch: T + best(T) <= P) and whose CPU stays
 * bounded (at most P + W per request above interrupt mode, at any T), take
 * the one with the lowest worst-case ratio (ties: the longer spin). */
static double ps_ratio(double P, double W)
{
	return P <= 0 ? INFINITY : 1 + fmax(P / W, W / P);
}

static void ps_recommend(const struct bench_opts *o, const struct ps_results *r)
{
	int p0 = find_long(o->polls_us, o->n_polls, 0), t0 = find_long(o->think_us, o->n_think, 0);
	printf("\npollsweep: choosing the poll time\n");
	if (p0 < 0 || t0 < 0 || !r->scilan[p0][t0].ok) {
		printf("recommendation: none: the sleep/wake cost W is measured at P=0, T=0, which --polls and "
		       "--think must both include (and which must not fail)\n");
		return;
	}
	double W = r->scilan[p0][t0].median_us / 2;
	double best[BENCH_MAX_SIZES];
	char caution[200];
	load_check(&r->load, caution, sizeof caution);
	for (int t = 0; t < o->n_think; t++) {
		best[t] = INFINITY;
		for (int p = 0; p < o->n_polls; p++)
			if (r->scilan[p][t].ok && r->scilan[p][t].median_us < best[t])
				best[t] = r->scilan[p][t].median_us;
	}
	printf("one sleep/wake-up W = median round trip at P=0, T=0 / 2 = %.2f us (two per round trip)\n", W);
	printf("%8s %12s %18s %19s %10s %12s  %s\n", "P (us)", "catches T<=", "median/best there",
	       "CPU over P=0 (max)", "bound P+W", "1+max(P/W,", "verdict");
	char lim[32];
	snprintf(lim, sizeof lim, "(<=%.2f or +%.1fus)", PS_LAT_SLACK, PS_LAT_FLOOR_US);
	printf("%8s %12s %18s %19s %10s %12s\n", "", "", lim, "(us per request)", "", "W/P)");
	int pick = -1;
	double pick_cpu = 0;
	long pick_reach = -1;
	for (int p = 0; p < o->n_polls; p++) {
		long P = o->polls_us[p], reach = -1;
		double worst = 0, worst_abs = 0, extra = -INFINITY, ratio = ps_ratio((double)P, W);
		bool complete = true;
		for (int t = 0; t < o->n_think; t++) {
			const struct ps_point *pt = &r->scilan[p][t], *base = &r->scilan[p0][t];
			if (!pt->ok || !base->ok || !isfinite(best[t])) {
				complete = false;
				continue;
			}
			if ((double)o->think_us[t] + best[t] <= (double)P) {
				reach = o->think_us[t];
				if (pt->median_us / best[t] > worst)
					worst = pt->median_us / best[t];
				if (pt->median_us - best[t] > worst_abs)
					worst_abs = pt->median_us - best[t];
			}
			if (pt->cpu_us - base->cpu_us > extra)
				extra = pt->cpu_us - base->cpu_us;
		}
		bool lat_ok = worst <= PS_LAT_SLACK || worst_abs <= PS_LAT_FLOOR_US, cpu_ok = extra <= (double)P + W;
		bool ok = complete && lat_ok && cpu_ok;
		const char *verdict = !complete ? "incomplete (failed points)"
				      : !lat_ok	 ? "spin misses replies it should catch"
				      : !cpu_ok	 ? "CPU above the bound"
				      : P == 0	 ? "ok (interrupt mode: every wait pays W)"
						 : "ok";
		char rs[32], ws[32], es[32], qs[32];
		if (reach >= 0)
			snprintf(rs, sizeof rs, "%ld", reach);
		else
			snprintf(rs, sizeof rs, "none");
		snprintf(ws, sizeof ws, reach >= 0 ? "%.2f" : "-", worst);
		snprintf(es, sizeof es, "%+.2f", extra);
		snprintf(qs, sizeof qs, isfinite(ratio) ? "%.2f" : "unbounded", ratio);
		printf("%8ld %12s %18s %19s %10.1f %12s  %s\n", P, rs, ws, es, (double)P + W, qs, verdict);
		if (ok && isfinite(ratio) && (pick < 0 || ratio <= ps_ratio((double)o->polls_us[pick], W))) {
			pick = p;
			pick_cpu = extra;
			pick_reach = reach;
		}
	}
	if (pick < 0) {
		printf("recommendation: none: no measured poll time > 0 passes both checks; widen --polls around "
		       "W = %.2f us and run again\n",
		       W);
		return;
	}
	char reach_s[48];
	if (pick_reach >= 0)
		snprintf(reach_s, sizeof reach_s, "T <= %ld us here", pick_reach);
	else
		snprintf(reach_s, sizeof reach_s, "no measured T here");
	printf("recommendation: SCILAN_POLL_US=%ld (library default now %d). Rule: spin-then-block - spin about as "
	       "long as one sleep/wake costs (W = median RTT at P=0,T=0 / 2 = %.2f us): spinning P then sleeping "
	       "costs at most 1+max(P/W,W/P) times what an oracle would (%.2fx for P=%ld), taken over the P whose "
	       "median stays within %.0f%% (or %.1f us) of the best at every T its spin can catch (%s) and whose CPU "
	       "stays within P+W per request of interrupt mode (%+.2f us). Trade-off: a longer spin also catches "
	       "slower replies but burns up to P us of CPU on every reply it misses; a shorter one makes every "
	       "reply later than P pay a full wake-up (~W) on top.%s\n",
	       o->polls_us[pick], SL_DEFAULT_POLL_US, W, ps_ratio((double)o->polls_us[pick], W), o->polls_us[pick],
	       (PS_LAT_SLACK - 1) * 100, PS_LAT_FLOOR_US, reach_s, pick_cpu, caution);
}

int ps_report(const struct bench_opts *o, const struct ps_results *r)
{
	char what[160];
	snprintf(what, sizeof what,
		 "%d B request/response, server busy-thinks T us, SCILAN_SO_POLL_US=P on both ends; tcp = kernel "
		 "TCP reference",
		 PS_MSG_SIZE);
	heading(o, what, BENCH_ROUNDS);
	ps_table(o, r, PS_MEDIAN);
	ps_table(o, r, PS_P99);
	ps_table(o, r, PS_CPU);
	int rc = ps_csv(o, r);
	ps_plot(o, r);
	ps_recommend(o, r);
	fflush(stdout);
	return rc;
}

/* ---- ringsweep ---- */

static const char *fmt_kib(uint64_t bytes, char *buf, size_t len)
{
	return fmt_size((size_t)bytes, buf, len);
}

/* Worst ratio of scilan-poll to the best ring's scilan-poll over the send sizes; <0 if a point failed. */
static double rs_worst(const struct bench_opts *o, const struct rs_results *r, const double *best, int ring,
		       int *at)
{
	double worst = INFINITY;
	*at = 0;
	for (int s = 0; s < o->n_st; s++) {
		const struct st_result *st = &r->st[RS_POLL][ring][s];
		if (!st->ok || !(best[s] > 0))
			return -1;
		if (st->mbps / best[s] < worst)
			worst = st->mbps / best[s], *at = s;
	}
	return worst;
}

static int rs_csv(const struct bench_opts *o, const struct rs_results *r)
{
	char path[4200];
	FILE *f = report_open(o, "ringsweep.csv", path, sizeof path);
	if (!f)
		return -1;
	fprintf(f, "transport,ring_kb,send_size,mbps,min_round_mbps,max_round_mbps,mem_per_conn_kb\n");
	for (int t = 0; t < RS_TP; t++)
		for (int g = 0; g < o->n_rings; g++)
			for (int s = 0; s < o->n_st; s++)
				if (r->st[t][g][s].ok)
					fprintf(f, "%s,%llu,%zu,%.1f,%.1f,%.1f,%llu\n", r->tp[t]->name,
						(unsigned long long)(o->rings[g] >> 10), o->st_sizes[s],
						r->st[t][g][s].mbps, r->rounds[t][g][s][0],
						r->rounds[t][g][s][RS_ROUNDS - 1],
						(unsigned long long)(2 * o->rings[g] >> 10));
	int rc = report_close(f, path);
	if (rc == 0)
		printf("wrote %s\n", path);
	return rc;
}

static void rs_plot(const struct bench_opts *o, const struct rs_results *r)
{
	char gp[4200], png[4200], sz[32];
	snprintf(png, sizeof png, "%s/ringsweep.png", o->out_dir);
	FILE *f = report_open(o, "ringsweep.gp", gp, sizeof gp);
	if (!f)
		return;
	report_gp_terminal(f, png);
	fprintf(f, "set title 'scilan-bench ringsweep: stream throughput per receive ring size'\n"
		   "set xlabel 'ring per connection (KiB; memory per connection = 2 x ring)'\n"
		   "set ylabel 'MB/s (10^6 B/s)'\nset logscale xy 2\nset grid\nset key outside right\nset xtics (");
	for (int g = 0; g < o->n_rings; g++)
		fprintf(f, "%s'%llu' %llu", g ? ", " : "", (unsigned long long)(o->rings[g] >> 10),
			(unsigned long long)(o->rings[g] >> 10));
	/* Padded, so the end ticks are not on the border (gnuplot drops them there). */
	fprintf(f, ")\nset xrange [%g:%g]\n", (double)(o->rings[0] >> 10) / 1.4,
		(double)(o->rings[o->n_rings - 1] >> 10) * 1.4);
	for (int t = 0; t < RS_TP; t++)
		for (int s = 0; s < o->n_st; s++) {
			fprintf(f, "$d%d_%d << EOD\n", t, s);
			for (int g = 0; g < o->n_rings; g++)
				if (r->st[t][g][s].ok)
					fprintf(f, "%llu %.1f\n", (unsigned long long)(o->rings[g] >> 10),
						r->st[t][g][s].mbps);
			fprintf(f, "EOD\n");
		}
	fprintf(f, "plot ");
	for (int t = 0; t < RS_TP; t++)
		for (int s = 0; s < o->n_st; s++)
			fprintf(f, "%s$d%d_%d using 1:2 with linespoints lw 2 lc %d dt %d title '%s, send %s'",
				t || s ? ", \\\n     " : "", t, s, s + 1, t ? 2 : 1, r->tp[t]->name,
				fmt_size(o->st_sizes[s], sz, sizeof sz));
	fprintf(f, "\n");
	if (report_close(f, gp) == 0)
		report_gnuplot(o, "ringsweep");
}

int rs_report(const struct bench_opts *o, const struct rs_results *r)
{
	char b[4][32];
	heading(o,
		"stream MB/s at the receiver, median of the rounds; ring set per socket with SO_RCVBUF before "
		"listen/connect and checked with SO_RCVBUF after connect; bare = the same ring size",
		RS_ROUNDS);
	double best[BENCH_MAX_SIZES];
	for (int s = 0; s < o->n_st; s++) {
		best[s] = 0;
		for (int g = 0; g < o->n_rings; g++)
			if (r->st[RS_POLL][g][s].ok && r->st[RS_POLL][g][s].mbps > best[s])
				best[s] = r->st[RS_POLL][g][s].mbps;
	}
	printf("\nringsweep: receiver throughput (MB/s), higher is better; %%best = scilan-poll / best ring's "
	       "scilan-poll at that send size\n%19s", "");
	for (int s = 0; s < o->n_st; s++) {
		snprintf(b[1], sizeof b[1], "send %s", fmt_size(o->st_sizes[s], b[0], sizeof b[0]));
		printf(" | %-29s", b[1]);
	}
	printf(" |\n%9s %9s", "ring", "mem/conn");
	for (int s = 0; s < o->n_st; s++)
		printf(" | %11s %9s %7s", r->tp[RS_POLL]->name, r->tp[RS_BARE]->name, "%best");
	printf(" | %s\n", "worst %best");
	for (int g = 0; g < o->n_rings; g++) {
		printf("%9s %9s", fmt_kib(o->rings[g], b[0], 32), fmt_kib(2 * o->rings[g], b[1], 32));
		for (int s = 0; s < o->n_st; s++) {
			const struct st_result *p = &r->st[RS_POLL][g][s], *q = &r->st[RS_BARE][g][s];
			printf(" | %11s %9s", p->ok ? fmt_num(p->mbps, b[2], 32) : "failed",
			       q->ok ? fmt_num(q->mbps, b[3], 32) : "failed");
			if (p->ok && best[s] > 0)
				printf(" %6.1f%%", 100 * p->mbps / best[s]);
			else
				printf(" %7s", "-");
		}
		int at;
		double w = rs_worst(o, r, best, g, &at);
		if (w >= 0)
			printf(" | %6.1f%% (%s)\n", 100 * w, fmt_size(o->st_sizes[at], b[0], 32));
		else
			printf(" | -\n");
	}
	/* How far the rounds of one point spread: a host that changed state
	 * mid-run shows here, not as a ring-size effect. The inner rounds (2nd
	 * and 4th of 5), so one hiccup that hit a whole round is not counted. */
	double worst_spread = 0, spreads[RS_TP * BENCH_MAX_SIZES * BENCH_MAX_SIZES];
	int nspread = 0, ws_t = 0, ws_g = 0, ws_s = 0;
	for (int t = 0; t < RS_TP; t++)
		for (int g = 0; g < o->n_rings; g++)
			for (int s = 0; s < o->n_st; s++) {
				if (!r->st[t][g][s].ok || !(r->st[t][g][s].mbps > 0))
					continue;
				const double *q = r->rounds[t][g][s];
				double x = (q[RS_ROUNDS - 2] - q[1]) / r->st[t][g][s].mbps;
				spreads[nspread++] = x;
				if (x > worst_spread)
					worst_spread = x, ws_t = t, ws_g = g, ws_s = s;
			}
	char caution[400];
	size_t cl = strlen(load_check(&r->load, caution, sizeof caution));
	if (nspread) {
		int above = 0;
		for (int i = 0; i < nspread; i++)
			above += spreads[i] > 0.10;
		if (3 * above > nspread)
			snprintf(caution + cl, sizeof caution - cl,
				 " CAUTION: the rounds disagree (%d of %d points spread over 10%%): the host changed "
				 "state during the run; repeat it.",
				 above, nspread);
		printf("round-to-round spread (4th-2nd of %d rounds)/median: %d of %d points above 10%%, worst %.0f%% "
		       "(%s, ring %s, "
		       "send %s)\n",
		       RS_ROUNDS, above, nspread, 100 * worst_spread, r->tp[ws_t]->name,
		       fmt_kib(o->rings[ws_g], b[0], 32), fmt_size(o->st_sizes[ws_s], b[1], 32));
	}
	int rc = rs_csv(o, r);
	rs_plot(o, r);

	/* The rule; when no ring meets it (the best ring differs by send size),
	 * the same rule with the tightest tolerance any ring achieves: the
	 * smallest ring whose worst case is within 5 points of the best worst case. */
	int pick = -1, robust = -1, at = 0, robust_at = 0;
	double w = 0, best_w = -1, robust_w = -1;
	for (int g = 0; g < o->n_rings; g++) {
		int a;
		double x = rs_worst(o, r, best, g, &a);
		if (pick < 0 && x >= RS_TPUT_SLACK)
			pick = g, w = x, at = a;
		if (x > best_w)
			best_w = x;
	}
	for (int g = 0; g < o->n_rings && robust < 0 && best_w >= 0; g++) {
		int a;
		double x = rs_worst(o, r, best, g, &a);
		if (x >= 0 && x >= best_w - (1 - RS_TPUT_SLACK))
			robust = g, robust_w = x, robust_at = a;
	}
	if (pick >= 0)
		printf("\nrecommendation: SCILAN_RING_KB=%llu (library default now %d). Rule: the smallest ring whose "
		       "scilan-poll throughput is within %.0f%% of the best ring's at every send size (worst here "
		       "%.1f%% at send %s); memory per connection is 2 x ring = %s, and a larger ring would spend "
		       "more memory on every connection for less than %.0f%% more throughput.%s\n",
		       (unsigned long long)(o->rings[pick] >> 10), SL_DEFAULT_RING_KB, (1 - RS_TPUT_SLACK) * 100,
		       100 * w, fmt_size(o->st_sizes[at], b[0], 32), fmt_kib(2 * o->rings[pick], b[1], 32),
		       (1 - RS_TPUT_SLACK) * 100, caution);
	else if (robust >= 0)
		printf("\nrecommendation: SCILAN_RING_KB=%llu (library default now %d), by the fallback. Rule: the "
		       "smallest ring within %.0f%% of the best ring's scilan-poll throughput at every send size; no "
		       "ring is (the best ring differs by send size, see %%best), so the smallest ring whose worst "
		       "case is within %.0f points of the best worst case any ring reaches (%.1f%%): %.1f%% of the "
		       "best at send %s, memory per connection 2 x ring = %s.%s\n",
		       (unsigned long long)(o->rings[robust] >> 10), SL_DEFAULT_RING_KB, (1 - RS_TPUT_SLACK) * 100,
		       (1 - RS_TPUT_SLACK) * 100, 100 * best_w, 100 * robust_w,
		       fmt_size(o->st_sizes[robust_at], b[0], 32), fmt_kib(2 * o->rings[robust], b[1], 32), caution);
	else
		printf("\nrecommendation: none: no ring size was measured at every send size\n");
	fflush(stdout);
	return rc;
}
