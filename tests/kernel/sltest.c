/* sltest.c — the in-guest tests of scilan.ko through ntb_mock (static binary
 * run by tests/kernel/init): ping-pong and a checksum-verified stream over
 * the ring protocol of layout.h, a killed mapped process, link down (each
 * endpoint's sink its own), hostile arguments, set endpoints (a per-uid
 * quota).  Prints "TEST <name> PASS|FAIL <detail>" per test.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "slring.h"

#define NODE_A "/dev/scilan0"
#define NODE_B "/dev/scilan1"
#define MOCK_LINK "/sys/kernel/debug/ntb_mock/link"
#define SL_MAX_FDS 600

/* Server on node B echoes; client on node A measures each round trip. */
static void test_pingpong(const char *name, long spin, int iters)
{
	struct conn s, c;
	char msg[64], back[64];
	double *rtt = calloc((size_t)iters, sizeof(double));
	int lfd = listen_on(NODE_B, 7), status, ok = 1;
	pid_t pid;

	if (lfd < 0 || !rtt) {
		result(name, 0, "listen: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		if (conn_accept(&s, NODE_B, lfd, spin) < 0)
			_exit(2);
		for (int i = 0; i < iters; i++)
			if (conn_recv(&s, msg, sizeof(msg)) < 0 || conn_send(&s, msg, sizeof(msg)) < 0)
				_exit(3);
		_exit(0);
	}
	if (conn_connect(&c, NODE_A, 7, spin) < 0) {
		result(name, 0, "connect: %s", strerror(errno));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		listen_close(lfd);
		return;
	}
	for (int i = 0; i < iters && ok; i++) {
		double t0 = now_us();

		memset(msg, 'a' + i % 26, sizeof(msg));
		ok = conn_send(&c, msg, sizeof(msg)) == 0 && conn_recv(&c, back, sizeof(back)) == 0 &&
		     memcmp(msg, back, sizeof(msg)) == 0;
		rtt[i] = now_us() - t0;
	}
	waitpid(pid, &status, 0);
	ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	qsort(rtt, (size_t)iters, sizeof(double), cmp_double);
	result(name, ok, "%d round trips of 64 B, p50 %.1f us, p99 %.1f us, client sleeps %ld", iters,
	       rtt[iters / 2], rtt[iters * 99 / 100], c.sleeps);
	conn_close(&c);
	listen_close(lfd);
	free(rtt);
}

/* 16 MiB of a pseudo-random sequence in uneven pieces; the receiver
 * regenerates the sequence and checks every byte, and both sides compare
 * an FNV-1a checksum. */
static void test_stream(long spin, size_t total)
{
	struct conn s, c;
	int lfd = listen_on(NODE_B, 8), pfd[2], status, ok;
	uint64_t sum = 0xcbf29ce484222325ull, rsum = 0;
	static uint8_t buf[65536 + 13];
	pid_t pid;
	double t0;

	if (lfd < 0 || pipe(pfd) < 0) {
		result("stream", 0, "listen: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		uint64_t seed = 42, h = 0xcbf29ce484222325ull;
		size_t got = 0;

		if (conn_accept(&s, NODE_B, lfd, spin) < 0)
			_exit(2);
		while (got < total) {
			size_t k = total - got < sizeof(buf) - 7 ? total - got : sizeof(buf) - 7;

			if (conn_recv(&s, buf, k) < 0)
				_exit(3);
			for (size_t i = 0; i < k; i++) {
				if (buf[i] != (uint8_t)xorshift(&seed))
					_exit(4);
				h = (h ^ buf[i]) * 0x100000001b3ull;
			}
			got += k;
		}
		if (write(pfd[1], &h, sizeof(h)) != sizeof(h))
			_exit(5);
		_exit(0);
	}
	ok = conn_connect(&c, NODE_A, 8, spin) == 0;
	t0 = now_us();
	for (size_t sent = 0, piece = 1; ok && sent < total; piece = piece * 7 % 65531 + 1) {
		static uint64_t seed = 42;
		size_t k = total - sent < piece ? total - sent : piece;

		for (size_t i = 0; i < k; i++) {
			buf[i] = (uint8_t)xorshift(&seed);
			sum = (sum ^ buf[i]) * 0x100000001b3ull;
		}
		ok = conn_send(&c, buf, k) == 0;
		sent += k;
	}
	ok = ok && read(pfd[0], &rsum, sizeof(rsum)) == sizeof(rsum);
	t0 = now_us() - t0;
	waitpid(pid, &status, 0);
	ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0 && rsum == sum;
	result("stream", ok, "%zu bytes, checksum %016llx %s, %.1f MB/s, receiver exit %d", total,
	       (unsigned long long)rsum, rsum == sum ? "equal" : "DIFFERS", total / t0,
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	conn_close(&c);
	listen_close(lfd);
	close(pfd[0]);
	close(pfd[1]);
}

/* A debugfs counter of the link ("endpoints", "slices_busy"). */
static long dbg_value(int link, const char *key)
{
	char path[128], line[256];
	long v = -1;
	size_t kl = strlen(key);
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/scilan/scilan%d/state", link);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ' ')
			v = strtol(line + kl + 1, NULL, 10);
	fclose(f);
	return v;
}

static int settle(int link, const char *key, long want)
{
	for (int i = 0; i < 300; i++) {
		if (dbg_value(link, key) == want)
			return 1;
		usleep(10000);
	}
	return 0;
}

/* A client killed while it has both slices mapped: the server sees the
 * close, and once it closes too both links are back to no endpoints and no
 * busy slices. */
static void test_killed(void)
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

static sigjmp_buf sigbus_jmp;

static void sigbus_handler(int sig)
{
	(void)sig;
	siglongjmp(sigbus_jmp, 1);
}

/* The cable is cut under a receiver blocked in read(): ECONNRESET; its
 * mappings were zapped, and touching them again faults in our own slice and
 * a sink for the peer's, never SIGBUS; a new connection works once the link
 * is back. */
static void test_linkdown(void)
{
	struct conn s, c;
	int lfd = listen_on(NODE_B, 10), status, first, ok, again;
	pid_t pid;

	if (lfd < 0) {
		result("link_down_reset", 0, "listen: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		uint32_t tok;
		ssize_t n;

		if (conn_accept(&s, NODE_B, lfd, 0) < 0)
			_exit(2);
		n = read(s.fd, &tok, sizeof(tok)); /* blocks: nobody stimulates */
		if (n >= 0 || errno != ECONNRESET)
			_exit(3);
		/* The mappings were zapped; touching them again is harmless:
		 * our slice is still ours, the peer's a sink (no SIGBUS). */
		signal(SIGBUS, sigbus_handler);
		if (sigsetjmp(sigbus_jmp, 1) == 0) {
			*(volatile uint8_t *)s.peer = 1;
			(void)*(volatile uint8_t *)s.peer;
		} else {
			_exit(4);
		}
		if (sigsetjmp(sigbus_jmp, 1) == 0) {
			*(volatile uint8_t *)s.local = 1;
			if (*(volatile uint8_t *)s.local != 1)
				_exit(6);
		} else {
			_exit(5);
		}
		_exit(0);
	}
	ok = conn_connect(&c, NODE_A, 10, 0) == 0;
	usleep(200000);
	ok = ok && write_file(MOCK_LINK, "0") == 0;
	waitpid(pid, &first, 0);
	ok = ok && WIFEXITED(first) && WEXITSTATUS(first) == 0;
	conn_close(&c);
	write_file(MOCK_LINK, "1");
	again = wait_link(NODE_A, 5000) && wait_link(NODE_B, 5000);
	if (again) {
		pid = fork();
		if (pid == 0)
			_exit(conn_accept(&s, NODE_B, lfd, 0) < 0 || conn_send(&s, "x", 1) < 0 ? 1 : 0);
		char x = 0;

		again = conn_connect(&c, NODE_A, 10, 0) == 0 && conn_recv(&c, &x, 1) == 0 && x == 'x';
		waitpid(pid, &status, 0);
		again = again && WIFEXITED(status) && WEXITSTATUS(status) == 0;
		conn_close(&c);
	}
	listen_close(lfd);
	result("link_down_reset", ok && again,
	       "blocked read got ECONNRESET and both mappings usable without SIGBUS %d (child exit %d), reconnect after link up %d",
	       ok, WIFEXITED(first) ? WEXITSTATUS(first) : -1, again);
}

/* Bad ioctl arguments and out-of-range mappings get errors, never an oops
 * (the runner fails the suite on any Oops/WARNING/BUG in the console). */
static void test_hostile(void)
{
	int csock = slring_bound_sock(), usock = socket(AF_INET, SOCK_DGRAM, 0), tsock = socket(AF_INET, SOCK_STREAM, 0);
	struct scilan_connect cr = slring_connect_req(csock, 4242), ucr = slring_connect_req(tsock, 4242);
	struct scilan_listen lr = { .sockfd = -1 };
	struct scilan_info in;
	struct conn c, s;
	int fd = open(NODE_A, O_RDWR), bad = 0, checks = 0, lfd, zero = 0, minus = -1;
	uint32_t tok = 0xff;
	char small[2];
	void *m;
	volatile uintptr_t bad_addr = 8;
	pid_t pid;

	if (fd < 0) {
		result("hostile_args", 0, "open: %s", strerror(errno));
		return;
	}
	EXPECT(ioctl(fd, 0xdeadbeef, 0) < 0, ENOTTY);
	EXPECT(ioctl(fd, SCILAN_IOC_INFO, NULL) < 0, EFAULT);
	EXPECT(ioctl(fd, SCILAN_IOC_INFO, (void *)1) < 0, EFAULT);
	EXPECT(ioctl(fd, SCILAN_IOC_INFO, (void *)0xffff800000000000ull) < 0, EFAULT);
	EXPECT(ioctl(fd, SCILAN_IOC_LISTEN, NULL) < 0, EFAULT);
	/* LISTEN takes only a listening TCP socket of the caller. */
	EXPECT(ioctl(fd, SCILAN_IOC_LISTEN, &lr) < 0, EBADF);
	lr.sockfd = fd;
	EXPECT(ioctl(fd, SCILAN_IOC_LISTEN, &lr) < 0, ENOTSOCK);
	lr.sockfd = usock;
	EXPECT(ioctl(fd, SCILAN_IOC_LISTEN, &lr) < 0, EPROTONOSUPPORT);
	lr.sockfd = tsock;
	EXPECT(ioctl(fd, SCILAN_IOC_LISTEN, &lr) < 0, EINVAL);
	lr.backlog = 5000;
	EXPECT(ioctl(fd, SCILAN_IOC_LISTEN, &lr) < 0, EINVAL);
	EXPECT(ioctl(fd, SCILAN_IOC_CONNECT, NULL) < 0, EFAULT);
	/* CONNECT only from a bound TCP socket of the caller. */
	EXPECT(ioctl(fd, SCILAN_IOC_CONNECT, &ucr) < 0, EINVAL);
	ucr.sockfd = usock;
	EXPECT(ioctl(fd, SCILAN_IOC_CONNECT, &ucr) < 0, EPROTONOSUPPORT);
	cr.flags = 1;
	EXPECT(ioctl(fd, SCILAN_IOC_CONNECT, &cr) < 0, EINVAL);
	cr.flags = 0;
	EXPECT(ioctl(fd, SCILAN_IOC_CONNECT, &cr) < 0, ECONNREFUSED);
	EXPECT(ioctl(fd, SCILAN_IOC_ACCEPT_SOCK, &(struct scilan_accept_sock){ .sockfd = csock }) < 0, ENOTCONN);
	EXPECT(ioctl(fd, SCILAN_IOC_ACCEPT, &minus) < 0, EBADF);
	EXPECT(ioctl(fd, SCILAN_IOC_ACCEPT, &zero) < 0, EINVAL);
	EXPECT(ioctl(fd, SCILAN_IOC_ACCEPT, &fd) < 0, EINVAL);
	EXPECT(ioctl(fd, SCILAN_IOC_ACCEPT, NULL) < 0, EFAULT);
	EXPECT(ioctl(fd, SCILAN_IOC_STIMULATE, &tok) < 0, EINVAL);
	tok = SCILAN_TOKEN_DATA;
	EXPECT(ioctl(fd, SCILAN_IOC_STIMULATE, &tok) < 0, ENOTCONN);
	tok = 0;
	EXPECT(ioctl(fd, SCILAN_IOC_RING_SELF, &tok) < 0, EINVAL);
	EXPECT(read(fd, small, sizeof(small)) < 0, EINVAL);
	EXPECT(read(fd, &tok, sizeof(tok)) < 0, ENOTCONN);
	EXPECT(mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED, ENOTCONN);
	tok = SCILAN_TOKEN_LOCAL;
	EXPECT(ioctl(fd, SCILAN_IOC_RING_SELF, &tok) == 0, 0);
	EXPECT(read(fd, (void *)(uintptr_t)bad_addr, 4) < 0, EFAULT);

	/* A connected endpoint: mappings outside its two slices. */
	lfd = listen_on(NODE_B, 11);
	pid = fork();
	if (pid == 0)
		_exit(conn_accept(&s, NODE_B, lfd, 0) < 0 ? 1 : (pause(), 0));
	if (conn_connect(&c, NODE_A, 11, 0) == 0 && info(c.fd, &in) == 0) {
		size_t sz = in.slice_size;

		EXPECT(ioctl(c.fd, SCILAN_IOC_LISTEN, &(struct scilan_listen){ .sockfd = slring_lsock[lfd] - 1 }) < 0,
		       EINVAL);
		EXPECT(ioctl(c.fd, SCILAN_IOC_CONNECT, &cr) < 0, EISCONN);
		/* Beyond the slices and the set pages (ABI 4). */
		EXPECT(mmap(NULL, sz, PROT_READ, MAP_SHARED, c.fd,
			    SCILAN_MMAP_OUR_ARMED(sz) + SCILAN_SETS * SCILAN_SET_PAGE) == MAP_FAILED,
		       EINVAL);
		EXPECT(mmap(NULL, 2 * sz, PROT_READ, MAP_SHARED, c.fd, 0) == MAP_FAILED, EINVAL);
		EXPECT(mmap(NULL, sz, PROT_READ, MAP_SHARED, c.fd, sz + 4096) == MAP_FAILED, EINVAL);
		EXPECT(mmap(NULL, 4096, PROT_READ, MAP_SHARED, c.fd, 1ull << 40) == MAP_FAILED, EINVAL);
		EXPECT(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, c.fd, 0) == MAP_FAILED, EINVAL);
		EXPECT((m = mremap(c.local, sz, 2 * sz, MREMAP_MAYMOVE)) == MAP_FAILED, EFAULT);
		tok = SCILAN_TOKEN_DATA | SCILAN_TOKEN_SPACE;
		EXPECT(ioctl(c.fd, SCILAN_IOC_STIMULATE, &tok) == 0, 0);
		/* Garbage in every ioctl of our type, sizes and pointers. */
		srand(1);
		for (int i = 0; i < 20000; i++) {
			unsigned long cmd = _IOC(rand() % 4, SCILAN_IOC_MAGIC, rand() % 12, rand() % 64);
			unsigned long arg = ((unsigned long)rand() << 33) ^ (unsigned long)rand();

			if (cmd == SCILAN_IOC_CONNECT || cmd == SCILAN_IOC_ACCEPT)
				continue; /* may block for a real answer */
			ioctl(c.fd, cmd, i % 3 ? arg : (unsigned long)&in);
			ioctl(fd, cmd, arg & 0xfff);
		}
		checks++;
	} else {
		bad++;
		printf("  hostile: connect: %s\n", strerror(errno));
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	conn_close(&c);
	listen_close(lfd);
	close(fd);
	close(csock);
	close(usock);
	close(tsock);
	result("hostile_args", bad == 0, "%d checks, %d unexpected", checks, bad);
}

/* Connect until the slices run out (EAGAIN), never accepting: the listener's
 * close then closes every queued connection, and nothing is left over. */
static void test_exhaustion(void)
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

/* The driver's state with a listener on port 13 registered, as "STATE
 * <link> <line>" for the host's scilan_ctl status check (run.sh). */
static int dump_state(void)
{
	char path[128], line[256];
	int lfd;

	if (!wait_link(NODE_A, 10000) || !wait_link(NODE_B, 10000))
		return 1;
	lfd = listen_on(NODE_B, 13);
	for (int l = 0; l < 2; l++) {
		FILE *f;

		snprintf(path, sizeof(path), "/sys/kernel/debug/scilan/scilan%d/state", l);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			printf("STATE scilan%d %s", l, line);
		if (f)
			fclose(f);
	}
	listen_close(lfd);
	return lfd < 0;
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
static void test_churn(int n)
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
		counts[rc == 0 ? 0 : err == ECONNREFUSED ? 1 : err == ETIMEDOUT ? 2 : err == EINTR ? 3 : 4]++;
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

/* Six device nodes of one link (six inodes, like containers with their
 * own /dev), each with a mapped connection: link down must zap them all
 * and the link come back. */
static void test_zap_inodes(void)
{
	struct conn c[6];
	struct stat st;
	char path[6][32];
	int lfd = listen_on(NODE_B, 17), made = 0, resets = 0, again;

	if (lfd < 0 || stat(NODE_A, &st) < 0) {
		result("zap_many_inodes", 0, "setup: %s", strerror(errno));
		return;
	}
	for (int k = 0; k < 6; k++) {
		snprintf(path[k], sizeof(path[k]), "/tmp/scilan-node-%d", k);
		unlink(path[k]);
		if (mknod(path[k], S_IFCHR | 0600, st.st_rdev) == 0 && conn_connect(&c[made], path[k], 17, 0) == 0)
			made++;
	}
	write_file(MOCK_LINK, "0");
	for (int k = 0; k < made; k++) {
		uint32_t tok;
		struct pollfd p = { .fd = c[k].fd, .events = POLLIN };

		resets += poll(&p, 1, 5000) == 1 && read(c[k].fd, &tok, sizeof(tok)) < 0 && errno == ECONNRESET;
	}
	write_file(MOCK_LINK, "1");
	again = wait_link(NODE_A, 5000) && wait_link(NODE_B, 5000);
	for (int k = 0; k < made; k++)
		conn_close(&c[k]);
	for (int k = 0; k < 6; k++)
		unlink(path[k]);
	listen_close(lfd);
	result("zap_many_inodes", made == 6 && resets == 6 && again,
	       "%d connections through 6 nodes, %d reset at link down, link up again %d", made, resets, again);
}

/* Unloading either module while endpoints are open, mapped and one sleeps
 * in read() is refused (endpoints pin both), and the connection still
 * works afterwards; the guest's final unload checks they go once closed. */
static void test_unload_busy_mapped(void)
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

/* A 64-byte message carrying its number; the echo must match exactly. */
static void flap_msg(char *m, uint32_t n)
{
	for (int i = 0; i < 64; i++)
		m[i] = (char)(n * 31 + (uint32_t)i);
}

/* The link goes down and up `flaps` times while a client connects again
 * and again and exchanges numbered 64-byte echoes with an acceptor: every
 * echo that completes is exact (an interrupted one fails with a reset,
 * never returns other bytes), nothing hangs, and afterwards no endpoint and
 * no busy slice is left. */
static void test_flap(int flaps)
{
	int lfd = listen_on(NODE_B, 19), stop[2], st = -1, ups = 0, clean;
	pid_t acc, cli;

	if (lfd < 0 || pipe(stop) < 0) {
		result("link_flapping", 0, "listen: %s", strerror(errno));
		return;
	}
	acc = fork();
	if (acc == 0) {
		for (;;) {
			struct conn s;
			char m[64];

			if (conn_accept(&s, NODE_B, lfd, 0) == 0)
				while (conn_recv(&s, m, sizeof(m)) == 0 && conn_send(&s, m, sizeof(m)) == 0)
					;
			conn_close(&s);
		}
	}
	cli = fork();
	if (cli == 0) {
		uint32_t n = 0, good = 0;
		char m[64], back[64], b;

		fcntl(stop[0], F_SETFL, O_NONBLOCK);
		while (read(stop[0], &b, 1) != 1) {
			struct conn c;

			if (conn_connect(&c, NODE_A, 19, 0) == 0) {
				for (int i = 0; i < 50; i++, n++) {
					flap_msg(m, n);
					if (conn_send(&c, m, sizeof(m)) < 0 || conn_recv(&c, back, sizeof(back)) < 0)
						break;
					if (memcmp(m, back, sizeof(m)))
						_exit(3);
					good++;
				}
			}
			conn_close(&c);
		}
		printf("  flapping: %u exact echoes\n", good);
		_exit(good ? 0 : 4);
	}
	for (int i = 0; i < flaps; i++) {
		usleep(5000 + (i % 5) * 5000);
		write_file(MOCK_LINK, "0");
		usleep(10000);
		write_file(MOCK_LINK, "1");
		ups += wait_link(NODE_A, 5000) && wait_link(NODE_B, 5000);
	}
	usleep(200000); /* some echoes on the last session */
	if (write(stop[1], "s", 1) != 1)
		perror("stop");
	alarm(30);
	if (waitpid(cli, &st, 0) == cli && WIFEXITED(st))
		st = WEXITSTATUS(st);
	alarm(0);
	kill(acc, SIGKILL);
	waitpid(acc, NULL, 0);
	listen_close(lfd);
	close(stop[0]);
	close(stop[1]);
	clean = settle(0, "endpoints", 0) && settle(1, "endpoints", 0) && settle(0, "slices_busy", 0) &&
		settle(1, "slices_busy", 0);
	result("link_flapping", st == 0 && ups == flaps && clean,
	       "%d flaps, link up again %d times, client exit %d (3: an echo differed), endpoints %ld/%ld, busy slices %ld/%ld",
	       flaps, ups, st, dbg_value(0, "endpoints"), dbg_value(1, "endpoints"), dbg_value(0, "slices_busy"),
	       dbg_value(1, "slices_busy"));
}

/* A client that connected over the device but falls back to kernel TCP
 * abandons its endpoint: the connection queued at the listener is dropped,
 * so no later accept of that 4-tuple is paired with it (it would read EOF),
 * and both slices are free again. */
static void test_abandon(void)
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

/* The set tests' mappings, each MAP_FAILED when not made: the peer's
 * marks pages and our armed pages (a connection's), a set's two pages. */
static void unmap_set_pages(void *pmarks, void *oarmed, void *marks, void *armed)
{
	size_t pg = SCILAN_SET_PAGE;

	if (pmarks != MAP_FAILED)
		munmap(pmarks, SCILAN_SETS * pg);
	if (oarmed != MAP_FAILED)
		munmap(oarmed, SCILAN_SETS * pg);
	if (marks != MAP_FAILED)
		munmap(marks, pg);
	if (armed != MAP_FAILED)
		munmap(armed, pg);
}


/* A set endpoint (ABI 4) on node A: its index, INFO, the SCILAN_SETS limit,
 * an index freed at close; a connection whose B side marks its slice in
 * A's set, reads the set's armed word and rings it; the mapping rules. */
static void test_sets(void)
{
	const size_t pg = SCILAN_SET_PAGE;
	struct scilan_info in, sin, cin;
	struct conn c = { .fd = -1 }, s = { .fd = -1 };
	int lfd = listen_on(NODE_B, 21), set = open(NODE_A, O_RDWR), idle = open(NODE_A, O_RDWR), more[SCILAN_SETS];
	int bad = 0, checks = 0, nmore = 0, err = 0, ok_limit, woke = 0, busy_all, again_fd, stats;
	uint32_t idx = ~0u, j, tok = 0;
	uint8_t *marks = MAP_FAILED, *armed = MAP_FAILED, *pmarks = MAP_FAILED, *oarmed = MAP_FAILED;
	struct pollfd p;
	size_t sz = 0;
	void *m;

	if (lfd < 0 || set < 0 || idle < 0) {
		result("sets", 0, "setup: %s", strerror(errno));
		goto out;
	}
	EXPECT(ioctl(set, SCILAN_IOC_SET_CREATE, &idx) == 0 && idx < SCILAN_SETS, 0);
	EXPECT(info(set, &in) == 0 && in.ep_state == SCILAN_EP_SET && in.slice == idx, 0);
	EXPECT(ioctl(set, SCILAN_IOC_SET_CREATE, &j) < 0, EINVAL);
	EXPECT(ioctl(set, SCILAN_IOC_ACCEPT, &lfd) < 0, EINVAL);
	EXPECT(ioctl(set, SCILAN_IOC_STIMULATE_SET, &(uint32_t){ 0 }) < 0, ENOTCONN);
	EXPECT(ioctl(set, SCILAN_IOC_STIMULATE, &(uint32_t){ SCILAN_TOKEN_DATA }) < 0, ENOTCONN);
	EXPECT(ioctl(idle, SCILAN_IOC_SET_CREATE, NULL) < 0, EFAULT);
	EXPECT(ioctl(idle, SCILAN_IOC_STIMULATE_SET, &(uint32_t){ 0 }) < 0, ENOTCONN);
	EXPECT(ioctl(idle, SCILAN_IOC_STIMULATE_SET, &(uint32_t){ SCILAN_SETS }) < 0, EINVAL);
	/* Every index taken, then EAGAIN; a closed set's index is free again. */
	while (nmore < (int)SCILAN_SETS) {
		more[nmore] = open(NODE_A, O_RDWR);
		if (ioctl(more[nmore], SCILAN_IOC_SET_CREATE, &j) < 0) {
			err = errno;
			close(more[nmore]);
			break;
		}
		nmore++;
	}
	busy_all = (int)dbg_value(0, "sets_busy");
	ok_limit = nmore == (int)SCILAN_SETS - 1 && err == EAGAIN && busy_all == (int)SCILAN_SETS;
	if (nmore > 0) {
		close(more[--nmore]);
		again_fd = open(NODE_A, O_RDWR);
		ok_limit = ok_limit && ioctl(again_fd, SCILAN_IOC_SET_CREATE, &j) == 0;
		more[nmore++] = again_fd;
	}
	while (nmore > 0)
		close(more[--nmore]);
	ok_limit = ok_limit && settle(0, "sets_busy", 1);
	if (!ok_limit) {
		bad++;
		printf("  sets: %d more sets, then %s; sets_busy %d\n", nmore, strerror(err), busy_all);
	}
	checks++;

	/* The set's own pages: one page each, nothing else. */
	EXPECT((marks = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, set, SCILAN_MMAP_SET_MARKS)) != MAP_FAILED, 0);
	EXPECT((armed = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, set, SCILAN_MMAP_SET_ARMED)) != MAP_FAILED, 0);
	EXPECT(mmap(NULL, 2 * pg, PROT_READ, MAP_SHARED, set, 0) == MAP_FAILED, EINVAL);
	EXPECT(mmap(NULL, pg, PROT_READ, MAP_SHARED, set, 2 * pg) == MAP_FAILED, EINVAL);
	EXPECT(mmap(NULL, pg, PROT_READ, MAP_PRIVATE, set, 0) == MAP_FAILED, EINVAL);
	if (marks == MAP_FAILED || armed == MAP_FAILED)
		goto done;

	/* A connection A -> B: B's side is the sender into A's set. */
	if (conn_connect(&c, NODE_A, 21, 0) < 0 || conn_accept(&s, NODE_B, lfd, 0) < 0 || info(s.fd, &sin) < 0 ||
	    info(c.fd, &cin) < 0) {
		bad++;
		printf("  sets: connect: %s\n", strerror(errno));
		goto done;
	}
	sz = sin.slice_size;
	EXPECT(sin.peer_slice == cin.slice, 0);
	EXPECT((pmarks = mmap(NULL, SCILAN_SETS * pg, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd,
			      SCILAN_MMAP_PEER_MARKS(sz))) != MAP_FAILED, 0);
	EXPECT(mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd, SCILAN_MMAP_OUR_ARMED(sz)) == MAP_FAILED, EACCES);
	EXPECT((oarmed = mmap(NULL, SCILAN_SETS * pg, PROT_READ, MAP_SHARED, s.fd, SCILAN_MMAP_OUR_ARMED(sz))) != MAP_FAILED,
	       0);
	if (oarmed != MAP_FAILED)
		EXPECT(mprotect(oarmed, pg, PROT_READ | PROT_WRITE) < 0, EACCES);
	/* A mapping lies inside one region. */
	EXPECT(mmap(NULL, 2 * pg, PROT_READ, MAP_SHARED, s.fd, SCILAN_MMAP_OUR_ARMED(sz) - pg) == MAP_FAILED, EINVAL);
	EXPECT(mmap(NULL, 2 * pg, PROT_READ, MAP_SHARED, s.fd, SCILAN_MMAP_PEER_MARKS(sz) - pg) == MAP_FAILED, EINVAL);
	EXPECT(mmap(NULL, pg, PROT_READ, MAP_SHARED, s.fd, SCILAN_MMAP_OUR_ARMED(sz) + SCILAN_SETS * pg) == MAP_FAILED,
	       EINVAL);
	EXPECT((m = mmap(NULL, pg, PROT_READ, MAP_SHARED, s.fd, SCILAN_MMAP_OUR_ARMED(sz) + (SCILAN_SETS - 1) * pg)) !=
		       MAP_FAILED,
	       0);
	if (m != MAP_FAILED)
		munmap(m, pg);
	if (pmarks == MAP_FAILED || oarmed == MAP_FAILED)
		goto done;

	/* B marks its connection in A's set i; A's set arms, B sees it. */
	atomic_store((_Atomic uint8_t *)(pmarks + idx * pg + SCILAN_SET_MARKS_OFF + sin.peer_slice), 1);
	EXPECT(atomic_load((_Atomic uint8_t *)(marks + SCILAN_SET_MARKS_OFF + cin.slice)) == 1, 0);
	atomic_store((_Atomic uint32_t *)armed, 1);
	EXPECT(atomic_load((_Atomic uint32_t *)(oarmed + idx * pg)) == 1, 0);

	/* Nothing pending: EAGAIN; B rings set i: A's set wakes with DATA. */
	fcntl(set, F_SETFL, O_NONBLOCK);
	EXPECT(read(set, &tok, sizeof(tok)) < 0, EAGAIN);
	fcntl(set, F_SETFL, 0);
	EXPECT(ioctl(s.fd, SCILAN_IOC_STIMULATE_SET, &(uint32_t){ SCILAN_SETS }) < 0, EINVAL);
	EXPECT(ioctl(s.fd, SCILAN_IOC_STIMULATE_SET, &idx) == 0, 0);
	p = (struct pollfd){ .fd = set, .events = POLLIN };
	woke = poll(&p, 1, 5000) == 1 && (p.revents & POLLIN);
	EXPECT(woke && read(set, &tok, sizeof(tok)) == sizeof(tok) && tok == SCILAN_TOKEN_DATA, 0);
	EXPECT(atomic_load((_Atomic uint32_t *)marks) == 0, 0); /* the stimulus word was taken */
	stats = dbg_value(1, "set_stimuli") > 0 && dbg_value(0, "set_wakeups") > 0;
	EXPECT(stats, 0);
	/* A ring of another set does not wake this one. */
	EXPECT(ioctl(s.fd, SCILAN_IOC_STIMULATE_SET, &(uint32_t){ (idx + 1) % SCILAN_SETS }) == 0, 0);
	p = (struct pollfd){ .fd = set, .events = POLLIN };
	EXPECT(poll(&p, 1, 200) == 0, 0);
	/* RING_SELF on a set, as on a connection. */
	EXPECT(ioctl(set, SCILAN_IOC_RING_SELF, &(uint32_t){ SCILAN_TOKEN_LOCAL }) == 0, 0);
	EXPECT(read(set, &tok, sizeof(tok)) == sizeof(tok) && tok == SCILAN_TOKEN_LOCAL, 0);
	/* A's side closes the connection: B (peer-closed) may still ring. */
	conn_close(&c);
	for (int k = 0; k < 300 && (info(s.fd, &sin) < 0 || sin.ep_state != SCILAN_EP_PEER_CLOSED); k++)
		usleep(10000);
	EXPECT(sin.ep_state == SCILAN_EP_PEER_CLOSED, 0);
	EXPECT(ioctl(s.fd, SCILAN_IOC_STIMULATE_SET, &idx) == 0, 0);
	p = (struct pollfd){ .fd = set, .events = POLLIN };
	EXPECT(poll(&p, 1, 5000) == 1 && read(set, &tok, sizeof(tok)) == sizeof(tok) && tok == SCILAN_TOKEN_DATA, 0);
	/* Closing the set takes its armed word back (B reads 0). */
	munmap(marks, pg);
	munmap(armed, pg);
	marks = armed = MAP_FAILED;
	close(set);
	set = -1;
	EXPECT(atomic_load((_Atomic uint32_t *)(oarmed + idx * pg)) == 0, 0);
	woke = woke && settle(0, "sets_busy", 0);
done:
	unmap_set_pages(pmarks, oarmed, marks, armed);
	conn_close(&c);
	conn_close(&s);
	result("sets", bad == 0 && ok_limit && woke, "set %u, %d checks, %d unexpected, limit of %u sets %d, woken %d",
	       idx, checks, bad, SCILAN_SETS, ok_limit, woke);
out:
	if (set >= 0)
		close(set);
	if (idle >= 0)
		close(idle);
	listen_close(lfd);
}

/* The link is cut under a set and a connection with set pages mapped:
 * the set polls POLLERR and reads ECONNRESET, ringing and creating fail,
 * every mapping is still usable (our pages stay ours, the peer's are the
 * sink: no SIGBUS), the index is held until close; after link up a set
 * is created again. */
static void test_sets_linkdown(void)
{
	const size_t pg = SCILAN_SET_PAGE;
	struct scilan_info in = { 0 }, sin;
	struct conn c = { .fd = -1 }, s = { .fd = -1 };
	int lfd = listen_on(NODE_B, 22), set = open(NODE_A, O_RDWR), fresh = -1, bad = 0, checks = 0, again = 0, held;
	uint8_t *marks = MAP_FAILED, *armed = MAP_FAILED, *pmarks = MAP_FAILED, *oarmed = MAP_FAILED;
	uint32_t idx = ~0u, tok;
	struct pollfd p;
	size_t sz;
	int cut;

	if (lfd < 0 || set < 0 || ioctl(set, SCILAN_IOC_SET_CREATE, &idx) < 0 || conn_connect(&c, NODE_A, 22, 0) < 0 ||
	    conn_accept(&s, NODE_B, lfd, 0) < 0 || info(s.fd, &sin) < 0) {
		result("sets_linkdown", 0, "setup: %s", strerror(errno));
		goto out;
	}
	sz = sin.slice_size;
	marks = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, set, SCILAN_MMAP_SET_MARKS);
	armed = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, set, SCILAN_MMAP_SET_ARMED);
	pmarks = mmap(NULL, SCILAN_SETS * pg, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd, SCILAN_MMAP_PEER_MARKS(sz));
	oarmed = mmap(NULL, SCILAN_SETS * pg, PROT_READ, MAP_SHARED, s.fd, SCILAN_MMAP_OUR_ARMED(sz));
	if (marks == MAP_FAILED || armed == MAP_FAILED || pmarks == MAP_FAILED || oarmed == MAP_FAILED) {
		result("sets_linkdown", 0, "mmap: %s", strerror(errno));
		goto out;
	}
	marks[SCILAN_SET_MARKS_OFF] = 7;
	*(volatile uint32_t *)armed = 1;
	EXPECT(*(volatile uint32_t *)(oarmed + idx * pg) == 1, 0);
	cut = write_file(MOCK_LINK, "0") == 0;
	EXPECT(cut, 0);
	p = (struct pollfd){ .fd = set, .events = POLLIN };
	EXPECT(poll(&p, 1, 5000) == 1 && (p.revents & POLLERR) && (p.revents & POLLHUP), 0);
	EXPECT(read(set, &tok, sizeof(tok)) < 0, ECONNRESET);
	EXPECT(info(set, &in) == 0 && in.ep_state == SCILAN_EP_RESET && in.slice == idx, 0);
	EXPECT(ioctl(s.fd, SCILAN_IOC_STIMULATE_SET, &idx) < 0, ECONNRESET);
	fresh = open(NODE_A, O_RDWR);
	EXPECT(fresh >= 0, 0);
	EXPECT(ioctl(fresh, SCILAN_IOC_SET_CREATE, &tok) < 0, ENETUNREACH);
	held = dbg_value(0, "sets_busy") == 1;
	EXPECT(held, 0);
	/* Touching every mapping again: no SIGBUS; our pages are ours. */
	signal(SIGBUS, sigbus_handler);
	if (sigsetjmp(sigbus_jmp, 1) == 0) {
		EXPECT(marks[SCILAN_SET_MARKS_OFF] == 7, 0);
		marks[SCILAN_SET_MARKS_OFF] = 0;
		*(volatile uint32_t *)armed = 2;
		(void)*(volatile uint32_t *)armed;
		pmarks[idx * pg + SCILAN_SET_MARKS_OFF] = 1;
		(void)*(volatile uint32_t *)(oarmed + idx * pg);
		checks++;
	} else {
		bad++;
		printf("  sets_linkdown: SIGBUS\n");
	}
	signal(SIGBUS, SIG_DFL);
	munmap(marks, pg);
	munmap(armed, pg);
	marks = armed = MAP_FAILED;
	close(set);
	set = -1;
	held = settle(0, "sets_busy", 0);
	EXPECT(held, 0);
	write_file(MOCK_LINK, "1");
	again = wait_link(NODE_A, 5000) && wait_link(NODE_B, 5000) && ioctl(fresh, SCILAN_IOC_SET_CREATE, &tok) == 0 &&
		tok < SCILAN_SETS;
	result("sets_linkdown", bad == 0 && again, "set %u, %d checks, %d unexpected, set created after link up %d", idx,
	       checks, bad, again);
out:
	unmap_set_pages(pmarks, oarmed, marks, armed);
	conn_close(&c);
	conn_close(&s);
	if (set >= 0)
		close(set);
	if (fresh >= 0)
		close(fresh);
	listen_close(lfd);
	write_file(MOCK_LINK, "1");
	wait_link(NODE_A, 5000);
	wait_link(NODE_B, 5000);
}

