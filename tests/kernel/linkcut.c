/* linkcut.c — the device link cut under a plain POSIX program running under
 * the preload hook (tests/kernel/init): a sender blocked on a full ring, a
 * non-blocking poll loop, an epoll waiter, and an idle process that exits.
 * Each must end in ECONNRESET or a clean exit, never SIGBUS.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "guest.h"
#include "scilan.h"

#define MOCK_LINK "/sys/kernel/debug/ntb_mock/link"

enum mode { FULL_SEND, NONBLOCK_POLL, EPOLL, IDLE_EXIT };
static const char *const names[] = { "linkcut_full_ring_send", "linkcut_nonblocking_poll_loop", "linkcut_epoll",
				      "linkcut_idle_exit" };

static int link_is_up(void)
{
	char line[64];
	int up = 1;

	for (int l = 0; l < 2; l++) {
		char path[64];
		FILE *f;

		snprintf(path, sizeof(path), "/sys/kernel/debug/scilan/scilan%d/state", l);
		f = fopen(path, "r");
		int seen = 0;

		while (f && fgets(line, sizeof(line), f))
			seen |= !strcmp(line, "link up\n");
		if (f)
			fclose(f);
		up &= seen;
	}
	return up;
}

static int wait_up(void)
{
	for (int i = 0; i < 300 && !link_is_up(); i++)
		usleep(20000);
	return link_is_up();
}

/* The subject: 0 when its call ended in ECONNRESET (or, idle, it exits);
 * 2.. when something else happened. */
static int subject(enum mode m, int c, int ready, int go)
{
	static char buf[65536];
	struct epoll_event ev = { .events = EPOLLIN };
	time_t end = time(NULL) + 30;
	ssize_t n;
	int ep;

	switch (m) {
	case FULL_SEND:
		if (write(ready, "r", 1) != 1)
			return 2;
		while ((n = send(c, buf, sizeof(buf), MSG_NOSIGNAL)) > 0)
			;
		return n < 0 && errno == ECONNRESET ? 0 : 3;
	case NONBLOCK_POLL:
		fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK);
		if (write(ready, "r", 1) != 1)
			return 2;
		while (time(NULL) < end) {
			struct pollfd p = { .fd = c, .events = POLLIN | POLLOUT };

			n = send(c, buf, sizeof(buf), MSG_NOSIGNAL);
			if (n < 0 && errno != EAGAIN)
				return errno == ECONNRESET ? 0 : 4;
			n = recv(c, buf, sizeof(buf), 0);
			if (n == 0 || (n < 0 && errno != EAGAIN))
				return n < 0 && errno == ECONNRESET ? 0 : 5;
			poll(&p, 1, 0);
		}
		return 6;
	case EPOLL:
		ep = epoll_create1(0);
		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev) < 0 || write(ready, "r", 1) != 1)
			return 2;
		if (epoll_wait(ep, &ev, 1, 30000) != 1)
			return 7;
		n = recv(c, buf, sizeof(buf), 0);
		return n < 0 && errno == ECONNRESET ? 0 : 8;
	case IDLE_EXIT:
		if (write(ready, "r", 1) != 1)
			return 2;
		/* Told once the link is down; exits with the connection open. */
		return read(go, buf, 1) == 1 ? 0 : 9;
	}
	return 10;
}

static const char *running;
static pid_t kids[2];

static void timed_out(int sig)
{
	(void)sig;
	printf("TEST %s FAIL timed out (subject pid %d, its peer pid %d)\n", running, (int)kids[1], (int)kids[0]);
	kill(kids[0], SIGKILL);
	kill(kids[1], SIGKILL);
	write_file(MOCK_LINK, "1");
	_exit(1);
}

static void run(enum mode m, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1, pr[2], pg[2], ps[2], st = -1, sst = -1, acc = 0, up;
	socklen_t len = sizeof(acc);
	pid_t srv, sub;
	char r;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 4) < 0 || pipe(pr) < 0 || pipe(pg) < 0 ||
	    pipe(ps) < 0) {
		result(names[m], 0, "setup: %s", strerror(errno));
		return;
	}
	srv = fork();
	if (srv == 0) {
		/* Reads only after the cut (the client's ring fills), and
		 * then sees the reset. */
		int s = accept(l, NULL, NULL);
		char b;

		ssize_t n;

		if (s < 0 || read(ps[0], &b, 1) != 1)
			_exit(2);
		alarm(20);
		/* What arrived before the cut may still be read; then the reset. */
		while ((n = read(s, &b, 1)) > 0)
			;
		_exit(n < 0 && errno == ECONNRESET ? 0 : 3);
	}
	sub = fork();
	if (sub == 0) {
		int c = socket(AF_INET, SOCK_STREAM, 0);

		close(pr[0]);
		if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) < 0 ||
		    getsockopt(c, SOL_SCILAN, SCILAN_SO_ACCELERATED, &acc, &len) < 0 || acc != 1)
			_exit(1);
		_exit(subject(m, c, pr[1], pg[0]));
	}
	close(pr[1]); /* a subject that fails early: EOF, not a hang */
	running = names[m];
	kids[0] = srv;
	kids[1] = sub;
	signal(SIGALRM, timed_out);
	alarm(60);
	if (read(pr[0], &r, 1) == 1) {
		usleep(300000); /* into its blocking call */
		write_file(MOCK_LINK, "0");
	}
	usleep(200000);
	if (m == IDLE_EXIT && write(pg[1], "g", 1) != 1)
		perror("go");
	if (write(ps[1], "g", 1) != 1)
		perror("go");
	if (waitpid(sub, &st, 0) != sub)
		st = -1;
	if (waitpid(srv, &sst, 0) != srv)
		sst = -1;
	alarm(0);
	write_file(MOCK_LINK, "1");
	up = wait_up();
	result(names[m], WIFEXITED(st) && WEXITSTATUS(st) == 0 && WIFEXITED(sst) && WEXITSTATUS(sst) == 0 && up,
	       "subject %s %d, its peer %s %d (0: ECONNRESET or a clean exit; 1: not accelerated), link up again %d",
	       WIFSIGNALED(st) ? "killed by signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
	       WIFSIGNALED(sst) ? "killed by signal" : "exit", WIFSIGNALED(sst) ? WTERMSIG(sst) : WEXITSTATUS(sst), up);
	close(l);
	close(pr[0]);
	close(pg[0]);
	close(pg[1]);
	close(ps[0]);
	close(ps[1]);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "all";

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	for (int m = FULL_SEND; m <= IDLE_EXIT; m++)
		if (!strcmp(what, "all") || strstr(names[m], what))
			run((enum mode)m, (uint16_t)(7120 + m));
	return failures ? 1 : 0;
}
