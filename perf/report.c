/* report.c — everything the run prints or writes after measuring: the
 * side-by-side tables with ratio columns, the CSV files, the gnuplot PNGs
 * (and the output/gnuplot helpers sweep_report.c shares), and the PASS/MISS
 * lines for the targets.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

const char *fmt_size(size_t size, char *buf, size_t len)
{
	if (size >= (1u << 20) && size % (1u << 20) == 0)
		snprintf(buf, len, "%zu MiB", size >> 20);
	else if (size >= 1024 && size % 1024 == 0)
		snprintf(buf, len, "%zu KiB", size >> 10);
	else
		snprintf(buf, len, "%zu B", size);
	return buf;
}

/* Three significant-ish digits whatever the magnitude (0.45 us ... 16512 MB/s). */
const char *fmt_num(double v, char *buf, size_t len)
{
	if (v < 10)
		snprintf(buf, len, "%.2f", v);
	else if (v < 100)
		snprintf(buf, len, "%.1f", v);
	else
		snprintf(buf, len, "%.0f", v);
	return buf;
}

static void print_ratio(bool ok, double num, double den)
{
	char b[32];
	if (ok && den > 0) {
		snprintf(b, sizeof b, "%sx", fmt_num(num / den, (char[24]){0}, 24));
		printf(" %10s", b);
	} else {
		printf(" %10s", "-");
	}
}

static void print_header(const struct bench_opts *o, const char *const *ratios, int nratios)
{
	printf("%9s", "size");
	for (int t = 0; t < T_COUNT; t++)
		if (o->selected[t])
			printf(" %13s", bench_transports[t].name);
	if (nratios)
		printf(" |");
	for (int i = 0; i < nratios; i++)
		printf(" %10s", ratios[i]);
	printf("\n");
}

static void print_cell(bool ok, double v)
{
	char b[32];
	printf(" %13s", ok ? fmt_num(v, b, sizeof b) : "failed");
}

static void pingpong_table(const struct bench_opts *o, const struct bench_results *res, bool p99)
{
	static const char *const ratios[] = {"poll/bare", "tcp/poll", "intr/tcp"};
	printf("\npingpong: %s round trip (us), %s\n", p99 ? "p99" : "median",
	       p99 ? "same runs" : "lower is better");
	print_header(o, ratios, p99 ? 0 : 3);
	for (int s = 0; s < o->n_pp; s++) {
		char sz[32];
		printf("%9s", fmt_size(o->pp_sizes[s], sz, sizeof sz));
		for (int t = 0; t < T_COUNT; t++) {
			const struct pp_result *r = &res->pp[t][s];
			if (o->selected[t])
				print_cell(r->ok, p99 ? r->p99_us : r->median_us);
		}
		if (!p99) {
			const struct pp_result *poll = &res->pp[T_POLL][s], *bare = &res->pp[T_BARE][s],
					       *tcp = &res->pp[T_TCP][s], *intr = &res->pp[T_INTR][s];
			printf(" |");
			print_ratio(poll->ok && bare->ok, poll->median_us, bare->median_us);
			print_ratio(tcp->ok && poll->ok, tcp->median_us, poll->median_us);
			print_ratio(intr->ok && tcp->ok, intr->median_us, tcp->median_us);
		}
		printf("\n");
	}
}

static void stream_table(const struct bench_opts *o, const struct bench_results *res)
{
	static const char *const ratios[] = {"poll/bare", "intr/tcp"};
	printf("\nstream: receiver throughput (MB/s = 10^6 B/s; recv() of the message size), higher is better\n");
	print_header(o, ratios, 2);
	for (int s = 0; s < o->n_st; s++) {
		char sz[32];
		printf("%9s", fmt_size(o->st_sizes[s], sz, sizeof sz));
		for (int t = 0; t < T_COUNT; t++)
			if (o->selected[t])
				print_cell(res->st[t][s].ok, res->st[t][s].mbps);
		const struct st_result *poll = &res->st[T_POLL][s], *bare = &res->st[T_BARE][s],
				       *tcp = &res->st[T_TCP][s], *intr = &res->st[T_INTR][s];
		printf(" |");
		print_ratio(poll->ok && bare->ok, poll->mbps, bare->mbps);
		print_ratio(intr->ok && tcp->ok, intr->mbps, tcp->mbps);
		printf("\n");
	}
}