/* A forked child becomes this unprivileged uid (and gid); 0 or -1. */
static int become_uid(uid_t uid)
{
	return setgroups(0, NULL) == 0 && setgid(uid) == 0 && setuid(uid) == 0 ? 0 : -1;
}

/* Does the page at p hold the 8-byte marker anywhere? */
static int page_holds(const volatile uint8_t *p, uint64_t marker)
{
	for (size_t i = 0; i + sizeof(marker) <= SCILAN_SET_PAGE; i += sizeof(marker))
		if (*(const volatile uint64_t *)(p + i) == marker)
			return 1;
	return 0;
}

/* After link down the peer's pages of a mapping refault to a sink, which
 * must be the endpoint's own: two connections of node A, root's and uid
 * 65534's, map the peer's slice and marks pages; the link is cut and the
 * zap done; root stores a marker through both of its peer mappings (a ring
 * copy in flight at the cut) and 65534 through its own, and neither reads
 * the other's. */
static void test_sink_private(void)
{
	const uint64_t root_marker = 0x5eed0000a11ce001ull, nobody_marker = 0x5eed0000b0b00002ull;
	const size_t pg = SCILAN_SET_PAGE;
	int lfd = listen_on(NODE_B, 24), to_child[2] = { -1, -1 }, to_parent[2] = { -1, -1 }, cut = 0, zapped = 0;
	int st = -1, saw_nobody = -1, own = 0;
	uint8_t *pmarks = MAP_FAILED;
	struct conn v = { .fd = -1 };
	long zaps0 = dbg_value(0, "zaps");
	pid_t pid = -1;
	char step = 0;

	if (lfd < 0 || pipe(to_child) < 0 || pipe(to_parent) < 0 || conn_connect(&v, NODE_A, 24, 0) < 0 ||
	    (pmarks = mmap(NULL, SCILAN_SETS * pg, PROT_READ | PROT_WRITE, MAP_SHARED, v.fd,
			   SCILAN_MMAP_PEER_MARKS(v.slice))) == MAP_FAILED) {
		result("sink_private", 0, "setup: %s", strerror(errno));
		goto out;
	}
	pid = fork();
	if (pid == 0) {
		struct conn a;
		uint8_t *am;
		int saw;

		if (become_uid(65534) < 0 || conn_connect(&a, NODE_A, 24, 0) < 0)
			_exit(100);
		am = mmap(NULL, SCILAN_SETS * pg, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd,
			  SCILAN_MMAP_PEER_MARKS(a.slice));
		if (am == MAP_FAILED || write(to_parent[1], "r", 1) != 1 || read(to_child[0], &step, 1) != 1)
			_exit(101);
		/* Cut, zapped, and root's markers stored: none may show here. */
		saw = page_holds(a.peer, root_marker) || page_holds(a.peer + a.slice - pg, root_marker) ||
		      page_holds(am, root_marker);
		*(volatile uint64_t *)(a.peer + 512) = nobody_marker;
		*(volatile uint64_t *)(am + 1024) = nobody_marker;
		if (write(to_parent[1], "w", 1) != 1 || read(to_child[0], &step, 1) != 1)
			_exit(102);
		_exit(saw);
	}
	if (pid < 0 || read(to_parent[0], &step, 1) != 1) {
		result("sink_private", 0, "the second uid's connection: setup failed");
		goto out;
	}
	cut = write_file(MOCK_LINK, "0") == 0;
	/* The mappings are zapped by the link's work item after the reset. */
	for (int i = 0; i < 500 && cut && !zapped; i++) {
		zapped = dbg_value(0, "zaps") > zaps0;
		if (!zapped)
			usleep(10000);
	}
	if (zapped) {
		*(volatile uint64_t *)(v.peer + 256) = root_marker;
		*(volatile uint64_t *)(v.peer + v.slice - pg + 256) = root_marker;
		*(volatile uint64_t *)(pmarks + 2048) = root_marker;
	}
	/* Root's own stores stay visible to root: the sink is really mapped. */
	own = zapped && page_holds(v.peer, root_marker) && page_holds(pmarks, root_marker);
	if (write(to_child[1], "c", 1) == 1 && read(to_parent[0], &step, 1) == 1)
		saw_nobody = page_holds(v.peer, nobody_marker) || page_holds(pmarks, nobody_marker);
	if (write(to_child[1], "x", 1) != 1)
		saw_nobody = -1;
	if (waitpid(pid, &st, 0) == pid && WIFEXITED(st))
		st = WEXITSTATUS(st);
	else
		st = -1;
	pid = -1;
	result("sink_private", cut && zapped && own && st == 0 && saw_nobody == 0,
	       "link cut %d and zapped %d, root reads its own stores %d; uid 65534 read root's: exit %d (0 no, 1 yes, "
	       "100+ setup); root read 65534's %d",
	       cut, zapped, own, st, saw_nobody);
out:
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	if (pmarks != MAP_FAILED)
		munmap(pmarks, SCILAN_SETS * pg);
	conn_close(&v);
	listen_close(lfd);
	for (int k = 0; k < 2; k++) {
		if (to_child[k] >= 0)
			close(to_child[k]);
		if (to_parent[k] >= 0)
			close(to_parent[k]);
	}
	write_file(MOCK_LINK, "1");
	wait_link(NODE_A, 5000);
	wait_link(NODE_B, 5000);
}

