// SPDX-License-Identifier: GPL-2.0
/* scilan_sock.c — who may use a port: every device operation names one of
 * the caller's own TCP sockets (holding the descriptor is the proof), and the
 * driver reads the listen key, the connection's source or its 4-tuple from
 * that socket instead of trusting numbers.  Also the listen table's matching
 * of an incoming CONNECT (namespace and who made it, family, address, port).
 */
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/net.h>
#include <linux/seq_file.h>
#include <linux/tcp.h>
#include <linux/user_namespace.h>
#include <net/addrconf.h>
#include <net/inet_hashtables.h>
#include <net/inet6_hashtables.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <net/route.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "scilan.h"

/* The caller's TCP socket behind fd, with a reference; NULL and *err. */
static struct socket *sl_tcp_sock(int fd, int *err)
{
	struct socket *sock = sockfd_lookup(fd, err);
	struct sock *sk;

	if (!sock)
		return NULL; /* *err: EBADF, or ENOTSOCK */
	sk = sock->sk;
	if (!sk || sk->sk_type != SOCK_STREAM || sk->sk_protocol != IPPROTO_TCP ||
	    (sk->sk_family != AF_INET && sk->sk_family != AF_INET6)) {
		sockfd_put(sock);
		*err = -EPROTONOSUPPORT;
		return NULL;
	}
	return sock;
}

static bool sl_addr_any(const struct in6_addr *a)
{
	return ipv6_addr_any(a) || (ipv6_addr_v4mapped(a) && !a->s6_addr32[3]);
}

/* The socket's own (bound) address, IPv4 as IPv4-mapped. */
static void sl_sk_local(struct sock *sk, struct in6_addr *a)
{
	if (sk->sk_family == AF_INET)
		ipv6_addr_set_v4mapped(sk->sk_rcv_saddr, a);
	else
		*a = sk->sk_v6_rcv_saddr;
}

static void sl_sk_remote(struct sock *sk, struct in6_addr *a)
{
	if (sk->sk_family == AF_INET)
		ipv6_addr_set_v4mapped(sk->sk_daddr, a);
	else
		*a = sk->sk_v6_daddr;
}

/* Is a one of this namespace's own addresses? */
static bool sl_addr_local(struct net *net, const struct in6_addr *a)
{
	if (ipv6_addr_v4mapped(a))
		return inet_addr_type(net, a->s6_addr32[3]) == RTN_LOCAL;
	return ipv6_chk_addr(net, a, NULL, 0);
}

/* A namespace root made: owned by the initial user namespace.  Anyone can
 * make a namespace of its own (a user namespace, then a network namespace in
 * it) and be root there: add any address, bind any port.
 */
static bool sl_net_privileged(const struct net *net)
{
	return net->user_ns == &init_user_ns;
}

/* Is a an address of any live namespace root made? */
static bool sl_addr_privileged_local(const struct in6_addr *a)
{
	struct net *net;
	bool local = false;

	rcu_read_lock();
	for_each_net_rcu(net) {
		if (sl_net_privileged(net) && check_net(net) && sl_addr_local(net, a)) {
			local = true;
			break;
		}
	}
	rcu_read_unlock();
	return local;
}

int sl_sock_listener(int fd, struct sock **skp)
{
	struct socket *sock;
	struct sock *sk;
	int err;

	sock = sl_tcp_sock(fd, &err);
	if (!sock)
		return err;
	sk = sock->sk;
	if (READ_ONCE(sk->sk_state) != TCP_LISTEN || !inet_sk(sk)->inet_num) {
		sockfd_put(sock);
		return -EINVAL;
	}
	sock_hold(sk);
	*skp = sk;
	sockfd_put(sock);
	return 0;
}

/* The socket of t's namespace that holds the 4-tuple t (a full socket, a
 * time-wait one, or a request), with a reference; NULL if none.  dif: the
 * device a socket bound with SO_BINDTODEVICE is bound to (0: none).
 */
static struct sock *sl_tuple_holder(struct net *net, const struct sl_tuple *t, int dif)
{
	struct sock *o;

	rcu_read_lock();
	if (ipv6_addr_v4mapped(&t->saddr))
		o = __inet_lookup_established(net, net->ipv4.tcp_death_row.hashinfo,
					      t->daddr.s6_addr32[3], htons(t->dport),
					      t->saddr.s6_addr32[3], t->sport, dif, 0);
	else
		o = __inet6_lookup_established(net, net->ipv4.tcp_death_row.hashinfo,
					       &t->daddr, htons(t->dport), &t->saddr, t->sport,
					       dif, 0);
	rcu_read_unlock();
	return o;
}

/* Another live socket already holds this 4-tuple (the victim of a tag
 * hijack, whose source address and port an SO_REUSEADDR socket may share). */
static bool sl_tuple_taken(struct net *net, struct sock *mine, const struct sl_tuple *t)
{
	struct sock *o = sl_tuple_holder(net, t, 0);

	if (!o)
		return false;
	sock_gen_put(o);
	return o != mine;
}

