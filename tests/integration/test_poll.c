/* test_poll.c — scilan_poll readiness: POLLIN/POLLOUT/EOF and timeouts, a full ring
 * not writable, mixing scilan sockets with pipes, blocking polls woken by data or a
 * pipe (interrupt and spinning), and many fds at once. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cr_helpers.h"
#include "testutil.h"

/* ---- scilan_poll ------------------------------------------------------------------------------ */

Test(io, poll_readiness, .timeout = 30)
{
	struct pollfd pfd[2];
	int c, s, p[2];
	char b[64];

	pair_or_die(0, 0, &c, &s);
	/* Fresh connection: writable, not readable. */
	pfd[0] = (struct pollfd){ .fd = c, .events = POLLIN | POLLOUT };
	cr_assert_eq(scilan_poll(pfd, 1, 0), 1);
	cr_assert(pfd[0].revents & POLLOUT, "fresh connection not writable (0x%x)", pfd[0].revents);
	cr_assert_eq(pfd[0].revents & POLLIN, 0, "empty connection readable");
	/* Timeout with nothing to do. */
	pfd[0] = (struct pollfd){ .fd = s, .events = POLLIN };
	cr_assert_eq(scilan_poll(pfd, 1, 100), 0, "poll with nothing to read did not time out");
	cr_assert_eq(pfd[0].revents, 0);
	cr_assert_eq(scilan_poll(pfd, 1, 0), 0);
	/* Data makes it readable; reading it all makes it not readable again. */
	cr_assert_eq(tu_send_all(c, "hello", 5, 0), 5);
	cr_assert_eq(scilan_poll(pfd, 1, 1000), 1);
	cr_assert(pfd[0].revents & POLLIN);
	cr_assert_eq(tu_recv_all(s, b, 5), 5);
	cr_assert_eq(scilan_poll(pfd, 1, 0), 0);

	/* Mixed with a pipe. */
	cr_assert_eq(pipe(p), 0);
	pfd[0] = (struct pollfd){ .fd = s, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = p[0], .events = POLLIN };
	cr_assert_eq(scilan_poll(pfd, 2, 50), 0, "nothing ready, yet poll returned");
	cr_assert_eq(write(p[1], "x", 1), 1);
	cr_assert_eq(scilan_poll(pfd, 2, 1000), 1);
	cr_assert_eq(pfd[0].revents, 0);
	cr_assert(pfd[1].revents & POLLIN, "pipe revents 0x%x", pfd[1].revents);
	cr_assert_eq(tu_send_all(c, "y", 1, 0), 1);
	cr_assert_eq(scilan_poll(pfd, 2, 1000), 2);
	cr_assert(pfd[0].revents & POLLIN);
	cr_assert(pfd[1].revents & POLLIN);
	cr_assert_eq(read(p[0], b, 1), 1);
	cr_assert_eq(tu_recv_all(s, b, 1), 1);
	cr_assert_eq(scilan_poll(pfd, 2, 0), 0);

	/* EOF is readable. */
	cr_assert_eq(scilan_shutdown(c, SHUT_WR), 0);
	cr_assert_eq(scilan_poll(pfd, 1, 1000), 1);
	cr_assert(pfd[0].revents & POLLIN, "EOF not readable (0x%x)", pfd[0].revents);
	cr_assert_eq(scilan_recv(s, b, 1, 0), 0);

	/* nfds 0 just times out. */
	cr_assert_eq(scilan_poll(NULL, 0, 10), 0);
	close(p[0]);
	close(p[1]);
	scilan_close(c);
	scilan_close(s);
}

Test(io, poll_pollout_full_ring, .timeout = 30)
{
	unsigned char buf[8192];
	struct pollfd pfd;
	uint64_t got = 0;
	int c, s;

	pair_or_die(0, 4096, &c, &s);
	memset(buf, 1, sizeof(buf));
	cr_assert_eq(scilan_send(c, buf, sizeof(buf), MSG_DONTWAIT), 4096);
	pfd = (struct pollfd){ .fd = c, .events = POLLOUT };
	cr_assert_eq(scilan_poll(&pfd, 1, 50), 0, "full ring reported writable (0x%x)", pfd.revents);
	/* The receiver drains: writable again. */
	{
		unsigned char r[8192];
		ssize_t n;

		while ((n = scilan_recv(s, r, sizeof(r), MSG_DONTWAIT)) > 0)
			got += (uint64_t)n;
	}
	cr_assert_eq(got, 4096);
	cr_assert_eq(scilan_poll(&pfd, 1, 1000), 1, "drained ring not writable");
	cr_assert(pfd.revents & POLLOUT);
	scilan_close(c);
	scilan_close(s);
}

