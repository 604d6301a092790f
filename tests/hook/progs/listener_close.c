/* listener_close.c — a listener closed with a connection still in its queue:
 * kernel TCP resets it.  The client looks through epoll (level and edge,
 * waiting or not), select, FIONREAD, MSG_PEEK, or hands the connection on
 * (SCM_RIGHTS, exec), then recv and send; run plain and under the hook, the
 * transcripts must be the same. */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include "scen.h"

/* How the client first looks at its connection once the listener closed. */
enum look { EPOLL_IN_OUT, EPOLL_EDGE, EPOLL_BLOCKED, SELECT_RW, FIONREAD_LOOK, PEEK, PASSED, PASSED_BEFORE, N_LOOKS };

static const char *const look_names[N_LOOKS] = {
	"epoll IN|OUT", "epoll IN|OUT|ET", "epoll blocked for IN", "select read+write", "ioctl FIONREAD", "recv MSG_PEEK",
	"passed with SCM_RIGHTS", "passed with SCM_RIGHTS before the close (decided then)",
};

static int lfd;

static void epoll_look(int c, uint32_t events, int timeout_ms)
{
	int ep = MUST(epoll_create1(0));
	struct epoll_event ev = { .events = events }, out = { 0 };

	MUST(epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev));
	if (SHOW(epoll_wait(ep, &out, 1, timeout_ms)) > 0)
		say("events %s", epmask(out.events));
	close(ep);
}

/* The listener closes while the client waits in epoll_wait. */
static void *close_listener_soon(void *arg)
{
	(void)arg;
	usleep(50000); /* the client most likely waits by now; the outcome is the same if not */
	close(lfd);
	return NULL;
}

/* The connection through a Unix socket and back: the descriptor received. */
static int pass_through_unix(int c)
{
	int sv[2], got;

	MUST(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	MUST(scen_send_fd(sv[0], c));
	close(c);
	got = MUST(scen_recv_fd(sv[1]));
	close(sv[0]);
	close(sv[1]);
	return got;
}

/* Returns the descriptor the rest of the case uses. */
static int look(enum look how, int c)
{
	fd_set rd, wr;
	struct timeval zero = { 0, 0 };
	char b[8];
	int n = -1;

	switch (how) {
	case EPOLL_IN_OUT:
		epoll_look(c, EPOLLIN | EPOLLOUT, 0);
		break;
	case EPOLL_EDGE:
		epoll_look(c, EPOLLIN | EPOLLOUT | EPOLLET, 0);
		break;
	case EPOLL_BLOCKED:
		epoll_look(c, EPOLLIN, 20000);
		break;
	case SELECT_RW:
		FD_ZERO(&rd);
		FD_ZERO(&wr);
		FD_SET(c, &rd);
		FD_SET(c, &wr);
		SHOW(select(c + 1, &rd, &wr, NULL, &zero));
		say("readable %d writable %d", FD_ISSET(c, &rd) != 0, FD_ISSET(c, &wr) != 0);
		break;
	case FIONREAD_LOOK:
		SHOW(ioctl(c, FIONREAD, &n));
		say("FIONREAD %d", n);
		break;
	case PEEK:
		SHOW(recv(c, b, sizeof(b), MSG_PEEK | MSG_DONTWAIT));
		break;
	case PASSED:
		c = pass_through_unix(c);
		break;
	default:
		break;
	}
	return c;
}

/* What the stream says after the reset. */
static void the_rest(int c)
{
	char b[8];

	SHOW(recv(c, b, sizeof(b), MSG_DONTWAIT));
	SHOW(recv(c, b, sizeof(b), MSG_DONTWAIT));
	SHOW(send(c, "more", 4, MSG_NOSIGNAL));
	SHOW(close(c));
}

/* One client per way of looking; late: the listener closes after the
 * agreement's second (the client's offer has been out that long). */
static int run_all(bool late)
{
	for (int how = 0; how < N_LOOKS; how++) {
		pthread_t closer;
		uint16_t port;
		int c;

		say("-- %s", look_names[how]);
		lfd = tcp_listener(&port);
		c = tcp_connect(port);
		SHOW(send(c, "hello", 5, MSG_NOSIGNAL));
		if (late)
			usleep(1300000);
		if (how == PASSED_BEFORE)
			c = pass_through_unix(c);
		if (how == EPOLL_BLOCKED) {
			MUST(-pthread_create(&closer, NULL, close_listener_soon, NULL));
			c = look(how, c);
			pthread_join(closer, NULL);
		} else {
			close(lfd);
			usleep(20000); /* the RST crosses loopback within close() already */
			c = look(how, c);
		}
		the_rest(c);
	}
	return 0;
}

/* The client execs with its connection after the reset: the new image
 * finds what kernel TCP would give it. */
static int sc_exec(void)
{
	uint16_t port;
	char fdarg[16];
	int c;

	lfd = tcp_listener(&port);
	c = tcp_connect(port);
	SHOW(send(c, "hello", 5, MSG_NOSIGNAL));
	close(lfd);
	usleep(20000);
	snprintf(fdarg, sizeof(fdarg), "%d", c);
	execl(scen_self, scen_self, "exec_rest", fdarg, (char *)NULL);
	fatal("execl");
}

static int sc_exec_rest(void)
{
	say("-- after exec");
	the_rest(scen_argc > 0 ? atoi(scen_argv[0]) : -1);
	return 0;
}

static int sc_now(void)
{
	return run_all(false);
}

static int sc_late(void)
{
	return run_all(true);
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "now", sc_now },
		{ "late", sc_late },
		{ "exec", sc_exec },
		{ "exec_rest", sc_exec_rest },
		{ NULL, NULL },
	};

	return scen_main(argc, argv, t);
}
