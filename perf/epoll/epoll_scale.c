/* epoll_scale.c — what one event costs as an epoll set grows: a one-thread,
 * level-triggered epoll echo server holding N connections in one set, and a
 * forked client doing 64-byte request/response exchanges, each on a
 * pseudo-random connection, the others idle; with API "poll", the same
 * server waits in poll(2) over an array of the listener and the N
 * connections.  Plain POSIX: run as is for kernel TCP, under scilan_run for
 * scilan (perf/epoll/bench.sh runs both).
 *   epoll_scale N ROUNDS IDLE_MS [epoll|poll [WARM_MS]]
 * prints "n,p50_us,p99_us,idle_cpu_ms_per_s,first_p50_us": round-trip median
 * and p99 once every connection made one exchange and the exchanges went
 * on for WARM_MS more (a long-running server's steady state), the server's
 * CPU per second while the N connections sit idle IDLE_MS, and the median of
 * those first exchanges (first touches of a connection's memory, on either
 * transport).  The warm time matters for the sleeping modes on a VM: the
 * wake-up latency of both transports drifts (the host's halt polling) over
 * the first tens of thousands of sleeps, so each N is timed after the same
 * time of exchanging, not after a number that grows with N.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MSG 64

static double mono(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double cpu_self(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static void die(const char *what)
{
	fprintf(stderr, "epoll_scale: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void io_all(int fd, char *buf, size_t len, int out)
{
	for (size_t k = 0; k < len;) {
		ssize_t r = out ? write(fd, buf + k, len - k) : read(fd, buf + k, len - k);

		if (r <= 0)
			die(out ? "write" : "read");
		k += (size_t)r;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One request/response on a pseudo-random connection. */
static double exchange(int *fd, int n, unsigned *x, char *buf)
{
	double t = mono();
	int i;

	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	i = (int)(*x % (unsigned)n);
	io_all(fd[i], buf, MSG, 1);
	io_all(fd[i], buf, MSG, 0);
	return mono() - t;
}

