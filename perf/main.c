/* main.c — scilan-bench's command line (getopt_long), the defaults of each
 * mode, CPU choice, and the driver that runs every selected transport per
 * size and hands the results to report.c (the sweep modes go to sweep.c).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sweep.h" /* RS_TP; includes bench.h */
#include "runtime/config.h" /* SL_DEFAULT_RING_KB: the bare ring gets the library's default ring size */
#include "ring/layout.h" /* SL_RING_MIN, SL_RING_MAX */

#ifndef SL_DEFAULT_RING_KB
#define SL_DEFAULT_RING_KB 256
#endif

static const size_t pp_all[] = {1, 64, 1024, 4096, 16384, 65536};
static const size_t pp_quick[] = {1, 64, 4096, 65536};
static const size_t st_all[] = {64, 1024, 16384, 65536, 1048576};
static const size_t st_quick[] = {64, 1024, 65536, 1048576};
/* The tuning sweeps: think times and poll times (us), ring sizes (KiB), send sizes. */
static const long think_default[] = {0, 5, 10, 20, 40, 80, 160, 320};
static const long polls_default[] = {0, 10, 25, 50, 100, 200};
static const long rings_default[] = {16, 64, 256, 1024, 4096};
static const size_t ring_sends[] = {1024, 65536, 1048576};
/* Per point: pollsweep's 56 points take about 30 s; ringsweep's
 * 30 get 1 s for their five rounds (sweep.h, RS_ROUNDS). */
#define POLLSWEEP_SECONDS 0.5
#define RINGSWEEP_SECONDS 1.0

void bench_err(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	/* One write per line: children and the parent share stderr. */
	fprintf(stderr, "%s: %s\n", BENCH_PROG, buf);
	fflush(stderr);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s MODE [options]\n"
		"  MODE: quick     pingpong + stream + xmax, fewer sizes, 1 s per point (about a minute)\n"
		"        all       pingpong + stream + xmax, all sizes, 2 s per point (a few minutes)\n"
		"        pingpong  round-trip latency only (median, p99)\n"
		"        stream    one-way throughput only (MB/s at the receiver)\n"
		"        xmax      memcpy bound X_max = Xt*Xr/(Xt+Xr) only\n"
		"        pollsweep request/response with a server that busy-thinks T us, per scilan\n"
		"                  poll time P and kernel TCP: median/p99 of (round trip - T), CPU per\n"
		"                  request of both processes; recommends SCILAN_POLL_US (about 30 s)\n"
		"        ringsweep stream MB/s of scilan-poll and the bare ring per ring size at send\n"
		"                  sizes 1K,64K,1M, memory per connection; recommends SCILAN_RING_KB (~40 s)\n"
		"        pathcount both ends of a scilan connection and of the bare ring in this process,\n"
		"                  taking turns (default 64 B, at most 20000 round trips): the loops to\n"
		"                  count instructions in, see scripts/pathcount.sh\n"
		"        connrate  short connections: connect + one request/response (default 64 B) +\n"
		"                  close, per connection median/p99 and connections/s (default\n"
		"                  transports scilan-hybrid,tcp; at most --iters connections, default\n"
		"                  6000: kernel TCP's TIME_WAIT ports); see scripts/connrate_syscalls.sh\n"
		"options:\n"
		"  --out DIR          CSV, gnuplot scripts and PNGs go here (default build/perf)\n"
		"  --sizes LIST       message sizes, e.g. 64,1K,64KiB,1M (default per mode)\n"
		"  --iters N          at most N timed round trips per point (default 1000000)\n"
		"  --seconds S        time budget per transport per size (default 1 quick, 2 otherwise,\n"
		"                     per point: 0.5 in pollsweep, 1 in ringsweep)\n"
		"  --transports LIST  any of scilan-poll,scilan-hybrid,scilan-intr,tcp,unix,bare;\n"
		"                     'scilan' = the three scilan modes, 'all' = everything (default)\n"
		"  --cpus A,B         pin the accepting end to CPU A, the measuring end to CPU B\n"
		"                     (default 0,1 or the first two CPUs allowed)\n"
		"  --think LIST       pollsweep: server think times in us (default 0,5,10,20,40,80,160,320)\n"
		"  --polls LIST       pollsweep: poll times in us, set with SCILAN_SO_POLL_US on both ends\n"
		"                     (default 0,10,25,50,100,200; 0 and T=0 give the sleep/wake cost)\n"
		"  --rings LIST       ringsweep: ring sizes in KiB, rounded up to powers of two, set with\n"
		"                     SO_RCVBUF on both ends (default 16,64,256,1024,4096)\n"
		"                     (--sizes sets ringsweep's send sizes; --transports is not used)\n"
		"  --help             this text\n",
		BENCH_PROG);
}

