/* test_fds.c — descriptor calls on sockets (progs/fds.c) under the hook
 * against kernel TCP: fcntl, ioctl FIONREAD/FIONBIO, dup/dup2/dup3, and
 * fdopen + stdio on a socket, numbers the hook holds for itself, and the
 * standard streams on a socket. */
#include <criterion/criterion.h>

#include <string.h>

#include "runner.h"

Test(fds, fcntl_nonblock_dupfd_cloexec, .timeout = 120) { hk_scenario("fds", "fcntl", 1, -1, 30); }
Test(fds, ioctl_fionread_fionbio, .timeout = 120) { hk_scenario("fds", "ioctl", 1, -1, 30); }
Test(fds, dup_dup2_dup3_aliases, .timeout = 120) { hk_scenario("fds", "dup", 1, -1, 30); }
Test(fds, fdopen_stdio, .timeout = 120) { hk_scenario("fds", "stdio", 1, -1, 30); }
Test(fds, close_range_closes_sockets, .timeout = 120) { hk_scenario("fds", "close_range", 1, -1, 30); }
Test(fds, foreign_numbers_dup2_close_close_range, .timeout = 120) { hk_scenario("fds", "foreign_numbers", 1, -1, 30); }
Test(fds, std_streams_on_socket, .timeout = 120) { hk_scenario("fds", "std_streams", 1, -1, 30); }
/* Issue 9: dup3 onto a number already open (a file, another connection). */
Test(fds, dup3_onto_open_numbers, .timeout = 120) { hk_scenario("fds", "dup3_open", 2, -1, 30); }
/* Issue 9: dup, fcntl(F_DUPFD*) and accept landing on 0-2 switch the standard stream too. */
Test(fds, std_streams_on_lowest_numbers, .timeout = 120) { hk_scenario("fds", "std_lowest", 2, -1, 30); }
/* Issue 9: a close the hook does not see (syscall(SYS_close)), then a file,
 * pipe or socketpair on that number. */
Test(fds, raw_close_then_new_descriptor, .timeout = 120) { hk_scenario("fds", "raw_close", 3, -1, 30); }
/* A close nothing of ours sees (the syscall instruction), bytes still in an
 * undecided offer, then a socketpair on that number: the socketpair carries
 * its own bytes only, both ways, as over kernel TCP; under the hook the
 * offer's bytes are lost, the library says so, and the acceptor's first
 * read is a reset (a clean end of stream would hide the loss). */
Test(fds, unseen_close_leaves_the_new_descriptor_alone, .timeout = 120)
{
	const char *argv[] = { hk_prog("fds"), "unseen_close", NULL };
	const char *carried = "one way the socketpair carried 'unix'\n", *back = "the other way 'back'\n";
	struct hk_out plain, got;
	struct hk_env env = { 0 };

#if !defined(__x86_64__) && !defined(__aarch64__)
	cr_skip_test("no system call instruction written for this architecture (progs/fds.c unseen_close)");
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
Test(fds, numbers_the_library_closed_are_the_programs, .timeout = 120)
{
	hk_scenario("fds", "reused_numbers", 8, -1, 30);
}
/* Near the descriptor limit the library's own descriptors give way: every
 * connection works (the later ones on kernel TCP), as on kernel TCP alone. */
Test(fds, own_descriptors_give_way_near_the_limit, .timeout = 120)
{
	hk_scenario("fds", "crowded", 2, -1, 30);
}
/* A client near its limit whose offers stay undecided on its side (it
 * sends and reads later): their segments' descriptors are given back. */
Test(fds, undecided_offers_give_descriptors_back, .timeout = 120)
{
	hk_scenario("fds", "crowded_sender", 2, -1, 30);
}
/* The library's own descriptors never take the numbers a program would get
 * on kernel TCP (redis left clients past its event-loop size unserved). */
Test(fds, programs_numbers_stay_dense, .timeout = 120)
{
	/* Soft = hard = 8,192: ours stay within a quarter (2,048). */
	hk_scenario("fds", "dense_numbers", 500, -1, 60);
}
/* A program whose soft limit is just what it needs keeps all of it: the
 * library's descriptors live above it, every connection on the rings. */
Test(fds, program_keeps_its_whole_limit, .timeout = 120)
{
	hk_scenario("fds", "whole_limit", 550, -1, 60);
}
/* Soft limit = hard limit: the library's descriptors come out of the
 * program's, and leave it at least 3/4 of the connections kernel TCP gives
 * (they once left it about a third). */
Test(fds, equal_limits_keep_most_of_the_programs_capacity, .timeout = 120)
{
	hk_scenario("fds", "full_limit", 1, -1, 60);
}
/* Soft = hard = 20,000: the library's first descriptors stay below 4,096
 * (a table grown to 20,000 cost a first connection some 40 us), and move
 * up once the program's numbers come near; the program's stay dense. */
Test(fds, first_own_numbers_stay_low_then_give_way, .timeout = 120)
{
	hk_scenario("fds", "young_top", 3, -1, 60);
}
