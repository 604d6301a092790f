/* wait.h — the sleep side of the protocol (wait.c): one socket's wait
 * (sl_wait), and poll over many (scilan_poll in scilan.h; sl_poll_sigmask).
 */
#ifndef SCILAN_WAIT_H
#define SCILAN_WAIT_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>

#include "socket/sock_state.h"

/* Sleep until s is ready for events (the sleep protocol of ARCHITECTURE.md),
 * spinning first unless the caller already did: 0 when ready, -1 with errno
 * EINTR or EAGAIN (SO_RCVTIMEO/SO_SNDTIMEO expired). */
int sl_wait(struct sl_sock *s, short events, bool spin_first);

/* The kernel's poll of exactly these entries, or ppoll under mask (a
 * ppoll/pselect/epoll_pwait caller's: its signals wake the sleep). */
int sl_poll_kernel(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask);
/* scilan_poll whose kernel sleeps run under mask (ppoll semantics); mask may be NULL. */
int sl_poll_sigmask(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask);

#endif
