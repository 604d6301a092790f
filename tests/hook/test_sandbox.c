/* test_sandbox.c — a forked holder that confines itself with seccomp and
 * RLIMIT_NOFILE 1 (OpenSSH's pre-authentication child) while bytes are in
 * flight both ways (progs/sandbox.c).  Same transcript as kernel TCP. */
#include <criterion/criterion.h>

#include "runner.h"

/* The connection leaves the rings before the filter (sandbox_calls.c). */
Test(sandbox, seccomp_child_with_bytes_in_flight, .timeout = 120)
{
	hk_scenario("sandbox", "seccomp_child", 0, -1, 30);
}

/* A first thread made under a filter that kills for membarrier: the hook's
 * pthread_create registered the process for it first (process/self.c), and
 * the filter killed the program. */
Test(sandbox, first_thread_after_a_filter, .timeout = 60)
{
	hk_scenario("sandbox", "thread_after_filter", 0, -1, 30);
}
