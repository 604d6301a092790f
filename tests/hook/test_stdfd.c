/* test_stdfd.c — connections on the standard descriptors and writers glibc
 * runs with internal calls (progs/stdfd.c) under the hook against kernel TCP:
 * diagnostics never join a connection's data, dprintf/vdprintf. */
#include <criterion/criterion.h>

#include <stdlib.h>

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
	struct hk_env pre = { .preload = true };
	char *rundir, *conf, *tmp = hk_tmpdir(&rundir, &conf);
	struct hk_out got;

	pre.rundir = rundir;
	pre.conf = conf;
	hk_run(&pre, argv, &got, 30);
	hk_rmtree(tmp);
	cr_assert_eq(got.rc, 0, "rc %d\n%s%s", got.rc, got.out, got.err);
	cr_expect_eq(hk_stat_sum(got.err, "accelerated"), 2, "%s", got.err);
	cr_expect_eq(hk_stat_sum(got.err, "tx"), 2000, "%s", got.err);
	cr_expect_eq(hk_stat_sum(got.err, "rx"), 2000, "%s", got.err);
	hk_out_free(&got);
	free(rundir);
	free(conf);
	free(tmp);
}
