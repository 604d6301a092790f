/* epollset.c — epoll sets over the device fabric, a plain POSIX program under
 * the preload hook (tests/kernel/init, interrupt mode): many connections in
 * one set woken through the set's doorbell, a cross-thread EPOLL_CTL_MOD and
 * ADD, a set shared with a forked child, more sets than a link holds, an
 * idle set sleeping (also after the link went down under it), the peer's
 * fail-over header never reported readable, and a cut under a busy server.
 * "serve ADDR N" and "client ADDR PORT N ROUNDS" are the two halves of the
 * first across two guests (sl2test).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guest.h"
#include "scilan.h"

#define MEMBERS 40      /* connections in the big set (the mock's links have 61 slices) */
#define EXCHANGES 3000  /* request/response rounds over them */
#define SETS_WANTED 20  /* more epoll sets than a link's SCILAN_SETS (16) */
#define WAIT_MS 20000   /* a wait this long is a lost wake-up */

/* The sum over both links of a counter in the driver's debugfs state. */
static long link_stat(const char *key)
{
	long sum = 0;

	for (int l = 0; l < 2; l++) {
		char path[64], line[128];
		FILE *f;

		snprintf(path, sizeof(path), "/sys/kernel/debug/scilan/scilan%d/state", l);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f)) {
			size_t k = strlen(key);

			if (!strncmp(line, key, k) && line[k] == ' ')
				sum += atol(line + k + 1);
		}
		if (f)
			fclose(f);
	}
	return sum;
}

static int listener_at(const char *addr, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1)
		return -1;
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 64) < 0)
		return -1;
	return l;
}

static int listener(uint16_t port)
{
	return listener_at("127.0.0.1", port);
}

/* A connection to addr:port, on the rings (-1 if not accelerated). */
static int connect_accelerated_to(const char *addr, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int c = socket(AF_INET, SOCK_STREAM, 0), acc = 0;
	socklen_t len = sizeof(acc);

	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1 || c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockopt(c, SOL_SCILAN, SCILAN_SO_ACCELERATED, &acc, &len) < 0 || acc != 1) {
		if (c >= 0)
			close(c);
		return -1;
	}
	return c;
}

static int connect_accelerated(uint16_t port)
{
	return connect_accelerated_to("127.0.0.1", port);
}

/* A connected pair in this process: *c the client end, *s the accepted one. */
static int pair(int l, uint16_t port, int *c, int *s)
{
	*c = connect_accelerated(port);
	*s = *c >= 0 ? accept(l, NULL, NULL) : -1;
	return *c >= 0 && *s >= 0 ? 0 : -1;
}

/* The server of many_members: a one-thread level-triggered epoll echo
 * server; exit 0 when every client closed, 3 on a wait that timed out. */
static int echo_server(int l, int n)
{
	struct epoll_event ev, evs[64];
	char buf[256];
	int ep = epoll_create1(0), open_ = 0;

	if (ep < 0)
		return 2;
	for (int i = 0; i < n; i++) {
		int s = accept(l, NULL, NULL);

		ev = (struct epoll_event){ .events = EPOLLIN, .data.fd = s };
		if (s < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev) < 0)
			return 2;
		open_++;
	}
	while (open_ > 0) {
		int got = epoll_wait(ep, evs, 64, WAIT_MS);

		if (got == 0)
			return 3;
		if (got < 0 && errno != EINTR)
			return 4;
		for (int i = 0; i < got; i++) {
			ssize_t r = recv(evs[i].data.fd, buf, sizeof(buf), 0);

			if (r == 0 || (r < 0 && errno == ECONNRESET)) {
				if (r < 0)
					fprintf(stderr, "epollset: server: fd %d reset, closed\n", evs[i].data.fd);
				close(evs[i].data.fd);
				open_--;
			} else if (r > 0 && send(evs[i].data.fd, buf, (size_t)r, MSG_NOSIGNAL) != r) {
				return 5;
			}
		}
	}
	return 0;
}

