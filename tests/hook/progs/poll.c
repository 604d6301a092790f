/* poll.c — scenarios for poll, ppoll, select and pselect over sets mixing sockets
 * with a pipe, a listener and UDP: zero, finite and infinite timeouts, data that
 * arrives while asleep, peer shutdown/close, signal masks.  Plain POSIX. */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include "scen.h"

/* A thread that writes to fd after a pause (the pause only makes it likely
 * that the waiter is asleep by then; nothing depends on its length). */
struct later {
	pthread_t t;
	int fd;
	const char *data;
};

static void *later_main(void *arg)
{
	struct later *l = arg;

	usleep(30000);
	if (write(l->fd, l->data, strlen(l->data)) < 0)
		fatal("later write");
	return NULL;
}

static void later(struct later *l, int fd, const char *data)
{
	l->fd = fd;
	l->data = data;
	pthread_create(&l->t, NULL, later_main, l);
}

static void drain(int fd)
{
	char buf[256];

	while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0) {
	}
}

static void drain_pipe(int fd)
{
	char buf[256];

	MUST(fcntl(fd, F_SETFL, O_NONBLOCK));
	while (read(fd, buf, sizeof(buf)) > 0) {
	}
	MUST(fcntl(fd, F_SETFL, 0));
}

static void show_poll(const char *what, struct pollfd *f, int n, int rc)
{
	char line[512];
	int len = snprintf(line, sizeof(line), "%s: rc %d%s%s", what, rc, rc < 0 ? " " : "", rc < 0 ? en(errno) : "");

	for (int i = 0; i < n; i++)
		len += snprintf(line + len, sizeof(line) - (size_t)len, " [%d]%s", i, pollmask(f[i].revents));
	say("%s", line);
}

#define POLL(what, f, n, t)                                              \
	do {                                                             \
		errno = 0;                                               \
		int rc_ = poll(f, n, t);                                 \
		show_poll(what, f, n, rc_);                              \
	} while (0)

static int sc_poll(void)
{
	uint16_t port;
	int c, s, p[2], l = tcp_listener(&port), u = MUST(socket(AF_INET, SOCK_DGRAM, 0)), x;
	struct pollfd f[6];
	struct later lt;

	tcp_pair(&c, &s);
	MUST(pipe(p));
	/* 0: accepted socket, 1: pipe, 2: client (write), 3: listener, 4: UDP, 5: unused slot */
	f[0] = (struct pollfd){ .fd = s, .events = POLLIN | POLLRDHUP };
	f[1] = (struct pollfd){ .fd = p[0], .events = POLLIN };
	f[2] = (struct pollfd){ .fd = c, .events = POLLOUT };
	f[3] = (struct pollfd){ .fd = l, .events = POLLIN };
	f[4] = (struct pollfd){ .fd = u, .events = POLLIN | POLLOUT };
	f[5] = (struct pollfd){ .fd = -1, .events = POLLIN };
	POLL("idle", f, 6, 0);
	MUST(write(p[1], "p", 1));
	POLL("pipe written", f, 6, 0);
	MUST(send(c, "data", 4, 0));
	POLL("socket and pipe readable", f, 6, 0);
	POLL("level: still readable", f, 6, 10);
	drain(s);
	drain_pipe(p[0]);
	f[2].events = POLLIN;
	POLL("drained; client asks IN only", f, 6, 0);
	POLL("timeout 20 ms, nothing", f, 6, 20);
	/* Readiness that arrives while poll sleeps. */
	later(&lt, c, "late");
	POLL("blocking, socket data later", f, 1, -1);
	pthread_join(lt.t, NULL);
	drain(s);
	later(&lt, p[1], "late");
	POLL("blocking, pipe data later", f, 2, 5000);
	pthread_join(lt.t, NULL);
	drain_pipe(p[0]);
	/* A pending connection makes the listener readable. */
	x = tcp_connect(port);
	POLL("connection pending", f, 6, 0);
	close(MUST(accept(l, NULL, NULL)));
	close(x);
	/* events 0: only ERR/HUP/NVAL can show; a closed fd is NVAL. */
	{
		struct pollfd g[3] = { { .fd = s, .events = 0 }, { .fd = p[0], .events = 0 }, { .fd = 9999, .events = POLLIN } };

		POLL("events 0 and a bad fd", g, 3, 0);
	}
	POLL("nfds 0", NULL, 0, 10);
	/* Peer shutdown, then close. */
	MUST(shutdown(c, SHUT_WR));
	POLL("peer SHUT_WR", f, 1, 0);
	{
		struct pollfd g = { .fd = c, .events = POLLIN | POLLOUT | POLLRDHUP };

		close(s);
		POLL("client after peer close", &g, 1, 1000);
		f[0].fd = c;
	}
	close(c);
	close(p[0]);
	close(p[1]);
	close(l);
	close(u);
	return 0;
}

