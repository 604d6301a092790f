/* nbench.c — the N-guest benches of `make bench-kernel` (tests/kernel/init-n's
 * "bench" and "benchconns" scenarios), a plain POSIX program run under the
 * preload hook for scilan and without it for kernel TCP: a one-thread epoll
 * echo server and its ping client (round trips of 64 B on connections chosen
 * at random), and a fan-in sink with its sources.  Prints "BENCH key value ...".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "guest.h"
#include "scilan.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#define MSG 64
#define STREAM_CHUNK 65536
#define WAIT_MS 60000   /* no event for this long: a hang, not a slow guest */
#define CONNECT_AHEAD 32 /* connects not yet known accepted (below the backlog) */

/* Timestamps for round trips of a few µs.  A guest under TCG reads its
 * clocksource (HPET) through a system call and a trapped MMIO read, about
 * 1 µs that each sample would be charged; the TSC is one instruction, its
 * rate measured against CLOCK_MONOTONIC once (stamp_calibrate). */
#if defined(__x86_64__)
static double stamp_ticks_per_us;

static void stamp_calibrate(void)
{
	struct timespec pause = { 0, 100000000 };
	double t0 = now_us();
	uint64_t c0 = __rdtsc();

	nanosleep(&pause, NULL);
	stamp_ticks_per_us = (double)(__rdtsc() - c0) / (now_us() - t0);
}

static double stamp_us(void)
{
	return stamp_ticks_per_us > 0 ? (double)__rdtsc() / stamp_ticks_per_us : now_us();
}
#else
static void stamp_calibrate(void)
{
}

static double stamp_us(void)
{
	return now_us();
}
#endif

static void die(const char *what)
{
	printf("nbench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void no_delay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int accelerated(int fd)
{
	int acc = 0;
	socklen_t len = sizeof(acc);

	return getsockopt(fd, SOL_SCILAN, SCILAN_SO_ACCELERATED, &acc, &len) == 0 && acc;
}

/* A non-blocking listener on every address; ready (a file) made once it listens. */
static int listen_port(int port, int backlog, const char *ready)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, backlog) < 0)
		die("listen");
	fcntl(l, F_SETFL, fcntl(l, F_GETFL) | O_NONBLOCK);
	int fd = open(ready, O_WRONLY | O_CREAT, 0644);

	if (fd >= 0)
		close(fd);
	return l;
}

static int connect_to(const char *addr, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1 || fd < 0 ||
	    connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("connect");
	no_delay(fd);
	return fd;
}

static void epoll_add(int ep, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.fd = fd };

	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		die("epoll_ctl");
}

static int wait_events(int ep, struct epoll_event *evs, int max)
{
	int n;

	do
		n = epoll_wait(ep, evs, max, WAIT_MS);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		errno = ETIMEDOUT;
	if (n <= 0)
		die("epoll_wait");
	return n;
}

/* echo PORT CONNS READY: CONNS connections and the listener in one epoll
 * set, each 64-byte request answered at once; ends when all closed. */
static int echo_server(int port, int conns, const char *ready)
{
	int l = listen_port(port, conns + 1, ready), ep = epoll_create1(0), open_conns = 0, closed = 0;
	uint8_t *have = calloc((size_t)conns + 1024, 1), buf[MSG * 2];
	uint8_t(*msg)[MSG] = calloc((size_t)conns + 1024, MSG);
	int *slot = calloc(65536 + (size_t)conns, sizeof(int));
	struct epoll_event evs[256];

	if (ep < 0 || !have || !msg || !slot)
		die("set-up");
	epoll_add(ep, l, EPOLLIN);
	while (closed < conns) {
		int n = wait_events(ep, evs, 256);

		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;

			if (fd == l) {
				for (int c; open_conns < conns && (c = accept(l, NULL, NULL)) >= 0;) {
					no_delay(c);
					slot[c] = open_conns++;
					epoll_add(ep, c, EPOLLIN);
				}
				continue;
			}
			int s = slot[fd];
			ssize_t k = read(fd, buf, MSG - have[s]);

			if (k <= 0) {
				epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
				close(fd);
				closed++;
				continue;
			}
			memcpy(msg[s] + have[s], buf, (size_t)k);
			have[s] += (uint8_t)k;
			if (have[s] == MSG) {
				have[s] = 0;
				if (full_io(fd, msg[s], MSG, 1) < 0)
					die("echo write");
			}
		}
	}
	return 0;
}