static void __attribute__((noreturn)) bad_usage(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\n%s: try '%s --help'\n", BENCH_PROG, buf, BENCH_PROG, BENCH_PROG);
	exit(2);
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return (x > y) - (x < y);
}

static int parse_sizes(const char *arg, size_t *out)
{
	int n = 0;
	const char *p = arg;
	for (;;) {
		char *end;
		errno = 0;
		if (*p < '0' || *p > '9')
			bad_usage("bad --sizes '%s': expected a number at '%s'", arg, p);
		unsigned long long v = strtoull(p, &end, 10);
		size_t unit = 1;
		if (*end == 'k' || *end == 'K')
			unit = 1024, end++;
		else if (*end == 'm' || *end == 'M')
			unit = 1024 * 1024, end++;
		if (unit > 1 && *end == 'i' && end[1] == 'B')
			end += 2;
		else if (*end == 'B')
			end++;
		if (errno || v == 0 || v > BENCH_MAX_MSG / unit || (*end != ',' && *end != 0))
			bad_usage("bad --sizes '%s': each size is 1 B .. %u MiB, like 64 or 16K or 1MiB", arg,
				  BENCH_MAX_MSG >> 20);
		if (n == BENCH_MAX_SIZES)
			bad_usage("bad --sizes '%s': at most %d sizes", arg, BENCH_MAX_SIZES);
		out[n++] = (size_t)v * unit;
		if (*end == 0)
			break;
		p = end + 1;
	}
	qsort(out, (size_t)n, sizeof *out, cmp_size);
	int m = 0; /* drop duplicates */
	for (int i = 0; i < n; i++)
		if (m == 0 || out[m - 1] != out[i])
			out[m++] = out[i];
	return m;
}

static void parse_transports(const char *arg, bool *sel)
{
	char buf[256];
	if (strlen(arg) >= sizeof buf)
		bad_usage("--transports list too long");
	strcpy(buf, arg);
	memset(sel, 0, T_COUNT * sizeof *sel);
	char *save = NULL;
	int any = 0;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int hit = 0;
		for (int t = 0; t < T_COUNT; t++) {
			if (!strcmp(tok, "all") || !strcmp(tok, bench_transports[t].name) ||
			    (!strcmp(tok, "scilan") && bench_transports[t].kind == TP_SCILAN)) {
				sel[t] = true;
				hit = 1;
			}
		}
		if (!hit)
			bad_usage("unknown transport '%s' (known: scilan-poll, scilan-hybrid, scilan-intr, tcp, "
				  "unix, bare, scilan, all)",
				  tok);
		any = 1;
	}
	if (!any)
		bad_usage("--transports: empty list");
}

static long parse_long(const char *opt, const char *arg, long min, long max)
{
	char *end;
	errno = 0;
	long v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max)
		bad_usage("bad %s '%s': expected an integer in %ld..%ld", opt, arg, min, max);
	return v;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

/* A comma list of integers in [min, max], sorted, duplicates dropped. */
static int parse_longs(const char *opt, const char *arg, long *out, long min, long max)
{
	char buf[512];
	int n = 0;
	if (strlen(arg) >= sizeof buf)
		bad_usage("%s list too long", opt);
	strcpy(buf, arg);
	char *save = NULL;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == BENCH_MAX_SIZES)
			bad_usage("bad %s '%s': at most %d values", opt, arg, BENCH_MAX_SIZES);
		out[n++] = parse_long(opt, tok, min, max);
	}
	if (n == 0)
		bad_usage("%s: empty list", opt);
	qsort(out, (size_t)n, sizeof *out, cmp_long);
	int m = 0;
	for (int i = 0; i < n; i++)
		if (m == 0 || out[m - 1] != out[i])
			out[m++] = out[i];
	return m;
}

