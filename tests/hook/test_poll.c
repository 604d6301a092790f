/* test_poll.c — poll, ppoll, select and pselect (progs/poll.c) under the hook
 * against kernel TCP: mixed sets of sockets, a pipe, a listener and a UDP
 * socket; zero, finite and infinite timeouts; signal masks. */
#include <criterion/criterion.h>

#include "runner.h"

Test(poll, poll_mixed_set, .timeout = 120) { hk_scenario("poll", "poll", 1, -1, 30); }
Test(poll, ppoll_mask_and_timeouts, .timeout = 120) { hk_scenario("poll", "ppoll", 1, -1, 30); }
Test(poll, select_mixed_set, .timeout = 120) { hk_scenario("poll", "select", 1, -1, 30); }
Test(poll, pselect_mask_and_mixed_set, .timeout = 120) { hk_scenario("poll", "pselect", 1, -1, 30); }
