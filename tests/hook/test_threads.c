/* test_threads.c — a process that makes a thread before its first connection
 * (progs/threads.c) under the hook: what the kernel does behind an RCU grace
 * period once threads share a process (growing the descriptor table for the
 * library's own descriptors, the membarrier registration) was done before
 * the thread, so the first connection waits for neither.  Without it a
 * threaded client's first connect took 21-53 ms on this machine. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner.h"

static long number_after(const char *text, const char *label)
{
	const char *at = strstr(text, label);

	return at ? atol(at + strlen(label)) : -1;
}

Test(threads, first_connection_grows_nothing_shared, .timeout = 60)
{
	const char *argv[] = { hk_prog("threads"), "table_before_threads", NULL };
	struct hk_out got;
	long before, after;

	hk_run_hooked(argv, &got, 30);
	cr_assert_eq(got.rc, 0, "rc %d\n%s%s", got.rc, got.out, got.err);
	cr_expect_eq(hk_stat_sum(got.err, "accelerated"), 2, "%s", got.err);
	before = number_after(got.out, "FDSize after the thread: ");
	after = number_after(got.out, "FDSize after a connection: ");
	cr_expect(before > 0 && before == after,
		  "the descriptor table grew while threads shared it: %ld after the thread, %ld after the "
		  "connection\n%s", before, after, got.out);
	if (!strstr(got.out, "registered: unknown"))
		cr_expect(strstr(got.out, "global expedited registered: yes"),
			  "membarrier registration left for the first connection:\n%s", got.out);
	hk_out_free(&got);
}
