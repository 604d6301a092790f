/* recvflags.c — what kernel TCP's receive does besides copying: SO_RCVLOWAT
 * (poll, epoll and a blocking recv wait until the low-water mark is there;
 * a non-blocking recv and the end of the stream return what there is) and
 * MSG_TRUNC (the bytes are discarded, not copied; a NULL buffer will do).
 */
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "scen.h"

static char buf[4096];

static void readable(const char *what, int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };

	errno = 0;
	long r = poll(&p, 1, 300);
	say("%s: poll -> %ld %s", what, r, r > 0 ? pollmask(p.revents) : en(errno));
}

static void epoll_readable(const char *what, int ep)
{
	struct epoll_event ev = { 0 };

	errno = 0;
	long r = epoll_wait(ep, &ev, 1, 300);
	say("%s: epoll_wait -> %ld %s", what, r, r > 0 ? epmask(ev.events) : en(errno));
}

static void show_lowat(int fd)
{
	int v = -1;
	socklen_t len = sizeof(v);

	MUST(getsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &v, &len));
	say("SO_RCVLOWAT reads back %d", v);
}

/* Sends of first, then second bytes (if any) while the other end already
 * waits in recv.  (Not a recv that already took bytes: the kernel then
 * wakes it only once a whole mark more arrived, a quirk of tcp_data_ready
 * nobody relies on.) */
struct later {
	int fd;
	size_t first, second;
};

static void *send_later(void *arg)
{
	struct later *l = arg;
	static char out[100];

	usleep(200 * 1000);
	send_all(l->fd, out, l->first);
	if (l->second) {
		usleep(200 * 1000);
		send_all(l->fd, out, l->second);
	}
	return NULL;
}

static void recv_while_sent_later(const char *what, int c, int s, size_t first, size_t second, int flags)
{
	struct later l = { c, first, second };
	pthread_t t;

	MUST(pthread_create(&t, NULL, send_later, &l));
	errno = 0;
	show(what, recv(s, buf, sizeof(buf), flags));
	pthread_join(t, NULL);
}

static int sc_rcvlowat(void)
{
	int c, s, ep, v = 100;
	struct epoll_event ev = { .events = EPOLLIN };

	memset(buf, 'x', sizeof(buf));
	tcp_pair(&c, &s);
	SHOW(setsockopt(s, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof(v)));
	show_lowat(s);
	ep = MUST(epoll_create1(0));
	MUST(epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev));

	say("-- 10 bytes, below the mark: neither poll nor epoll says readable");
	send_all(c, buf, 10);
	readable("10 of 100", s);
	epoll_readable("10 of 100", ep);
	SHOW(recv(s, buf, sizeof(buf), MSG_DONTWAIT));

	say("-- a recv asking for less than the mark takes what it asks for at once");
	send_all(c, buf, 50);
	SHOW(recv(s, buf, 20, 0));

	SHOW(recv(s, buf, sizeof(buf), MSG_DONTWAIT));

	say("-- a blocking recv waits for the mark: 30, then 70 more");
	recv_while_sent_later("recv", c, s, 30, 70, 0);

	say("-- at the mark, readable");
	send_all(c, buf, 100);
	readable("100 of 100", s);
	epoll_readable("100 of 100", ep);
	SHOW(recv(s, buf, sizeof(buf), 0));

	say("-- MSG_PEEK below the mark: non-blocking, what there is; blocking, the mark");
	send_all(c, buf, 10);
	SHOW(recv(s, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT));
	recv_while_sent_later("recv(MSG_PEEK)", c, s, 90, 0, MSG_PEEK);
	SHOW(recv(s, buf, sizeof(buf), 0));

	say("-- the end of the stream below the mark: readable, and recv returns the rest");
	send_all(c, buf, 10);
	SHOW(shutdown(c, SHUT_WR));
	readable("FIN", s);
	epoll_readable("FIN", ep);
	SHOW(recv(s, buf, sizeof(buf), 0));
	SHOW(recv(s, buf, sizeof(buf), 0));

	say("-- the mark set back to 0 reads back as 1");
	v = 0;
	SHOW(setsockopt(s, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof(v)));
	show_lowat(s);
	close(ep);
	close(c);
	close(s);
	return 0;
}

/* An accepted socket starts with its listener's mark, as the kernel's does. */
static int sc_inherited(void)
{
	uint16_t port;
	int l = tcp_listener(&port), c, s, v = 64;

	memset(buf, 'y', sizeof(buf));
	SHOW(setsockopt(l, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof(v)));
	c = tcp_connect(port);
	s = MUST(accept(l, NULL, NULL));
	show_lowat(s);
	send_all(c, buf, 32);
	readable("32 of 64", s);
	send_all(c, buf, 32);
	readable("64 of 64", s);
	SHOW(recv(s, buf, sizeof(buf), 0));
	close(c);
	close(s);
	close(l);
	return 0;
}

/* HAProxy drains a connection it closes with recv(NULL, INT_MAX, MSG_TRUNC). */
static int sc_trunc(void)
{
	int c, s;
	struct pollfd p;

	tcp_pair(&c, &s);
	send_all(c, "0123456789", 10);
	memset(buf, '.', 16);
	SHOW(recv(s, NULL, 4, MSG_TRUNC));
	SHOW(recv(s, buf, 3, MSG_PEEK | MSG_TRUNC));
	say("buffer after the peek: %.3s", buf);
	SHOW(recv(s, buf, 16, 0));
	say("what was left: %.6s", buf);

	say("-- a drain of everything there is, non-blocking");
	memset(buf, 'd', sizeof(buf));
	send_all(c, buf, 1000);
	SHOW(recv(s, NULL, INT_MAX, MSG_DONTWAIT | MSG_NOSIGNAL | MSG_TRUNC));
	SHOW(recv(s, NULL, INT_MAX, MSG_DONTWAIT | MSG_NOSIGNAL | MSG_TRUNC));

	say("-- the urgent byte taken without a copy");
	SHOW(send(c, "u", 1, MSG_OOB));
	p = (struct pollfd){ .fd = s, .events = POLLPRI };
	MUST(poll(&p, 1, 5000));
	SHOW(recv(s, NULL, 1, MSG_OOB | MSG_TRUNC));
	SHOW(recv(s, NULL, 1, MSG_OOB | MSG_TRUNC));

	say("-- a blocking drain ends at the end of the stream");
	send_all(c, buf, 100);
	SHOW(shutdown(c, SHUT_WR));
	SHOW(recv(s, NULL, INT_MAX, MSG_TRUNC));
	SHOW(recv(s, NULL, INT_MAX, MSG_TRUNC));
	close(c);
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "rcvlowat", sc_rcvlowat },
		{ "inherited", sc_inherited },
		{ "trunc", sc_trunc },
		{ NULL, NULL },
	};

	return scen_main(argc, argv, t);
}