static int exchange(int fd, uint64_t *seed)
{
	uint8_t out[MSG], back[MSG];

	for (int i = 0; i < MSG; i += 8) {
		uint64_t w = xorshift(seed);

		memcpy(out + i, &w, 8);
	}
	return full_io(fd, out, MSG, 1) == 0 && full_io(fd, back, MSG, 0) == 0 && !memcmp(out, back, MSG) ? 0 : -1;
}

/* What one read of a clock costs here, in µs: the program's clock
 * (clock_gettime; on a guest whose clocksource is emulated, HPET under TCG,
 * a system call and a trapped MMIO read) and the samples' (stamp_us).  Each
 * timed round trip pays one read of the latter. */
static double clock_read_us(double (*read_clock)(void))
{
	enum { READS = 2000 };
	double t0 = now_us();

	for (int i = 0; i < READS; i++)
		read_clock();
	return (now_us() - t0) / READS;
}

/* ping ADDR PORT CONNS ITERS: CONNS connections to the echo server, one
 * exchange on each (a connection's first), then ITERS timed exchanges one at
 * a time, each on a connection chosen at random. */
static int ping_client(const char *addr, int port, int conns, int iters)
{
	int *fd = calloc((size_t)conns, sizeof(int)), accel = 0;
	double *rtt = calloc((size_t)iters, sizeof(double));
	uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)port;

	if (!fd || !rtt)
		die("set-up");
	for (int i = 0; i < conns; i++) {
		fd[i] = connect_to(addr, port);
		accel += accelerated(fd[i]);
		/* An answer on connection i: the server accepted it (and every
		 * earlier one), so fewer than CONNECT_AHEAD wait in its backlog. */
		if ((i + 1) % CONNECT_AHEAD == 0 && exchange(fd[i], &seed) < 0)
			die("exchange while connecting");
	}
	for (int i = 0; i < conns; i++)
		if (exchange(fd[i], &seed) < 0)
			die("first exchange");
	double clock_us = clock_read_us(now_us);

	stamp_calibrate();
	double stamp_cost_us = clock_read_us(stamp_us);

	for (int i = 0; i < iters; i++) {
		int c = (int)(xorshift(&seed) % (uint64_t)conns);
		double t0 = stamp_us();

		if (exchange(fd[c], &seed) < 0)
			die("exchange");
		rtt[i] = stamp_us() - t0;
	}
	for (int i = 0; i < conns; i++)
		close(fd[i]);
	qsort(rtt, (size_t)iters, sizeof(double), cmp_double);
	printf("BENCH p50_us %.1f p99_us %.1f n %d conns %d accel %d clock_us %.2f stamp_us %.2f\n", rtt[iters / 2],
	       rtt[iters * 99 / 100], iters, conns, accel, clock_us, stamp_cost_us);
	return 0;
}

/* Busy CPU time of this guest so far (all CPUs), in clock ticks. */
static long long guest_busy_ticks(void)
{
	long long v[10] = { 0 }, busy = 0;
	FILE *f = fopen("/proc/stat", "r");

	if (!f || fscanf(f, "cpu %lld %lld %lld %lld %lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
			 &v[6], &v[7]) != 8)
		die("/proc/stat");
	fclose(f);
	for (int i = 0; i < 8; i++)
		busy += i == 3 || i == 4 ? 0 : v[i]; /* all but idle and iowait */
	return busy;
}

static double process_cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

/* sink PORT SENDERS BYTES READY: accepts SENDERS connections, lets them all
 * go at once (one byte each), reads until each has closed; the throughput,
 * and this process's and this guest's CPU time per byte over that span. */
