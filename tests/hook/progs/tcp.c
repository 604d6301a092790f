/* tcp.c — scenarios for kernel TCP's corner semantics that a ring must mirror:
 * abortive close (SO_LINGER {1, 0}), which send learns of a closed peer and
 * with which errno, and urgent data (MSG_OOB, SIOCATMARK, SO_OOBINLINE,
 * POLLPRI, select's exception set).  A plain POSIX program. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "scen.h"

#define ALL_EVENTS (POLLIN | POLLPRI | POLLOUT | POLLRDHUP)

static void revents(const char *what, int fd)
{
	struct pollfd p = { .fd = fd, .events = ALL_EVENTS };

	poll(&p, 1, 0);
	say("%s: poll %s", what, pollmask(p.revents));
}

/* Wait (up to 5 s) until poll shows every bit of want: the peer's FIN or
 * RST travels asynchronously, so the transcript must not depend on when
 * it lands.  Not a timing assertion: a miss prints the bits seen. */
static void await(int fd, int want)
{
	struct pollfd p = { .fd = fd, .events = ALL_EVENTS };

	for (int i = 0; i < 5000; i++) {
		p.revents = 0;
		poll(&p, 1, 0);
		if ((p.revents & want) == want)
			return;
		usleep(1000);
	}
	say("awaited %s, saw %s", pollmask(want), pollmask(p.revents));
}

static void so_error(const char *what, int fd)
{
	int err = -1;
	socklen_t len = sizeof(err);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		say("%s: SO_ERROR failed %s", what, en(errno));
	else
		say("%s: SO_ERROR %s", what, en(err));
}

static void do_recv(const char *what, int fd)
{
	char buf[64];
	ssize_t n;

	errno = 0;
	n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
	if (n > 0) {
		buf[n] = '\0';
		say("%s: recv -> %zd '%s'", what, n, buf);
	} else {
		say("%s: recv -> %zd %s", what, n, n < 0 ? en(errno) : "");
	}
}

static void do_send(const char *what, int fd, const char *data)
{
	ssize_t n;

	errno = 0;
	n = send(fd, data, strlen(data), MSG_NOSIGNAL | MSG_DONTWAIT);
	say("%s: send %zu -> %zd %s", what, strlen(data), n, n < 0 ? en(errno) : "");
}

static void abort_close(int fd)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	MUST(setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)));
	SHOW(close(fd));
}

/* ---- abortive close ------------------------------------------------------- */

static int sc_abort(void)
{
	int c, s;

	say("-- idle connection, abortive close; poll, recv, send");
	tcp_pair(&c, &s);
	abort_close(s);
	await(c, POLLHUP);
	revents("after RST", c);
	do_recv("first", c);
	revents("after recv", c);
	do_recv("second", c);
	do_send("then", c, "x");
	so_error("then", c);
	close(c);

	say("-- abortive close; SO_ERROR first");
	tcp_pair(&c, &s);
	abort_close(s);
	await(c, POLLHUP);
	so_error("first", c);
	so_error("second", c);
	revents("after SO_ERROR", c);
	do_recv("then", c);
	close(c);

	say("-- abortive close; send first");
	tcp_pair(&c, &s);
	abort_close(s);
	await(c, POLLHUP);
	do_send("first", c, "x");
	do_send("second", c, "x");
	do_recv("then", c);
	revents("at the end", c);
	close(c);

	say("-- data, then abortive close: the data is read first");
	tcp_pair(&c, &s);
	SHOW(send(s, "abc", 3, 0));
	abort_close(s);
	await(c, POLLHUP);
	revents("data and RST", c);
	do_recv("first", c);
	do_recv("second", c);
	do_recv("third", c);
	close(c);

	say("-- shutdown(SHUT_WR), EOF read, then abortive close");
	tcp_pair(&c, &s);
	SHOW(shutdown(s, SHUT_WR));
	await(c, POLLRDHUP);
	do_recv("EOF", c);
	abort_close(s);
	await(c, POLLHUP);
	revents("after RST", c);
	do_recv("after RST", c);
	so_error("after RST", c);
	revents("after SO_ERROR", c);
	do_send("then", c, "x");
	close(c);

	say("-- shutdown(SHUT_WR) and abortive close, nothing read in between");
	tcp_pair(&c, &s);
	SHOW(shutdown(s, SHUT_WR));
	abort_close(s);
	await(c, POLLHUP);
	revents("FIN and RST", c);
	do_send("first", c, "x");
	do_send("second", c, "x");
	do_recv("then", c);
	close(c);

	say("-- shutdown(SHUT_RDWR), then abortive close");
	tcp_pair(&c, &s);
	SHOW(shutdown(s, SHUT_RDWR));
	abort_close(s);
	await(c, POLLHUP);
	revents("after RST", c);
	do_recv("first", c);
	do_recv("second", c);
	close(c);

	say("-- unread data, plain close (a reset too)");
	tcp_pair(&c, &s);
	SHOW(send(c, "unread", 6, 0));
	await(s, POLLIN);
	SHOW(close(s));
	await(c, POLLHUP);
	revents("after RST", c);
	do_recv("first", c);
	do_recv("second", c);
	do_send("then", c, "x");
	close(c);

	say("-- SO_LINGER {0, 0}: an orderly close");
	tcp_pair(&c, &s);
	{
		struct linger l = { .l_onoff = 0, .l_linger = 0 };

		MUST(setsockopt(s, SOL_SOCKET, SO_LINGER, &l, sizeof(l)));
	}
	SHOW(close(s));
	await(c, POLLRDHUP);
	revents("after FIN", c);
	do_recv("first", c);
	close(c);
	return 0;
}

