/* test_tcp.c — kernel TCP's corner semantics (progs/tcp.c) under the hook
 * against kernel TCP: abortive close, which send learns of a closed peer and
 * with which errno, urgent data (MSG_OOB, SIOCATMARK, SO_OOBINLINE, POLLPRI,
 * EPOLLPRI, select exceptfds), the receive low-water mark (SO_RCVLOWAT),
 * MSG_TRUNC, MSG_ZEROCOPY with its completions, FIONREAD, SIOCOUTQ,
 * TCP_INQ and a client's TCP Fast Open. */
#include <criterion/criterion.h>

#include "runner.h"

Test(tcp, abortive_close_so_linger_zero, .timeout = 120) { hk_scenario("tcp", "abort", 9, -1, 60); }
Test(tcp, send_after_peer_close_accepted_then_epipe, .timeout = 120) { hk_scenario("tcp", "closed_peer", 7, -1, 60); }
Test(tcp, urgent_byte_oob_atmark_oobinline_pollpri_select, .timeout = 120) { hk_scenario("tcp", "urgent", 9, -1, 60); }
Test(tcp, urgent_epoll_recvmsg_peek_blocking_both_ways, .timeout = 120) { hk_scenario("tcp", "urgent_more", 5, -1, 60); }
/* Each exiting kid may leave before its accept: its offer is then revoked
 * at exit and that connection is kernel TCP (ARCHITECTURE.md, "Agreement"). */
Test(tcp, peer_exits_without_close_eof_or_reset, .timeout = 120) { hk_scenario("tcp", "exit", 3, -1, 60); }
Test(tcp, urgent_sigurg_to_owner_and_close_after_urgent, .timeout = 120) { hk_scenario("tcp", "sigurg", 4, -1, 60); }
Test(tcp, so_rcvlowat_poll_epoll_blocking_recv_eof, .timeout = 120) { hk_scenario("recvflags", "rcvlowat", 2, 2, 60); }
Test(tcp, so_rcvlowat_inherited_by_accepted_socket, .timeout = 120) { hk_scenario("recvflags", "inherited", 2, 2, 60); }
Test(tcp, msg_trunc_discards_with_null_buffer, .timeout = 120) { hk_scenario("recvflags", "trunc", 2, 2, 60); }
/* The first pair moves to kernel TCP at its zero-copy send (reasons
 * zerocopy and peer-moved); the second stays on the rings. */
Test(tcp, msg_zerocopy_completes_on_kernel_tcp, .timeout = 120) { hk_scenario("zerocopy", "zerocopy", 2, 2, 60); }
Test(tcp, fionread_siocoutq_delivered_unread, .timeout = 120) { hk_scenario("queues", "ioctls", 2, 2, 60); }
Test(tcp, tcp_inq_control_message, .timeout = 120) { hk_scenario("queues", "inq", 2, 2, 60); }
/* TCP_FASTOPEN_CONNECT defers the SYN to the first write, which the rings
 * would take: every connection waited out its offer (1 s) and ended on
 * kernel TCP.  All 3 on the rings at both ends now, the option read back. */
Test(tcp, tcp_fastopen_connect_rides_the_rings, .timeout = 120) { hk_scenario("fastopen", "connect", 2 * 3, -1, 60); }
/* sendto(MSG_FASTOPEN) connects inside the kernel's call: kernel TCP. */
Test(tcp, msg_fastopen_sendto_on_kernel_tcp, .timeout = 120) { hk_scenario("fastopen", "sendto", 0, -1, 60); }
