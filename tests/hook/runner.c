/* runner.c — runs the hook tests' programs (runner.h): start with captured
 * output and a hang limit (the process group is killed), SCILAN_STATS parsing,
 * transcript diffs, and hk_scenario, the plain-versus-preloaded comparison. */
#include "runner.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The test binary is build/hooktests/test_x: programs and the hook are
 * found relative to it, so the tests run from any directory. */
static const char *build_dir(void)
{
	static char dir[PATH_MAX / 2];

	if (!dir[0]) {
		ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);

		cr_assert(n > 0, "readlink /proc/self/exe");
		dir[n] = '\0';
		*strrchr(dir, '/') = '\0'; /* build/hooktests */
		*strrchr(dir, '/') = '\0'; /* build */
	}
	return dir;
}

const char *hk_prog(const char *name)
{
	static char paths[8][PATH_MAX];
	static int slot;
	char *p = paths[slot++ % 8];

	snprintf(p, PATH_MAX, "%s/hookprogs/%s", build_dir(), name);
	cr_assert(access(p, X_OK) == 0, "scenario program %s missing", p);
	return p;
}

const char *hk_hook_lib(void)
{
	static char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/lib/libscilan_preload.so", build_dir());
	cr_assert(access(p, R_OK) == 0, "%s missing: make hook", p);
	return p;
}