/* ---- which send learns of a closed peer ----------------------------------- */

static int sc_closed_peer(void)
{
	int c, s;

	say("-- peer closed: the first send is accepted, the peer answers with RST");
	tcp_pair(&c, &s);
	SHOW(close(s));
	await(c, POLLRDHUP);
	revents("after FIN", c);
	do_send("first", c, "abc");
	await(c, POLLHUP);
	revents("after RST", c);
	do_send("second", c, "abc");
	do_send("third", c, "abc");
	do_recv("then", c);
	revents("at the end", c);
	close(c);

	say("-- peer closed; after the RST: SO_ERROR, recv");
	tcp_pair(&c, &s);
	SHOW(close(s));
	await(c, POLLRDHUP);
	do_send("first", c, "abc");
	await(c, POLLHUP);
	so_error("first", c);
	so_error("second", c);
	revents("after SO_ERROR", c);
	do_recv("then", c);
	do_send("then", c, "abc");
	close(c);

	say("-- peer closed; after the RST: recv first");
	tcp_pair(&c, &s);
	SHOW(close(s));
	await(c, POLLRDHUP);
	do_recv("EOF", c);
	do_send("first", c, "abc");
	await(c, POLLHUP);
	do_recv("after RST", c);
	do_recv("again", c);
	do_send("then", c, "abc");
	close(c);

	say("-- peer sent data and closed; our send draws the RST, the data is still read");
	tcp_pair(&c, &s);
	SHOW(send(s, "last", 4, 0));
	SHOW(close(s));
	await(c, POLLRDHUP);
	do_send("first", c, "abc");
	await(c, POLLHUP);
	revents("after RST", c);
	do_recv("first", c);
	do_recv("second", c);
	so_error("then", c);
	close(c);

	say("-- peer closed; an empty send changes nothing");
	tcp_pair(&c, &s);
	SHOW(close(s));
	await(c, POLLRDHUP);
	do_send("empty", c, "");
	revents("after the empty send", c);
	do_send("first", c, "abc");
	await(c, POLLHUP);
	do_send("second", c, "abc");
	close(c);

	say("-- peer did shutdown(SHUT_WR) only: sends keep working");
	tcp_pair(&c, &s);
	SHOW(shutdown(s, SHUT_WR));
	await(c, POLLRDHUP);
	do_recv("EOF", c);
	do_send("first", c, "abc");
	do_send("second", c, "def");
	revents("sender", c);
	await(s, POLLIN);
	do_recv("peer", s);
	revents("peer", s);
	so_error("sender", c);
	close(c);
	await(s, POLLRDHUP);
	revents("peer after our close", s);
	do_recv("peer", s);
	close(s);

	say("-- peer closed with our data unread: RST at once");
	tcp_pair(&c, &s);
	SHOW(send(c, "unread", 6, 0));
	await(s, POLLIN);
	SHOW(close(s));
	await(c, POLLHUP);
	revents("after RST", c);
	do_send("first", c, "abc");
	do_send("second", c, "abc");
	do_recv("then", c);
	close(c);

	say("-- peer closed with our data unread; recv first");
	tcp_pair(&c, &s);
	SHOW(send(c, "unread", 6, 0));
	await(s, POLLIN);
	SHOW(close(s));
	await(c, POLLHUP);
	do_recv("first", c);
	do_send("then", c, "abc");
	so_error("then", c);
	close(c);
	return 0;
}