static volatile sig_atomic_t usr1;
static void on_usr1(int sig)
{
	(void)sig;
	usr1++;
}

static void setup_usr1(sigset_t *blocked, sigset_t *open_mask)
{
	struct sigaction sa = { .sa_handler = on_usr1 };

	sigemptyset(&sa.sa_mask);
	MUST(sigaction(SIGUSR1, &sa, NULL));
	sigemptyset(blocked);
	sigaddset(blocked, SIGUSR1);
	MUST(sigprocmask(SIG_BLOCK, blocked, open_mask));
	sigdelset(open_mask, SIGUSR1);
}

static int sc_ppoll(void)
{
	int c, s, p[2], rc;
	struct pollfd f[2];
	struct timespec zero = { 0, 0 }, ten = { 0, 10000000 };
	sigset_t blocked, open_mask;
	struct later lt;

	setup_usr1(&blocked, &open_mask);
	tcp_pair(&c, &s);
	MUST(pipe(p));
	f[0] = (struct pollfd){ .fd = s, .events = POLLIN };
	f[1] = (struct pollfd){ .fd = p[0], .events = POLLIN };
	errno = 0;
	rc = ppoll(f, 2, &zero, NULL);
	show_poll("ppoll idle", f, 2, rc);
	rc = ppoll(f, 2, &ten, &blocked);
	show_poll("ppoll 10 ms idle", f, 2, rc);
	MUST(send(c, "d", 1, 0));
	MUST(write(p[1], "p", 1));
	rc = ppoll(f, 2, NULL, &blocked);
	show_poll("ppoll both ready", f, 2, rc);
	drain(s);
	drain_pipe(p[0]);
	/* A signal pending while blocked: a mask that admits it interrupts. */
	raise(SIGUSR1);
	say("pending, handler ran %d", (int)usr1);
	errno = 0;
	rc = ppoll(f, 2, NULL, &open_mask);
	show_poll("ppoll with SIGUSR1 admitted", f, 2, rc);
	say("handler ran %d", (int)usr1);
	/* A mask that keeps it blocked: data wakes the call, the signal waits. */
	raise(SIGUSR1);
	later(&lt, c, "x");
	errno = 0;
	rc = ppoll(f, 2, NULL, &blocked);
	show_poll("ppoll with SIGUSR1 blocked, data later", f, 2, rc);
	pthread_join(lt.t, NULL);
	say("handler ran %d", (int)usr1);
	MUST(sigprocmask(SIG_SETMASK, &open_mask, NULL));
	say("after unblocking, handler ran %d", (int)usr1);
	close(c);
	close(s);
	close(p[0]);
	close(p[1]);
	return 0;
}

static void show_sets(const char *what, int rc, int nfd, const int *fds, fd_set *r, fd_set *w, fd_set *e)
{
	char line[512];
	int len = snprintf(line, sizeof(line), "%s: rc %d%s%s", what, rc, rc < 0 ? " " : "", rc < 0 ? en(errno) : "");

	for (int i = 0; rc >= 0 && i < nfd; i++)
		len += snprintf(line + len, sizeof(line) - (size_t)len, " [%d]%s%s%s", i,
				r && FD_ISSET(fds[i], r) ? "r" : "", w && FD_ISSET(fds[i], w) ? "w" : "",
				e && FD_ISSET(fds[i], e) ? "e" : "");
	say("%s", line);
}

