/* recv_control.c — the control data a recvmsg on a ring connection gets:
 * TCP_INQ's count of what is left to read, as the kernel's tcp_inq_hint
 * would give it (the kernel's own recvmsg fills in the rest).
 */
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

#include "conn/promotion.h"
#include "ring/layout.h"
#include "ring/segment.h"
#include "runtime/sys.h"
#include "socket/io.h"
#include "sync/ring_lock.h"

/* Whether the socket asks for TCP_INQ: known since socket() or its
 * setsockopt, else (a socket from another process, an accepted one) asked
 * of the kernel once. */
static bool inq_wanted(struct sl_sock *s)
{
	int on = atomic_load_explicit(&s->tcp_inq, memory_order_relaxed);
	socklen_t len = sizeof(on);

	if (on < 0) {
		if (sl_sys.getsockopt(s->fd, IPPROTO_TCP, TCP_INQ, &on, &len) < 0)
			on = 0;
		on = on != 0;
		atomic_store_explicit(&s->tcp_inq, on, memory_order_relaxed);
	}
	return on;
}

void sl_recvmsg_control(struct sl_sock *s, struct msghdr *msg)
{
	size_t room = msg->msg_control ? msg->msg_controllen : 0;
	struct cmsghdr *cm;
	int64_t waiting;
	uint32_t ps;
	int inq;

	msg->msg_controllen = 0;
	if (!inq_wanted(s))
		return;
	if (room < CMSG_SPACE(sizeof(inq))) {
		msg->msg_flags |= MSG_CTRUNC;
		return;
	}
	ps = atomic_load_explicit(&s->own_ctl->peer_state, memory_order_acquire);
	sl_lock(&s->rx_lock);
	waiting = s->seg ? sl_promote_rx_waiting(s) : 0;
	sl_unlock(&s->rx_lock);
	inq = waiting <= 0 ? 0 : waiting > INT_MAX ? INT_MAX : (int)waiting;
	/* As tcp_inq_hint: after the peer's FIN, a reader is told to go on
	 * reading, to see it. */
	if (!inq && ((ps & (SL_PEER_SHUT_WR | SL_PEER_CLOSED | SL_PEER_RESET)) || atomic_load(&s->peer_gone)))
		inq = 1;
	cm = (struct cmsghdr *)msg->msg_control;
	cm->cmsg_level = IPPROTO_TCP;
	cm->cmsg_type = TCP_CM_INQ;
	cm->cmsg_len = CMSG_LEN(sizeof(inq));
	memcpy(CMSG_DATA(cm), &inq, sizeof(inq));
	msg->msg_controllen = CMSG_SPACE(sizeof(inq));
}