/* ---- urgent data ---------------------------------------------------------- */

static void atmark(const char *what, int fd)
{
	int at = -1;

	if (ioctl(fd, SIOCATMARK, &at) < 0)
		say("%s: SIOCATMARK failed %s", what, en(errno));
	else
		say("%s: SIOCATMARK %d", what, at);
}

static void recv_flags(const char *what, int fd, size_t len, int flags)
{
	char buf[64];
	ssize_t n;

	errno = 0;
	n = recv(fd, buf, len, flags | MSG_DONTWAIT);
	if (n > 0) {
		buf[n] = '\0';
		say("%s: recv(%zu, %s%s) -> %zd '%s'", what, len, flags & MSG_OOB ? "OOB" : "0",
		    flags & MSG_PEEK ? "|PEEK" : "", n, buf);
	} else {
		say("%s: recv(%zu, %s%s) -> %zd %s", what, len, flags & MSG_OOB ? "OOB" : "0",
		    flags & MSG_PEEK ? "|PEEK" : "", n, n < 0 ? en(errno) : "");
	}
}

static void oob_send(int fd, const char *data)
{
	ssize_t n = send(fd, data, strlen(data), MSG_OOB);

	say("send '%s' MSG_OOB -> %zd %s", data, n, n < 0 ? en(errno) : "");
}

static void exceptset(const char *what, int fd)
{
	fd_set r, w, e;
	struct timeval tv = { 0, 0 };
	int n;

	FD_ZERO(&r);
	FD_ZERO(&w);
	FD_ZERO(&e);
	FD_SET(fd, &r);
	FD_SET(fd, &e);
	n = select(fd + 1, &r, &w, &e, &tv);
	say("%s: select -> %d read %d except %d", what, n, FD_ISSET(fd, &r), FD_ISSET(fd, &e));
}

static void set_oobinline(int fd)
{
	int one = 1;

	MUST(setsockopt(fd, SOL_SOCKET, SO_OOBINLINE, &one, sizeof(one)));
}

