/* test_stdfd.c — connections on the standard descriptors and writers glibc
 * runs with internal calls (progs/stdfd.c) under the hook against kernel TCP:
 * diagnostics never join a connection's data, dprintf/vdprintf; where the
 * SCILAN_STATS line goes (never a redirected stderr unless asked). */
#include <criterion/criterion.h>

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner.h"

/* Issue 9: SCILAN_STATS and log lines while stderr is a connection. */
Test(stdfd, diagnostics_stay_out_of_a_connection_on_stderr, .timeout = 120) { hk_scenario("stdfd", "stderr_conn", 3, -1, 30); }
/* Issue 9: dprintf and vdprintf on a connection. */
Test(stdfd, dprintf_vdprintf, .timeout = 120) { hk_scenario("stdfd", "dprintf", 1, -1, 30); }
/* Issue 9: a connection inherited through posix_spawn/posix_spawnp. */
Test(stdfd, posix_spawn_child_serves_the_connection, .timeout = 120) { hk_scenario("stdfd", "spawn", 2, -1, 30); }
/* Issue 9: system() and popen() shells that use an inherited connection. */
Test(stdfd, system_and_popen_shells_use_a_connection, .timeout = 120) { hk_scenario("stdfd", "system_popen", 2, -1, 30); }

/* The statistics line sums each open connection once, not once per
 * descriptor naming it (dup aliases). */
Test(stdfd, stats_count_an_aliased_connection_once, .timeout = 120)
{
	const char *argv[] = { hk_prog("stdfd"), "alias_counters", NULL };
	struct hk_out got;

	hk_run_hooked(argv, &got, 30);
	cr_assert_eq(got.rc, 0, "rc %d\n%s%s", got.rc, got.out, got.err);
	cr_expect_eq(hk_stat_sum(got.err, "accelerated"), 2, "%s", got.err);
	cr_expect_eq(hk_stat_sum(got.err, "tx"), 2000, "%s", got.err);
	cr_expect_eq(hk_stat_sum(got.err, "rx"), 2000, "%s", got.err);
	hk_out_free(&got);
}

/* Lines of text that begin with prefix. */
static int lines_starting(const char *text, const char *prefix)
{
	int n = 0;

	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');

		n += strncmp(line, prefix, strlen(prefix)) == 0;
		line = nl ? nl + 1 : NULL;
	}
	return n;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *text = calloc(1, 1 << 16);
	size_t n;

	cr_assert_not_null(text);
	if (!f)
		return text;
	n = fread(text, 1, (1 << 16) - 1, f);
	text[n] = '\0';
	fclose(f);
	return text;
}

/* Run `stdfd stats_forks` (four processes) under the hook with
 * SCILAN_STATS=stats, its stderr redirected to a file (as a test harness
 * does, libuv's among them): what that file got into *err, and what the
 * runtime directory's log got into *log (*tmp_out: to remove). */
static void stats_forks(const char *stats, char **err, char **log, char **rundir_out, char **tmp_out)
{
	char *rundir, *conf, *tmp = hk_tmpdir(&rundir, &conf), errfile[512], cmd[1024], path[512];
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	struct hk_env pre = { .preload = true, .stats = stats };
	struct hk_out got;

	snprintf(errfile, sizeof(errfile), "%s/prog.err", tmp);
	snprintf(cmd, sizeof(cmd), "exec %s stats_forks 2>%s", hk_prog("stdfd"), errfile);
	pre.rundir = rundir;
	pre.conf = conf;
	hk_run(&pre, argv, &got, 30);
	cr_assert_eq(got.rc, 0, "rc %d\n%s%s", got.rc, got.out, got.err);
	*err = slurp(errfile);
	snprintf(path, sizeof(path), "%s/stats.log", rundir);
	*log = slurp(path);
	*rundir_out = rundir;
	*tmp_out = tmp;
	hk_out_free(&got);
	free(conf);
}

/* The default: a program's stderr that is not a terminal gets none of our
 * bytes; the runtime directory's log gets the line of each process, which
 * `scilan_ctl stat --exited` shows. */
Test(stdfd, stats_by_default_stay_out_of_a_redirected_stderr, .timeout = 120)
{
	char *err, *log, *rundir, *tmp, cmd[1024], out[8192];
	size_t n;
	FILE *p;

	stats_forks("1", &err, &log, &rundir, &tmp);
	cr_expect(!strstr(err, "scilan"), "our bytes in the program's stderr:\n%s", err);
	cr_expect_eq(lines_starting(log, "scilan: pid "), 4, "not one line per process in the log:\n%s", log);
	cr_expect_eq(hk_stat_sum(log, "accelerated"), 8, "%s", log);
	snprintf(cmd, sizeof(cmd), "SCILAN_RUNDIR=%s %s/../bin/scilan_ctl stat --exited", rundir,
		 dirname(strdup(hk_hook_lib())));
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	cr_expect_eq(pclose(p), 0, "%s failed", cmd);
	cr_expect_str_eq(out, log, "scilan_ctl stat --exited:\n%s\nthe log:\n%s", out, log);
	hk_rmtree(tmp);
	free(tmp);
	free(err);
	free(log);
	free(rundir);
}

/* A file the user names: one whole line per process, appended. */
Test(stdfd, stats_to_a_named_file_one_line_per_process, .timeout = 120)
{
	char *err, *log, *rundir, *tmp, path[512], value[520], *file;

	snprintf(path, sizeof(path), "/dev/shm/scilan-stats-%d.txt", (int)getpid());
	unlink(path);
	snprintf(value, sizeof(value), "%s", path);
	stats_forks(value, &err, &log, &rundir, &tmp);
	hk_rmtree(tmp);
	free(tmp);
	file = slurp(path);
	unlink(path);
	cr_expect(!strstr(err, "scilan"), "our bytes in the program's stderr:\n%s", err);
	cr_expect_str_empty(log, "the runtime directory's log got:\n%s", log);
	cr_expect_eq(lines_starting(file, "scilan: pid "), 4, "not one line per process:\n%s", file);
	cr_expect_eq(hk_stat_lines(file), 4, "%s", file);
	cr_expect_eq(hk_stat_sum(file, "accelerated"), 8, "%s", file);
	free(err);
	free(log);
	free(rundir);
	free(file);
}