static void xmax_table(const struct bench_opts *o, const struct bench_results *res)
{
	char b[6][32];
	printf("\nxmax: copy rates into/out of a %llu KiB shared buffer (MB/s), X_max = Xt*Xr/(Xt+Xr)\n",
	       (unsigned long long)(o->ring_bytes >> 10));
	printf("%9s %10s %10s %10s %13s %12s\n", "size", "Xt", "Xr", "X_max", "scilan-poll", "poll/X_max");
	for (int s = 0; s < o->n_st; s++) {
		const struct xmax_result *x = &res->xm[s];
		const struct st_result *poll = &res->st[T_POLL][s];
		fmt_size(o->st_sizes[s], b[0], sizeof b[0]);
		if (!x->ok) {
			printf("%9s %10s\n", b[0], "failed");
			continue;
		}
		bool have = o->do_stream && poll->ok;
		printf("%9s %10s %10s %10s %13s", b[0], fmt_num(x->xt_mbps, b[1], 32), fmt_num(x->xr_mbps, b[2], 32),
		       fmt_num(x->xmax_mbps, b[3], 32), have ? fmt_num(poll->mbps, b[4], 32) : "-");
		if (have)
			printf(" %11.0f%%\n", 100 * poll->mbps / x->xmax_mbps);
		else
			printf(" %12s\n", "-");
	}
}

void report_tables(const struct bench_opts *o, const struct bench_results *res)
{
	printf("\n=== scilan-bench %s (up to %.3g s per transport per size in %d rounds; ", o->mode, o->seconds,
	       BENCH_ROUNDS);
	if (o->pin)
		printf("accepting end on CPU %d, measuring end on CPU %d) ===\n", o->cpu[0], o->cpu[1]);
	else
		printf("both ends unpinned) ===\n");
	if (o->do_pingpong) {
		pingpong_table(o, res, false);
		pingpong_table(o, res, true);
	}
	if (o->do_stream)
		stream_table(o, res);
	if (o->do_xmax)
		xmax_table(o, res);
	fflush(stdout);
}

FILE *report_open(const struct bench_opts *o, const char *name, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", o->out_dir, name);
	FILE *f = fopen(path, "w");
	if (!f)
		bench_err("%s: %s", path, strerror(errno));
	return f;
}

int report_close(FILE *f, const char *path)
{
	if (ferror(f) | (fclose(f) != 0)) {
		bench_err("writing %s failed", path);
		return -1;
	}
	return 0;
}

int report_csv(const struct bench_opts *o, const struct bench_results *res)
{
	char path[4200];
	FILE *f;
	int rc = 0;
	if (o->do_pingpong) {
		if (!(f = report_open(o, "pingpong.csv", path, sizeof path)))
			return -1;
		fprintf(f, "transport,size,median_us,p99_us,iters\n");
		for (int t = 0; t < T_COUNT; t++)
			for (int s = 0; s < o->n_pp; s++)
				if (o->selected[t] && res->pp[t][s].ok)
					fprintf(f, "%s,%zu,%.4f,%.4f,%ld\n", bench_transports[t].name, o->pp_sizes[s],
						res->pp[t][s].median_us, res->pp[t][s].p99_us, res->pp[t][s].iters);
		rc |= report_close(f, path);
		printf("wrote %s\n", path);
	}
	if (o->do_stream) {
		if (!(f = report_open(o, "stream.csv", path, sizeof path)))
			return -1;
		fprintf(f, "transport,size,mbps\n");
		for (int t = 0; t < T_COUNT; t++)
			for (int s = 0; s < o->n_st; s++)
				if (o->selected[t] && res->st[t][s].ok)
					fprintf(f, "%s,%zu,%.1f\n", bench_transports[t].name, o->st_sizes[s],
						res->st[t][s].mbps);
		rc |= report_close(f, path);
		printf("wrote %s\n", path);
	}
	if (o->do_xmax) {
		if (!(f = report_open(o, "xmax.csv", path, sizeof path)))
			return -1;
		fprintf(f, "size,xt_mbps,xr_mbps,xmax_mbps,scilan_poll_mbps\n");
		for (int s = 0; s < o->n_st; s++) {
			const struct xmax_result *x = &res->xm[s];
			if (!x->ok)
				continue;
			fprintf(f, "%zu,%.1f,%.1f,%.1f,", o->st_sizes[s], x->xt_mbps, x->xr_mbps, x->xmax_mbps);
			if (o->do_stream && res->st[T_POLL][s].ok)
				fprintf(f, "%.1f", res->st[T_POLL][s].mbps);
			fprintf(f, "\n");
		}
		rc |= report_close(f, path);
		printf("wrote %s\n", path);
	}
	return rc ? -1 : 0;
}

/* The script picks pngcairo when this gnuplot has it, else the gd png terminal. */
void report_gp_terminal(FILE *f, const char *png)
{
	fprintf(f, "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
		   "  set terminal pngcairo size 960,640 noenhanced\n"
		   "} else { if (strstrt(GPVAL_TERMINALS, ' png ') > 0) {\n"
		   "  set terminal png size 960,640 noenhanced\n"
		   "} else {\n"
		   "  print 'gnuplot has neither the pngcairo nor the png terminal'\n"
		   "  exit status 3\n"
		   "} }\n");
	fprintf(f, "set output '%s'\n", png);
}

