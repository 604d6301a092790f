/* io.h — what the data path's straight line (io.c) and its general case
 * (io_general.c) share: the one guard for everything rare on a send, and
 * the general calls the straight line hands a call to.
 */
#ifndef SCILAN_SOCKET_IO_H
#define SCILAN_SOCKET_IO_H

#include <errno.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "conn/agree.h"
#include "socket/sock_state.h"

/* A send to a dead peer fails within this many sends even if nothing sleeps. */
#define SENDS_PER_LIVENESS_CHECK 256

static inline ssize_t io_fail(int err)
{
	errno = err;
	return -1;
}

/* Nothing asks sl_agree_plain or send_blocker for a look: the agreement
 * settled (s->agree), and neither end reset, closed or moved to kernel TCP.
 * One load of the peer's state word serves every peer-side condition. */
static inline bool send_clear(struct sl_sock *s)
{
	uint32_t ps = atomic_load_explicit(&s->own_ctl->peer_state, memory_order_acquire);

	return !atomic_load_explicit(&s->agree, memory_order_relaxed) &&
	       !(ps & (SL_PEER_CLOSED | SL_PEER_RESET | SL_PEER_PLAIN)) && !sl_agree_moved(s, 0) &&
	       !atomic_load_explicit(&s->reset, memory_order_relaxed) &&
	       !atomic_load_explicit(&s->sent_after_close, memory_order_relaxed) &&
	       !atomic_load_explicit(&s->peer_gone, memory_order_relaxed);
}

/* recvmsg's control data, after it received: TCP_INQ's hint when the
 * socket asks for it (io_general.c), else none; msg_controllen says which. */
void sl_recvmsg_control(struct sl_sock *s, struct msghdr *msg);

/* A send or recv of len bytes (the iovec array's checked total) taken from
 * its start, in every case: io.c's straight line declined it untouched. */
ssize_t sl_send_general(struct sl_sock *s, const struct iovec *iov, int cnt, size_t len, int flags);
ssize_t sl_recv_general(struct sl_sock *s, const struct iovec *iov, int cnt, size_t len, int flags);

#endif