/* rounds 64-byte request/responses, each on a pseudo-random one of the n
 * connections c: 0, or 1 a send failed, 2 no answer (the server's set
 * missed the request), 3 a recv failed, 4 wrong bytes.  *done: how many. */
static int exchanges(const int *c, int n, int rounds, int *done)
{
	uint64_t seed = 88172645463325252ull;
	int bad = 0;

	for (*done = 0; *done < rounds && !bad; (*done)++) {
		int i = (int)(xorshift(&seed) % (uint64_t)n);
		char out[64], in[64];
		struct pollfd p = { .fd = c[i], .events = POLLIN };
		ssize_t got = 0, r;

		for (int k = 0; k < 64; k++)
			out[k] = (char)(*done * 7 + k + i);
		if (send(c[i], out, sizeof(out), MSG_NOSIGNAL) != (ssize_t)sizeof(out))
			bad = 1;
		while (!bad && got < (ssize_t)sizeof(in)) {
			if (poll(&p, 1, WAIT_MS) != 1) {
				fprintf(stderr, "epollset: exchange %d: no answer on connection %d (fd %d) in %d ms\n", *done,
					i, c[i], WAIT_MS);
				bad = 2;
			}
			else if ((r = recv(c[i], in + got, sizeof(in) - (size_t)got, 0)) <= 0) {
				fprintf(stderr, "epollset: exchange %d: recv on connection %d (fd %d) after %zd bytes: %zd, %s\n",
					*done, i, c[i], got, r, r ? strerror(errno) : "end of stream");
				bad = 3;
			} else
				got += r;
		}
		if (!bad && memcmp(in, out, sizeof(in)))
			bad = 4;
	}
	return bad;
}

/* A forked echo_server on port and MEMBERS accelerated connections to it
 * in c: the server's pid, or -1 (the result said why; *l closed). */
static pid_t echo_server_and_clients(const char *name, uint16_t port, int *l, int *c)
{
	pid_t srv;

	if ((*l = listener(port)) < 0) {
		result(name, 0, "listen: %s", strerror(errno));
		return -1;
	}
	srv = fork();
	if (srv == 0)
		_exit(echo_server(*l, MEMBERS));
	for (int i = 0; i < MEMBERS; i++)
		if ((c[i] = connect_accelerated(port)) < 0) {
			result(name, 0, "connection %d not accelerated", i);
			kill(srv, SIGKILL);
			waitpid(srv, NULL, 0);
			close(*l);
			return -1;
		}
	return srv;
}

/* Its wait status once the clients closed, within 60 s (-1: none). */
static int echo_server_exit(pid_t srv)
{
	int st = -1;

	alarm(60);
	if (waitpid(srv, &st, 0) != srv)
		st = -1;
	alarm(0);
	return st;
}

static void many_members(void)
{
	const char *name = "epollset_many_members";
	int l, c[MEMBERS], st, bad, done = 0;
	long wake0 = link_stat("set_wakeups"), wakes;
	pid_t srv = echo_server_and_clients(name, 7140, &l, c);

	if (srv < 0)
		return;
	bad = exchanges(c, MEMBERS, EXCHANGES, &done);
	for (int i = 0; i < MEMBERS; i++)
		close(c[i]); /* each close is a member's EOF in the server's set */
	st = echo_server_exit(srv);
	close(l);
	wakes = link_stat("set_wakeups") - wake0;
	/* In interrupt mode the server's set sleeps whenever no request is
	 * waiting: it is woken through the set's doorbell (how often depends
	 * on timing; a scanned set sleeps on its members' endpoints instead,
	 * and this stays 0). */
	result(name, !bad && WIFEXITED(st) && WEXITSTATUS(st) == 0 && wakes > 0,
	       "%d exchanges over %d connections in one set, client %d (2: no answer, 4: wrong bytes), server exit %d "
	       "(3: a wait timed out), %ld set wake-ups",
	       done, MEMBERS, bad, WIFEXITED(st) ? WEXITSTATUS(st) : -1, wakes);
}

struct waiter {
	int ep, got;
	uint64_t data;
};