static void gp_preamble(FILE *f, const char *png, const char *title, const char *ylabel, const size_t *sizes,
			int n)
{
	report_gp_terminal(f, png);
	fprintf(f, "set title '%s'\nset xlabel 'message size (bytes)'\nset ylabel '%s'\n", title, ylabel);
	fprintf(f, "set logscale xy\nset grid\nset key outside right\nset xtics (");
	for (int i = 0; i < n; i++) {
		char sz[32];
		fprintf(f, "%s'%s' %zu", i ? ", " : "", fmt_size(sizes[i], sz, sizeof sz), sizes[i]);
	}
	fprintf(f, ")\n");
}

/* kind 0: pingpong medians, 1: stream MB/s.  Returns 0 when the script ran. */
static int plot_one(const struct bench_opts *o, const struct bench_results *res, int kind)
{
	const char *base = kind == 0 ? "pingpong" : "stream";
	char gp[4200], png[4200];
	snprintf(png, sizeof png, "%s/%s.png", o->out_dir, base);
	FILE *f = report_open(o, kind == 0 ? "pingpong.gp" : "stream.gp", gp, sizeof gp);
	if (!f)
		return -1;
	if (kind == 0)
		gp_preamble(f, png, "scilan-bench pingpong: median round trip", "median round trip (us)",
			    o->pp_sizes, o->n_pp);
	else
		gp_preamble(f, png, "scilan-bench stream: receiver throughput", "MB/s (10^6 B/s)", o->st_sizes,
			    o->n_st);
	int nseries = 0;
	bool with[T_COUNT] = {false};
	for (int t = 0; t < T_COUNT; t++) {
		int n = kind == 0 ? o->n_pp : o->n_st;
		bool any = false;
		for (int s = 0; s < n; s++)
			any |= kind == 0 ? res->pp[t][s].ok : res->st[t][s].ok;
		if (!o->selected[t] || !any)
			continue;
		with[t] = true;
		nseries++;
		fprintf(f, "$d%d << EOD\n", t);
		for (int s = 0; s < n; s++) {
			if (kind == 0 && res->pp[t][s].ok)
				fprintf(f, "%zu %.4f\n", o->pp_sizes[s], res->pp[t][s].median_us);
			else if (kind == 1 && res->st[t][s].ok)
				fprintf(f, "%zu %.1f\n", o->st_sizes[s], res->st[t][s].mbps);
		}
		fprintf(f, "EOD\n");
	}
	if (kind == 1 && o->do_xmax) {
		fprintf(f, "$xmax << EOD\n");
		for (int s = 0; s < o->n_st; s++)
			if (res->xm[s].ok)
				fprintf(f, "%zu %.1f\n", o->st_sizes[s], res->xm[s].xmax_mbps);
		fprintf(f, "EOD\n");
	}
	fprintf(f, "plot ");
	const char *sep = "";
	for (int t = 0; t < T_COUNT; t++) {
		if (!with[t])
			continue;
		fprintf(f, "%s$d%d using 1:2 with linespoints lw 2 title '%s'", sep, t, bench_transports[t].name);
		sep = ", \\\n     ";
	}
	if (kind == 1 && o->do_xmax) {
		fprintf(f, "%s$xmax using 1:2 with lines dt 2 lw 2 title 'X_max (copy bound)'", sep);
		nseries++;
	}
	fprintf(f, "\n");
	if (report_close(f, gp) != 0)
		return -1;
	if (nseries == 0) {
		printf("%s.png: nothing measured, no plot\n", base);
		return 0;
	}
	return report_gnuplot(o, base);
}

int report_gnuplot(const struct bench_opts *o, const char *base)
{
	char gp[4200], png[4200], log[4200];
	snprintf(gp, sizeof gp, "%s/%s.gp", o->out_dir, base);
	snprintf(png, sizeof png, "%s/%s.png", o->out_dir, base);
	snprintf(log, sizeof log, "%s/%s.gnuplot.log", o->out_dir, base);
	pid_t pid = fork();
	if (pid < 0)
		return bench_err("fork: %s", strerror(errno)), -1;
	if (pid == 0) {
		/* gnuplot's chatter ("empty x range" for one size) would drown the
		 * tables; keep it in a log that a failure message points to. */
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		execlp("gnuplot", "gnuplot", gp, (char *)NULL);
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return bench_err("waitpid: %s", strerror(errno)), -1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
		unlink(log);
		printf("gnuplot not found: no PNG plots (the CSV files and %s are written)\n", gp);
		return 1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		bench_err("gnuplot failed on %s (status %d, see %s); no %s", gp, status, log, png);
		return -1;
	}
	struct stat st;
	if (stat(log, &st) == 0 && st.st_size == 0)
		unlink(log);
	printf("wrote %s\n", png);
	return 0;
}