/* The proof that sk, the socket a client endpoint connected with, is the
 * client of the companion connection t: the kernel keeps at most one
 * connection per 4-tuple, and the one holding t now is sk in a synchronized
 * state, or the time-wait socket sk became (same sequence numbers: a socket
 * that never had this connection cannot show them).  A socket that merely
 * shares the source port (SO_REUSEADDR) and never connected proves nothing.
 */
bool sl_sock_holds_tuple(struct sock *sk, const struct sl_tuple *t)
{
	const int synced = TCPF_ESTABLISHED | TCPF_FIN_WAIT1 | TCPF_FIN_WAIT2 | TCPF_CLOSING |
			   TCPF_CLOSE_WAIT | TCPF_LAST_ACK;
	struct sock *o = sl_tuple_holder(sock_net(sk), t, READ_ONCE(sk->sk_bound_dev_if));
	bool mine = false;

	if (!o)
		return false;
	if (o == sk) {
		mine = (1 << READ_ONCE(sk->sk_state)) & synced;
	} else if (o->sk_state == TCP_TIME_WAIT) {
		const struct tcp_timewait_sock *tw = tcp_twsk(o);

		mine = READ_ONCE(tw->tw_snd_nxt) == READ_ONCE(tcp_sk(sk)->snd_nxt) &&
		       READ_ONCE(tw->tw_rcv_nxt) == READ_ONCE(tcp_sk(sk)->rcv_nxt);
	}
	sock_gen_put(o);
	return mine;
}

/* The client's initial sequence number of the connection, which both ends
 * can tell from their own socket for as long as it lives: snd_una and
 * bytes_acked (which counts the SYN) advance together on the client,
 * rcv_nxt and bytes_received (which does not) on the server.  It ties a
 * confirmation the client gave earlier to this connection of the 4-tuple,
 * not an earlier one.
 */
u32 sl_sock_client_isn(struct sock *sk, bool server)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	u32 isn;

	lock_sock(sk);
	if (server)
		isn = tp->rcv_nxt - (u32)tp->bytes_received - 1;
	else
		isn = tp->snd_una - (u32)tp->bytes_acked;
	release_sock(sk);
	return isn;
}

int sl_sock_connecting(int fd, const struct scilan_connect *req, struct sl_tuple *t,
		       struct net **netp, struct sock **skp)
{
	struct socket *sock;
	struct sock *sk;
	struct net *net;
	int err = 0, state;

	sock = sl_tcp_sock(fd, &err);
	if (!sock)
		return err;
	sk = sock->sk;
	net = sock_net(sk);
	memcpy(&t->daddr, req->daddr, sizeof(t->daddr));
	t->dport = req->dport;
	t->sport = inet_sk(sk)->inet_num;
	sl_sk_local(sk, &t->saddr);
	if (!t->sport || !t->dport || sl_addr_any(&t->daddr)) {
		err = -EINVAL; /* unbound: the source is not fixed yet */
		goto out;
	}
	if (sl_addr_any(&t->saddr)) {
		/* Bound to the wildcard: the source is the address routing
		 * picks, which the caller names; it must be ours.
		 */
		memcpy(&t->saddr, req->saddr, sizeof(t->saddr));
		if (sl_addr_any(&t->saddr) || !sl_addr_local(net, &t->saddr)) {
			err = -EADDRNOTAVAIL;
			goto out;
		}
	}
	/* A namespace of the caller's own may hold any address: not one of
	 * root's, whose 4-tuples it could then queue at the peer ahead of the
	 * real client's (the peer pairs the newest).
	 */
	if (!sl_net_privileged(net) && sl_addr_privileged_local(&t->saddr)) {
		err = -EADDRNOTAVAIL;
		goto out;
	}
	if (ipv6_addr_v4mapped(&t->saddr) != ipv6_addr_v4mapped(&t->daddr) ||
	    (sk->sk_family == AF_INET && !ipv6_addr_v4mapped(&t->daddr))) {
		err = -EAFNOSUPPORT;
		goto out;
	}
	state = READ_ONCE(sk->sk_state);
	if (state == TCP_CLOSE && (req->flags & SCILAN_CONNECT_LATE)) {
		err = -ENOTCONN;
		goto out;
	}
	if (state != TCP_CLOSE) {
		/* Already connecting: only to the destination it names. */
		struct in6_addr peer;

		sl_sk_remote(sk, &peer);
		if (state != TCP_SYN_SENT && state != TCP_ESTABLISHED) {
			err = -EISCONN;
			goto out;
		}
		/* A late connect moves a live connection: one that both ends
		 * can still write to.
		 */
		if ((req->flags & SCILAN_CONNECT_LATE) && state != TCP_ESTABLISHED) {
			err = -ENOTCONN;
			goto out;
		}
		if (!ipv6_addr_equal(&peer, &t->daddr) || ntohs(inet_sk(sk)->inet_dport) != t->dport) {
			err = -EINVAL;
			goto out;
		}
	}
	if (sl_tuple_taken(net, sk, t)) {
		err = -EADDRINUSE;
		goto out;
	}
	*netp = get_net(net);
	sock_hold(sk); /* the proof at VERIFY and at release */
	*skp = sk;
out:
	sockfd_put(sock);
	return err;
}