/* fds[0..n) in the read, write and except sets as asked by the masks
 * ("r", "w", "e" per fd), select or pselect, then print the result. */
static void sel(const char *what, bool use_pselect, const int *fds, const char *const *want, int n, long timeout_us,
		const sigset_t *mask)
{
	fd_set r, w, e;
	int maxfd = 0, rc;
	struct timeval tv = { timeout_us / 1000000, timeout_us % 1000000 };
	struct timespec ts = { timeout_us / 1000000, (timeout_us % 1000000) * 1000 };

	FD_ZERO(&r);
	FD_ZERO(&w);
	FD_ZERO(&e);
	for (int i = 0; i < n; i++) {
		if (strchr(want[i], 'r'))
			FD_SET(fds[i], &r);
		if (strchr(want[i], 'w'))
			FD_SET(fds[i], &w);
		if (strchr(want[i], 'e'))
			FD_SET(fds[i], &e);
		if (fds[i] > maxfd)
			maxfd = fds[i];
	}
	errno = 0;
	if (use_pselect)
		rc = pselect(maxfd + 1, &r, &w, &e, timeout_us < 0 ? NULL : &ts, mask);
	else
		rc = select(maxfd + 1, &r, &w, &e, timeout_us < 0 ? NULL : &tv);
	show_sets(what, rc, n, fds, &r, &w, &e);
}

static int select_common(bool ps)
{
	uint16_t port;
	int c, s, p[2], l = tcp_listener(&port), x;
	sigset_t blocked, open_mask;
	struct later lt;

	setup_usr1(&blocked, &open_mask);
	tcp_pair(&c, &s);
	MUST(pipe(p));
	{
		int fds[] = { s, p[0], c, l };
		const char *const want[] = { "re", "r", "rw", "r" };

		sel("idle", ps, fds, want, 4, 0, &blocked);
		MUST(write(p[1], "p", 1));
		sel("pipe written", ps, fds, want, 4, 0, &blocked);
		MUST(send(c, "data", 4, 0));
		sel("socket and pipe readable", ps, fds, want, 4, 0, &blocked);
		drain(s);
		drain_pipe(p[0]);
		sel("timeout 20 ms", ps, fds, want, 2, 20000, &blocked);
		later(&lt, c, "late");
		sel("blocking, socket data later", ps, fds, want, 2, -1, &blocked);
		pthread_join(lt.t, NULL);
		drain(s);
		later(&lt, p[1], "late");
		sel("blocking, pipe data later", ps, fds, want, 2, 5000000, &blocked);
		pthread_join(lt.t, NULL);
		drain_pipe(p[0]);
		x = tcp_connect(port);
		sel("connection pending", ps, fds, want, 4, 0, &blocked);
		close(MUST(accept(l, NULL, NULL)));
		close(x);
		if (ps) {
			raise(SIGUSR1);
			sel("SIGUSR1 pending and admitted", ps, fds, want, 2, -1, &open_mask);
			say("handler ran %d", (int)usr1);
		}
		MUST(shutdown(c, SHUT_WR));
		sel("peer SHUT_WR", ps, fds, want, 1, 0, &blocked);
	}
	{
		int fds[] = { c };
		const char *const want[] = { "rwe" };
		/* A closed number inside the descriptor table (select ignores
		 * numbers beyond the table's size). */
		int bad[] = { MUST(dup2(p[0], 200)) };

		close(bad[0]);
		close(s);
		sel("client after peer close", ps, fds, want, 1, 1000000, &blocked);
		sel("bad fd", ps, bad, want, 1, 0, &blocked);
	}
	close(c);
	close(p[0]);
	close(p[1]);
	close(l);
	return 0;
}

static int sc_select(void)
{
	return select_common(false);
}

static int sc_pselect(void)
{
	return select_common(true);
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "poll", sc_poll },     { "ppoll", sc_ppoll }, { "select", sc_select },
		{ "pselect", sc_pselect }, { NULL, NULL },
	};

	return scen_main(argc, argv, t);
}
