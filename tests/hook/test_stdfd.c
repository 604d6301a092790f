/* test_stdfd.c — connections on the standard descriptors and writers glibc
 * runs with internal calls (progs/stdfd.c) under the hook against kernel TCP:
 * diagnostics never join a connection's data, dprintf/vdprintf. */
#include <criterion/criterion.h>

#include "runner.h"

/* Issue 9: SCILAN_STATS and log lines while stderr is a connection. */
Test(stdfd, diagnostics_stay_out_of_a_connection_on_stderr, .timeout = 120) { hk_scenario("stdfd", "stderr_conn", 3, -1, 30); }
/* Issue 9: dprintf and vdprintf on a connection. */
Test(stdfd, dprintf_vdprintf, .timeout = 120) { hk_scenario("stdfd", "dprintf", 1, -1, 30); }
/* Issue 9: a connection inherited through posix_spawn/posix_spawnp. */
Test(stdfd, posix_spawn_child_serves_the_connection, .timeout = 120) { hk_scenario("stdfd", "spawn", 2, -1, 30); }
/* Issue 9: system() and popen() shells that use an inherited connection. */
Test(stdfd, system_and_popen_shells_use_a_connection, .timeout = 120) { hk_scenario("stdfd", "system_popen", 2, -1, 30); }