static void choose_cpus(struct bench_opts *o, const char *arg)
{
	cpu_set_t allowed;
	if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
		bench_err("sched_getaffinity: %s; running unpinned", strerror(errno));
		o->pin = false;
		return;
	}
	if (arg) {
		char *end;
		const char *p = arg;
		for (int i = 0; i < 2; i++) {
			errno = 0;
			long v = strtol(p, &end, 10);
			if (errno || end == p || v < 0 || v >= CPU_SETSIZE || *end != (i == 0 ? ',' : 0))
				bad_usage("bad --cpus '%s': expected two CPU numbers A,B", arg);
			if (!CPU_ISSET((int)v, &allowed))
				bad_usage("bad --cpus '%s': CPU %ld is not available to this process", arg, v);
			o->cpu[i] = (int)v;
			p = end + 1;
		}
		o->pin = true;
		if (o->cpu[0] == o->cpu[1])
			bench_err("warning: both ends on CPU %d: polling transports will fight for it", o->cpu[0]);
		return;
	}
	if (CPU_COUNT(&allowed) < 2) {
		bench_err("only one CPU available: running both ends unpinned "
			  "(polling figures will be meaningless)");
		o->pin = false;
		return;
	}
	int n = 0;
	if (CPU_ISSET(0, &allowed) && CPU_ISSET(1, &allowed)) {
		o->cpu[0] = 0, o->cpu[1] = 1;
	} else {
		for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
			if (CPU_ISSET(c, &allowed))
				o->cpu[n++] = c;
	}
	o->pin = true;
}

static uint64_t default_ring_bytes(void)
{
	/* Follow SCILAN_RING_KB like the library does, so bare and xmax use the
	 * ring size scilan actually runs with. */
	uint64_t kb = SL_DEFAULT_RING_KB;
	const char *env = getenv("SCILAN_RING_KB");
	if (env && *env) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(env, &end, 10);
		if (!errno && !*end && v >= SL_RING_MIN / 1024 && v <= SL_RING_MAX / 1024)
			kb = v;
	}
	uint64_t cap = SL_RING_MIN;
	while (cap < kb * 1024 && cap < SL_RING_MAX)
		cap <<= 1;
	return cap;
}

static int mkdir_p(const char *dir)
{
	char buf[4096];
	if (strlen(dir) >= sizeof buf) {
		bench_err("--out: path too long");
		return -1;
	}
	strcpy(buf, dir);
	for (char *p = buf + 1;; p++) {
		if (*p == '/' || *p == 0) {
			char c = *p;
			*p = 0;
			if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
				bench_err("mkdir %s: %s", buf, strerror(errno));
				return -1;
			}
			*p = c;
			if (!c)
				break;
		}
	}
	return 0;
}

static void set_sizes(size_t *dst, int *n, const size_t *src, int count)
{
	memcpy(dst, src, (size_t)count * sizeof *src);
	*n = count;
}

