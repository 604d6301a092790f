/* test_bursts.c — many short connections at once to a server of several
 * processes (progs/bursts.c), under the hook at both ends against kernel
 * TCP: every connection on the rings, none waiting for the agreement's
 * second. */
#include <criterion/criterion.h>

#include "runner.h"

/* 16 clients, 75 connections each, to 8 pre-forked workers: an acceptor
 * scanning the rendezvous queue while another worker held its client's offer
 * (taken in that worker's own scan, to be sent back) left its connection
 * plain, and the client fell to kernel TCP after its 1 s bound: in the
 * transcript, a client with connections of 500 ms or more (the line's bound:
 * see bursts.c), and fewer connection ends accelerated than 2 x 1,208 (the
 * 1,200 and the 8 that stop the workers).  It failed in 6 runs of 6. */
Test(bursts, preforked_workers_find_every_offer, .timeout = 240)
{
	hk_scenario("bursts", "preforked", 2 * (16 * 75 + 8), -1, 120);
}

/* The same with 8 of the 16 clients not on scilan (no hook): theirs are
 * the only connections on kernel TCP, and no connection of either kind
 * waits 500 ms. */
Test(bursts, preforked_workers_tell_plain_clients_at_once, .timeout = 240)
{
	hk_scenario("bursts", "preforked_mixed", 2 * (8 * 75 + 8), 2 * (8 * 75 + 8), 120);
}

/* The same with 4 of the 8 workers given the listener over SCM_RIGHTS
 * instead of by fork: acceptors with the queue's shared lock and acceptors
 * without it still scan one at a time (the sender's mark), so every offer
 * is found. */
Test(bursts, workers_given_the_listener_find_every_offer, .timeout = 240)
{
	hk_scenario("bursts", "preforked_passed", 2 * (16 * 75 + 8), -1, 120);
}