void report_plots(const struct bench_opts *o, const struct bench_results *res)
{
	/* Once gnuplot is known to be missing, say so once, not per plot. */
	if (o->do_pingpong && plot_one(o, res, 0) == 1)
		return;
	if (o->do_stream)
		plot_one(o, res, 1);
}

static int size_index(const size_t *sizes, int n, size_t want)
{
	for (int i = 0; i < n; i++)
		if (sizes[i] == want)
			return i;
	return -1;
}

static void target(bool pass, const char *what, const char *detail)
{
	printf("%-4s  %s: %s\n", pass ? "PASS" : "MISS", what, detail);
}

void report_targets(const struct bench_opts *o, const struct bench_results *res)
{
	char d[512], a[32], b[32];
	if (!o->do_pingpong && !o->do_stream)
		return;
	printf("\ntargets (ratios from this run):\n");
	if (o->do_pingpong) {
		int i = size_index(o->pp_sizes, o->n_pp, 64);
		const char *w1 = "scilan-poll 64 B round trip within 1.3x of bare";
		const char *w2 = "scilan-poll 64 B round trip at least 50x faster than tcp";
		if (i < 0) {
			target(false, w1, "not measured (64 B not in --sizes)");
			target(false, w2, "not measured (64 B not in --sizes)");
		} else {
			const struct pp_result *poll = &res->pp[T_POLL][i], *bare = &res->pp[T_BARE][i],
					       *tcp = &res->pp[T_TCP][i];
			if (poll->ok && bare->ok) {
				double r = poll->median_us / bare->median_us;
				snprintf(d, sizeof d, "%s vs %s us median = %.2fx", fmt_num(poll->median_us, a, 32),
					 fmt_num(bare->median_us, b, 32), r);
				target(r <= 1.3, w1, d);
			} else {
				target(false, w1, !poll->ok ? "not measured (scilan-poll)" : "not measured (bare)");
			}
			if (poll->ok && tcp->ok) {
				double r = tcp->median_us / poll->median_us;
				snprintf(d, sizeof d, "tcp %s us / poll %s us = %.0fx", fmt_num(tcp->median_us, a, 32),
					 fmt_num(poll->median_us, b, 32), r);
				target(r >= 50, w2, d);
			} else {
				target(false, w2, !poll->ok ? "not measured (scilan-poll)" : "not measured (tcp)");
			}
		}
		/* intr vs tcp at every size */
		const char *w4 = "scilan-intr round trip never slower than tcp (median, every size)";
		int n = 0, bad = 0;
		double worst = 0;
		size_t worst_size = 0;
		for (int s = 0; s < o->n_pp; s++) {
			const struct pp_result *intr = &res->pp[T_INTR][s], *tcp = &res->pp[T_TCP][s];
			if (!intr->ok || !tcp->ok)
				continue;
			double r = intr->median_us / tcp->median_us;
			n++;
			bad += r > 1.0;
			if (r > worst)
				worst = r, worst_size = o->pp_sizes[s];
		}
		if (n < o->n_pp) {
			snprintf(d, sizeof d, "measured at %d of %d sizes", n, o->n_pp);
			target(false, w4, d);
		} else {
			snprintf(d, sizeof d, "%d size(s) slower; worst intr/tcp = %.2fx at %s", bad, worst,
				 fmt_size(worst_size, a, sizeof a));
			target(bad == 0, w4, d);
		}
	}
	if (o->do_stream) {
		const char *w3 = "stream scilan-poll >= 90% of bare at every size";
		int n = 0, bad = 0;
		double worst = INFINITY;
		size_t worst_size = 0;
		for (int s = 0; s < o->n_st; s++) {
			const struct st_result *poll = &res->st[T_POLL][s], *bare = &res->st[T_BARE][s];
			if (!poll->ok || !bare->ok)
				continue;
			double r = poll->mbps / bare->mbps;
			n++;
			bad += r < 0.9;
			if (r < worst)
				worst = r, worst_size = o->st_sizes[s];
		}
		if (n < o->n_st) {
			snprintf(d, sizeof d, "measured at %d of %d sizes", n, o->n_st);
			target(false, w3, d);
		} else {
			snprintf(d, sizeof d, "%d size(s) below; worst poll/bare = %.0f%% at %s", bad, 100 * worst,
				 fmt_size(worst_size, a, sizeof a));
			target(bad == 0, w3, d);
		}
	}
	fflush(stdout);
}
