/* calls.c — scenarios for the connection-level calls: socket, bind, listen,
 * accept/accept4, blocking and non-blocking connect, getsockname/getpeername,
 * get/setsockopt, shutdown, close, fstat.  Plain POSIX; prints every outcome. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "scen.h"

static uint16_t local_port(int fd)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	MUST(getsockname(fd, (struct sockaddr *)&a, &len));
	return ntohs(a.sin_port);
}

static void flags_of(const char *what, int fd)
{
	int fl = fcntl(fd, F_GETFL), fd_fl = fcntl(fd, F_GETFD);

	say("%s: O_NONBLOCK %d, FD_CLOEXEC %d", what, !!(fl & O_NONBLOCK), !!(fd_fl & FD_CLOEXEC));
}

/* One message each way: the connection carries data. */
static void ping(const char *what, int a, int b)
{
	char buf[16] = { 0 };
	ssize_t w, r;

	/* Separate statements: argument evaluation order is unspecified. */
	w = send(a, "ping", 4, 0);
	r = recv(b, buf, sizeof(buf) - 1, 0);
	say("%s: send %zd, recv %zd '%s'", what, w, r, buf);
	memset(buf, 0, sizeof(buf));
	w = send(b, "pong", 4, 0);
	r = recv(a, buf, sizeof(buf) - 1, 0);
	say("%s: send %zd, recv %zd '%s'", what, w, r, buf);
}