static void parse_args(int argc, char **argv, struct bench_opts *o)
{
	static const struct option lopts[] = {
		{"out", required_argument, NULL, 'o'},	    {"sizes", required_argument, NULL, 's'},
		{"iters", required_argument, NULL, 'n'},    {"seconds", required_argument, NULL, 't'},
		{"transports", required_argument, NULL, 'T'}, {"cpus", required_argument, NULL, 'c'},
		{"think", required_argument, NULL, 'k'},    {"polls", required_argument, NULL, 'p'},
		{"rings", required_argument, NULL, 'r'},    {"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *sizes = NULL, *cpus = NULL, *think = NULL, *polls = NULL, *rings = NULL, *transports = NULL;
	double seconds = 0;
	bool iters_given = false;
	int c;

	memset(o, 0, sizeof *o);
	o->out_dir = "build/perf";
	o->iters = 1000000;
	for (int t = 0; t < T_COUNT; t++)
		o->selected[t] = true;
	opterr = 0; /* our own messages, with exit status 2 */
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->out_dir = optarg;
			break;
		case 's':
			sizes = optarg;
			break;
		case 'n':
			o->iters = parse_long("--iters", optarg, 1, BENCH_MAX_ITERS);
			iters_given = true;
			break;
		case 't': {
			char *end;
			errno = 0;
			seconds = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(seconds >= 0.01 && seconds <= 3600))
				bad_usage("bad --seconds '%s': expected 0.01 .. 3600", optarg);
			break;
		}
		case 'T':
			parse_transports(optarg, o->selected);
			transports = optarg;
			break;
		case 'k':
			think = optarg;
			break;
		case 'p':
			polls = optarg;
			break;
		case 'r':
			rings = optarg;
			break;
		case 'c':
			cpus = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			if (optopt && strchr("osntTckpr", optopt))
				bad_usage("option '%s' needs an argument", argv[optind - 1]);
			bad_usage("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		bad_usage("missing MODE (quick, all, pingpong, stream, xmax, pollsweep, ringsweep, pathcount or connrate)");
	if (optind + 1 < argc)
		bad_usage("unexpected argument '%s' after the mode", argv[optind + 1]);
	const char *mode = argv[optind];
	o->mode = mode;
	if (!strcmp(mode, "quick") || !strcmp(mode, "all")) {
		o->quick = mode[0] == 'q';
		o->do_pingpong = o->do_stream = o->do_xmax = true;
	} else if (!strcmp(mode, "pingpong")) {
		o->do_pingpong = true;
	} else if (!strcmp(mode, "stream")) {
		o->do_stream = true;
	} else if (!strcmp(mode, "xmax")) {
		o->do_xmax = true;
	} else if (!strcmp(mode, "pollsweep")) {
		o->do_pollsweep = true;
	} else if (!strcmp(mode, "ringsweep")) {
		o->do_ringsweep = true;
	} else if (!strcmp(mode, "pathcount")) {
		o->do_pathcount = true;
	} else if (!strcmp(mode, "connrate")) {
		o->do_connrate = true;
	} else {
		bad_usage("unknown mode '%s' (quick, all, pingpong, stream, xmax, pollsweep, ringsweep, pathcount or connrate)",
			  mode);
	}
	/* An option the mode does not use is a mistake worth saying, not ignoring. */
	if ((think || polls) && !o->do_pollsweep)
		bad_usage("--think and --polls apply to pollsweep only");
	if (rings && !o->do_ringsweep)
		bad_usage("--rings applies to ringsweep only");
	if (transports && (o->do_pollsweep || o->do_ringsweep))
		bad_usage("--transports does not apply to %s (it measures fixed transports)", mode);
	if (sizes && o->do_pollsweep)
		bad_usage("--sizes does not apply to pollsweep (requests are 64 B)");
	if (o->do_pollsweep) {
		o->n_think = think ? parse_longs("--think", think, o->think_us, 0, 1000000)
				   : (int)(memcpy(o->think_us, think_default, sizeof think_default),
					   sizeof think_default / sizeof *think_default);
		o->n_polls = polls ? parse_longs("--polls", polls, o->polls_us, 0, 1000000)
				   : (int)(memcpy(o->polls_us, polls_default, sizeof polls_default),
					   sizeof polls_default / sizeof *polls_default);
	}
	if (o->do_ringsweep) {
		long kb[BENCH_MAX_SIZES];
		int n = rings ? parse_longs("--rings", rings, kb, SL_RING_MIN >> 10, SL_RING_MAX >> 10)
			      : (int)(memcpy(kb, rings_default, sizeof rings_default),
				      sizeof rings_default / sizeof *rings_default);
		sweep_set_rings(o, kb, n);
	}
	if (o->do_ringsweep) {
		set_sizes(o->st_sizes, &o->n_st, ring_sends, 3);
	} else if (o->do_pathcount || o->do_connrate) {
		set_sizes(o->pp_sizes, &o->n_pp, pp_quick + 1, 1); /* 64 B */
	} else if (o->quick) {
		set_sizes(o->pp_sizes, &o->n_pp, pp_quick, 4);
		set_sizes(o->st_sizes, &o->n_st, st_quick, 4);
	} else {
		set_sizes(o->pp_sizes, &o->n_pp, pp_all, 6);
		set_sizes(o->st_sizes, &o->n_st, st_all, 5);
	}
	if (sizes) {
		o->n_pp = parse_sizes(sizes, o->pp_sizes);
		set_sizes(o->st_sizes, &o->n_st, o->pp_sizes, o->n_pp);
	}
	o->seconds = seconds > 0			       ? seconds
		     : o->do_pollsweep			       ? POLLSWEEP_SECONDS
		     : o->do_ringsweep			       ? RINGSWEEP_SECONDS
		     : o->quick			       ? 1.0
							       : 2.0;
	if (o->do_connrate) {
		if (!iters_given)
			o->iters = 6000;
		if (!transports) {
			memset(o->selected, 0, sizeof o->selected);
			o->selected[T_HYBRID] = o->selected[T_TCP] = true;
		}
		if (o->selected[T_BARE])
			bad_usage("connrate: the bare ring has no connections");
		if (o->n_pp != 1)
			bad_usage("connrate takes one size");
	}
	o->ring_bytes = default_ring_bytes();
	choose_cpus(o, cpus);
}

static void progress(int k, int total, const char *what, enum tp_id t, size_t size, const char *result)
{
	char sz[32];
	fprintf(stderr, "[%3d/%d] %-8s %-13s %8s  %s\n", k, total, what, bench_transports[t].name,
		fmt_size(size, sz, sizeof sz), result);
	fflush(stderr);
}

static void pingpong_all(const struct bench_opts *o, struct bench_results *res, int *k, int total)
{
	size_t bytes = (size_t)o->iters * sizeof(uint32_t);
	uint32_t *samples[T_COUNT] = {NULL};
	bool failed[T_COUNT] = {false};
	char line[256];

	for (int t = 0; t < T_COUNT; t++) {
		if (!o->selected[t])
			continue;
		/* Shared: the measuring child writes its samples straight into it. */
		samples[t] = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE,
				  -1, 0);
		if (samples[t] == MAP_FAILED) {
			bench_err("%s: mmap of %zu bytes for samples: %s", bench_transports[t].name, bytes,
				  strerror(errno));
			samples[t] = NULL;
			failed[t] = true;
		}
	}
	/* Size-major, rounds inside: all transports of one size run close
	 * together in time, taking turns. */
	for (int s = 0; s < o->n_pp; s++) {
		long n[T_COUNT] = {0};
		bool bad[T_COUNT] = {false};
		for (int round = 0; round < BENCH_ROUNDS; round++)
			for (int t = 0; t < T_COUNT; t++) {
				if (!o->selected[t] || failed[t] || bad[t])
					continue;
				long got, cap = (o->iters - n[t]) / (BENCH_ROUNDS - round);
				if (cap < 1)
					continue;
				if (measure_pingpong(o, t, o->pp_sizes[s], o->seconds / BENCH_ROUNDS, samples[t] + n[t],
						     cap, &got) == 0)
					n[t] += got;
				else
					bad[t] = true;
			}
		for (int t = 0; t < T_COUNT; t++) {
			if (!o->selected[t])
				continue;
			struct pp_result *r = &res->pp[t][s];
			++*k;
			if (failed[t]) {
				progress(*k, total, "pingpong", t, o->pp_sizes[s], "skipped (failed earlier)");
				continue;
			}
			if (bad[t] || n[t] == 0) {
				failed[t] = true;
				snprintf(line, sizeof line, "FAILED (remaining sizes of %s skipped)",
					 bench_transports[t].name);
			} else {
				pp_stats(samples[t], n[t], r);
				r->ok = true;
				snprintf(line, sizeof line, "median %8.2f us   p99 %8.2f us   (%ld round trips)",
					 r->median_us, r->p99_us, r->iters);
			}
			progress(*k, total, "pingpong", t, o->pp_sizes[s], line);
		}
	}
	for (int t = 0; t < T_COUNT; t++)
		if (samples[t] && munmap(samples[t], bytes) != 0)
			bench_err("munmap: %s", strerror(errno));
}

static void stream_all(const struct bench_opts *o, struct bench_results *res, int *k, int total)
{
	bool failed[T_COUNT] = {false};
	char line[256];
	for (int s = 0; s < o->n_st; s++) {
		double bytes[T_COUNT] = {0}, secs[T_COUNT] = {0};
		bool bad[T_COUNT] = {false};
		for (int round = 0; round < BENCH_ROUNDS; round++)
			for (int t = 0; t < T_COUNT; t++) {
				if (!o->selected[t] || failed[t] || bad[t])
					continue;
				double b, sec;
				if (measure_stream(o, t, o->st_sizes[s], o->seconds / BENCH_ROUNDS, &b, &sec) == 0)
					bytes[t] += b, secs[t] += sec;
				else
					bad[t] = true;
			}
		for (int t = 0; t < T_COUNT; t++) {
			if (!o->selected[t])
				continue;
			struct st_result *r = &res->st[t][s];
			++*k;
			if (failed[t]) {
				progress(*k, total, "stream", t, o->st_sizes[s], "skipped (failed earlier)");
				continue;
			}
			if (bad[t] || secs[t] <= 0) {
				failed[t] = true;
				snprintf(line, sizeof line, "FAILED (remaining sizes of %s skipped)",
					 bench_transports[t].name);
			} else {
				r->ok = true;
				r->mbps = bytes[t] / secs[t] / 1e6;
				snprintf(line, sizeof line, "%10.1f MB/s", r->mbps);
			}
			progress(*k, total, "stream", t, o->st_sizes[s], line);
		}
	}
}

static void run_all(const struct bench_opts *o, struct bench_results *res)
{
	int nsel = 0;
	for (int t = 0; t < T_COUNT; t++)
		nsel += o->selected[t];
	int total = nsel * ((o->do_pingpong ? o->n_pp : 0) + (o->do_stream ? o->n_st : 0));
	int k = 0;

	if (o->do_pingpong)
		pingpong_all(o, res, &k, total);
	if (o->do_stream)
		stream_all(o, res, &k, total);
	if (o->do_xmax) {
		for (int s = 0; s < o->n_st; s++) {
			char sz[32];
			struct xmax_result *x = &res->xm[s];
			if (measure_xmax(o, o->st_sizes[s], x) == 0)
				fprintf(stderr, "[xmax]   %8s  Xt %.0f MB/s  Xr %.0f MB/s  X_max %.0f MB/s\n",
					fmt_size(o->st_sizes[s], sz, sizeof sz), x->xt_mbps, x->xr_mbps, x->xmax_mbps);
		}
	}
}

int main(int argc, char **argv)
{
	static struct bench_opts o;
	static struct bench_results res; /* large: keep it off the stack */

	/* Every bench here measures the rings, connection set-up included
	 * (connrate): connections are offered however short they are, unless
	 * the caller chose otherwise. */
	setenv("SCILAN_SHORT_CONNS", "accelerate", 0);
	parse_args(argc, argv, &o);
	if (mkdir_p(o.out_dir) != 0)
		return 1;
	/* The children inherit stdio buffers: flush before every fork happens. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (o.do_pathcount)
		return pathcount(&o) == 0 ? 0 : 1;
	if (o.do_connrate)
		return connrate(&o) == 0 ? 0 : 1;
	if (o.do_pollsweep || o.do_ringsweep) {
		int points = o.do_pollsweep ? o.n_think * (o.n_polls + 1) : o.n_rings * o.n_st * RS_TP;
		fprintf(stderr, "%s %s: %d points x %.3g s (about %.0f s), ", BENCH_PROG, o.mode, points, o.seconds,
			points * o.seconds * 1.15);
		if (o.pin)
			fprintf(stderr, "ends pinned to CPUs %d and %d\n", o.cpu[0], o.cpu[1]);
		else
			fprintf(stderr, "ends unpinned\n");
		return (o.do_pollsweep ? sweep_poll(&o) : sweep_ring(&o)) == 0 ? 0 : 1;
	}
	fprintf(stderr, "%s %s: up to %.3g s per transport per size, ring %llu KiB, ", BENCH_PROG, argv[optind],
		o.seconds, (unsigned long long)(o.ring_bytes >> 10));
	if (o.pin)
		fprintf(stderr, "ends pinned to CPUs %d and %d\n", o.cpu[0], o.cpu[1]);
	else
		fprintf(stderr, "ends unpinned\n");

	run_all(&o, &res);
	report_tables(&o, &res);
	int rc = report_csv(&o, &res) == 0 ? 0 : 1;
	report_plots(&o, &res);
	report_targets(&o, &res);
	return rc;
}