static void *wait_once(void *arg)
{
	struct waiter *w = arg;
	struct epoll_event ev;

	w->got = epoll_wait(w->ep, &ev, 1, WAIT_MS);
	w->data = ev.data.u64;
	return NULL;
}

/* A waiter asleep on a set whose EPOLLONESHOT member fired is woken when
 * another thread re-arms it and data comes, and when another thread adds a
 * member that has data. */
static void cross_thread(void)
{
	const char *name = "epollset_cross_thread_mod_add";
	int l = listener(7141), c1, s1, c2, s2, ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT, .data.u64 = 1 };
	struct waiter w = { .ep = ep };
	pthread_t t;
	char b;
	int mod_ok = 0, add_ok = 0;

	if (l < 0 || ep < 0 || pair(l, 7141, &c1, &s1) < 0 || pair(l, 7141, &c2, &s2) < 0) {
		result(name, 0, "setup: %s", strerror(errno));
		return;
	}
	if (epoll_ctl(ep, EPOLL_CTL_ADD, s1, &ev) == 0 && send(c1, "a", 1, 0) == 1 && epoll_wait(ep, &ev, 1, WAIT_MS) == 1 &&
	    recv(s1, &b, 1, 0) == 1 && pthread_create(&t, NULL, wait_once, &w) == 0) {
		usleep(300000); /* the waiter is asleep, its only member disarmed */
		ev = (struct epoll_event){ .events = EPOLLIN | EPOLLONESHOT, .data.u64 = 1 };
		if (epoll_ctl(ep, EPOLL_CTL_MOD, s1, &ev) == 0) {
			usleep(100000);
			if (send(c1, "b", 1, 0) == 1) {
				pthread_join(t, NULL);
				mod_ok = w.got == 1 && w.data == 1;
			}
		}
	}
	w.got = -2;
	if (recv(s1, &b, 1, 0) == 1 && send(c2, "c", 1, 0) == 1 && pthread_create(&t, NULL, wait_once, &w) == 0) {
		usleep(300000);
		ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 2 };
		if (epoll_ctl(ep, EPOLL_CTL_ADD, s2, &ev) == 0) {
			pthread_join(t, NULL);
			add_ok = w.got == 1 && w.data == 2;
		}
	}
	result(name, mod_ok && add_ok, "woken after EPOLL_CTL_MOD %d, after EPOLL_CTL_ADD %d", mod_ok, add_ok);
	close(c1), close(s1), close(c2), close(s2), close(ep), close(l);
}

/* CPU seconds this process used so far. */
static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

/* An epoll_wait of a second on set ep with nothing to report: 1 if it
 * reported nothing and slept (used less than a third of the second of
 * CPU; a wait that never sleeps uses all of it), with *used in ms. */
static int sleeps_idle(int ep, double *used)
{
	struct epoll_event ev;
	double c0 = cpu_s();
	int r = epoll_wait(ep, &ev, 1, 1000);

	*used = (cpu_s() - c0) * 1e3;
	return r == 0 && *used < 333;
}

/* Device members that were looked at, marked and answered, then idle: the
 * set's wait must sleep.  (Each look once stored its want again and sent
 * the member back for a second look before every sleep: the set never
 * slept, a CPU busy for every waiting thread.) */
static void idle_set(void)
{
	const char *name = "epollset_idle_set_sleeps";
	int l = listener(7144), c[8], s[8], ep = epoll_create1(0), answered = 0, slept;
	struct epoll_event ev;
	double used;
	char b;

	if (l < 0 || ep < 0) {
		result(name, 0, "setup: %s", strerror(errno));
		return;
	}
	for (int i = 0; i < 8; i++) {
		if (pair(l, 7144, &c[i], &s[i]) < 0) {
			result(name, 0, "pair %d: %s", i, strerror(errno));
			return;
		}
		ev = (struct epoll_event){ .events = EPOLLIN, .data.u32 = (uint32_t)i };
		epoll_ctl(ep, EPOLL_CTL_ADD, s[i], &ev);
	}
	for (int i = 0; i < 8; i++)
		if (send(c[i], "z", 1, 0) == 1 && epoll_wait(ep, &ev, 1, WAIT_MS) == 1 && recv(s[ev.data.u32], &b, 1, 0) == 1)
			answered++;
	slept = sleeps_idle(ep, &used);
	result(name, answered == 8 && slept, "%d of 8 requests reported, then an idle wait of 1 s used %.0f ms of CPU",
	       answered, used);
	for (int i = 0; i < 8; i++)
		close(c[i]), close(s[i]);
	close(ep), close(l);
}

