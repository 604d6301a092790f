/* test_leftovers.c — the runtime directory under the hook (progs/leftovers.c):
 * forked workers ending with _exit leave nothing after later sweeps, and the
 * statistics-file lock survives a program reusing its descriptor number, and
 * the file lives from the first connection to the process's exit. */
#include <criterion/criterion.h>

#include "runner.h"

Test(leftovers, workers_ending_with_exit_are_swept, .timeout = 120)
{
	hk_scenario("leftovers", "workers_exit", 20, -1, 60);
}

Test(leftovers, lock_number_reused_by_the_program, .timeout = 120)
{
	hk_scenario("leftovers", "lock_number_reused", 1, -1, 30);
}

Test(leftovers, stats_file_kept_until_exit, .timeout = 120)
{
	hk_scenario("leftovers", "kept_until_exit", 5, -1, 30);
}