char *hk_tmpdir(char **rundir, char **conf)
{
	char *d = strdup("/dev/shm/scilan-hooktest-XXXXXX");
	int fd;

	cr_assert(d && mkdtemp(d), "mkdtemp: %s", strerror(errno));
	cr_assert(asprintf(rundir, "%s/run", d) > 0 && asprintf(conf, "%s/cluster.conf", d) > 0);
	cr_assert(mkdir(*rundir, 0700) == 0, "mkdir %s: %s", *rundir, strerror(errno));
	fd = open(*conf, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	cr_assert(fd >= 0, "%s: %s", *conf, strerror(errno));
	close(fd);
	return d;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

int hk_sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

void hk_rmtree(const char *path)
{
	if (path)
		nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The limit the next hk_start hands the program (SCEN_LIMIT), 0: none. */
static unsigned next_limit;

void hk_start(struct hk_proc *p, const struct hk_env *e, const char *const argv[])
{
	int o[2], r[2];
	const char *args[64], *lib = e->preload ? hk_hook_lib() : NULL;
	char *vars[5] = { NULL };
	int n = 0;

	memset(p, 0, sizeof(*p));
	if (e->preload) {
		cr_assert(asprintf(&vars[0], "LD_PRELOAD=%s", lib) > 0);
		cr_assert(asprintf(&vars[1], "SCILAN_STATS=%s", e->stats ? e->stats : "stderr") > 0);
		cr_assert(asprintf(&vars[2], "SCILAN_RUNDIR=%s", e->rundir) > 0);
		cr_assert(asprintf(&vars[3], "SCILAN_CONF=%s", e->conf ? e->conf : "/dev/null") > 0);
		if (e->log)
			cr_assert(asprintf(&vars[4], "SCILAN_LOG=%s", e->log) > 0);
	}
	if (e->netns) {
		/* The settings go to the program through env(1), not to ip(8):
		 * the hook is for the program only. */
		args[n++] = "/usr/sbin/ip";
		args[n++] = "netns";
		args[n++] = "exec";
		args[n++] = e->netns;
		args[n++] = "/usr/bin/env";
		for (int i = 0; i < 5 && vars[i]; i++)
			args[n++] = vars[i];
	}
	for (int i = 0; e->wrap && e->wrap[i] && n < 63; i++)
		args[n++] = e->wrap[i];
	for (int i = 0; argv[i] && n < 63; i++)
		args[n++] = argv[i];
	args[n] = NULL;
	cr_assert(pipe2(o, O_CLOEXEC) == 0 && pipe2(r, O_CLOEXEC) == 0);
	fflush(NULL);
	p->pid = fork();
	cr_assert(p->pid >= 0, "fork: %s", strerror(errno));
	if (p->pid == 0) {
		/* Own process group: the hang limit kills everything it forked. */
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(o[1], STDOUT_FILENO);
		dup2(r[1], STDERR_FILENO);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGALRM, SIG_DFL);
		alarm(0);
		unsetenv("SCILAN_HANDOVER");
		unsetenv("SCILAN_LOG");
		unsetenv("SCILAN_POLL_US");
		unsetenv("SCILAN_RING_KB");
		if (next_limit) {
			char v[16];

			snprintf(v, sizeof(v), "%u", next_limit);
			setenv("SCEN_LIMIT", v, 1);
		}
		unsetenv("LD_PRELOAD");
		unsetenv("SCILAN_STATS");
		unsetenv("SCILAN_RUNDIR");
		unsetenv("SCILAN_CONF");
		for (int i = 0; !e->netns && i < 5 && vars[i]; i++)
			putenv(vars[i]);
		execv(args[0], (char *const *)args);
		fprintf(stderr, "exec %s: %s\n", args[0], strerror(errno));
		_exit(127);
	}
	setpgid(p->pid, p->pid); /* also here: no race with an early kill */
	for (int i = 0; i < 5; i++)
		free(vars[i]);
	close(o[1]);
	close(r[1]);
	p->out = o[0];
	p->err = r[0];
	p->obuf = calloc(1, 1);
	p->ebuf = calloc(1, 1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void append(int *fd, char **buf, size_t *len)
{
	char chunk[65536];
	ssize_t n = read(*fd, chunk, sizeof(chunk));

	if (n < 0 && errno == EINTR)
		return;
	if (n <= 0) {
		close(*fd);
		*fd = -1;
		return;
	}
	*buf = realloc(*buf, *len + (size_t)n + 1);
	cr_assert(*buf);
	memcpy(*buf + *len, chunk, (size_t)n);
	*len += (size_t)n;
	(*buf)[*len] = '\0';
}

/* Read whatever is ready until stop() holds, both pipes are at EOF, or the
 * deadline passes (false). */
static bool pump(struct hk_proc *p, double deadline, bool (*stop)(struct hk_proc *))
{
	while (p->out >= 0 || p->err >= 0) {
		struct pollfd f[2] = { { .fd = p->out, .events = POLLIN }, { .fd = p->err, .events = POLLIN } };
		double left = deadline - now_s();

		if (stop && stop(p))
			return true;
		if (left <= 0)
			return false;
		if (poll(f, 2, (int)(left * 1000) + 1) < 0 && errno != EINTR)
			cr_assert_fail("poll: %s", strerror(errno));
		if (p->out >= 0 && f[0].revents)
			append(&p->out, &p->obuf, &p->olen);
		if (p->err >= 0 && f[1].revents)
			append(&p->err, &p->ebuf, &p->elen);
	}
	return true;
}

static bool have_line(struct hk_proc *p)
{
	return strchr(p->obuf + p->ocons, '\n') != NULL;
}

bool hk_read_line(struct hk_proc *p, char *line, size_t size, unsigned limit_s)
{
	char *start, *nl;
	size_t n;

	if (!pump(p, now_s() + limit_s, have_line) || !have_line(p))
		return false;
	start = p->obuf + p->ocons;
	nl = strchr(start, '\n');
	n = (size_t)(nl - start);
	if (n >= size)
		n = size - 1;
	memcpy(line, start, n);
	line[n] = '\0';
	p->ocons = (size_t)(nl + 1 - p->obuf);
	return true;
}

void hk_finish(struct hk_proc *p, struct hk_out *o, unsigned limit_s)
{
	double deadline = now_s() + limit_s;
	int status = 0;
	pid_t w;

	if (!pump(p, deadline, NULL))
		p->timed_out = true;
	/* Output closed (or limit): the program should be gone or going. */
	while (!p->timed_out && (w = waitpid(p->pid, &status, WNOHANG)) == 0) {
		if (now_s() > deadline)
			p->timed_out = true;
		else
			usleep(10000);
	}
	if (p->timed_out) {
		kill(-p->pid, SIGKILL);
		kill(p->pid, SIGKILL);
		waitpid(p->pid, &status, 0);
		pump(p, now_s() + 2, NULL);
		o->rc = -1;
	} else {
		o->rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	}
	if (p->out >= 0)
		close(p->out);
	if (p->err >= 0)
		close(p->err);
	o->out = p->obuf;
	o->err = p->ebuf;
	if (p->timed_out) {
		char *e = NULL;

		cr_assert(asprintf(&e, "%s[runner: killed at the %u s hang limit]\n", o->err, limit_s) > 0);
		free(o->err);
		o->err = e;
	}
}

void hk_run(const struct hk_env *e, const char *const argv[], struct hk_out *o, unsigned limit_s)
{
	struct hk_proc p;

	/* The program stops itself a little before we would kill it, so its
	 * transcript (and its kids') shows where it hung. */
	next_limit = limit_s > 10 ? limit_s - 5 : limit_s;
	hk_start(&p, e, argv);
	next_limit = 0;
	hk_finish(&p, o, limit_s);
}

void hk_out_free(struct hk_out *o)
{
	free(o->out);
	free(o->err);
	o->out = o->err = NULL;
}

/* line: up to its '\n' (the search must not run on into the next lines:
 * any line followed by a stats line would pass for one). */
static bool is_stats(const char *line)
{
	const char *nl = strchr(line, '\n'), *at;

	if (strncmp(line, "scilan: pid ", 12) != 0 || !(at = strstr(line, ": accelerated ")))
		return false;
	return !nl || at < nl;
}

/* The default level's one line per fallback reason per process
 * (fallback.c): expected wherever a scenario has a fallback. */
static bool is_fallback_notice(const char *line)
{
	const char *nl = strchr(line, '\n'), *at;

	if (strncmp(line, "scilan: pid ", 12) != 0 || !(at = strstr(line, ": notice: ")))
		return false;
	return (!nl || at < nl) && (at = strstr(line, ": kernel TCP, ")) && (!nl || at < nl);
}

long hk_stat_sum(const char *err, const char *field)
{
	char key[64];
	long sum = -1;

	snprintf(key, sizeof(key), "%s%s ", strcmp(field, "accelerated") == 0 ? ": " : ", ", field);
	for (const char *line = err; line && *line;) {
		const char *nl = strchr(line, '\n');

		if (is_stats(line)) {
			const char *at = strstr(line, key);

			if (at && (!nl || at < nl))
				sum = (sum < 0 ? 0 : sum) + strtol(at + strlen(key), NULL, 10);
		}
		line = nl ? nl + 1 : NULL;
	}
	return sum;
}

int hk_stat_lines(const char *err)
{
	int n = 0;

	for (const char *line = err; line && *line;) {
		const char *nl = strchr(line, '\n');

		n += is_stats(line);
		line = nl ? nl + 1 : NULL;
	}
	return n;
}

char *hk_non_stats(const char *err)
{
	size_t len = strlen(err), n = 0;
	char *out = calloc(1, len + 1);

	for (const char *line = err; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t l = nl ? (size_t)(nl - line + 1) : strlen(line);

		if (!is_stats(line) && !is_fallback_notice(line)) {
			memcpy(out + n, line, l);
			n += l;
		}
		line = nl ? nl + 1 : NULL;
	}
	out[n] = '\0';
	return out;
}

char *hk_diff(const char *a, const char *b)
{
	char fa[] = "/tmp/hk-diff-a-XXXXXX", fb[] = "/tmp/hk-diff-b-XXXXXX", cmd[128], *out = calloc(1, 1);
	int da = mkstemp(fa), db = mkstemp(fb);
	size_t len = 0;
	FILE *f;

	cr_assert(da >= 0 && db >= 0);
	cr_assert(write(da, a, strlen(a)) == (ssize_t)strlen(a) && write(db, b, strlen(b)) == (ssize_t)strlen(b));
	close(da);
	close(db);
	snprintf(cmd, sizeof(cmd), "diff -u --label kernel-tcp --label preloaded %s %s", fa, fb);
	f = popen(cmd, "r");
	if (f) {
		char chunk[4096];
		size_t n;

		while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
			out = realloc(out, len + n + 1);
			memcpy(out + len, chunk, n);
			len += n;
			out[len] = '\0';
		}
		pclose(f);
	}
	unlink(fa);
	unlink(fb);
	return out;
}

void hk_run_pair(const struct hk_env *se, const struct hk_env *ce, const char *listen_addr, const char *connect_addr,
		 long bytes, struct hk_out *srv, struct hk_out *cli, unsigned limit_s)
{
	const char *sargv[] = { hk_prog("peer"), "server", listen_addr, NULL };
	char line[64], port[16], nbytes[24], *rest;
	struct hk_proc sp;
	bool started;

	hk_start(&sp, se, sargv);
	started = hk_read_line(&sp, line, sizeof(line), limit_s);
	if (!started || sscanf(line, "port %15s", port) != 1) {
		hk_finish(&sp, srv, 5);
		cr_assert_fail("peer server did not start: rc %d\n%s%s", srv->rc, srv->out, srv->err);
	}
	snprintf(nbytes, sizeof(nbytes), "%ld", bytes);
	{
		const char *cargv[] = { hk_prog("peer"), "client", connect_addr, port, nbytes, NULL };

		hk_run(ce, cargv, cli, limit_s);
	}
	hk_finish(&sp, srv, limit_s);
	rest = strdup(srv->out + sp.ocons);
	free(srv->out);
	srv->out = rest;
}

void hk_check_run(const char *what, const struct hk_out *ref, const struct hk_out *got, bool preloaded, long accelerated,
		  long fallback)
{
	char *extra = hk_non_stats(got->err);

	cr_expect_eq(got->rc, 0, "%s: rc %d; stderr:\n%s", what, got->rc, got->err);
	if (strcmp(ref->out, got->out) != 0)
		cr_expect_fail("%s: transcript differs from kernel TCP's\n%s", what, hk_diff(ref->out, got->out));
	if (preloaded && got->rc == 0) {
		cr_expect_str_empty(extra, "%s: stderr besides the stats lines:\n%s", what, extra);
		cr_expect(hk_stat_lines(got->err) > 0, "%s: no SCILAN_STATS line", what);
		if (accelerated >= 0)
			cr_expect_eq(hk_stat_sum(got->err, "accelerated"), accelerated, "%s: accelerated %ld, expected %ld:\n%s",
				     what, hk_stat_sum(got->err, "accelerated"), accelerated, got->err);
		if (fallback >= 0)
			cr_expect_eq(hk_stat_sum(got->err, "fallback"), fallback, "%s: fallback %ld, expected %ld:\n%s", what,
				     hk_stat_sum(got->err, "fallback"), fallback, got->err);
	} else if (!preloaded) {
		cr_expect_str_empty(got->err, "%s: stderr of a plain run:\n%s", what, got->err);
	}
	free(extra);
}

void hk_scenario(const char *prog, const char *scenario, long min_accel, long max_accel, unsigned limit_s)
{
	const char *argv[] = { hk_prog(prog), scenario, NULL };
	struct hk_env plain = { 0 }, pre = { .preload = true };
	struct hk_out ref, got;
	char *rundir, *conf, *tmp = hk_tmpdir(&rundir, &conf), *extra;
	long accel;

	pre.rundir = rundir;
	pre.conf = conf;
	hk_run(&plain, argv, &ref, limit_s);
	cr_assert_eq(ref.rc, 0, "%s %s over kernel TCP (the scenario itself is broken): rc %d\n%s%s", prog, scenario,
		     ref.rc, ref.out, ref.err);
	cr_assert_str_empty(ref.err, "%s %s over kernel TCP wrote to stderr:\n%s", prog, scenario, ref.err);
	hk_run(&pre, argv, &got, limit_s);
	hk_rmtree(tmp);
	extra = hk_non_stats(got.err);
	accel = hk_stat_sum(got.err, "accelerated");
	cr_expect_eq(got.rc, 0, "%s %s under the hook: rc %d; stderr:\n%s", prog, scenario, got.rc, got.err);
	if (strcmp(ref.out, got.out) != 0)
		cr_expect_fail("%s %s: transcripts differ\n%s", prog, scenario, hk_diff(ref.out, got.out));
	cr_expect_str_empty(extra, "%s %s under the hook: stderr besides the stats lines:\n%s", prog, scenario, extra);
	/* A program that died has no stats line of its own: rc says it all. */
	if (got.rc == 0) {
		cr_expect(hk_stat_lines(got.err) > 0, "%s %s under the hook: no SCILAN_STATS line (hook not loaded?)",
			  prog, scenario);
		cr_expect(accel >= min_accel && (max_accel < 0 || accel <= max_accel),
			  "%s %s under the hook: accelerated %ld, expected %ld..%ld; stats:\n%s", prog, scenario, accel,
			  min_accel, max_accel, got.err);
	}
	free(extra);
	hk_out_free(&ref);
	hk_out_free(&got);
	free(rundir);
	free(conf);
	free(tmp);
}

void hk_run_hooked(const char *const argv[], struct hk_out *o, unsigned limit_s)
{
	struct hk_env pre = { .preload = true };
	char *rundir, *conf, *tmp = hk_tmpdir(&rundir, &conf);

	pre.rundir = rundir;
	pre.conf = conf;
	hk_run(&pre, argv, o, limit_s);
	hk_rmtree(tmp);
	free(rundir);
	free(conf);
	free(tmp);
}

long hk_scenario_stat(const char *prog, const char *scenario, const char *field, unsigned limit_s, char **err)
{
	const char *argv[] = { hk_prog(prog), scenario, NULL };
	struct hk_out got;
	long sum;

	hk_run_hooked(argv, &got, limit_s);
	cr_assert_eq(got.rc, 0, "%s %s under the hook: rc %d\n%s", prog, scenario, got.rc, got.err);
	sum = hk_stat_sum(got.err, field);
	*err = strdup(got.err ? got.err : "");
	hk_out_free(&got);
	return sum;
}