#define MOCK_LINK "/sys/kernel/debug/ntb_mock/link"

static int link_up(void)
{
	for (int i = 0; i < 300; i++) {
		long up = 0;

		for (int l = 0; l < 2; l++) {
			char path[64], line[64];
			FILE *f;

			snprintf(path, sizeof(path), "/sys/kernel/debug/scilan/scilan%d/state", l);
			f = fopen(path, "r");
			while (f && fgets(line, sizeof(line), f))
				up += !strcmp(line, "link up\n");
			if (f)
				fclose(f);
		}
		if (up == 2)
			return 1;
		usleep(20000);
	}
	return 0;
}

/* The link goes down under a set that outlives its device member: the
 * member's connection fails over to kernel TCP (the client's next byte
 * reaches the set and the member's recv by the kernel), and the set, left
 * with a pipe, must sleep again (its set endpoint stays readable for good
 * after the reset). */
static void link_down_set(void)
{
	const char *name = "epollset_sleeps_after_link_down";
	int l = listener(7145), c, s, ep = epoll_create1(0), p[2], carried = 0, slept = 0, up, got = -2, err = 0;
	int acc = -1;
	socklen_t len = sizeof(acc);
	ssize_t rd = -2;
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 1 };
	double used = -1;
	char b;

	if (l < 0 || ep < 0 || pipe(p) < 0 || pair(l, 7145, &c, &s) < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev) < 0) {
		result(name, 0, "setup: %s", strerror(errno));
		return;
	}
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u32 = 2 };
	epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
	if (send(c, "w", 1, 0) == 1 && epoll_wait(ep, &ev, 1, WAIT_MS) == 1 && recv(s, &b, 1, 0) == 1 &&
	    write_file(MOCK_LINK, "0") == 0) {
		usleep(100000);
		got = send(c, "x", 1, MSG_NOSIGNAL) == 1 ? epoll_wait(ep, &ev, 1, WAIT_MS) : -4;
		rd = got == 1 && ev.data.u32 == 1 ? recv(s, &b, 1, 0) : -3;
		err = errno;
		carried = rd == 1 && b == 'x' && getsockopt(s, SOL_SCILAN, SCILAN_SO_ACCELERATED, &acc, &len) == 0 &&
			  acc == 0;
		epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL);
		close(s);
		close(c);
		slept = sleeps_idle(ep, &used);
	}
	write_file(MOCK_LINK, "1");
	up = link_up();
	result(name, carried && slept && up,
	       "the member failed over and carried the next byte %d (wait %d, recv %zd, %s, accelerated %d); then an "
	       "idle wait of 1 s used %.0f ms of CPU; link up again %d",
	       carried, got, rd, strerror(err), acc, used, up);
	close(ep), close(l), close(p[0]), close(p[1]);
}

/* After a cut, what arrives first on the kernel socket is the peer's
 * fail-over header, which is not the program's: neither a set nor a poll may
 * report the member readable for it (a blocking recv after that report
 * would wait for bytes that may never come, as no TCP socket does), and the
 * first real byte is reported and read as usual. */
