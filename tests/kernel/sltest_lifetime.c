/* sltest_lifetime.c — what sltest's endpoints hold and give back: a killed
 * mapped client, slices run out, connects given up (churn), module unload
 * refused while mapped, an abandoned connect.
 */
#include "sltest.h"

/* A client killed while it has both slices mapped: the server sees the
 * close, and once it closes too both links are back to no endpoints and no
 * busy slices. */
void test_killed(void)
{
	struct conn s;
	struct pollfd p;
	int lfd = listen_on(NODE_B, 9), ok, hup;
	uint32_t tok;
	pid_t pid;

	if (lfd < 0) {
		result("killed_while_mapped", 0, "listen: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		struct conn c;

		if (conn_connect(&c, NODE_A, 9, 0) < 0)
			_exit(2);
		conn_send(&c, "hello", 5);
		pause();
		_exit(0);
	}
	ok = conn_accept(&s, NODE_B, lfd, 0) == 0 && conn_recv(&s, &tok, 5) == 0;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	p = (struct pollfd){ .fd = s.fd, .events = POLLIN };
	hup = poll(&p, 1, 3000) == 1 && (p.revents & POLLHUP) && read(s.fd, &tok, sizeof(tok)) == 0;
	conn_close(&s);
	listen_close(lfd);
	ok = ok && hup && settle(0, "endpoints", 0) && settle(1, "endpoints", 0) &&
	     settle(0, "slices_busy", 0) && settle(1, "slices_busy", 0);
	result("killed_while_mapped", ok, "peer hup %d, endpoints %ld/%ld, busy slices %ld/%ld", hup,
	       dbg_value(0, "endpoints"), dbg_value(1, "endpoints"), dbg_value(0, "slices_busy"),
	       dbg_value(1, "slices_busy"));
}

/* Connect until the slices run out (EAGAIN), never accepting: the listener's
 * close then closes every queued connection, and nothing is left over. */
void test_exhaustion(void)
{
	struct scilan_connect cr;
	struct scilan_info in;
	int lfd = listen_sock(NODE_B, tcp_listener(12), 1024), fds[SL_MAX_FDS], socks[SL_MAX_FDS], n = 0, err = 0;

	if (lfd < 0 || info(lfd, &in) < 0) {
		result("slice_exhaustion", 0, "listen: %s", strerror(errno));
		return;
	}
	while (n < SL_MAX_FDS) {
		socks[n] = slring_bound_sock();
		cr = slring_connect_req(socks[n], 12);
		fds[n] = open(NODE_A, O_RDWR);
		if (fds[n] < 0 || ioctl(fds[n], SCILAN_IOC_CONNECT, &cr) < 0) {
			err = errno;
			if (fds[n] >= 0)
				close(fds[n]);
			close(socks[n]);
			break;
		}
		n++;
	}
	for (int i = 0; i < n; i++) {
		close(fds[i]);
		close(socks[i]);
	}
	listen_close(lfd);
	result("slice_exhaustion", (unsigned)n == in.nslices && err == EAGAIN,
	       "%d connections of %u slices, then %s", n, in.nslices, strerror(err));
}

static volatile sig_atomic_t ticks;

static void tick(int sig)
{
	(void)sig;
	ticks++;
}

/* Churn: n connects, each from its own bound socket, to a port nobody
 * listens on or to a listener a child accepts from and closes, with a 1 ms
 * timeout or under a 0.7 ms interval timer (EINTR): answers that come after
 * the connect gave up must free their slices.  Afterwards no endpoint and
 * no busy slice is left on either link. */
void test_churn(int n)
{
	struct sigaction sa = { .sa_handler = tick }; /* no SA_RESTART */
	struct itimerval on = { .it_interval = { 0, 700 }, .it_value = { 0, 700 } }, off = { 0 };
	int lfd = listen_sock(NODE_B, tcp_listener(15), 8), counts[5] = { 0 }, clean;
	pid_t pid;

	if (lfd < 0) {
		result("churn_no_leaks", 0, "listen: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		for (;;) {
			int e = open(NODE_B, O_RDWR);

			ioctl(e, SCILAN_IOC_ACCEPT, &lfd);
			close(e);
		}
	}
	sigaction(SIGALRM, &sa, NULL);
	for (int i = 0; i < n; i++) {
		int sock = slring_bound_sock(), fd = open(NODE_A, O_RDWR), kind = i % 4, rc, err;
		struct scilan_connect cr = slring_connect_req(sock, kind == 0 || kind == 3 ? 16 : 15);

		cr.timeout_ms = kind < 2 ? 1 : 0;
		if (kind >= 2)
			setitimer(ITIMER_REAL, &on, NULL);
		rc = ioctl(fd, SCILAN_IOC_CONNECT, &cr);
		err = errno;
		if (kind >= 2)
			setitimer(ITIMER_REAL, &off, NULL);
		/* Refused: no listener, or its backlog full (ENOBUFS). */
		counts[rc == 0 ? 0 : err == ECONNREFUSED || err == ENOBUFS ? 1 : err == ETIMEDOUT ? 2 : err == EINTR ? 3 : 4]++;
		close(fd);
		close(sock);
	}
	signal(SIGALRM, SIG_DFL);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	listen_close(lfd);
	clean = settle(0, "endpoints", 0) && settle(1, "endpoints", 0) && settle(0, "slices_busy", 0) &&
		settle(1, "slices_busy", 0);
	result("churn_no_leaks", clean && counts[4] == 0,
	       "%d connects: %d connected, %d refused, %d timed out, %d interrupted, %d other; endpoints %ld/%ld, busy slices %ld/%ld",
	       n, counts[0], counts[1], counts[2], counts[3], counts[4], dbg_value(0, "endpoints"),
	       dbg_value(1, "endpoints"), dbg_value(0, "slices_busy"), dbg_value(1, "slices_busy"));
}

/* Unloading either module while endpoints are open, mapped and one sleeps
 * in read() is refused (endpoints pin both), and the connection still
 * works afterwards; the guest's final unload checks they go once closed. */
void test_unload_busy_mapped(void)
{
	int lfd = listen_on(NODE_B, 18), rm_scilan, rm_mock, ok;
	struct conn c;
	char x = 0;
	pid_t pid;

	if (lfd < 0) {
		result("unload_refused_while_mapped", 0, "listen: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		struct conn s;
		uint32_t tok;

		if (conn_accept(&s, NODE_B, lfd, 0) < 0 || read(s.fd, &tok, sizeof(tok)) != sizeof(tok))
			_exit(1);
		_exit(conn_send(&s, "u", 1) < 0 ? 2 : 0);
	}
	ok = conn_connect(&c, NODE_A, 18, 0) == 0;
	usleep(200000); /* the child sleeps in read() */
	rm_scilan = system("rmmod scilan 2>/dev/null");
	rm_mock = system("rmmod ntb_mock 2>/dev/null");
	ok = ok && rm_scilan != 0 && rm_mock != 0;
	/* Still working: wake the sleeper, which answers. */
	ok = ok && ioctl(c.fd, SCILAN_IOC_STIMULATE, &(uint32_t){ SCILAN_TOKEN_DATA }) == 0 && conn_recv(&c, &x, 1) == 0 &&
	     x == 'u';
	waitpid(pid, NULL, 0);
	conn_close(&c);
	listen_close(lfd);
	result("unload_refused_while_mapped", ok, "rmmod scilan %s, rmmod ntb_mock %s, connection answered after %d",
	       rm_scilan ? "refused" : "DONE", rm_mock ? "refused" : "DONE", x == 'u');
}

/* A client that connected over the device but falls back to kernel TCP
 * abandons its endpoint: the connection queued at the listener is dropped,
 * so no later accept of that 4-tuple is paired with it (it would read EOF),
 * and both slices are free again. */
void test_abandon(void)
{
	int lfd = listen_on(NODE_B, 20), sock = slring_bound_sock(), fd = open(NODE_A, O_RDWR), e, ok, taken;
	struct scilan_connect cr = slring_connect_req(sock, 20);

	ok = lfd >= 0 && fd >= 0 && ioctl(fd, SCILAN_IOC_CONNECT, &cr) == 0 && ioctl(fd, SCILAN_IOC_ABANDON) == 0;
	close(fd);
	usleep(200000); /* the CLOSE crosses the link */
	fcntl(lfd, F_SETFL, O_NONBLOCK);
	e = open(NODE_B, O_RDWR);
	taken = ioctl(e, SCILAN_IOC_ACCEPT, &lfd) == 0;
	close(e);
	close(sock);
	ok = ok && !taken && settle(0, "slices_busy", 0) && settle(1, "slices_busy", 0);
	listen_close(lfd);
	result("abandoned_connect_dropped", ok, "queued connection still taken by an accept %d; busy slices %ld/%ld", taken,
	       dbg_value(0, "slices_busy"), dbg_value(1, "slices_busy"));
}

/* A LISTEN with backlog 0 queues as many connections before accept as the
 * TCP socket's own listen() backlog, read at each CONNECT (a second listen()
 * with more room is seen at once); one more is refused with ENOBUFS (a full
 * queue: kernel TCP for a resource), not ECONNREFUSED (no listener). */
void test_backlog(void)
{
	int s = tcp_listener(17), lfd, fds[8], n = 0, err4 = 0, err6 = 0, ok4;
	struct scilan_connect cr;

	if (s < 0 || listen(s, 3) < 0 || (lfd = listen_sock(NODE_B, s, 0)) < 0) {
		result("backlog_follows_listen", 0, "listen: %s", strerror(errno));
		return;
	}
	for (int i = 0; i < 6; i++) {
		int sock = slring_bound_sock(), fd = open(NODE_A, O_RDWR);

		if (i == 4)
			listen(s, 4); /* room for one more */
		cr = slring_connect_req(sock, 17);
		cr.timeout_ms = 2000;
		if (ioctl(fd, SCILAN_IOC_CONNECT, &cr) == 0) {
			fds[n++] = fd;
		} else {
			if (i == 3)
				err4 = errno;
			if (i == 5)
				err6 = errno;
			close(fd);
		}
		close(sock);
	}
	ok4 = n == 4;
	for (int i = 0; i < n; i++)
		close(fds[i]);
	listen_close(lfd);
	result("backlog_follows_listen", ok4 && err4 == ENOBUFS && err6 == ENOBUFS &&
	       settle(0, "endpoints", 0) && settle(1, "endpoints", 0) && settle(0, "slices_busy", 0),
	       "%d of 6 connected; the 4th: %s, the 6th: %s (ENOBUFS wanted for both)", n,
	       strerror(err4), strerror(err6));
}