static int sc_urgent(void)
{
	int c, s;

	say("-- one urgent byte: a read stops at the mark, recv(MSG_OOB) takes it");
	tcp_pair(&c, &s);
	recv_flags("none pending", s, 8, MSG_OOB);
	atmark("none pending", s);
	oob_send(c, "abc");
	await(s, POLLPRI);
	revents("urgent pending", s);
	exceptset("urgent pending", s);
	atmark("before the mark", s);
	recv_flags("normal", s, 60, 0);
	atmark("at the mark", s);
	revents("at the mark", s);
	recv_flags("peek", s, 8, MSG_OOB | MSG_PEEK);
	recv_flags("peek again", s, 8, MSG_OOB | MSG_PEEK);
	revents("after peek", s);
	recv_flags("take", s, 8, MSG_OOB);
	revents("after take", s);
	exceptset("after take", s);
	atmark("after take", s);
	recv_flags("again", s, 8, MSG_OOB);
	recv_flags("normal", s, 60, 0);
	SHOW(send(c, "de", 2, 0));
	await(s, POLLIN);
	atmark("more data", s);
	recv_flags("normal", s, 60, 0);
	atmark("past the mark", s);
	recv_flags("after", s, 8, MSG_OOB);
	close(c);
	close(s);

	say("-- urgent byte never taken: the normal stream skips it");
	tcp_pair(&c, &s);
	oob_send(c, "abc");
	SHOW(send(c, "def", 3, 0));
	await(s, POLLPRI);
	recv_flags("normal", s, 60, 0);
	atmark("at the mark", s);
	revents("at the mark", s);
	recv_flags("normal", s, 60, 0);
	atmark("past the mark", s);
	revents("past the mark", s);
	recv_flags("oob", s, 8, MSG_OOB);
	close(c);
	close(s);

	say("-- only the urgent byte: nothing readable in line");
	tcp_pair(&c, &s);
	oob_send(c, "z");
	await(s, POLLPRI);
	revents("urgent only", s);
	atmark("urgent only", s);
	recv_flags("normal", s, 60, 0);
	recv_flags("oob, no room", s, 0, MSG_OOB);
	recv_flags("oob", s, 8, MSG_OOB);
	revents("taken", s);
	recv_flags("normal", s, 60, 0);
	close(c);
	close(s);

	say("-- two urgent sends before the reader looks");
	tcp_pair(&c, &s);
	oob_send(c, "xa");
	oob_send(c, "yb");
	await(s, POLLPRI);
	SHOW(send(c, "!", 1, 0));
	await(s, POLLIN);
	recv_flags("oob", s, 8, MSG_OOB);
	recv_flags("normal", s, 60, 0);
	recv_flags("normal", s, 60, 0);
	close(c);
	close(s);

	say("-- two urgent bytes in a row, the reader at the first");
	tcp_pair(&c, &s);
	oob_send(c, "a");
	await(s, POLLPRI);
	oob_send(c, "b");
	SHOW(send(c, "!", 1, 0));
	await(s, POLLIN);
	atmark("second", s);
	recv_flags("oob", s, 8, MSG_OOB);
	recv_flags("normal", s, 60, 0);
	recv_flags("normal", s, 60, 0);
	close(c);
	close(s);

	say("-- urgent bytes in a row the reader never looked at");
	tcp_pair(&c, &s);
	oob_send(c, "a");
	oob_send(c, "b");
	oob_send(c, "c");
	SHOW(send(c, "!", 1, 0));
	oob_send(c, "de");
	oob_send(c, "f");
	await(s, POLLPRI);
	atmark("at the run", s);
	recv_flags("oob", s, 8, MSG_OOB);
	recv_flags("normal", s, 60, 0);
	recv_flags("normal", s, 60, 0);
	close(c);
	close(s);

	say("-- a run of urgent bytes after data the reader has not read");
	tcp_pair(&c, &s);
	SHOW(send(c, "xy", 2, 0));
	oob_send(c, "a");
	oob_send(c, "b");
	await(s, POLLPRI);
	recv_flags("normal", s, 60, 0);
	recv_flags("oob", s, 8, MSG_OOB);
	recv_flags("normal", s, 60, 0);
	close(c);
	close(s);

	say("-- the reader sits at an urgent byte: the next mark drops it");
	tcp_pair(&c, &s);
	oob_send(c, "a");
	await(s, POLLPRI);
	SHOW(send(c, "xy", 2, 0));
	oob_send(c, "b");
	await(s, POLLIN);
	atmark("second", s);
	recv_flags("normal", s, 60, 0);
	recv_flags("oob", s, 8, MSG_OOB);
	recv_flags("normal", s, 60, 0);
	close(c);
	close(s);

	say("-- a new urgent byte after the first was taken");
	tcp_pair(&c, &s);
	oob_send(c, "a");
	await(s, POLLPRI);
	recv_flags("oob", s, 8, MSG_OOB);
	oob_send(c, "bc");
	await(s, POLLPRI);
	atmark("second", s);
	recv_flags("normal", s, 60, 0);
	recv_flags("oob", s, 8, MSG_OOB);
	recv_flags("normal", s, 60, 0);
	close(c);
	close(s);

	say("-- SO_OOBINLINE: the byte stays in the stream");
	tcp_pair(&c, &s);
	set_oobinline(s);
	oob_send(c, "abc");
	SHOW(send(c, "def", 3, 0));
	await(s, POLLPRI);
	revents("urgent pending", s);
	exceptset("urgent pending", s);
	recv_flags("oob", s, 8, MSG_OOB);
	recv_flags("oob peek", s, 8, MSG_OOB | MSG_PEEK);
	atmark("before the mark", s);
	recv_flags("normal", s, 60, 0);
	atmark("at the mark", s);
	revents("at the mark", s);
	recv_flags("normal", s, 60, 0);
	atmark("past the mark", s);
	revents("past the mark", s);
	close(c);
	close(s);

	say("-- urgent data, then the sender closes");
	tcp_pair(&c, &s);
	oob_send(c, "ab");
	SHOW(close(c));
	await(s, POLLRDHUP);
	revents("closed", s);
	recv_flags("normal", s, 60, 0);
	recv_flags("oob", s, 8, MSG_OOB);
	recv_flags("normal", s, 60, 0);
	recv_flags("oob", s, 8, MSG_OOB);
	close(s);
	return 0;
}