struct late_arg {
	uint16_t port;
	int pipe_w;
	bool via_pipe;
};

static int late_writer(void *p)
{
	struct late_arg *a = p;
	int fd = tu_connect(AF_INET, a->port);

	TU_CHECK(fd >= 0, "connect");
	tu_sleep_ms(150);
	if (a->via_pipe)
		TU_CHECK(write(a->pipe_w, "p", 1) == 1, "pipe write");
	else
		TU_CHECK(scilan_send(fd, "s", 1, 0) == 1, "send");
	tu_sleep_ms(200);
	scilan_close(fd);
	return 0;
}

static void poll_woken(bool via_pipe, int poll_us)
{
	struct late_arg a = { .via_pipe = via_pipe };
	struct tu_child child;
	struct pollfd pfd[2];
	int l, s, p[2], r;
	char st[128];

	tu_watchdog(25, via_pipe ? "poll woken by a pipe" : "poll woken by data");
	cr_assert_eq(pipe(p), 0);
	a.pipe_w = p[1];
	l = tu_listen(AF_INET, 4, &a.port);
	cr_assert_geq(l, 0);
	cr_assert_eq(tu_spawn(&child, late_writer, &a), 0);
	s = tu_accept(l);
	cr_assert_geq(s, 0);
	cr_assert_eq(tu_accelerated(s), 1);
	cr_assert_eq(tu_set_poll_us(s, poll_us), 0);
	pfd[0] = (struct pollfd){ .fd = s, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = p[0], .events = POLLIN };
	do
		r = scilan_poll(pfd, 2, -1);
	while (r < 0 && errno == EINTR);
	cr_assert_eq(r, 1, "poll returned %d (%s)", r, strerror(errno));
	if (via_pipe) {
		cr_assert(pfd[1].revents & POLLIN, "pipe not reported (0x%x)", pfd[1].revents);
		cr_assert_eq(pfd[0].revents, 0);
	} else {
		cr_assert(pfd[0].revents & POLLIN, "socket not reported (0x%x)", pfd[0].revents);
		cr_assert_eq(pfd[1].revents, 0);
	}
	tu_reap(&child);
	cr_assert(tu_exited_with(&child, 0), "writer %s\n%s", tu_status_str(&child, st, sizeof(st)), child.output);
	scilan_close(s);
	scilan_close(l);
	close(p[0]);
	close(p[1]);
}

Test(io, poll_blocking_woken_by_data, .timeout = 30)
{
	poll_woken(false, 0);
}

Test(io, poll_blocking_woken_by_pipe, .timeout = 30)
{
	poll_woken(true, 0);
}

Test(io, poll_blocking_woken_by_data_spinning, .timeout = 30)
{
	poll_woken(false, 50);
}

Test(io, poll_many_fds, .timeout = 60)
{
	enum { PAIRS = 40 };
	struct pollfd pfd[PAIRS + 1];
	int c[PAIRS], s[PAIRS], p[2], r;
	char b;

	for (int i = 0; i < PAIRS; i++)
		pair_or_die(4096, 4096, &c[i], &s[i]);
	cr_assert_eq(pipe(p), 0);
	for (int i = 0; i < PAIRS; i++)
		pfd[i] = (struct pollfd){ .fd = s[i], .events = POLLIN };
	pfd[PAIRS] = (struct pollfd){ .fd = p[0], .events = POLLIN };
	cr_assert_eq(scilan_poll(pfd, PAIRS + 1, 20), 0);
	cr_assert_eq(tu_send_all(c[7], "a", 1, 0), 1);
	cr_assert_eq(tu_send_all(c[39], "b", 1, 0), 1);
	cr_assert_eq(write(p[1], "c", 1), 1);
	r = scilan_poll(pfd, PAIRS + 1, 1000);
	cr_assert_eq(r, 3, "poll over %d fds returned %d", PAIRS + 1, r);
	for (int i = 0; i < PAIRS; i++)
		cr_assert_eq(!!(pfd[i].revents & POLLIN), i == 7 || i == 39, "fd %d revents 0x%x", i,
			     pfd[i].revents);
	cr_assert(pfd[PAIRS].revents & POLLIN);
	cr_assert_eq(scilan_recv(s[7], &b, 1, 0), 1);
	cr_assert_eq(b, 'a');
	cr_assert_eq(scilan_recv(s[39], &b, 1, 0), 1);
	cr_assert_eq(b, 'b');
	for (int i = 0; i < PAIRS; i++) {
		scilan_close(c[i]);
		scilan_close(s[i]);
	}
	close(p[0]);
	close(p[1]);
}
