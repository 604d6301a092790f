/* test_promotion.c — connections that began on kernel TCP (the short-
 * connection policy kept them there) move onto the rings while they carry
 * data, under unmodified programs (progs/promote.c): the transcript is
 * kernel TCP's, every byte checked, and SCILAN_STATS counts the moves at
 * both ends. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "runner.h"

/* prog scenario plain, then under the hook: the same transcript, and
 * `promoted` moves counted over both ends' stats lines. */
static void expect_promoted(const char *scenario, long promoted)
{
	const char *argv[] = { hk_prog("promote"), scenario, NULL };
	struct hk_env plain = { 0 }, pre = { .preload = true };
	char *rundir, *conf, *tmp = hk_tmpdir(&rundir, &conf), *extra;
	struct hk_out ref, got;
	long moved;

	pre.rundir = rundir;
	pre.conf = conf;
	hk_run(&plain, argv, &ref, 60);
	cr_assert_eq(ref.rc, 0, "promote %s over kernel TCP: rc %d\n%s%s", scenario, ref.rc, ref.out, ref.err);
	hk_run(&pre, argv, &got, 60);
	hk_rmtree(tmp);
	extra = hk_non_stats(got.err);
	cr_expect_eq(got.rc, 0, "promote %s under the hook: rc %d\n%s%s", scenario, got.rc, got.out, got.err);
	if (strcmp(ref.out, got.out) != 0)
		cr_expect_fail("promote %s: transcripts differ\n%s", scenario, hk_diff(ref.out, got.out));
	cr_expect_str_empty(extra, "promote %s: stderr besides the stats lines:\n%s", scenario, extra);
	/* The field is printed only when not 0. */
	moved = hk_stat_sum(got.err, "promoted");
	cr_expect(hk_stat_lines(got.err) >= 2, "promote %s: no stats lines from both ends:\n%s", scenario, got.err);
	cr_expect_eq(moved < 0 ? 0 : moved, promoted, "promote %s: promoted %ld, expected %ld:\n%s", scenario, moved,
		     promoted, got.err);
	free(extra);
	hk_out_free(&ref);
	hk_out_free(&got);
	free(rundir);
	free(conf);
	free(tmp);
}

/* Issue 26's pool: opened right after 500 short connections, so on kernel
 * TCP first (reason short); each of its 4 connections moves while it
 * carries request-response traffic (sizes up to 16 KiB, checked), counted
 * once at each end. */
Test(promotion, a_pool_opened_after_short_connections_moves_onto_the_rings, .timeout = 120)
{
	expect_promoted("pool", 2 * 4);
}

/* Both ends streaming both ways at once, a reader and a writer thread each:
 * the move waits for the kernel calls in flight, and no byte is lost or
 * doubled in either direction. */
Test(promotion, a_full_duplex_stream_moves_with_every_byte, .timeout = 120)
{
	expect_promoted("duplex", 2);
}

/* The acceptor's threads wait in epoll sets (level-triggered, blocking
 * reads): each kernel member follows its connection onto the rings (the
 * sets reconcile at their next wait, and the client's switch marker is
 * never reported as a request). */
Test(promotion, a_server_in_epoll_moves_with_every_byte, .timeout = 120)
{
	expect_promoted("epoll", 2 * 4);
}

/* One edge-triggered event loop serves the pool (nonblocking, the way
 * nginx registers connections), and the client waits for each reply in a
 * level-triggered set: both sets follow, no edge is lost across the
 * switch, and no reply is wrong. */
Test(promotion, an_edge_triggered_event_loop_moves_with_every_byte, .timeout = 120)
{
	expect_promoted("evloop", 2 * 4);
}

/* The event loop's thread hands each ready connection to a worker and
 * sleeps in epoll_wait meanwhile: the worker's calls move the connections,
 * and the sleeper still wakes for the requests that then come on the
 * rings (a move another thread made rings the sets' promotion bell). */
Test(promotion, an_event_loop_with_a_worker_thread_moves_with_every_byte, .timeout = 120)
{
	expect_promoted("mtloop", 2 * 4);
}

