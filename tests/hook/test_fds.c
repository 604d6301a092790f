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