static void epoll_report(const char *what, int ep)
{
	struct epoll_event ev[2];
	int n = epoll_wait(ep, ev, 2, 0);

	say("%s: epoll_wait -> %d %s", what, n, n > 0 ? epmask(ev[0].events) : "");
}

static void *send_later(void *arg)
{
	usleep(50000); /* not a timing assertion: the reader is to block first */
	send(*(int *)arg, "more", 4, 0);
	return NULL;
}

static int sc_urgent_more(void)
{
	struct epoll_event ev;
	pthread_t t;
	char buf[16];
	int c, s, ep;

	say("-- epoll, level-triggered and edge-triggered");
	tcp_pair(&c, &s);
	ep = MUST(epoll_create1(0));
	ev = (struct epoll_event){ .events = EPOLLIN | EPOLLPRI };
	MUST(epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev));
	epoll_report("nothing", ep);
	oob_send(c, "ab");
	await(s, POLLPRI);
	epoll_report("urgent", ep);
	epoll_report("urgent again", ep);
	recv_flags("normal", s, 60, 0);
	epoll_report("at the mark", ep);
	recv_flags("oob", s, 8, MSG_OOB);
	epoll_report("taken", ep);
	ev = (struct epoll_event){ .events = EPOLLPRI | EPOLLET };
	MUST(epoll_ctl(ep, EPOLL_CTL_MOD, s, &ev));
	oob_send(c, "c");
	await(s, POLLPRI);
	epoll_report("ET urgent", ep);
	epoll_report("ET urgent again", ep);
	SHOW(send(c, "d", 1, 0));
	await(s, POLLIN);
	epoll_report("ET more data", ep);
	close(ep);
	close(c);
	close(s);

	say("-- recvmsg(MSG_OOB) flags; MSG_PEEK at the mark");
	tcp_pair(&c, &s);
	oob_send(c, "xy");
	SHOW(send(c, "z", 1, 0));
	await(s, POLLPRI);
	recv_flags("peek", s, 60, MSG_PEEK);
	recv_flags("normal", s, 60, 0);
	recv_flags("peek at the mark", s, 60, MSG_PEEK);
	{
		struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t n = recvmsg(s, &m, MSG_OOB);

		say("recvmsg(MSG_OOB) -> %zd '%c' msg_flags%s", n, n > 0 ? buf[0] : '-',
		    (m.msg_flags & MSG_OOB) ? " MSG_OOB" : " 0");
	}
	recv_flags("normal", s, 60, 0);
	close(c);
	close(s);

	say("-- a blocking read at the mark skips the urgent byte and waits");
	tcp_pair(&c, &s);
	oob_send(c, "u");
	await(s, POLLPRI);
	pthread_create(&t, NULL, send_later, &c);
	memset(buf, 0, sizeof(buf));
	SHOW(recv(s, buf, sizeof(buf) - 1, 0));
	say("read '%s'", buf);
	pthread_join(t, NULL);
	recv_flags("oob", s, 8, MSG_OOB);
	close(c);
	close(s);

	say("-- SO_OOBINLINE set after the byte arrived");
	tcp_pair(&c, &s);
	oob_send(c, "pq");
	await(s, POLLPRI);
	set_oobinline(s);
	recv_flags("oob", s, 8, MSG_OOB);
	recv_flags("normal", s, 60, 0);
	recv_flags("normal", s, 60, 0);
	revents("read", s);
	close(c);
	close(s);

	say("-- urgent data from both sides");
	tcp_pair(&c, &s);
	oob_send(c, "12");
	oob_send(s, "34");
	await(s, POLLPRI);
	await(c, POLLPRI);
	recv_flags("server oob", s, 8, MSG_OOB);
	recv_flags("client oob", c, 8, MSG_OOB);
	recv_flags("server", s, 60, 0);
	recv_flags("client", c, 60, 0);
	close(c);
	close(s);
	return 0;
}

/* ---- a peer that exits without closing ------------------------------------ */

static uint16_t exit_port;
static int exit_chan[2];

/* Kid: connect, then per arg: send and exit; wait for our data and exit
 * with it unread; or set SO_LINGER {1, 0} and exit. */