static void header_not_readable(void)
{
	const char *name = "epollset_fail_over_header_not_readable";
	int l = listener(7147), c, s, ep = epoll_create1(0), set_early = -2, poll_early = -2, set_late = -2, up;
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 1 };
	struct pollfd p;
	ssize_t rd = -2, back = -2;
	char b = 0, y = 0;

	int c2 = -1, s2 = -1, l2 = -1, same = 0, idle = -2, pending = -2;

	if (l < 0 || ep < 0 || pair(l, 7147, &c, &s) < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev) < 0 ||
	    pair(l, 7147, &c2, &s2) < 0) {
		result(name, 0, "setup: %s", strerror(errno));
		return;
	}
	if (send(c, "w", 1, 0) == 1 && epoll_wait(ep, &ev, 1, WAIT_MS) == 1 && recv(s, &b, 1, 0) == 1 &&
	    write_file(MOCK_LINK, "0") == 0) {
		usleep(100000);
		/* The client's next call moves it: its header goes out. */
		p = (struct pollfd){ .fd = c, .events = POLLIN };
		poll(&p, 1, 0);
		set_early = epoll_wait(ep, &ev, 1, 500);
		p = (struct pollfd){ .fd = s, .events = POLLIN };
		poll_early = poll(&p, 1, 300);
		p = (struct pollfd){ .fd = c, .events = POLLIN };
		poll_early += 10 * poll(&p, 1, 300); /* and the server's header at the client */
		if (send(c, "x", 1, MSG_NOSIGNAL) == 1)
			set_late = epoll_wait(ep, &ev, 1, WAIT_MS);
		rd = set_late == 1 ? recv(s, &b, 1, MSG_DONTWAIT) : -3;
		if (rd == 1 && send(s, "y", 1, MSG_NOSIGNAL) == 1)
			back = poll(&p, 1, WAIT_MS) == 1 ? recv(c, &y, 1, MSG_DONTWAIT) : -3;
		/* A connection closed with its strip pending (moved, the peer's
		 * header never read): a listener that gets its number is a
		 * listener, not a socket with a header to strip. */
		p = (struct pollfd){ .fd = c2, .events = POLLIN };
		poll(&p, 1, 0);
		close(c2);
		l2 = socket(AF_INET, SOCK_STREAM, 0);
		same = l2 == c2;
		if (l2 >= 0 && setsockopt(l2, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 }, sizeof(int)) == 0 &&
		    bind(l2, (struct sockaddr *)&(struct sockaddr_in){ .sin_family = AF_INET,
								   .sin_port = htons(7148),
								   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) },
			 sizeof(struct sockaddr_in)) == 0 &&
		    listen(l2, 4) == 0) {
			int k = -1;

			p = (struct pollfd){ .fd = l2, .events = POLLIN };
			idle = poll(&p, 1, 0) == 0 ? 0 : p.revents;
			if ((k = socket(AF_INET, SOCK_STREAM, 0)) >= 0 &&
			    connect(k, (struct sockaddr *)&(struct sockaddr_in){ .sin_family = AF_INET,
										  .sin_port = htons(7148),
										  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) },
				    sizeof(struct sockaddr_in)) == 0)
				pending = poll(&p, 1, WAIT_MS) == 1 ? p.revents : 0;
			if (k >= 0)
				close(k);
		}
	}
	write_file(MOCK_LINK, "1");
	up = link_up();
	result(name,
	       set_early == 0 && poll_early == 0 && set_late == 1 && rd == 1 && b == 'x' && back == 1 && y == 'y' &&
		       same && idle == 0 && pending == POLLIN && up,
	       "after the cut, with only the peer's header arrived: set reported %d, polls %d (0: nothing for the "
	       "program; 1 the server's poll, 10 the client's); then the first byte reported %d and read %zd '%c', "
	       "the answer %zd '%c'; a listener on the number of one closed mid-strip %d: idle %#x, with a client "
	       "%#x (POLLIN %#x); link up again %d",
	       set_early, poll_early, set_late, rd, b ? b : '?', back, y ? y : '?', same, idle, pending, POLLIN, up);
	close(c), close(s), close(s2), close(l2), close(ep), close(l);
}

static void *cut_link_soon(void *arg)
{
	(void)arg;
	usleep(300000);
	write_file(MOCK_LINK, "0");
	usleep(1500000); /* past the heartbeat timeout: every connection fails over */
	write_file(MOCK_LINK, "1");
	return NULL;
}

/* The link is cut under a one-thread epoll echo server mid-run, requests
 * and responses in flight: every connection fails over to kernel TCP and
 * every exchange still comes back intact, the server's set (its members now
 * kernel sockets) reporting each request. */