/* An edge-triggered writer that never reads again streams 256 MiB through
 * the move: its seam stays pending, and its EPOLLOUT edges come from its
 * ring from the take on (the kernel socket's went quiet). */
Test(promotion, an_edge_triggered_writer_keeps_its_edges_across_the_move, .timeout = 120)
{
	expect_promoted("etwriter", 2);
}

/* Moved while the client's bytes wait unread on the server's kernel socket,
 * the server then waiting a second in an edge-triggered set without
 * reading them: its waits return once (the move), not again and again
 * (they did, some 150,000 times, while an edge-triggered member whose seam
 * was pending was asked for EPOLLIN whenever its kernel socket was
 * readable). */
Test(promotion, an_edge_triggered_reader_that_holds_back_is_not_woken_again_and_again, .timeout = 120)
{
	expect_promoted("etidle", 2);
}

/* EPOLLONESHOT, re-armed by the server after each request: the kernel
 * disarms such a member unseen, so the hook keeps those connections on
 * kernel TCP, and every reply is still right. */
Test(promotion, a_server_re_arming_epolloneshot_keeps_kernel_tcp_and_every_byte, .timeout = 120)
{
	expect_promoted("oneshot", 0);
}

/* A server that reads its connection through io_uring, which the hook never
 * sees: nothing moves, and its replies are intact. */
Test(promotion, an_io_uring_server_keeps_kernel_tcp_and_every_byte, .timeout = 120)
{
	expect_promoted("uring", 0);
}

/* A server that reads and writes through syscall(2): the hook takes those
 * calls on its sockets, so the pool moves as with libc's calls, and no
 * read hands the connector's switch marker to the program. */
Test(promotion, a_server_calling_syscall_moves_with_every_byte, .timeout = 120)
{
	expect_promoted("raw", 2 * 4);
}

/* A blocking send while the connector's late offer is out, the kernel
 * socket full (the server reads nothing for 3 s), interrupted by a signal
 * whose handler does not ask SA_RESTART: it returns the part it sent, as
 * the kernel's send does, and that part is what the server reads (it
 * waited for room ignoring the signal, until the offer's deadline, then
 * sent everything once the server read).  Nothing moves: the close
 * revokes the offer the sleeping server never looked at. */
Test(promotion, a_send_interrupted_while_offering_returns_what_it_sent, .timeout = 120)
{
	expect_promoted("sendintr", 0);
}

/* A client waiting in poll(POLLIN) for its answer while its late offer is
 * out: the acceptor's take puts a marker byte on the kernel socket, which
 * the kernel reports readable; the wait must not end for it (the program's
 * recv would find nothing), only for the answer, on the rings by then. */
Test(promotion, poll_reports_readable_for_the_answer_not_the_acceptors_marker, .timeout = 120)
{
	expect_promoted("pollmark", 2);
}

/* The same through the hook's queued poll (8 idle listeners beside it). */
Test(promotion, a_queued_poll_reports_readable_for_the_answer_not_the_marker, .timeout = 120)
{
	expect_promoted("pollmarkq", 2);
}

/* A reader asking MSG_WAITALL while its connection moves: the read that
 * spans the seam (the peer's last kernel bytes, then its first on the
 * ring) is whole, as the kernel's, not cut at the seam. */
Test(promotion, a_msg_waitall_read_across_the_seam_is_whole, .timeout = 120)
{
	expect_promoted("waitall", 2);
}

/* A read blocked across a pending seam (the acceptor took the offer, the
 * idle connector has not followed) ends with 0 when another thread shuts
 * the reading side down, as the kernel's does: it waited on the kernel
 * socket, which the shutdown did not reach (the scenario hung).  Both ends
 * count the move: the connector follows at its close. */
Test(promotion, shutdown_rd_ends_a_read_blocked_across_the_seam, .timeout = 120)
{
	expect_promoted("shutrd", 2);
}

/* The same blocked read interrupted by a signal whose handler asks
 * SA_RESTART: it goes on, and returns the peer's next bytes, as the
 * kernel's recv does (it returned EINTR). */
Test(promotion, a_read_across_the_seam_restarts_after_an_sa_restart_handler, .timeout = 120)
{
	expect_promoted("readrestart", 2);
}