static int sc_accept(void)
{
	struct sockaddr_in a, peer;
	socklen_t len;
	uint16_t port;
	int l = tcp_listener(&port), c[3], s[3], x, p[2];

	MUST(pipe(p));
	MUST(fcntl(l, F_SETFL, fcntl(l, F_GETFL) | O_NONBLOCK));
	SHOWFD(accept(l, NULL, NULL));
	SHOWFD(accept4(l, NULL, NULL, SOCK_NONBLOCK));
	MUST(fcntl(l, F_SETFL, fcntl(l, F_GETFL) & ~O_NONBLOCK));
	/* Three queued connections come out of accept in connect order. */
	for (int i = 0; i < 3; i++)
		c[i] = tcp_connect(port);
	len = sizeof(peer);
	s[0] = SHOWFD(accept(l, (struct sockaddr *)&peer, &len));
	say("accept addr: len %u, family %s, %s, port matches client %d", len, peer.sin_family == AF_INET ? "AF_INET" : "?",
	    inet_ntoa(peer.sin_addr), ntohs(peer.sin_port) == local_port(c[0]));
	flags_of("accepted", s[0]);
	s[1] = SHOWFD(accept4(l, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC));
	flags_of("accept4(NONBLOCK|CLOEXEC)", s[1]);
	SHOW(recv(s[1], &x, 1, 0));
	len = 2; /* a short address buffer is filled as far as it goes */
	s[2] = SHOWFD(accept4(l, (struct sockaddr *)&peer, &len, SOCK_CLOEXEC));
	say("short addrlen: len %u", len);
	flags_of("accept4(CLOEXEC)", s[2]);
	for (int i = 0; i < 3; i++) {
		struct sockaddr_in pn;
		socklen_t pl = sizeof(pn);

		MUST(getpeername(s[i], (struct sockaddr *)&pn, &pl));
		say("accepted %d is client %d: %d", i, i, ntohs(pn.sin_port) == local_port(c[i]));
	}
	ping("pair 0", c[0], s[0]);
	ping("pair 2", c[2], s[2]);
	MUST(fcntl(s[1], F_SETFL, 0));
	ping("pair 1", c[1], s[1]);
	/* Errors. */
	SHOWFD(accept4(l, NULL, NULL, 0x1));
	SHOWFD(accept(c[0], NULL, NULL));
	SHOWFD(accept(p[0], NULL, NULL));
	SHOWFD(accept(9999, NULL, NULL));
	SHOW(listen(c[0], 4));
	x = MUST(socket(AF_INET, SOCK_STREAM, 0));
	loop_addr(port, &a);
	SHOW(bind(x, (struct sockaddr *)&a, sizeof(a)));
	loop_addr(0, &a);
	SHOW(bind(x, (struct sockaddr *)&a, sizeof(a)));
	SHOW(bind(x, (struct sockaddr *)&a, sizeof(a)));
	SHOW(bind(c[0], (struct sockaddr *)&a, sizeof(a)));
	SHOW(bind(x, (struct sockaddr *)&a, 3));
	close(x);
	x = SHOWFD(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
	flags_of("socket(NONBLOCK|CLOEXEC)", x);
	close(x);
	x = SHOWFD(socket(AF_INET, SOCK_STREAM, IPPROTO_TCP));
	close(x);
	SHOWFD(socket(AF_INET, SOCK_STREAM, IPPROTO_UDP));
	/* listen on an unbound socket binds an ephemeral port; a second listen
	 * only changes the backlog. */
	x = MUST(socket(AF_INET, SOCK_STREAM, 0));
	SHOW(listen(x, 1));
	say("auto-bound port nonzero: %d", local_port(x) != 0);
	SHOW(listen(x, 8));
	close(x);
	for (int i = 0; i < 3; i++) {
		SHOW(close(c[i]));
		SHOW(close(s[i]));
	}
	SHOW(close(l));
	return 0;
}

static int sc_connect(void)
{
	struct sockaddr_in a;
	struct sockaddr_un u = { .sun_family = AF_UNIX };
	uint16_t port, dead = dead_port();
	int l = tcp_listener(&port), c, s, e;
	socklen_t el = sizeof(e);

	c = MUST(socket(AF_INET, SOCK_STREAM, 0));
	loop_addr(port, &a);
	SHOW(connect(c, (struct sockaddr *)&a, sizeof(a)));
	s = SHOWFD(accept(l, NULL, NULL));
	SHOW(connect(c, (struct sockaddr *)&a, sizeof(a)));
	ping("connected", c, s);
	SHOW(connect(l, (struct sockaddr *)&a, sizeof(a)));
	close(c);
	close(s);
	/* Refused: the error comes back from connect; the socket may try again. */
	c = MUST(socket(AF_INET, SOCK_STREAM, 0));
	loop_addr(dead, &a);
	SHOW(connect(c, (struct sockaddr *)&a, sizeof(a)));
	SHOW(getsockopt(c, SOL_SOCKET, SO_ERROR, &e, &el));
	say("SO_ERROR after refused connect: %s", en(e));
	loop_addr(port, &a);
	SHOW(connect(c, (struct sockaddr *)&a, sizeof(a)));
	s = SHOWFD(accept(l, NULL, NULL));
	ping("retried", c, s);
	close(c);
	close(s);
	/* A bound socket that does not listen refuses too. */
	{
		int b = MUST(socket(AF_INET, SOCK_STREAM, 0));

		loop_addr(0, &a);
		MUST(bind(b, (struct sockaddr *)&a, sizeof(a)));
		loop_addr(local_port(b), &a);
		c = MUST(socket(AF_INET, SOCK_STREAM, 0));
		SHOW(connect(c, (struct sockaddr *)&a, sizeof(a)));
		close(c);
		close(b);
	}
	/* Bad arguments. */
	c = MUST(socket(AF_INET, SOCK_STREAM, 0));
	loop_addr(port, &a);
	SHOW(connect(c, (struct sockaddr *)&a, 4));
	SHOW(connect(c, (struct sockaddr *)&u, sizeof(u)));
	SHOW(connect(c, NULL, sizeof(a)));
	SHOW(connect(9999, (struct sockaddr *)&a, sizeof(a)));
	/* After those failures the socket still connects. */
	SHOW(connect(c, (struct sockaddr *)&a, sizeof(a)));
	s = SHOWFD(accept(l, NULL, NULL));
	ping("after bad args", c, s);
	close(c);
	close(s);
	close(l);
	return 0;
}

static int sc_connect_nb(void)
{
	struct sockaddr_in a;
	uint16_t port, dead = dead_port();
	int l = tcp_listener(&port), c, s, e, r;
	socklen_t el = sizeof(e);
	struct pollfd p;

	c = MUST(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
	loop_addr(port, &a);
	errno = 0;
	r = connect(c, (struct sockaddr *)&a, sizeof(a));
	/* Loopback may finish at once or report EINPROGRESS: both are TCP. */
	say("non-blocking connect: %s", r == 0 ? "done" : errno == EINPROGRESS ? "EINPROGRESS" : en(errno));
	p = (struct pollfd){ .fd = c, .events = POLLIN | POLLOUT };
	SHOW(poll(&p, 1, 10000));
	say("revents %s", pollmask(p.revents));
	SHOW(getsockopt(c, SOL_SOCKET, SO_ERROR, &e, &el));
	say("SO_ERROR %s", en(e));
	SHOW(connect(c, (struct sockaddr *)&a, sizeof(a)));
	SHOW(connect(c, (struct sockaddr *)&a, sizeof(a)));
	s = SHOWFD(accept(l, NULL, NULL));
	MUST(fcntl(c, F_SETFL, 0));
	ping("connected", c, s);
	close(c);
	close(s);
	/* Refused, asynchronously: the error arrives in SO_ERROR, once. */
	c = MUST(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
	loop_addr(dead, &a);
	errno = 0;
	r = connect(c, (struct sockaddr *)&a, sizeof(a));
	say("non-blocking connect to dead port: %s", r == 0 ? "done" : en(errno));
	if (r < 0 && errno == EINPROGRESS) {
		p = (struct pollfd){ .fd = c, .events = POLLOUT };
		SHOW(poll(&p, 1, 10000));
		say("revents %s", pollmask(p.revents));
		SHOW(getsockopt(c, SOL_SOCKET, SO_ERROR, &e, &el));
		say("SO_ERROR %s", en(e));
		SHOW(getsockopt(c, SOL_SOCKET, SO_ERROR, &e, &el));
		say("SO_ERROR again %s", en(e));
	}
	SHOW(send(c, "x", 1, MSG_NOSIGNAL));
	close(c);
	/* The same with select's write set. */
	c = MUST(socket(AF_INET, SOCK_STREAM, 0));
	MUST(fcntl(c, F_SETFL, O_NONBLOCK));
	loop_addr(port, &a);
	errno = 0;
	r = connect(c, (struct sockaddr *)&a, sizeof(a));
	say("non-blocking connect (F_SETFL): %s", r == 0 ? "done" : errno == EINPROGRESS ? "EINPROGRESS" : en(errno));
	{
		fd_set w;

		FD_ZERO(&w);
		FD_SET(c, &w);
		SHOW(select(c + 1, NULL, &w, NULL, NULL));
		say("writable %d", FD_ISSET(c, &w) != 0);
	}
	SHOW(getsockopt(c, SOL_SOCKET, SO_ERROR, &e, &el));
	say("SO_ERROR %s", en(e));
	s = SHOWFD(accept(l, NULL, NULL));
	MUST(fcntl(c, F_SETFL, 0));
	ping("select-connected", c, s);
	close(c);
	close(s);
	close(l);
	return 0;
}

static void name_of(const char *what, int fd, bool peer, uint16_t expect_port)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int r;

	memset(&a, 0, sizeof(a));
	errno = 0;
	r = peer ? getpeername(fd, (struct sockaddr *)&a, &len) : getsockname(fd, (struct sockaddr *)&a, &len);
	if (r < 0) {
		say("%s -> -1 %s", what, en(errno));
		return;
	}
	say("%s -> 0: len %u, %s %s, port %s", what, len, a.sin_family == AF_INET ? "AF_INET" : "?",
	    inet_ntoa(a.sin_addr),
	    expect_port ? (ntohs(a.sin_port) == expect_port ? "as expected" : "WRONG")
			: (a.sin_port ? "nonzero" : "0"));
}

static int sc_names(void)
{
	uint16_t port;
	int l = tcp_listener(&port), c, s, u, p[2];
	struct sockaddr_in a;
	socklen_t len;

	MUST(pipe(p));
	name_of("getsockname(listener)", l, false, port);
	name_of("getpeername(listener)", l, true, 0);
	c = tcp_connect(port);
	s = MUST(accept(l, NULL, NULL));
	name_of("getsockname(client)", c, false, 0);
	name_of("getpeername(client)", c, true, port);
	name_of("getsockname(accepted)", s, false, port);
	name_of("getpeername(accepted)", s, true, local_port(c));
	len = 4; /* truncated: the call succeeds and reports the full size */
	SHOW(getsockname(c, (struct sockaddr *)&a, &len));
	say("truncated getsockname len %u", len);
	u = MUST(socket(AF_INET, SOCK_STREAM, 0));
	name_of("getsockname(unbound)", u, false, 0);
	name_of("getpeername(unbound)", u, true, 0);
	SHOW(getsockname(p[0], (struct sockaddr *)&a, &len));
	SHOW(getpeername(9999, (struct sockaddr *)&a, &len));
	/* After the peer closes, the name is still there (CLOSE_WAIT). */
	close(s);
	{
		char b;

		SHOW(recv(c, &b, 1, 0));
	}
	name_of("getpeername(client) after peer close", c, true, port);
	close(c);
	close(u);
	close(l);
	return 0;
}

static void opt(const char *what, int fd, int level, int name)
{
	int v = -1;
	socklen_t len = sizeof(v);

	errno = 0;
	if (getsockopt(fd, level, name, &v, &len) < 0)
		say("getsockopt %s -> -1 %s", what, en(errno));
	else
		say("getsockopt %s -> %d (len %u)", what, v, len);
}

static int sc_sockopt(void)
{
	uint16_t port;
	int l = tcp_listener(&port), c, s, one = 1, zero = 0, big = 65536, p[2];
	struct linger lg;
	struct timeval tv = { 0, 50000 };
	socklen_t len;
	char b;

	MUST(pipe(p));
	opt("SO_ACCEPTCONN(listener)", l, SOL_SOCKET, SO_ACCEPTCONN);
	opt("SO_REUSEADDR(listener)", l, SOL_SOCKET, SO_REUSEADDR);
	/* SO_RCVBUF / SO_SNDBUF set before connect; the kernel doubles them. */
	c = MUST(socket(AF_INET, SOCK_STREAM, 0));
	SHOW(setsockopt(c, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big)));
	SHOW(setsockopt(c, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big)));
	opt("SO_RCVBUF(before connect)", c, SOL_SOCKET, SO_RCVBUF);
	{
		struct sockaddr_in a;

		loop_addr(port, &a);
		MUST(connect(c, (struct sockaddr *)&a, sizeof(a)));
	}
	s = MUST(accept(l, NULL, NULL));
	opt("SO_RCVBUF(connected)", c, SOL_SOCKET, SO_RCVBUF);
	opt("SO_SNDBUF(connected)", c, SOL_SOCKET, SO_SNDBUF);
	opt("SO_TYPE", c, SOL_SOCKET, SO_TYPE);
	opt("SO_DOMAIN", c, SOL_SOCKET, SO_DOMAIN);
	opt("SO_PROTOCOL", c, SOL_SOCKET, SO_PROTOCOL);
	opt("SO_ERROR", c, SOL_SOCKET, SO_ERROR);
	opt("SO_ACCEPTCONN(connected)", s, SOL_SOCKET, SO_ACCEPTCONN);
	opt("SO_KEEPALIVE", s, SOL_SOCKET, SO_KEEPALIVE);
	SHOW(setsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)));
	opt("SO_KEEPALIVE(set)", s, SOL_SOCKET, SO_KEEPALIVE);
	opt("SO_RCVLOWAT", s, SOL_SOCKET, SO_RCVLOWAT);
	opt("TCP_NODELAY", c, IPPROTO_TCP, TCP_NODELAY);
	SHOW(setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)));
	opt("TCP_NODELAY(set)", c, IPPROTO_TCP, TCP_NODELAY);
	SHOW(setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &zero, sizeof(zero)));
	opt("TCP_NODELAY(cleared)", c, IPPROTO_TCP, TCP_NODELAY);
	len = sizeof(lg);
	SHOW(getsockopt(s, SOL_SOCKET, SO_LINGER, &lg, &len));
	say("SO_LINGER onoff %d linger %d len %u", lg.l_onoff, lg.l_linger, len);
	{
		struct tcp_info ti;

		len = sizeof(ti);
		SHOW(getsockopt(c, IPPROTO_TCP, TCP_INFO, &ti, &len));
		say("TCP_INFO state %s", ti.tcpi_state == TCP_ESTABLISHED ? "ESTABLISHED" : "other");
	}
	/* Errors. */
	opt("level 9999", c, 9999, 1);
	opt("SOL_SOCKET 9999", c, SOL_SOCKET, 9999);
	opt("pipe SO_TYPE", p[0], SOL_SOCKET, SO_TYPE);
	SHOW(setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, 0));
	SHOW(setsockopt(9999, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)));
	/* A receive timeout: a recv with nothing to read gives up with EAGAIN. */
	SHOW(setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	SHOW(recv(s, &b, 1, 0));
	tv = (struct timeval){ 0, 0 };
	SHOW(setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	ping("after options", c, s);
	close(c);
	close(s);
	close(l);
	return 0;
}

/* The client of sc_defer_accept: it speaks first, as an HTTP client does. */
static int defer_client(void *arg)
{
	int c = tcp_connect((uint16_t)(uintptr_t)arg);
	char buf[8] = { 0 };

	SHOW(send_all(c, "hello", 5));
	SHOW(recv_all(c, buf, 5));
	say("reply '%s'", buf);
	close(c);
	return 0;
}

/* TCP_DEFER_ACCEPT (Apache's default AcceptFilter, nginx's `deferred`): the
 * kernel wakes the listener only when the client's first bytes arrive on the
 * kernel socket; an accelerated client writes them into the ring.  Set
 * before listen and after it, waited for with accept and with poll. */
static int sc_defer_accept(void)
{
	int five = 5, zero = 0;

	for (int after = 0; after < 2; after++) {
		struct sockaddr_in a;
		socklen_t len = sizeof(a);
		struct pollfd pfd;
		struct kid k;
		char buf[8] = { 0 };
		int l = MUST(socket(AF_INET, SOCK_STREAM, 0)), s;

		say("-- TCP_DEFER_ACCEPT set %s listen", after ? "after" : "before");
		loop_addr(0, &a);
		MUST(bind(l, (struct sockaddr *)&a, sizeof(a)));
		if (!after)
			SHOW(setsockopt(l, IPPROTO_TCP, TCP_DEFER_ACCEPT, &five, sizeof(five)));
		MUST(listen(l, 8));
		if (after)
			SHOW(setsockopt(l, IPPROTO_TCP, TCP_DEFER_ACCEPT, &five, sizeof(five)));
		/* The kernel rounds seconds to SYN-ACK retransmissions: 5 reads back 7. */
		opt("TCP_DEFER_ACCEPT(listener)", l, IPPROTO_TCP, TCP_DEFER_ACCEPT);
		MUST(getsockname(l, (struct sockaddr *)&a, &len));
		kid_start(&k, "client", defer_client, (void *)(uintptr_t)ntohs(a.sin_port));
		if (after) {
			pfd = (struct pollfd){ .fd = l, .events = POLLIN };
			SHOW(poll(&pfd, 1, 20000));
			say("listener poll: %s", pollmask(pfd.revents));
		}
		s = SHOWFD(accept(l, NULL, NULL));
		SHOW(recv_all(s, buf, 5));
		say("request '%s'", buf);
		SHOW(send_all(s, "world", 5));
		kid_join(&k);
		close(s);
		SHOW(setsockopt(l, IPPROTO_TCP, TCP_DEFER_ACCEPT, &zero, sizeof(zero)));
		opt("TCP_DEFER_ACCEPT(cleared)", l, IPPROTO_TCP, TCP_DEFER_ACCEPT);
		close(l);
	}
	return 0;
}

static int sc_shutdown(void)
{
	int c, s, p[2];
	char buf[16] = { 0 };
	struct pollfd pf;

	MUST(pipe(p));
	tcp_pair(&c, &s);
	SHOW(send(c, "hello", 5, 0));
	SHOW(shutdown(c, SHUT_WR));
	SHOW(recv(s, buf, sizeof(buf), 0));
	say("data before EOF '%s'", buf);
	SHOW(recv(s, buf, sizeof(buf), 0));
	SHOW(read(s, buf, sizeof(buf)));
	pf = (struct pollfd){ .fd = s, .events = POLLIN | POLLOUT | POLLRDHUP };
	SHOW(poll(&pf, 1, 0));
	say("half-closed peer revents %s", pollmask(pf.revents));
	/* The other direction still works. */
	SHOW(send(s, "back", 4, 0));
	memset(buf, 0, sizeof(buf));
	SHOW(recv(c, buf, sizeof(buf), 0));
	say("reply after SHUT_WR '%s'", buf);
	SHOW(send(c, "x", 1, MSG_NOSIGNAL));
	SHOW(shutdown(c, SHUT_WR));
	pf = (struct pollfd){ .fd = c, .events = POLLIN | POLLOUT | POLLRDHUP };
	SHOW(poll(&pf, 1, 0));
	say("SHUT_WR side revents %s", pollmask(pf.revents));
	SHOW(shutdown(s, SHUT_WR));
	SHOW(recv(c, buf, sizeof(buf), 0));
	pf = (struct pollfd){ .fd = c, .events = POLLIN | POLLOUT | POLLRDHUP };
	SHOW(poll(&pf, 1, 0));
	say("both shut revents %s", pollmask(pf.revents));
	close(c);
	close(s);
	/* SHUT_RD: reads return 0 at once; writing still works. */
	tcp_pair(&c, &s);
	SHOW(shutdown(c, SHUT_RD));
	SHOW(recv(c, buf, sizeof(buf), 0));
	pf = (struct pollfd){ .fd = c, .events = POLLIN | POLLOUT | POLLRDHUP };
	SHOW(poll(&pf, 1, 0));
	say("SHUT_RD revents %s", pollmask(pf.revents));
	SHOW(send(c, "abc", 3, 0));
	memset(buf, 0, sizeof(buf));
	SHOW(recv(s, buf, sizeof(buf), 0));
	say("peer of SHUT_RD got '%s'", buf);
	close(c);
	close(s);
	/* SHUT_RDWR. */
	tcp_pair(&c, &s);
	SHOW(shutdown(c, SHUT_RDWR));
	SHOW(recv(s, buf, sizeof(buf), 0));
	SHOW(recv(c, buf, sizeof(buf), 0));
	SHOW(send(c, "x", 1, MSG_NOSIGNAL));
	pf = (struct pollfd){ .fd = s, .events = POLLIN | POLLOUT | POLLRDHUP };
	SHOW(poll(&pf, 1, 0));
	say("peer of SHUT_RDWR revents %s", pollmask(pf.revents));
	/* Errors. */
	SHOW(shutdown(c, 7));
	SHOW(shutdown(p[0], SHUT_WR));
	SHOW(shutdown(9999, SHUT_WR));
	close(c);
	close(s);
	c = MUST(socket(AF_INET, SOCK_STREAM, 0));
	SHOW(shutdown(c, SHUT_WR));
	close(c);
	return 0;
}

static int sc_close(void)
{
	int c, s;
	char buf[16];
	uint16_t port;
	struct pollfd pf;

	tcp_pair(&c, &s);
	SHOW(send(c, "bye", 3, 0));
	SHOW(close(c));
	SHOW(recv(s, buf, sizeof(buf), 0));
	SHOW(recv(s, buf, sizeof(buf), 0));
	SHOW(close(c));
	SHOW(close(s));
	/* Closing with unread data resets the connection. */
	tcp_pair(&c, &s);
	SHOW(send(s, "unread", 6, 0));
	pf = (struct pollfd){ .fd = c, .events = POLLIN };
	SHOW(poll(&pf, 1, 10000));
	SHOW(close(c));
	pf = (struct pollfd){ .fd = s, .events = POLLIN | POLLRDHUP };
	SHOW(poll(&pf, 1, 10000));
	say("reset peer revents %s", pollmask(pf.revents));
	SHOW(recv(s, buf, sizeof(buf), 0));
	SHOW(recv(s, buf, sizeof(buf), 0));
	SHOW(send(s, "x", 1, MSG_NOSIGNAL));
	SHOW(close(s));
	/* A connection still in the listener's queue is reset when the
	 * listener closes. */
	{
		int l = tcp_listener(&port);

		c = tcp_connect(port);
		SHOW(send(c, "early", 5, 0));
		SHOW(close(l));
		pf = (struct pollfd){ .fd = c, .events = POLLIN };
		SHOW(poll(&pf, 1, 10000));
		say("revents %s", pollmask(pf.revents));
		SHOW(recv(c, buf, sizeof(buf), 0));
		SHOW(close(c));
	}
	return 0;
}

static const char *kind(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return en(errno);
	return S_ISSOCK(st.st_mode) ? "socket" : S_ISFIFO(st.st_mode) ? "fifo" : S_ISREG(st.st_mode) ? "file" : "other";
}

static int sc_fstat(void)
{
	uint16_t port;
	int l = tcp_listener(&port), c = tcp_connect(port), s = MUST(accept(l, NULL, NULL)), p[2], f;
	int u = MUST(socket(AF_INET, SOCK_DGRAM, 0));
	char path[] = "/tmp/hookscen-XXXXXX", link[64], proc[64];
	char buf[8] = { 0 };

	MUST(pipe(p));
	f = MUST(mkstemp(path));
	unlink(path);
	say("listener %s, client %s, accepted %s, udp %s, pipe %s, file %s", kind(l), kind(c), kind(s), kind(u),
	    kind(p[0]), kind(f));
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", s);
	memset(link, 0, sizeof(link));
	MUST(readlink(proc, link, sizeof(link) - 1));
	say("/proc/self/fd of accepted: %.8s", link);
	say("file fd distinct from sockets: %d", f != l && f != c && f != s);
	/* File and socket do not interfere. */
	SHOW(write(f, "file", 4));
	SHOW(send(c, "sock", 4, 0));
	SHOW(pread(f, buf, 4, 0));
	say("file holds '%s'", buf);
	SHOW(recv(s, buf, 4, 0));
	say("socket carried '%s'", buf);
	close(c);
	say("after close, client fstat %s", kind(c));
	close(s);
	close(l);
	close(u);
	close(f);
	return 0;
}

/* IPv6 loopback, and a dual-stack [::] listener reached over IPv4 (the
 * peer address is v4-mapped). */
static int sc_ipv6(void)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT }, p;
	socklen_t len = sizeof(a);
	int l = MUST(socket(AF_INET6, SOCK_STREAM, 0)), c, s, zero = 0;
	char text[64];

	if (bind(l, (struct sockaddr *)&a, sizeof(a)) < 0) {
		say("no IPv6 loopback here: %s", en(errno));
		return 0;
	}
	MUST(listen(l, 4));
	MUST(getsockname(l, (struct sockaddr *)&a, &len));
	c = MUST(socket(AF_INET6, SOCK_STREAM, 0));
	SHOW(connect(c, (struct sockaddr *)&a, sizeof(a)));
	len = sizeof(p);
	s = SHOWFD(accept(l, (struct sockaddr *)&p, &len));
	say("peer %s family AF_INET6 %d len %u", inet_ntop(AF_INET6, &p.sin6_addr, text, sizeof(text)),
	    p.sin6_family == AF_INET6, len);
	ping("ipv6", c, s);
	close(c);
	close(s);
	close(l);
	/* Dual stack: [::] accepts IPv4 clients as ::ffff:127.0.0.1. */
	l = MUST(socket(AF_INET6, SOCK_STREAM, 0));
	MUST(setsockopt(l, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)));
	a = (struct sockaddr_in6){ .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
	MUST(bind(l, (struct sockaddr *)&a, sizeof(a)));
	MUST(listen(l, 4));
	len = sizeof(a);
	MUST(getsockname(l, (struct sockaddr *)&a, &len));
	c = tcp_connect(ntohs(a.sin6_port));
	len = sizeof(p);
	s = SHOWFD(accept(l, (struct sockaddr *)&p, &len));
	say("v4 client seen as %s", inet_ntop(AF_INET6, &p.sin6_addr, text, sizeof(text)));
	ping("dual stack", c, s);
	close(c);
	close(s);
	close(l);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "accept", sc_accept },   { "connect", sc_connect }, { "connect_nb", sc_connect_nb },
		{ "names", sc_names },     { "sockopt", sc_sockopt }, { "shutdown", sc_shutdown },
		{ "close", sc_close },     { "fstat", sc_fstat },     { "ipv6", sc_ipv6 },
		{ "defer_accept", sc_defer_accept },
		{ NULL, NULL },
	};

	return scen_main(argc, argv, t);
}
