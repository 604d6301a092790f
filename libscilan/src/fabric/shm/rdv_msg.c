/* rdv_msg.c — the rendezvous's message on the wire: sent and received with
 * its descriptors, and an entry sent back to its queue as a carrier.
 */
#include "fabric/shm/rdv_msg.h"

#include <errno.h>
#include <string.h>

#include "runtime/fallback.h"
#include "runtime/log.h"
#include "runtime/sys.h"

void sl_rdv_close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++) {
		if (fds[i] >= 0)
			sl_sys.close(fds[i]);
		fds[i] = -1;
	}
}

ssize_t sl_rdv_msg_send(int conn, const struct rdv_msg *m, const int *fds, int n)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * RDV_MSG_FDS)];
	} ctl;
	struct iovec iov = { .iov_base = (void *)m, .iov_len = sizeof(*m) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			      .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	memset(&ctl, 0, sizeof(ctl));
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)n);
	return sl_sys.sendmsg(conn, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
}

int sl_rdv_msg_recv(int e, struct rdv_msg *m, int *fds, int want, int flags, bool partial_ok)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * (RDV_MSG_FDS + 1))];
	} ctl;
	struct iovec iov = { .iov_base = m, .iov_len = sizeof(*m) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			      .msg_controllen = sizeof(ctl.buf) };
	int got = 0;
	ssize_t n;

	for (int i = 0; i < want; i++)
		fds[i] = -1;
	n = sl_sys.recvmsg(e, &msg, flags | MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		size_t k;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (got < want)
				fds[got] = fd;
			else
				sl_sys.close(fd);
			got++;
		}
	}
	if (partial_ok && n == (ssize_t)sizeof(*m) && m->magic == RDV_MAGIC && (msg.msg_flags & MSG_CTRUNC) &&
	    got > 0 && got < want)
		return 1;
	if (n != (ssize_t)sizeof(*m) || got != want || (msg.msg_flags & MSG_CTRUNC) || m->magic != RDV_MAGIC) {
		/* An offer whose descriptors did not fit (EMFILE) is lost to
		 * us: the connection is kernel TCP for want of them. */
		if (msg.msg_flags & MSG_CTRUNC)
			sl_fb_hint(SL_FB_RESOURCE);
		sl_rdv_close_fds(fds, want < got ? want : got);
		return -1;
	}
	return 0;
}

void sl_rdv_requeue(const struct sockaddr_un *at, socklen_t at_len, int e, uint32_t hops)
{
	struct rdv_msg m = { .magic = RDV_MAGIC, .kind = RDV_CARRIER, .hops = hops + 1 };
	int c = sl_sys.socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (c >= 0) {
		if (sl_sys.connect(c, (const struct sockaddr *)at, at_len) < 0 || sl_rdv_msg_send(c, &m, &e, 1) < 0)
			sl_debug("an offer for another connection could not be queued again (%s)", strerror(errno));
		sl_sys.close(c);
	}
	sl_sys.close(e);
}