static void client(struct sockaddr_in *a, int n, int rounds, int idle_ms, int warm_ms, int go, int report)
{
	int *fd = calloc((size_t)n, sizeof(*fd)), one = 1;
	double *rtt = calloc((size_t)rounds, sizeof(*rtt)), *first = calloc((size_t)n, sizeof(*first)), t;
	char buf[MSG] = { 0 }, c;
	unsigned x = 2463534242u;

	if (!fd || !rtt || !first)
		die("calloc");
	for (int i = 0; i < n; i++) {
		fd[i] = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(fd[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (fd[i] < 0 || connect(fd[i], (struct sockaddr *)a, sizeof(*a)) < 0)
			die("connect");
	}
	io_all(go, &c, 1, 0); /* the server accepted them all */
	usleep((useconds_t)idle_ms * 1000);
	for (int i = 0; i < n; i++) {
		t = mono();
		io_all(fd[i], buf, MSG, 1);
		io_all(fd[i], buf, MSG, 0);
		first[i] = mono() - t;
	}
	for (t = mono(); mono() - t < warm_ms / 1000.0;)
		exchange(fd, n, &x, buf);
	for (int r = 0; r < rounds; r++)
		rtt[r] = exchange(fd, n, &x, buf);
	qsort(rtt, (size_t)rounds, sizeof(*rtt), cmp_double);
	qsort(first, (size_t)n, sizeof(*first), cmp_double);
	dprintf(report, "%.3f,%.3f,%.3f\n", rtt[rounds / 2] * 1e6, rtt[(size_t)rounds * 99 / 100] * 1e6,
		first[n / 2] * 1e6);
	for (int i = 0; i < n; i++)
		close(fd[i]);
	_exit(0);
}

/* The client ended: before it connected all (out of descriptors, say) the
 * server would wait for the rest forever. */
static volatile sig_atomic_t client_gone;

static void on_child(int sig)
{
	(void)sig;
	client_gone = 1;
}

static void check_client(int accepted, int n)
{
	if (client_gone && accepted < n) {
		fprintf(stderr, "epoll_scale: the client ended after %d of %d connections\n", accepted, n);
		exit(1);
	}
}

/* The server as a poll loop: the listener first, then the connections
 * (a closed one's entry takes the last one's place).  Returns the idle CPU. */
static double serve_poll(int l, int n, int go)
{
	struct pollfd *pf = calloc((size_t)n + 1, sizeof(*pf));
	int np = 1, accepted = 0, one = 1;
	double idle_cpu = -1, t0 = 0, c0 = 0;

	if (!pf)
		die("calloc");
	pf[0] = (struct pollfd){ .fd = l, .events = POLLIN };
	while (accepted < n || np > 1) {
		int r;

		check_client(accepted, n);
		/* Until all came, look again each second: the client's end may
		 * come between the check and the wait. */
		r = poll(pf, (nfds_t)np, accepted < n ? 1000 : -1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("poll");
		if (accepted == n && idle_cpu < 0 && t0 > 0)
			idle_cpu = (cpu_self() - c0) / (mono() - t0) * 1e3;
		for (int k = np - 1; k >= 0 && r > 0; k--) {
			char buf[MSG * 4];
			ssize_t m;

			if (!pf[k].revents)
				continue;
			r--;
			if (k == 0) {
				int s = accept(l, NULL, NULL);

				if (s < 0)
					die("accept");
				setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				pf[np++] = (struct pollfd){ .fd = s, .events = POLLIN };
				if (++accepted == n) {
					t0 = mono();
					c0 = cpu_self();
					if (write(go, "g", 1) != 1)
						die("write");
				}
				continue;
			}
			m = read(pf[k].fd, buf, sizeof(buf));
			if (m <= 0) {
				close(pf[k].fd);
				pf[k] = pf[--np];
				continue;
			}
			io_all(pf[k].fd, buf, (size_t)m, 1);
		}
	}
	free(pf);
	return idle_cpu;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 16, rounds = argc > 2 ? atoi(argv[2]) : 20000;
	int idle_ms = argc > 3 ? atoi(argv[3]) : 2000, l, ep, accepted = 0, open_conns, one = 1;
	int go[2], rep[2], status;
	struct rlimit rl;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	struct epoll_event ev, evs[256];
	double idle_cpu = -1, t0, c0, p50, p99, first_p50;
	char res[128] = "";
	pid_t kid;
	ssize_t got;

	const char *api = argc > 4 ? argv[4] : "epoll";
	int warm_ms = argc > 5 ? atoi(argv[5]) : 0;

	if (n < 1 || rounds < 100 || (strcmp(api, "epoll") && strcmp(api, "poll")))
		return fprintf(stderr, "usage: epoll_scale N ROUNDS [IDLE_MS [epoll|poll [WARM_MS]]]\n"), 2;
	/* The soft limit only as high as the N connections need: above it, up
	 * to the hard limit, is where scilan's own descriptors (two bells per
	 * connection) go without taking any of ours (with soft = hard they
	 * would share it, a quarter at most theirs). */
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > (rlim_t)n + 512)
		rl.rlim_cur = (rlim_t)n + 512;
	else
		rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	l = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 4096) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &al) < 0)
		die("listen");
	if (pipe(go) < 0 || pipe(rep) < 0)
		die("pipe");
	signal(SIGCHLD, on_child);
	kid = fork();
	if (kid < 0)
		die("fork");
	if (kid == 0) {
		close(l);
		client(&a, n, rounds, idle_ms, warm_ms, go[0], rep[1]);
	}
	if (strcmp(api, "poll") == 0) {
		idle_cpu = serve_poll(l, n, go[1]);
		goto done;
	}
	ep = epoll_create1(0);
	ev = (struct epoll_event){ .events = EPOLLIN, .data.fd = l };
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev) < 0)
		die("epoll");
	open_conns = n;
	t0 = c0 = 0;
	while (open_conns > 0) {
		int r;

		check_client(accepted, n);
		r = epoll_wait(ep, evs, 256, accepted < n ? 1000 : -1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("epoll_wait");
		if (accepted == n && idle_cpu < 0 && t0 > 0)
			idle_cpu = (cpu_self() - c0) / (mono() - t0) * 1e3;
		for (int k = 0; k < r; k++) {
			int fd = evs[k].data.fd;
			char buf[MSG * 4];
			ssize_t m;

			if (fd == l) {
				int s = accept(l, NULL, NULL);

				if (s < 0)
					die("accept");
				setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				ev = (struct epoll_event){ .events = EPOLLIN, .data.fd = s };
				if (epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev) < 0)
					die("epoll_ctl");
				if (++accepted == n) {
					/* Idle from here: the client waits idle_ms before its
					 * first request (no fork here: it would share the set). */
					t0 = mono();
					c0 = cpu_self();
					if (write(go[1], "g", 1) != 1)
						die("write");
				}
				continue;
			}
			m = read(fd, buf, sizeof(buf));
			if (m <= 0) {
				epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
				close(fd);
				open_conns--;
				continue;
			}
			io_all(fd, buf, (size_t)m, 1);
		}
	}
done:
	waitpid(kid, &status, 0);
	got = read(rep[0], res, sizeof(res) - 1);
	if (got <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return fprintf(stderr, "epoll_scale: the client failed\n"), 1;
	res[got] = '\0';
	res[strcspn(res, "\n")] = '\0';
	if (sscanf(res, "%lf,%lf,%lf", &p50, &p99, &first_p50) != 3)
		return fprintf(stderr, "epoll_scale: the client's report is garbled: %s\n", res), 1;
	printf("%d,%.3f,%.3f,%.3f,%.3f\n", n, p50, p99, idle_cpu, first_p50);
	return 0;
}