static void link_cut_mid_run(void)
{
	const char *name = "epollset_link_cut_mid_run";
	int l, c[MEMBERS], st, bad = -1, done = 0, moved = 0, up;
	pthread_t cutter;
	pid_t srv = echo_server_and_clients(name, 7146, &l, c);

	if (srv < 0)
		return;
	if (pthread_create(&cutter, NULL, cut_link_soon, NULL) == 0) {
		bad = exchanges(c, MEMBERS, 4 * EXCHANGES, &done);
		pthread_join(cutter, NULL);
	}
	for (int i = 0; i < MEMBERS; i++) {
		int acc = -1;
		socklen_t len = sizeof(acc);

		moved += getsockopt(c[i], SOL_SCILAN, SCILAN_SO_ACCELERATED, &acc, &len) == 0 && acc == 0;
		close(c[i]);
	}
	st = echo_server_exit(srv);
	close(l);
	up = link_up();
	result(name, !bad && moved == MEMBERS && WIFEXITED(st) && WEXITSTATUS(st) == 0 && up,
	       "%d exchanges over %d connections across the cut, client %d (2: no answer, 3: recv failed, 4: wrong "
	       "bytes), %d on kernel TCP after it, server exit %d (3: a wait timed out); link up again %d",
	       done, MEMBERS, bad, moved, WIFEXITED(st) ? WEXITSTATUS(st) : -1, up);
}

/* A set whose members a forked child also holds: the parent's set still
 * reports every request while the child lives, and after it exits. */
static void forked_holder(void)
{
	const char *name = "epollset_shared_with_forked_child";
	int l = listener(7142), c[8], s[8], ep = epoll_create1(0), seen = 0, rounds = 0, go[2];
	struct epoll_event ev;
	pid_t kid = -1;
	char b;

	if (l < 0 || ep < 0 || pipe(go) < 0) {
		result(name, 0, "setup: %s", strerror(errno));
		return;
	}
	for (int i = 0; i < 8; i++) {
		if (pair(l, 7142, &c[i], &s[i]) < 0) {
			result(name, 0, "pair %d: %s", i, strerror(errno));
			return;
		}
		ev = (struct epoll_event){ .events = EPOLLIN, .data.u32 = (uint32_t)i };
		epoll_ctl(ep, EPOLL_CTL_ADD, s[i], &ev);
	}
	for (int phase = 0; phase < 3; phase++) {
		if (phase == 1) {
			kid = fork();
			if (kid == 0) {
				/* Holds every connection (and the set) until told. */
				_exit(read(go[0], &b, 1) == 1 ? 0 : 1);
			}
		}
		if (phase == 2) {
			if (write(go[1], "g", 1) != 1 || waitpid(kid, NULL, 0) != kid)
				break;
		}
		for (int r = 0; r < 50; r++, rounds++) {
			int i = (r * 5 + phase) % 8;

			if (send(c[i], "x", 1, 0) != 1 || epoll_wait(ep, &ev, 1, WAIT_MS) != 1 || ev.data.u32 != (uint32_t)i ||
			    recv(s[i], &b, 1, 0) != 1)
				break;
			seen++;
		}
	}
	result(name, seen == 150, "%d of 150 requests reported (50 before the fork, 50 while the child holds them, 50 "
				  "after it exits)", seen);
	(void)rounds;
	for (int i = 0; i < 8; i++)
		close(c[i]), close(s[i]);
	close(ep), close(l), close(go[0]), close(go[1]);
}

/* More sets than the link has queues for: each still reports its member
 * (those beyond scan it), and closing them gives every queue back. */
