/* test_numbers.c — descriptor numbers under the hook (progs/numbers.c)
 * against kernel TCP: closes nothing of ours sees and the numbers reused
 * after them, crowded and full descriptor tables, the limit's edges. */
#include <criterion/criterion.h>

#include <string.h>

#include "runner.h"

/* Issue 9: a close the hook does not see (syscall(SYS_close)), then a file,
 * pipe or socketpair on that number. */
Test(numbers, raw_close_then_new_descriptor, .timeout = 120) { hk_scenario("numbers", "raw_close", 3, -1, 30); }
/* A close nothing of ours sees (the syscall instruction), bytes still in an
 * undecided offer, then a socketpair on that number: the socketpair carries
 * its own bytes only, both ways, as over kernel TCP; under the hook the
 * offer's bytes are lost, the library says so, and the acceptor's first
 * read is a reset (a clean end of stream would hide the loss). */
Test(numbers, unseen_close_leaves_the_new_descriptor_alone, .timeout = 120)
{
	const char *argv[] = { hk_prog("numbers"), "unseen_close", NULL };
	const char *carried = "one way the socketpair carried 'unix'\n", *back = "the other way 'back'\n";
	struct hk_out plain, got;
	struct hk_env env = { 0 };

#if !defined(__x86_64__) && !defined(__aarch64__)
	cr_skip_test("no system call instruction written for this architecture (progs/numbers.c unseen_close)");
#endif
	hk_run(&env, argv, &plain, 30);
	cr_assert_eq(plain.rc, 0, "over kernel TCP: rc %d\n%s%s", plain.rc, plain.out, plain.err);
	cr_assert(strstr(plain.out, carried) && strstr(plain.out, back), "over kernel TCP:\n%s", plain.out);
	hk_run_hooked(argv, &got, 30);
	cr_expect_eq(got.rc, 0, "under the hook: rc %d\n%s", got.rc, got.err);
	cr_expect(strstr(got.out, "the socketpair got the connection's number: 1"), "%s", got.out);
	cr_expect(strstr(got.out, carried) && strstr(got.out, back),
		  "under the hook the socketpair carried someone else's bytes:\n%s", got.out);
	cr_assert(strstr(plain.out, "the acceptor read 10 (ring bytes)"), "over kernel TCP:\n%s", plain.out);
	cr_expect(strstr(got.err, "10 bytes waiting for the accepting side's decision: they are lost"),
		  "under the hook the lost bytes went unsaid:\n%s", got.err);
	cr_expect(strstr(got.out, "the acceptor read -1 (Connection reset by peer)"),
		  "under the hook the acceptor did not see the loss as a reset:\n%s", got.out);
	hk_out_free(&plain);
	hk_out_free(&got);
}
/* Numbers the library closed are the program's again: near the descriptor
 * limit a program got EBADF from close() on its own sockets. */
Test(numbers, numbers_the_library_closed_are_the_programs, .timeout = 120)
{
	hk_scenario("numbers", "reused_numbers", 8, -1, 30);
}
/* Near the descriptor limit the library's own descriptors give way: every
 * connection works (the later ones on kernel TCP), as on kernel TCP alone. */
Test(numbers, own_descriptors_give_way_near_the_limit, .timeout = 120)
{
	hk_scenario("numbers", "crowded", 2, -1, 30);
}
/* A client near its limit whose offers stay undecided on its side (it
 * sends and reads later): their segments' descriptors are given back. */
Test(numbers, undecided_offers_give_descriptors_back, .timeout = 120)
{
	hk_scenario("numbers", "crowded_sender", 2, -1, 30);
}
/* The library's own descriptors never take the numbers a program would get
 * on kernel TCP (redis left clients past its event-loop size unserved). */
Test(numbers, programs_numbers_stay_dense, .timeout = 120)
{
	/* Soft = hard = 8,192: ours stay within a quarter (2,048). */
	hk_scenario("numbers", "dense_numbers", 500, -1, 60);
}
/* A program whose soft limit is just what it needs keeps all of it: the
 * library's descriptors live above it, every connection on the rings. */
Test(numbers, program_keeps_its_whole_limit, .timeout = 120)
{
	hk_scenario("numbers", "whole_limit", 550, -1, 60);
}
/* Soft limit = hard limit: the library's descriptors come out of the
 * program's, and leave it at least 3/4 of the connections kernel TCP gives
 * (they once left it about a third). */
Test(numbers, equal_limits_keep_most_of_the_programs_capacity, .timeout = 120)
{
	hk_scenario("numbers", "full_limit", 1, -1, 60);
}
/* Soft = hard = 20,000: the library's first descriptors stay below 4,096
 * (a table grown to 20,000 cost a first connection some 40 us), and move
 * up once the program's numbers come near; the program's stay dense. */
Test(numbers, first_own_numbers_stay_low_then_give_way, .timeout = 120)
{
	hk_scenario("numbers", "young_top", 3, -1, 60);
}