/* The module's per-uid limit of set indices (-1 when unreadable). */
static long sets_per_uid(void)
{
	FILE *f = fopen("/sys/module/scilan/parameters/sets_per_uid", "r");
	long v = -1;

	if (f && fscanf(f, "%ld", &v) != 1)
		v = -1;
	if (f)
		fclose(f);
	return v;
}

/* One uid cannot take every set index of a link: uid 65534 creates sets
 * until EAGAIN and gets exactly sets_per_uid; then another uid (65533) and
 * root still create one each. */
static void test_sets_per_uid(void)
{
	int to_child[2], to_parent[2], n = -1, other = 0, root_ok, fd = -1, st = -1;
	long quota = sets_per_uid(), busy0 = dbg_value(0, "sets_busy");
	uint32_t idx;
	pid_t pid;
	char step;

	if (pipe(to_child) < 0 || pipe(to_parent) < 0) {
		result("sets_per_uid", 0, "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		int sets[SCILAN_SETS], k = 0, err = 0;

		if (become_uid(65534) < 0)
			_exit(100);
		while (k < (int)SCILAN_SETS) {
			sets[k] = open(NODE_A, O_RDWR);
			if (sets[k] < 0 || ioctl(sets[k], SCILAN_IOC_SET_CREATE, &idx) < 0) {
				err = errno;
				break;
			}
			k++;
		}
		if (k < (int)SCILAN_SETS && err != EAGAIN)
			k = -err;
		if (write(to_parent[1], &k, sizeof(k)) != sizeof(k) || read(to_child[0], &step, 1) != 1)
			_exit(101);
		_exit(0);
	}
	if (read(to_parent[0], &n, sizeof(n)) == sizeof(n)) {
		pid_t o = fork();

		if (o == 0) {
			int f;

			if (become_uid(65533) < 0)
				_exit(100);
			f = open(NODE_A, O_RDWR);
			_exit(f >= 0 && ioctl(f, SCILAN_IOC_SET_CREATE, &idx) == 0 ? 0 : 1);
		}
		other = waitpid(o, &st, 0) == o && WIFEXITED(st) && WEXITSTATUS(st) == 0;
		st = -1;
	}
	fd = open(NODE_A, O_RDWR);
	root_ok = fd >= 0 && ioctl(fd, SCILAN_IOC_SET_CREATE, &idx) == 0;
	if (write(to_child[1], "x", 1) == 1 && waitpid(pid, &st, 0) == pid && WIFEXITED(st))
		st = WEXITSTATUS(st);
	if (fd >= 0)
		close(fd);
	close(to_child[0]);
	close(to_child[1]);
	close(to_parent[0]);
	close(to_parent[1]);
	result("sets_per_uid", busy0 == 0 && quota > 0 && n == quota && other && root_ok && st == 0,
	       "uid 65534 took %d of %u sets then EAGAIN (quota %ld, %ld busy before); uid 65533 then created one %d, "
	       "root %d",
	       n, SCILAN_SETS, quota, busy0, other, root_ok);
	settle(0, "sets_busy", 0);
}

/* The quota of sets_per_uid through a user namespace with a range of uids
 * (what newuidmap gives from /etc/subuid): uid 65534 makes one, root maps
 * 16 uids into it, and it creates a set as each of them; they all count as
 * 65534's, so it gets exactly sets_per_uid. */
static void test_sets_per_uid_userns(void)
{
	int to_child[2], to_parent[2], n = -1;
	long quota = sets_per_uid(), busy0 = dbg_value(0, "sets_busy");
	char path[64], step;
	pid_t pid;

	if (pipe(to_child) < 0 || pipe(to_parent) < 0) {
		result("sets_per_uid_userns", 0, "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		int sets[SCILAN_SETS], k = 0, got = 0;
		uint32_t idx;

		if (become_uid(65534) < 0 || unshare(CLONE_NEWUSER) < 0 || write(to_parent[1], "u", 1) != 1 ||
		    read(to_child[0], &step, 1) != 1)
			_exit(100);
		/* Uid k of the namespace (saved uid 0: back to root after). */
		for (k = 0; k < (int)SCILAN_SETS; k++) {
			if (setresuid((uid_t)k, (uid_t)k, 0) < 0)
				break;
			sets[got] = open(NODE_A, O_RDWR);
			if (sets[got] >= 0 && ioctl(sets[got], SCILAN_IOC_SET_CREATE, &idx) == 0)
				got++;
			if (setresuid(0, 0, 0) < 0)
				break;
		}
		if (k < (int)SCILAN_SETS)
			got = -1;
		if (write(to_parent[1], &got, sizeof(got)) != sizeof(got) || read(to_child[0], &step, 1) != 1)
			_exit(101);
		_exit(0);
	}
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	if (read(to_parent[0], &step, 1) != 1 || write_file(path, "0 300000 16") < 0 || write(to_child[1], "m", 1) != 1 ||
	    read(to_parent[0], &n, sizeof(n)) != sizeof(n))
		n = -2;
	if (write(to_child[1], "x", 1) != 1)
		n = -3;
	waitpid(pid, NULL, 0);
	close(to_child[0]);
	close(to_child[1]);
	close(to_parent[0]);
	close(to_parent[1]);
	result("sets_per_uid_userns", busy0 == 0 && quota > 0 && n == quota,
	       "16 uids of uid 65534's user namespace took %d sets (quota %ld, %ld busy before; -1 setresuid failed)",
	       n, quota, busy0);
	settle(0, "sets_busy", 0);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "all";
	int all = !strcmp(what, "all");

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(what, "state"))
		return dump_state();
	if (!wait_link(NODE_A, 10000) || !wait_link(NODE_B, 10000)) {
		result("link_up", 0, "the mock link did not come up");
		return 1;
	}
	result("link_up", 1, "both links up");
	if (all || !strcmp(what, "pingpong")) {
		test_pingpong("pingpong_interrupt", 0, 500);
		test_pingpong("pingpong_polling", 1L << 30, 20000);
	}
	if (all || !strcmp(what, "stream"))
		test_stream(1L << 16, 16u << 20);
	if (all || !strcmp(what, "killed"))
		test_killed();
	if (all || !strcmp(what, "hostile"))
		test_hostile();
	if (all || !strcmp(what, "exhaust"))
		test_exhaustion();
	if (all || !strcmp(what, "linkdown"))
		test_linkdown();
	if (all || !strcmp(what, "churn"))
		test_churn(5000);
	if (all || !strcmp(what, "zap"))
		test_zap_inodes();
	if (all || !strcmp(what, "unload"))
		test_unload_busy_mapped();
	if (all || !strcmp(what, "abandon"))
		test_abandon();
	if (all || !strcmp(what, "sets")) {
		test_sets();
		test_sets_linkdown();
		test_sets_per_uid();
		test_sets_per_uid_userns();
	}
	if (all || !strcmp(what, "sink"))
		test_sink_private();
	if (all || !strcmp(what, "flap"))
		test_flap(100);
	if (all) {
		int clean = settle(0, "endpoints", 0) && settle(1, "endpoints", 0) &&
			    settle(0, "slices_busy", 0) && settle(1, "slices_busy", 0) &&
			    settle(0, "sets_busy", 0) && settle(1, "sets_busy", 0);

		result("no_leftovers", clean, "endpoints %ld/%ld, busy slices %ld/%ld, busy sets %ld/%ld",
		       dbg_value(0, "endpoints"), dbg_value(1, "endpoints"), dbg_value(0, "slices_busy"),
		       dbg_value(1, "slices_busy"), dbg_value(0, "sets_busy"), dbg_value(1, "sets_busy"));
	}
	return failures ? 1 : 0;
}