static void many_sets(void)
{
	const char *name = "epollset_more_sets_than_the_link_has";
	int l = listener(7143), c[SETS_WANTED], s[SETS_WANTED], ep[SETS_WANTED], seen = 0;
	long busy_before = link_stat("sets_busy"), busy_during, busy_after;
	struct epoll_event ev;
	char b;

	if (l < 0) {
		result(name, 0, "listen: %s", strerror(errno));
		return;
	}
	for (int i = 0; i < SETS_WANTED; i++) {
		ep[i] = epoll_create1(0);
		ev = (struct epoll_event){ .events = EPOLLIN, .data.u32 = (uint32_t)i };
		if (ep[i] < 0 || pair(l, 7143, &c[i], &s[i]) < 0 || epoll_ctl(ep[i], EPOLL_CTL_ADD, s[i], &ev) < 0) {
			result(name, 0, "set %d: %s", i, strerror(errno));
			return;
		}
		/* A first wait queues the member (and makes the set's queue). */
		epoll_wait(ep[i], &ev, 1, 0);
	}
	busy_during = link_stat("sets_busy");
	for (int i = 0; i < SETS_WANTED; i++)
		if (send(c[i], "y", 1, 0) == 1 && epoll_wait(ep[i], &ev, 1, WAIT_MS) == 1 && ev.data.u32 == (uint32_t)i &&
		    recv(s[i], &b, 1, 0) == 1)
			seen++;
	for (int i = 0; i < SETS_WANTED; i++)
		close(c[i]), close(s[i]), close(ep[i]);
	close(l);
	busy_after = link_stat("sets_busy");
	result(name, seen == SETS_WANTED && busy_during - busy_before == 16 && busy_after == busy_before,
	       "%d of %d sets reported their member; queues taken %ld (the link's 16), %ld left after the closes",
	       seen, SETS_WANTED, busy_during - busy_before, busy_after - busy_before);
}

/* serve ADDR N: the echo server of n connections on ADDR, its port on
 * stdout; exit as echo_server's.  client ADDR PORT N ROUNDS: exit 0 when
 * every exchange came back intact, else exchanges()'s code (10: not
 * accelerated). */
static int two_guests(int argc, char **argv)
{
	struct sockaddr_in a;
	socklen_t al = sizeof(a);
	int n, c[MEMBERS], done = 0, bad, l;

	if (!strcmp(argv[1], "serve") && argc == 4 && (n = atoi(argv[3])) > 0 && n <= MEMBERS) {
		l = listener_at(argv[2], 0);
		if (l < 0 || getsockname(l, (struct sockaddr *)&a, &al) < 0)
			return 9;
		printf("port %d\n", ntohs(a.sin_port));
		return echo_server(l, n);
	}
	if (!strcmp(argv[1], "client") && argc == 6 && (n = atoi(argv[4])) > 0 && n <= MEMBERS) {
		for (int i = 0; i < n; i++)
			if ((c[i] = connect_accelerated_to(argv[2], (uint16_t)atoi(argv[3]))) < 0)
				return 10;
		/* For a test that cuts the link only once all are agreed. */
		printf("connected %d\n", n);
		fflush(stdout);
		bad = exchanges(c, n, atoi(argv[5]), &done);
		printf("%d exchanges over %d connections, result %d\n", done, n, bad);
		for (int i = 0; i < n; i++)
			close(c[i]);
		return bad;
	}
	fprintf(stderr, "usage: epollset [all|NAME] | serve ADDR N | client ADDR PORT N ROUNDS\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "all";

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(what, "serve") || !strcmp(what, "client"))
		return two_guests(argc, argv);
	if (!strcmp(what, "all") || strstr("epollset_many_members", what))
		many_members();
	if (!strcmp(what, "all") || strstr("epollset_cross_thread_mod_add", what))
		cross_thread();
	if (!strcmp(what, "all") || strstr("epollset_shared_with_forked_child", what))
		forked_holder();
	if (!strcmp(what, "all") || strstr("epollset_more_sets_than_the_link_has", what))
		many_sets();
	if (!strcmp(what, "all") || strstr("epollset_idle_set_sleeps", what))
		idle_set();
	if (!strcmp(what, "all") || strstr("epollset_sleeps_after_link_down", what))
		link_down_set();
	if (!strcmp(what, "all") || strstr("epollset_fail_over_header_not_readable", what))
		header_not_readable();
	if (!strcmp(what, "all") || strstr("epollset_link_cut_mid_run", what))
		link_cut_mid_run();
	return failures ? 1 : 0;
}