int sl_sock_accepted(int fd, struct sl_tuple *t, struct net **netp, u32 *isn)
{
	struct socket *sock;
	struct sock *sk;
	int err = 0, state;

	sock = sl_tcp_sock(fd, &err);
	if (!sock)
		return err;
	sk = sock->sk;
	state = READ_ONCE(sk->sk_state);
	/* The client may have sent everything and closed already. */
	if (state != TCP_ESTABLISHED && state != TCP_CLOSE_WAIT) {
		err = -ENOTCONN;
		goto out;
	}
	sl_sk_remote(sk, &t->saddr);
	t->sport = ntohs(inet_sk(sk)->inet_dport);
	sl_sk_local(sk, &t->daddr);
	t->dport = inet_sk(sk)->inet_num;
	*netp = sock_net(sk);
	*isn = sl_sock_client_isn(sk, true);
out:
	sockfd_put(sock);
	return err;
}

/* May a listener in an unprivileged namespace take a CONNECT for t?  Only
 * when no namespace root made has the destination address: there kernel TCP
 * delivers the companion connection (to a scilan listener or a plain one),
 * and the user who added the same address to a namespace of its own must
 * not receive the client's bytes.  Answered once per CONNECT, outside the
 * link's lock (it walks every namespace), and only when such a listener of
 * the port exists; one that appears after this look is refused.
 */
bool sl_userns_may_take(struct sl_link *link, const struct sl_tuple *t)
{
	struct sl_ep *ep;
	bool any = false;

	spin_lock_irq(&link->lock);
	list_for_each_entry(ep, &link->listeners, lnode)
		if (ep->lsk && ep->port == t->dport && !sl_net_privileged(sock_net(ep->lsk)))
			any = true;
	spin_unlock_irq(&link->lock);
	return any && !sl_addr_privileged_local(&t->daddr);
}

/* How well the listening socket lsk takes a CONNECT for t, as kernel TCP
 * would deliver it: 0 not at all (closed meanwhile, another port or family,
 * t's destination is not an address of lsk's namespace, or lsk's namespace
 * is unprivileged and userns_ok is false: see sl_userns_may_take), else 1
 * its wildcard address, 2 its exact address, plus 2 in a namespace root
 * made, which no unprivileged namespace outranks whatever the exactness.
 */
int sl_listener_match(struct sock *lsk, const struct sl_tuple *t, bool userns_ok)
{
	struct net *net = sock_net(lsk);
	struct in6_addr a;
	int score;

	if (READ_ONCE(lsk->sk_state) != TCP_LISTEN || inet_sk(lsk)->inet_num != t->dport)
		return 0;
	if (lsk->sk_family == AF_INET && !ipv6_addr_v4mapped(&t->daddr))
		return 0;
	if (lsk->sk_family == AF_INET6 && ipv6_addr_v4mapped(&t->daddr) && lsk->sk_ipv6only)
		return 0;
	sl_sk_local(lsk, &a);
	if (ipv6_addr_equal(&a, &t->daddr))
		score = 2;
	else if (sl_addr_any(&a))
		score = 1;
	else
		return 0;
	if (!sl_net_privileged(net) && !userns_ok)
		return 0;
	if (!sl_addr_local(net, &t->daddr))
		return 0; /* the companion connection cannot land there */
	return sl_net_privileged(net) ? score + 2 : score;
}

bool sl_tuple_equal(const struct sl_tuple *a, const struct sl_tuple *b)
{
	return a->sport == b->sport && a->dport == b->dport && ipv6_addr_equal(&a->saddr, &b->saddr) &&
	       ipv6_addr_equal(&a->daddr, &b->daddr);
}

/* debugfs: who listens where (scilan_ctl status). */
void sl_listener_show(struct seq_file *m, struct sl_ep *ep)
{
	struct sock *sk = ep->lsk;
	struct in6_addr a;

	if (!sk)
		return;
	sl_sk_local(sk, &a);
	seq_printf(m, "listener %u uid %u family %s addr ", ep->id,
		   from_kuid_munged(&init_user_ns, ep->owner),
		   sk->sk_family == AF_INET ? "ipv4" : "ipv6");
	if (sk->sk_family == AF_INET)
		seq_printf(m, "%pI4", &a.s6_addr32[3]);
	else
		seq_printf(m, "%pI6c", &a);
	seq_printf(m, " port %u netns %u backlog %u/%u late %u\n", ep->port, sock_net(sk)->ns.inum,
		   ep->backlog_len, sl_backlog_max(ep), ep->late_len);
}

/* Connections the driver may queue on a listener before accept: what its
 * LISTEN asked, else the socket's own backlog, as listen() set it (capped by
 * somaxconn) and read now, as the kernel reads it for its accept queue.
 */
u32 sl_backlog_max(const struct sl_ep *lst)
{
	if (lst->backlog_max || !lst->lsk)
		return lst->backlog_max;
	return max_t(u32, READ_ONCE(lst->lsk->sk_max_ack_backlog), 1);
}
