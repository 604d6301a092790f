/* test_fence_policy.c — unit tests of the process's choice between unfenced
 * and fenced sends (fence_policy.c): fenced once peers sleep for our data,
 * unfenced again after connections whose peers never did. */
#include <criterion/criterion.h>

#include "sync/fence_policy.h"

Test(fence_policy, a_fresh_process_starts_unfenced)
{
	cr_assert(sl_fence_start_unfenced(), "polling ping-pong keeps its plain-store publish");
}

Test(fence_policy, sleeping_peers_make_new_connections_fenced)
{
	sl_fence_note(true);
	cr_assert_not(sl_fence_start_unfenced());
}

Test(fence_policy, quiet_connections_bring_unfenced_back)
{
	int quiet = 0;

	sl_fence_note(true);
	while (!sl_fence_start_unfenced() && quiet < 100) {
		sl_fence_note(false);
		quiet++;
	}
	cr_assert(sl_fence_start_unfenced(), "still fenced after 100 quiet connections");
	cr_assert_gt(quiet, 1, "one quiet connection outweighed a sleeping peer");
}

Test(fence_policy, evidence_is_bounded)
{
	int quiet = 0;

	for (int i = 0; i < 100000; i++)
		sl_fence_note(true);
	while (!sl_fence_start_unfenced() && quiet < 1000) {
		sl_fence_note(false);
		quiet++;
	}
	cr_assert_lt(quiet, 1000, "a long sleepy past keeps the process fenced for good");
}

Test(fence_policy, quiet_never_goes_below_unfenced)
{
	for (int i = 0; i < 10; i++)
		sl_fence_note(false);
	sl_fence_note(true);
	cr_assert_not(sl_fence_start_unfenced(), "quiet notes banked before a sleeping peer hid it");
}
