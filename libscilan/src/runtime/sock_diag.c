/* sock_diag.c — one exact NETLINK_SOCK_DIAG query (SOCK_DIAG_BY_FAMILY for a
 * 4-tuple) and the owner uid and cookie of the socket it names: the kernel's word on
 * who holds a TCP connection, which nothing in user space can forge.  The
 * netlink socket is kept for the next query of this process, as long as it
 * is in the asking socket's network namespace.
 */
#include "runtime/sock_diag.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/own_fd.h"
#include "socket/sock_state.h"
#include "runtime/sys.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

/* A query socket: opening and closing one was half of a query's cost
 * (~4 of ~7 us), paid on both ends of every connection.  Taken by one
 * thread at a time; a fork child (pid) opens its own, so the answers of
 * two processes never mix in one socket. */
struct kept {
	int fd;
	pid_t pid;
	uint64_t netns; /* SO_NETNS_COOKIE of its network namespace */
	/* The user namespace it was opened in: the kernel reports owners in
	 * the opener's terms, and our SO_PEERCRED in today's (unshare, setns
	 * of a user namespace since): a kept socket of another would compare
	 * uids of two namespaces (peer_uid.h). */
	uint64_t userns;
	uint32_t seq;
	/* It could not be moved out of the program's numbers (a limit too
	 * low to go above): used once, never kept, so it never holds the
	 * number the next descriptor of the same accept needs. */
	bool among_programs;
};

static struct kept *_Atomic kept;

static bool netns_cookie(int fd, uint64_t *cookie)
{
	socklen_t len = sizeof(*cookie);

	return sl_sys.getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, cookie, &len) == 0 && len == sizeof(*cookie);
}

/* The inode of our user namespace now, 0 unknown (then nothing is kept). */
static uint64_t userns_now(void)
{
	struct stat st;

	return stat("/proc/self/ns/user", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

static void drop(struct kept *k)
{
	if (k->pid == sl_self_pid)
		sl_own_fd_close(k->fd);
	else if (k->fd >= 0)
		sl_sys.close(k->fd); /* the parent's number: our copy only */
	free(k);
}

/* A socket for a query about a socket of tcp's network namespace: the
 * kept one if it is ours and there, else a new one (kept afterwards only
 * if the kernel can tell its namespace).  NULL with errno. */
static struct kept *take(int tcp)
{
	struct kept *k = atomic_exchange(&kept, NULL);
	uint64_t want, userns = userns_now();
	bool known = netns_cookie(tcp, &want) && userns;
	int fd;

	if (k && (k->pid != sl_self_pid || !known || k->netns != want || k->userns != userns)) {
		drop(k);
		k = NULL;
	}
	if (k)
		return k;
	k = malloc(sizeof(*k));
	if (!k) {
		errno = ENOMEM;
		return NULL;
	}
	k->pid = sl_self_pid;
	k->userns = userns;
	k->seq = 0;
	fd = sl_sys.socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	k->fd = sl_own_fd(fd);
	k->among_programs = k->fd == fd;
	if (k->fd < 0) {
		free(k);
		return NULL;
	}
	/* Unknown (a kernel before 5.14): used once, never kept. */
	if (!known || !netns_cookie(k->fd, &k->netns) || k->netns != want)
		k->netns = 0;
	return k;
}

/* clean: nothing of this query is left to read. */
static void put(struct kept *k, bool clean)
{
	struct kept *none = NULL;

	if (!clean || !k->netns || k->among_programs || !atomic_compare_exchange_strong(&kept, &none, k))
		drop(k);
}

void sl_diag_renumber(int from, int to)
{
	struct kept *k = atomic_load(&kept);

	if (k && k->fd == from)
		k->fd = to;
}

void sl_diag_drop_kept(void)
{
	struct kept *k = atomic_exchange(&kept, NULL);

	if (k)
		drop(k);
}

static void put_addr(__be32 *dst, const struct sl_key *k)
{
	memcpy(dst, k->addr, k->family == AF_INET ? 4 : 16);
}

/* What the kernel says of one socket. */
struct found {
	uid_t uid;
	uint32_t inode; /* 0: no process holds it (queued, or orphaned) */
	uint8_t state;
	uint64_t cookie; /* SO_COOKIE of the socket */
};

static int lookup(int tcp, const struct sl_key *local, const struct sl_key *remote, bool listener, struct found *f)
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
	struct kept *k;
	int err = ENOENT;
	ssize_t n;

	if (local->family != remote->family) {
		errno = EINVAL;
		return -1;
	}
	k = take(tcp);
	if (!k)
		return -1;
	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = sizeof(req);
	req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nlh.nlmsg_flags = NLM_F_REQUEST;
	req.nlh.nlmsg_seq = ++k->seq;
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
	/* A link-local end is found only on its interface, as the kernel's own
	 * lookup for an arriving segment finds it: without it, a socket bound
	 * to the interface (every link-local connection) is not found. */
	req.r.id.idiag_if = local->scope ? local->scope : remote->scope;
	req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;

	if (sl_sys.sendto(k->fd, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) != (ssize_t)sizeof(req))
		goto fail;
	/* The one answer to an exact request (no dump, no ack): once read,
	 * nothing of this query is left for the next one. */
	do
		n = sl_sys.recv(k->fd, &ans, sizeof(ans), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		goto fail;
	for (struct nlmsghdr *h = &ans.nlh; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_seq != k->seq) /* never for a socket only this query used */
			break;
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
			f->uid = m->idiag_uid;
			f->inode = m->idiag_inode;
			f->state = m->idiag_state;
			f->cookie = (uint64_t)m->id.idiag_cookie[0] | (uint64_t)m->id.idiag_cookie[1] << 32;
			put(k, true);
			return 0;
		}
	}
	put(k, false);
	errno = err;
	return -1;
fail:
	err = errno;
	put(k, false);
	errno = err;
	return -1;
}

int sl_diag_tcp_listener_owner(int tcp, const struct sl_key *local, const struct sl_key *remote, uid_t *uid)
{
	struct found f;

	if (lookup(tcp, local, remote, true, &f) < 0)
		return -1;
	*uid = f.uid;
	return 0;
}

int sl_diag_tcp_identity(int tcp, const struct sl_key *local, const struct sl_key *remote, uid_t *uid,
			 uint64_t *cookie)
{
	struct found f;

	if (lookup(tcp, local, remote, false, &f) < 0)
		return -1;
	*uid = f.uid;
	*cookie = f.cookie;
	return 0;
}

int sl_diag_tcp_queued(int tcp, const struct sl_key *local, const struct sl_key *remote)
{
	struct found f;

	if (lookup(tcp, local, remote, false, &f) < 0)
		return -1;
	if (f.inode || (f.state != TCP_ESTABLISHED && f.state != TCP_SYN_RECV))
		return 0;
	/* Held by nobody is also a child its listener left behind when it
	 * closed (killed as the handshake completed): queued only while a
	 * listener would still take it. */
	return lookup(tcp, local, remote, true, &f) == 0;
}
