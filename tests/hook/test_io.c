/* test_io.c — the data calls (progs/io.c) under the hook against kernel TCP:
 * read/write, readv/writev/sendmsg/recvmsg up to IOV_MAX, the send/recv
 * families and their flags, EPIPE/SIGPIPE, sendfile, 64 MiB each way. */
#include <criterion/criterion.h>

#include "runner.h"

Test(io, read_write_sizes, .timeout = 120) { hk_scenario("io", "rw", 1, -1, 30); }
Test(io, readv_writev_sendmsg_recvmsg_iov_max, .timeout = 120) { hk_scenario("io", "vec", 1, -1, 30); }
Test(io, send_recv_flags_peek_dontwait_waitall, .timeout = 120) { hk_scenario("io", "flags", 1, -1, 30); }
Test(io, epipe_sigpipe_nosignal, .timeout = 120) { hk_scenario("io", "epipe", 1, -1, 30); }
Test(io, sendfile_file_to_socket, .timeout = 120) { hk_scenario("io", "sendfile", 1, -1, 30); }
Test(io, large_64mib_both_ways, .timeout = 240) { hk_scenario("io", "large", 1, -1, 90); }
Test(io, nonblocking_full_then_pollout, .timeout = 120) { hk_scenario("io", "nonblock", 1, -1, 30); }
/* Issue 9: the file shrinks under a large sendfile: a short count, no SIGBUS. */
Test(io, sendfile_of_a_file_truncated_meanwhile, .timeout = 120) { hk_scenario("io", "sendfile_truncated", 1, -1, 30); }
