/* test_agree.c — connections one end of which bypasses the hook
 * (progs/agree.c): io_uring data calls after a hooked connect, io_uring and
 * raw-syscall acceptors on a hooked listener, an acceptor that cannot open
 * the offer, close right after send.  Same transcript as kernel TCP. */
#include <criterion/criterion.h>

#include "runner.h"

/* The plain acceptors: the client's offer is revoked, nothing accelerated. */
Test(agree, uring_acceptor_waits_for_request, .timeout = 120) { hk_scenario("agree", "uring_server", 0, 0, 30); }
Test(agree, raw_acceptor_waits_for_request, .timeout = 120) { hk_scenario("agree", "raw_client_first", 0, 0, 30); }
Test(agree, raw_acceptor_speaks_first, .timeout = 120) { hk_scenario("agree", "raw_banner", 0, 0, 30); }
Test(agree, raw_acceptor_speaks_first_epoll_wait, .timeout = 120)
{
	hk_scenario("agree", "raw_banner_epoll", 0, 0, 30);
}
Test(agree, close_right_after_send_to_plain_acceptor, .timeout = 120)
{
	hk_scenario("agree", "close_after_send", 0, 0, 30);
}
Test(agree, exec_before_plain_acceptor_spoke, .timeout = 120)
{
	hk_scenario("agree", "exec_while_offered", 0, 0, 30);
}
Test(agree, acceptor_cannot_open_offer, .timeout = 120) { hk_scenario("agree", "starved_acceptor", 0, 0, 30); }
/* An acceptor out of descriptors: with room for the rendezvous connection
 * but none of what it passes, the offer is lost to it (the client moves
 * after its 1 s bound); holding the client's segment but not all it needs
 * with it, it refuses the offer and the client moves at once (test_reasons:
 * "refused"); with room for all of it but less than an eighth of its limit
 * left, it refuses too (own_fd.c).  Every byte arrives. */
Test(agree, starved_acceptor_without_room_for_what_is_passed, .timeout = 120)
{
	hk_scenario("agree", "starved_offer_file", 0, 0, 30);
}
Test(agree, starved_acceptor_refuses_passed_segment, .timeout = 120)
{
	hk_scenario("agree", "starved_rdv_segment", 0, 0, 30);
}
Test(agree, starved_acceptor_near_its_limit_refuses, .timeout = 120)
{
	hk_scenario("agree", "starved_rdv_bell", 0, 0, 30);
}
/* The descriptors are passed, not opened through /proc: a client the
 * server may not ptrace (non-dumpable) is accelerated all the same. */
Test(agree, undumpable_client_accelerated, .timeout = 120)
{
	hk_scenario("agree", "undumpable_client", 2, 2, 30);
}

/* A hooked server that accepts 2.5 s after the connect (its backlog): the
 * connection still waits in the listener's queue when the agreement's second
 * is up, so the client waits on; both ends on the rings. */
Test(agree, late_acceptor_still_accelerated, .timeout = 120)
{
	hk_scenario("agree", "late_acceptor", 2, 2, 30);
}

/* A hooked echo server whose client connected through the hook, then sends
 * and receives with io_uring: the server's rings never see a byte. */
Test(agree, uring_client_after_hooked_connect, .timeout = 120) { hk_scenario("agree", "uring_client", 0, -1, 30); }

/* A hooked acceptor that only reads, through io_uring, a request larger
 * than the ring: the client blocks on a ring nobody frees; after the stall
 * bound it moves to kernel TCP and every byte arrives (it hung before). */
Test(agree, uring_reader_of_more_than_a_ring, .timeout = 120) { hk_scenario("agree", "uring_reader", 0, -1, 30); }

/* A hooked acceptor that reads through io_uring only after the writer sent
 * less than a ring and closed without waiting: the writer's close moves
 * the bytes nobody took onto the kernel socket (the reader got 0 of them
 * and EOF before). */
Test(agree, uring_reader_after_writer_closed, .timeout = 120)
{
	hk_scenario("agree", "uring_reader_after_close", 0, -1, 30);
}
Test(agree, uring_reader_after_writer_exited, .timeout = 120)
{
	hk_scenario("agree", "uring_reader_after_exit", 0, -1, 30);
}
