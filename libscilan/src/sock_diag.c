/* sock_diag.c — one exact NETLINK_SOCK_DIAG query (SOCK_DIAG_BY_FAMILY for a
 * 4-tuple) and the owner uid of the socket it names: the kernel's word on
 * who holds a TCP connection, which nothing in user space can forge.
 */
#include "sock_diag.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

#include "sys.h"

static void put_addr(__be32 *dst, const struct sl_key *k)
{
	memcpy(dst, k->addr, k->family == AF_INET ? 4 : 16);
}

int sl_diag_tcp_owner(const struct sl_key *local, const struct sl_key *remote, bool listener, uid_t *uid)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	/* One socket's answer: the message (~72 bytes) and the few attributes
	 * the kernel adds unasked (~50); a truncated one is not parsed (ENOENT).
	 * Small: this runs inside connect/accept, on the caller's stack. */
	union {
		struct nlmsghdr nlh;
		char buf[1024];
	} ans;
	int nl, err = ENOENT;
	ssize_t n;

	if (local->family != remote->family) {
		errno = EINVAL;
		return -1;
	}
	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = sizeof(req);
	req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nlh.nlmsg_flags = NLM_F_REQUEST;
	req.r.sdiag_family = (__u8)local->family;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = ~0u;
	/* The kernel looks it up as a segment from dst:dport to src:sport
	 * would be: src is the socket's own end. */
	req.r.id.idiag_sport = htons(local->port);
	/* From port 0 no connection can match: the lookup falls through to
	 * the listener, past a TIME_WAIT socket of the same 4-tuple. */
	req.r.id.idiag_dport = listener ? 0 : htons(remote->port);
	put_addr(req.r.id.idiag_src, local);
	put_addr(req.r.id.idiag_dst, remote);
	req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;

	nl = sl_sys.socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		return -1;
	if (sl_sys.sendto(nl, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) != (ssize_t)sizeof(req))
		goto fail;
	do
		n = sl_sys.recv(nl, &ans, sizeof(ans), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		goto fail;
	for (struct nlmsghdr *h = &ans.nlh; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);

			err = e->error ? -e->error : ENOENT;
			break;
		}
		if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY && h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
			const struct inet_diag_msg *m = NLMSG_DATA(h);

			/* Our own end, in the state asked for: a TIME_WAIT socket
			 * has no owner the kernel reports (0), so it says nothing. */
			if (m->id.idiag_sport != htons(local->port) ||
			    (listener ? m->idiag_state != TCP_LISTEN
				      : m->idiag_state == TCP_LISTEN || m->idiag_state == TCP_TIME_WAIT))
				break;
			*uid = m->idiag_uid;
			sl_sys.close(nl);
			return 0;
		}
	}
	sl_sys.close(nl);
	errno = err;
	return -1;
fail:
	err = errno;
	sl_sys.close(nl);
	errno = err;
	return -1;
}
