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