static int sink(int port, int senders, long long bytes_each, const char *ready)
{
	int l = listen_port(port, senders, ready), ep = epoll_create1(0), *fd = calloc((size_t)senders, sizeof(int));
	int n = 0, open_conns, accel = 0;
	static uint8_t buf[1 << 18];
	struct epoll_event evs[16];
	long long got = 0;

	if (ep < 0 || !fd)
		die("set-up");
	fcntl(l, F_SETFL, fcntl(l, F_GETFL) & ~O_NONBLOCK);
	while (n < senders) {
		struct pollfd p = { .fd = l, .events = POLLIN };

		if (poll(&p, 1, WAIT_MS) != 1 || (fd[n] = accept(l, NULL, NULL)) < 0)
			die("accept");
		accel += accelerated(fd[n]);
		epoll_add(ep, fd[n++], EPOLLIN);
	}
	long long ticks0 = guest_busy_ticks();
	double cpu0 = process_cpu_us(), t0 = now_us();

	for (int i = 0; i < senders; i++)
		if (full_io(fd[i], "g", 1, 1) < 0)
			die("go");
	for (open_conns = senders; open_conns;) {
		int k = wait_events(ep, evs, 16);

		for (int i = 0; i < k; i++) {
			ssize_t r = read(evs[i].data.fd, buf, sizeof(buf));

			if (r > 0) {
				got += r;
			} else if (r == 0 || errno != EAGAIN) {
				epoll_ctl(ep, EPOLL_CTL_DEL, evs[i].data.fd, NULL);
				close(evs[i].data.fd);
				open_conns--;
			}
		}
	}
	double secs = (now_us() - t0) / 1e6, cpu = process_cpu_us() - cpu0;
	double busy_ns = (double)(guest_busy_ticks() - ticks0) * 1e9 / (double)sysconf(_SC_CLK_TCK);

	if (got != bytes_each * senders) {
		printf("nbench: sink got %lld bytes, wanted %lld\n", got, bytes_each * senders);
		return 1;
	}
	printf("BENCH MB_s %.1f bytes %lld secs %.2f proc_ns_per_B %.2f guest_ns_per_B %.2f senders %d accel %d\n",
	       (double)got / secs / 1e6, got, secs, cpu * 1e3 / (double)got, busy_ns / (double)got, senders, accel);
	return 0;
}

/* source ADDR PORT BYTES: waits for the sink's go, streams BYTES, and
 * returns once the sink has read them all (it closes after our EOF). */
static int source(const char *addr, int port, long long bytes)
{
	static uint8_t buf[STREAM_CHUNK];
	int fd = connect_to(addr, port);
	char go;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	if (full_io(fd, &go, 1, 0) < 0)
		die("no go from the sink");
	for (long long sent = 0; sent < bytes; sent += STREAM_CHUNK)
		if (full_io(fd, buf, (size_t)(bytes - sent < STREAM_CHUNK ? bytes - sent : STREAM_CHUNK), 1) < 0)
			die("stream");
	if (shutdown(fd, SHUT_WR) < 0 || read(fd, &go, 1) != 0)
		die("sink's close");
	printf("BENCH sent %lld accel %d\n", bytes, accelerated(fd));
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (argc == 5 && !strcmp(argv[1], "echo"))
		return echo_server(atoi(argv[2]), atoi(argv[3]), argv[4]);
	if (argc == 6 && !strcmp(argv[1], "ping") && atoi(argv[4]) > 0 && atoi(argv[5]) > 0)
		return ping_client(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
	if (argc == 6 && !strcmp(argv[1], "sink") && atoi(argv[3]) > 0)
		return sink(atoi(argv[2]), atoi(argv[3]), atoll(argv[4]), argv[5]);
	if (argc == 5 && !strcmp(argv[1], "source"))
		return source(argv[2], atoi(argv[3]), atoll(argv[4]));
	fprintf(stderr, "usage: nbench echo PORT CONNS READY_FILE | nbench ping ADDR PORT CONNS ITERS\n"
			"       nbench sink PORT SENDERS BYTES_EACH READY_FILE | nbench source ADDR PORT BYTES\n");
	return 2;
}