static int exiter(void *arg)
{
	const char *how = arg;
	int c = tcp_connect(exit_port);

	if (!strcmp(how, "send")) {
		send(c, "bye", 3, 0);
	} else if (!strcmp(how, "unread")) {
		chan_put(exit_chan[1], 'c');
		chan_get(exit_chan[1]); /* the parent has sent */
	} else {
		struct linger l = { .l_onoff = 1, .l_linger = 0 };

		setsockopt(c, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	}
	return 0; /* exit() with the connection open */
}

static int sc_exit(void)
{
	static const char *const hows[] = { "send", "unread", "linger" };
	int l = tcp_listener(&exit_port);

	for (int i = 0; i < 3; i++) {
		struct kid k;
		int s;

		say("-- the peer exits without closing: %s", hows[i]);
		chan_open(exit_chan);
		kid_start(&k, hows[i], exiter, (void *)hows[i]);
		s = MUST(accept(l, NULL, NULL));
		if (!strcmp(hows[i], "unread")) {
			chan_get(exit_chan[0]);
			SHOW(send(s, "unread", 6, 0));
			chan_put(exit_chan[0], 's');
		}
		kid_join(&k);
		await(s, POLLRDHUP);
		revents("after the exit", s);
		do_recv("first", s);
		do_recv("second", s);
		close(s);
		close(exit_chan[0]);
		close(exit_chan[1]);
	}
	close(l);
	return 0;
}

static volatile sig_atomic_t sigurgs;
static void on_sigurg(int sig)
{
	(void)sig;
	sigurgs++;
}

/* SIGURG goes to the socket's owner (F_SETOWN) when urgent data arrives. */
static int sc_sigurg(void)
{
	struct sigaction sa = { .sa_handler = on_sigurg };
	int c, s;

	sigemptyset(&sa.sa_mask);
	MUST(sigaction(SIGURG, &sa, NULL));
	say("-- no owner: no SIGURG");
	tcp_pair(&c, &s);
	oob_send(c, "a");
	await(s, POLLPRI);
	say("SIGURGs %d", (int)sigurgs);
	close(c);
	close(s);

	say("-- F_SETOWN: one SIGURG per urgent send");
	tcp_pair(&c, &s);
	SHOW(fcntl(s, F_SETOWN, getpid()) >= 0);
	oob_send(c, "bc");
	await(s, POLLPRI);
	for (int i = 0; i < 5000 && sigurgs < 1; i++)
		usleep(1000);
	say("SIGURGs %d", (int)sigurgs);
	recv_flags("oob", s, 8, MSG_OOB);
	SHOW(send(c, "plain", 5, 0));
	await(s, POLLIN);
	say("SIGURGs after plain data %d", (int)sigurgs);
	oob_send(c, "d");
	await(s, POLLPRI);
	for (int i = 0; i < 5000 && sigurgs < 2; i++)
		usleep(1000);
	say("SIGURGs %d", (int)sigurgs);
	recv_flags("normal", s, 60, 0);
	recv_flags("normal", s, 60, 0);
	recv_flags("oob", s, 8, MSG_OOB);
	close(c);
	close(s);

	say("-- the receiver took the urgent byte, read past it and closed: FIN");
	tcp_pair(&c, &s);
	oob_send(c, "x");
	await(s, POLLPRI);
	recv_flags("oob", s, 8, MSG_OOB);
	recv_flags("normal", s, 60, 0);
	SHOW(close(s));
	await(c, POLLRDHUP);
	revents("sender", c);
	so_error("sender", c);
	do_recv("sender", c);
	close(c);

	say("-- the receiver took the urgent byte only and closed: the byte counts as unread, RST");
	tcp_pair(&c, &s);
	oob_send(c, "y");
	await(s, POLLPRI);
	recv_flags("oob", s, 8, MSG_OOB);
	SHOW(close(s));
	await(c, POLLHUP);
	revents("sender", c);
	so_error("sender", c);
	do_recv("sender", c);
	close(c);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "abort", sc_abort },
		{ "closed_peer", sc_closed_peer },
		{ "exit", sc_exit },
		{ "urgent", sc_urgent },
		{ "urgent_more", sc_urgent_more },
		{ "sigurg", sc_sigurg },
		{ NULL, NULL },
	};

	signal(SIGPIPE, SIG_IGN);
	return scen_main(argc, argv, t);
}
