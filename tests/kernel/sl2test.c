/* sl2test.c — the cross-guest tests and benches of scilan.ko over ivshmem
 * (static binary run by tests/kernel/init-two in each of two QEMU guests):
 * role a (10.78.0.1) connects, role b (10.78.0.2) listens; the two programs
 * keep step over a TCP control connection on the guests' virtio-net link,
 * which also carries the kernel TCP ping-pong and stream compared with
 * scilan's.  Prints "TEST <name> PASS|FAIL <detail>" and "BENCH <name> ...".
 */
#include "sl2test.h"

/* Declared extern by guest.h, slring.h and sl2test.h. */
int failures;
int slring_lsock[1024];
const char *slring_dst = "127.0.0.1";
int is_a, ctl = -1;

static int rtt_iters = 2000, poll_iters = 20000;
static size_t stream_bytes = 16u << 20;

/* A step both programs reach: each sends the step's name and a value, then
 * reads the other's; a mismatch means the two runs are out of step.
 */
int64_t sync_peer(const char *step, int64_t mine)
{
	char name[32] = "", theirs_name[32];
	int64_t theirs = -1;

	strncpy(name, step, sizeof(name) - 1);
	if (full_io(ctl, name, sizeof(name), 1) < 0 || full_io(ctl, &mine, sizeof(mine), 1) < 0 ||
	    full_io(ctl, theirs_name, sizeof(theirs_name), 0) < 0 ||
	    full_io(ctl, &theirs, sizeof(theirs), 0) < 0) {
		printf("sl2test: control connection lost at '%s'\n", step);
		return -1;
	}
	if (memcmp(name, theirs_name, sizeof(name))) {
		printf("sl2test: out of step: '%s' here, '%.31s' there\n", step, theirs_name);
		exit(3);
	}
	return theirs;
}

static int tcp_listen(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0)
		return -1;
	return fd;
}

static int tcp_connect(const char *addr, int port, int tries)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1;

	inet_pton(AF_INET, addr, &sa.sin_addr);
	for (int i = 0; i < tries; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			return fd;
		}
		close(fd);
		usleep(200000);
	}
	return -1;
}

/* Accepts within 60 s (a peer that never comes fails the test, not the run). */
static int tcp_accept(int lfd)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	int one = 1, fd = poll(&p, 1, 60000) == 1 ? accept(lfd, NULL, NULL) : -1;

	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

int dbg_has(const char *text)
{
	char line[256];
	int found = 0;
	FILE *f = fopen("/sys/kernel/debug/scilan/scilan0/state", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		found |= !strncmp(line, text, strlen(text));
	fclose(f);
	return found;
}

static int settle(const char *key, long want)
{
	return settle_for(0, key, want, 5000);
}

static void report_rtt(const char *name, const char *what, double *rtt, int n, int ok, long sleeps)
{
	qsort(rtt, (size_t)n, sizeof(double), cmp_double);
	result(name, ok, "%d round trips of 64 B, p50 %.1f us, p99 %.1f us, client sleeps %ld", n,
	       rtt[n / 2], rtt[n * 99 / 100], sleeps);
	if (ok)
		printf("BENCH %s p50_us %.1f p99_us %.1f n %d\n", what, rtt[n / 2], rtt[n * 99 / 100], n);
}

/* 64-byte ping-pong across the guests: a measures, b echoes. */
static void test_pingpong(const char *name, const char *what, long spin, int iters, unsigned int port)
{
	char msg[64], back[64];
	struct conn c;
	int lfd = -1, ok = 1;

	if (!is_a) {
		lfd = listen_on(NODE, port);
		sync_peer(name, lfd >= 0);
		ok = lfd >= 0 && conn_accept(&c, NODE, lfd, spin) == 0;
		for (int i = 0; ok && i < iters; i++)
			ok = conn_recv(&c, msg, sizeof(msg)) == 0 && conn_send(&c, msg, sizeof(msg)) == 0;
		/* Until a has read the last answer: then both close. */
		ok = sync_peer(name, ok) >= 0 && ok;
		result(name, ok, "echoed %d messages", iters);
		conn_close(&c);
		listen_close(lfd);
		return;
	}
	double *rtt = calloc((size_t)iters, sizeof(double));

	if (sync_peer(name, 0) != 1 || !rtt || conn_connect(&c, NODE, port, spin) < 0) {
		result(name, 0, "connect: %s", strerror(errno));
		sync_peer(name, 0);
		free(rtt);
		return;
	}
	for (int i = 0; i < iters && ok; i++) {
		double t0 = now_us();

		memset(msg, 'a' + i % 26, sizeof(msg));
		ok = conn_send(&c, msg, sizeof(msg)) == 0 && conn_recv(&c, back, sizeof(back)) == 0 &&
		     memcmp(msg, back, sizeof(msg)) == 0;
		rtt[i] = now_us() - t0;
	}
	ok = sync_peer(name, ok) == 1 && ok;
	report_rtt(name, what, rtt, iters, ok, c.sleeps);
	conn_close(&c);
	free(rtt);
}

/* The same 64-byte ping-pong over kernel TCP on the virtio-net link. */
static void test_tcp_pingpong(int iters)
{
	char msg[64], back[64];
	int fd, lfd = -1, ok;

	if (!is_a) {
		lfd = tcp_listen(TCP_PORT);
		sync_peer("tcp_pingpong", lfd >= 0);
		fd = lfd >= 0 ? tcp_accept(lfd) : -1;
		ok = fd >= 0;
		for (int i = 0; ok && i < iters; i++)
			ok = full_io(fd, msg, sizeof(msg), 0) == 0 && full_io(fd, msg, sizeof(msg), 1) == 0;
		ok = sync_peer("tcp_pingpong", ok) >= 0 && ok;
		result("tcp_pingpong", ok, "echoed %d messages", iters);
		close(fd);
		listen_close(lfd);
		return;
	}
	double *rtt = calloc((size_t)iters, sizeof(double));

	ok = sync_peer("tcp_pingpong", 0) == 1 && rtt && (fd = tcp_connect(ADDR_B, TCP_PORT, 25)) >= 0;
	for (int i = 0; i < iters && ok; i++) {
		double t0 = now_us();

		memset(msg, 'a' + i % 26, sizeof(msg));
		ok = full_io(fd, msg, sizeof(msg), 1) == 0 && full_io(fd, back, sizeof(back), 0) == 0 &&
		     memcmp(msg, back, sizeof(msg)) == 0;
		rtt[i] = now_us() - t0;
	}
	ok = sync_peer("tcp_pingpong", ok) == 1 && ok;
	if (rtt)
		report_rtt("tcp_pingpong", "tcp_virtio_net", rtt, iters, ok, 0);
	if (ok)
		close(fd);
	free(rtt);
}

/* A pseudo-random byte stream, a -> b, in uneven pieces; b checks every
 * byte and both compare FNV-1a checksums.  Over scilan (fd < 0) or TCP.
 */
static void test_stream(const char *name, const char *what, int tcp)
{
	static uint8_t buf[65536 + 13];
	uint64_t seed = 42, h = 0xcbf29ce484222325ull;
	struct conn c = { .fd = -1 };
	int lfd = -1, fd = -1, ok;
	double t0;

	if (!is_a) {
		size_t got = 0;

		lfd = tcp ? tcp_listen(TCP_PORT + 1) : listen_on(NODE, 8);
		sync_peer(name, lfd >= 0);
		if (tcp)
			ok = (fd = tcp_accept(lfd)) >= 0;
		else
			ok = conn_accept(&c, NODE, lfd, 1L << 16) == 0;
		while (ok && got < stream_bytes) {
			size_t k = stream_bytes - got < sizeof(buf) - 7 ? stream_bytes - got : sizeof(buf) - 7;

			ok = (tcp ? full_io(fd, buf, k, 0) : conn_recv(&c, buf, k)) == 0;
			for (size_t i = 0; ok && i < k; i++) {
				ok = buf[i] == (uint8_t)xorshift(&seed);
				h = (h ^ buf[i]) * 0x100000001b3ull;
			}
			got += k;
		}
		ok = sync_peer(name, ok ? (int64_t)(h >> 1) : -2) >= 0 && ok;
		result(name, ok, "%zu bytes received and checked, checksum %016llx", got,
		       (unsigned long long)h);
		conn_close(&c);
		if (fd >= 0)
			close(fd);
		listen_close(lfd);
		return;
	}
	ok = sync_peer(name, 0) == 1;
	ok = ok && (tcp ? (fd = tcp_connect(ADDR_B, TCP_PORT + 1, 25)) >= 0 :
		     conn_connect(&c, NODE, 8, 1L << 16) == 0);
	t0 = now_us();
	for (size_t sent = 0, piece = 1; ok && sent < stream_bytes; piece = piece * 7 % 65531 + 1) {
		size_t k = stream_bytes - sent < piece ? stream_bytes - sent : piece;

		for (size_t i = 0; i < k; i++) {
			buf[i] = (uint8_t)xorshift(&seed);
			h = (h ^ buf[i]) * 0x100000001b3ull;
		}
		ok = (tcp ? full_io(fd, buf, k, 1) : conn_send(&c, buf, k)) == 0;
		sent += k;
	}
	/* b answers once it has checked every byte: the time is end to end. */
	int64_t theirs = sync_peer(name, ok);

	t0 = now_us() - t0;
	ok = ok && theirs == (int64_t)(h >> 1);
	result(name, ok, "%zu bytes, checksum %016llx %s, %.1f MB/s", stream_bytes,
	       (unsigned long long)h, theirs == (int64_t)(h >> 1) ? "equal" : "DIFFERS",
	       stream_bytes / t0);
	if (ok)
		printf("BENCH %s MB_s %.1f bytes %zu\n", what, stream_bytes / t0, stream_bytes);
	conn_close(&c);
	if (fd >= 0)
		close(fd);
}

/* a's child connects, maps both slices, sends and is SIGKILLed: b sees the
 * close (POLLHUP, read 0); afterwards neither guest holds an endpoint or a
 * busy slice.
 */
static void test_killed(void)
{
	struct conn s;
	struct pollfd p;
	uint32_t tok;
	int lfd, ok, hup, clean;

	if (!is_a) {
		lfd = listen_on(NODE, 9);
		sync_peer("killed", lfd >= 0);
		ok = lfd >= 0 && conn_accept(&s, NODE, lfd, 0) == 0 && conn_recv(&s, &tok, 4) == 0;
		sync_peer("killed_recv", ok);
		p = (struct pollfd){ .fd = s.fd, .events = POLLIN };
		hup = ok && poll(&p, 1, 10000) == 1 && (p.revents & POLLHUP) &&
		      read(s.fd, &tok, sizeof(tok)) == 0;
		conn_close(&s);
		listen_close(lfd);
	} else {
		pid_t pid;

		sync_peer("killed", 0);
		pid = fork();
		if (pid == 0) {
			struct conn c;

			if (conn_connect(&c, NODE, 9, 0) < 0)
				_exit(2);
			conn_send(&c, "hell", 4);
			pause();
			_exit(0);
		}
		ok = sync_peer("killed_recv", 1) == 1;
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		hup = 1;
	}
	clean = settle("endpoints", 0) && settle("slices_busy", 0);
	int64_t theirs = sync_peer("killed_clean", clean && ok && hup);

	result("killed_while_mapped", ok && hup && clean && theirs == 1,
	       "peer hup %d, endpoints %ld, busy slices %ld here, peer clean %lld", hup,
	       dbg_value(0, "endpoints"), dbg_value(0, "slices_busy"), (long long)theirs);
}

/* Bad arguments on a connected cross-guest endpoint and a fresh one. */
static void test_hostile(void)
{
	int csock = is_a ? slring_bound_sock() : -1;
	struct scilan_connect cr = slring_connect_req(csock, 4242);
	struct scilan_info in;
	struct conn c;
	int fd = open(NODE, O_RDWR), bad = 0, checks = 0, lfd = -1, minus = -1;
	uint32_t tok = 0xff;

	if (!is_a) {
		lfd = listen_on(NODE, 11);
		struct pollfd queued = { .fd = lfd, .events = POLLIN };

		sync_peer("hostile", lfd >= 0);
		/* Bounded: a connect that failed over there must end this test
		 * with a reason, not hold both guests until run-two.sh's timeout. */
		if (lfd >= 0 && poll(&queued, 1, 30000) == 1 && conn_accept(&c, NODE, lfd, 0) == 0) {
			conn_close(&c);
		} else {
			bad++;
			printf("  hostile: no connection to accept on port 11 within 30 s: %s\n", strerror(errno));
			fflush(stdout);
		}
		/* Accepted before a's random ioctls: one of them is ABANDON, whose
		 * close drops a connection still queued here (by design). */
		sync_peer("hostile_accepted", bad == 0);
	} else {
		sync_peer("hostile", 0);
	}
	if (fd < 0) {
		result("hostile_args", 0, "open: %s", strerror(errno));
		if (is_a)
			sync_peer("hostile_accepted", 0);
		sync_peer("hostile_done", 0);
		return;
	}
	EXPECT(ioctl(fd, 0xdeadbeef, 0) < 0, ENOTTY);
	EXPECT(ioctl(fd, SCILAN_IOC_INFO, NULL) < 0, EFAULT);
	EXPECT(ioctl(fd, SCILAN_IOC_LISTEN, NULL) < 0, EFAULT);
	EXPECT(ioctl(fd, SCILAN_IOC_CONNECT, (void *)8) < 0, EFAULT);
	EXPECT(ioctl(fd, SCILAN_IOC_ACCEPT, &minus) < 0, EBADF);
	EXPECT(ioctl(fd, SCILAN_IOC_STIMULATE, &tok) < 0, EINVAL);
	EXPECT(mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED, ENOTCONN);
	if (is_a) {
		/* Nobody listens on that port over there. */
		EXPECT(ioctl(fd, SCILAN_IOC_CONNECT, &cr) < 0, ECONNREFUSED);
		int connected = conn_connect(&c, NODE, 11, 0) == 0;
		int err = errno;
		int64_t accepted = sync_peer("hostile_accepted", connected);

		if (accepted == 1 && connected && info(c.fd, &in) == 0) {
			size_t sz = in.slice_size;

			/* Beyond the slices and the set pages (ABI 4). */
			EXPECT(mmap(NULL, sz, PROT_READ, MAP_SHARED, c.fd,
				    SCILAN_MMAP_OUR_ARMED(sz) + SCILAN_SETS * SCILAN_SET_PAGE) == MAP_FAILED,
			       EINVAL);
			EXPECT(mmap(NULL, 2 * sz, PROT_READ, MAP_SHARED, c.fd, 0) == MAP_FAILED, EINVAL);
			EXPECT(mmap(NULL, 4096, PROT_READ, MAP_SHARED, c.fd, 1ull << 40) == MAP_FAILED, EINVAL);
			EXPECT(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, c.fd, 0) == MAP_FAILED,
			       EINVAL);
			srand(2);
			for (int i = 0; i < 5000; i++) {
				unsigned long cmd = _IOC(rand() % 4, SCILAN_IOC_MAGIC, rand() % 12, rand() % 64);
				unsigned long arg = ((unsigned long)rand() << 33) ^ (unsigned long)rand();

				if (cmd == SCILAN_IOC_CONNECT || cmd == SCILAN_IOC_ACCEPT)
					continue;
				ioctl(c.fd, cmd, i % 3 ? arg : (unsigned long)&in);
			}
			checks++;
		} else {
			bad++;
			printf("  hostile: connect %s, accepted there %lld\n", connected ? "ok" : strerror(err),
			       (long long)accepted);
			fflush(stdout);
		}
		conn_close(&c);
	}
	close(fd);
	if (csock >= 0)
		close(csock);
	listen_close(lfd);
	int64_t theirs = sync_peer("hostile_done", bad == 0);

	result("hostile_args", bad == 0 && theirs == 1, "%d checks, %d unexpected here, peer ok %lld",
	       checks, bad, (long long)theirs);
}

/* Runs argv under the preload hook with stdout/stderr into files;
 * poll_us: SCILAN_POLL_US, or NULL for the default. */
pid_t run_hooked(char *const argv[], const char *out, const char *err, const char *poll_us)
{
	pid_t pid = fork();

	if (pid == 0) {
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(126);
		setenv("LD_PRELOAD", "/lib/libscilan_preload.so", 1);
		setenv("SCILAN_CONF", "/tmp/two.conf", 1);
		setenv("SCILAN_RUNDIR", "/tmp/scilan-hook", 1);
		setenv("SCILAN_STATS", "stderr", 1);
		if (poll_us)
			setenv("SCILAN_POLL_US", poll_us, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* Where a program that did not finish in time is stuck: its call and the
 * kernel function it sleeps in, on the lines run-two.sh shows. */
static void show_stuck(pid_t pid)
{
	char path[64], call[256] = "?", wchan[64] = "?";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	if ((f = fopen(path, "r"))) {
		if (!fgets(call, sizeof(call), f))
			strcpy(call, "?");
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/wchan", (int)pid);
	if ((f = fopen(path, "r"))) {
		if (!fgets(wchan, sizeof(wchan), f))
			strcpy(wchan, "?");
		fclose(f);
	}
	call[strcspn(call, "\n")] = 0;
	printf("scilan-guest: pid %d did not finish in time: in system call %s, sleeping in %s\n", (int)pid, call,
	       wchan);
}

/* Waits up to seconds for pid; kills it after that.  1 if it exited 0. */
int wait_ok_within(pid_t pid, int seconds)
{
	int status = 0;

	for (int i = 0; i < seconds * 10; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			if (WIFSIGNALED(status))
				printf("scilan-guest: pid %d killed by signal %d (%s)\n", (int)pid, WTERMSIG(status),
				       strsignal(WTERMSIG(status)));
			return WIFEXITED(status) && WEXITSTATUS(status) == 0;
		}
		usleep(100000);
	}
	show_stuck(pid);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return 0;
}

int wait_ok(pid_t pid)
{
	return wait_ok_within(pid, 60);
}

int file_has(const char *path, const char *text)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	int found = 0;

	/* Line by line, the whole file: a debug log puts the stats line far
	 * down (text holds at most one line's end, its last byte). */
	while (f && !found && getline(&line, &cap, f) >= 0)
		found = strstr(line, text) != NULL;
	free(line);
	if (f)
		fclose(f);
	return found;
}

void show_file(const char *path)
{
	char line[256];
	FILE *f = fopen(path, "r");

	while (f && fgets(line, sizeof(line), f))
		printf("  %s: %s", path, line);
	if (f)
		fclose(f);
}

/* The port a hooked server printed ("port N") into out, within 10 s; 0 if none. */
static int port_of(pid_t pid, const char *out)
{
	int port = 0;

	for (int i = 0; pid > 0 && i < 200 && !port; i++) {
		FILE *o = fopen(out, "r");

		if (o && fscanf(o, "port %d", &port) != 1)
			port = 0;
		if (o)
			fclose(o);
		if (!port)
			usleep(50000);
	}
	return port;
}

/* b's half of a test: a hooked server started, and the port it printed
 * (0: none) sent to a under sync. */
int serve_hooked(char *const argv[], const char *out, const char *err, const char *poll_us, const char *sync,
			pid_t *pid)
{
	int port;

	*pid = run_hooked(argv, out, err, poll_us);
	port = port_of(*pid, out);
	sync_peer(sync, port);
	return port;
}

/* An unmodified, dynamically linked program (tests/hook/progs/peer) under
 * the preload hook in both guests: the cluster map lists each guest with
 * fabric dev on scilan0, so its TCP connection to the other guest's address
 * is carried by libscilan's device fabric over the ivshmem link.
 */
static void test_hook(void)
{
	FILE *f = fopen("/tmp/two.conf", "w");
	int ok = f && fprintf(f, "1 %s dev scilan0\n2 %s dev scilan0\n", ADDR_A, ADDR_B) > 0;
	int port = 0;
	pid_t pid;

	if (f)
		fclose(f);
	if (!is_a) {
		char *argv[] = { "/bin/peer", "server", ADDR_B, NULL };

		pid = ok ? run_hooked(argv, "/tmp/srv.out", "/tmp/srv.err", NULL) : -1;
		port = port_of(pid, "/tmp/srv.out");
		sync_peer("hook", port);
		ok = port && wait_ok(pid) && file_has("/tmp/srv.err", "accelerated 1,");
		int64_t theirs = sync_peer("hook_done", ok);

		result("hook_dev_program", ok && theirs == 1, "peer server under the hook, accelerated %d, client ok %lld",
		       ok, (long long)theirs);
		if (!ok) {
			show_file("/tmp/srv.out");
			show_file("/tmp/srv.err");
		}
		return;
	}
	port = (int)sync_peer("hook", 0);
	if (ok && port > 0) {
		char pbuf[16];
		char *argv[] = { "/bin/peer", "client", ADDR_B, pbuf, "4000000", NULL };

		snprintf(pbuf, sizeof(pbuf), "%d", port);
		pid = run_hooked(argv, "/tmp/cli.out", "/tmp/cli.err", NULL);
		ok = wait_ok(pid) && file_has("/tmp/cli.out", "intact 1") &&
		     file_has("/tmp/cli.err", "accelerated 1,");
	} else {
		ok = 0;
	}
	int64_t theirs = sync_peer("hook_done", ok);

	result("hook_dev_program", ok && theirs == 1,
	       "peer client -> %s:%d under the hook, 4 MB echoed intact and accelerated %d, server ok %lld",
	       ADDR_B, port, ok, (long long)theirs);
	if (!ok) {
		show_file("/tmp/cli.out");
		show_file("/tmp/cli.err");
	}
}

/* An epoll set across the link (tests/kernel/epollset.c), in interrupt
 * mode: b's one-thread server holds 40 device connections in one set, a's
 * client makes 2,000 exchanges on random ones.  Every request must be
 * answered (a lost wake-up of b's set would leave one unanswered for 20 s)
 * and b's set must have been woken through its doorbell (a scanned set
 * never is). */
static void test_epoll_set(void)
{
	const char *name = "epoll_set_across_the_link";
	long wake0 = dbg_value(0, "set_wakeups");
	int port, ok;
	pid_t pid;

	if (!is_a) {
		char *argv[] = { "/bin/epollset", "serve", ADDR_B, "40", NULL };

		port = serve_hooked(argv, "/tmp/eps.out", "/tmp/eps.err", "0", name, &pid);
		ok = port && wait_ok(pid);
		long wakes = dbg_value(0, "set_wakeups") - wake0;
		int64_t theirs = sync_peer("epoll_set_done", ok && wakes > 0);

		result(name, ok && wakes > 0 && theirs == 1,
		       "epollset server under the hook, exit ok %d, %ld set wake-ups, client ok %lld", ok, wakes,
		       (long long)theirs);
		if (!ok)
			show_file("/tmp/eps.err");
		return;
	}
	port = (int)sync_peer(name, 0);
	ok = 0;
	if (port > 0) {
		char pbuf[16];
		char *argv[] = { "/bin/epollset", "client", ADDR_B, pbuf, "40", "2000", NULL };

		snprintf(pbuf, sizeof(pbuf), "%d", port);
		pid = run_hooked(argv, "/tmp/epc.out", "/tmp/epc.err", "0");
		ok = wait_ok(pid);
	}
	int64_t theirs = sync_peer("epoll_set_done", ok);

	result(name, ok && theirs == 1, "epollset client -> %s:%d, 2,000 exchanges answered %d, server ok %lld", ADDR_B,
	       port, ok, (long long)theirs);
	if (!ok) {
		show_file("/tmp/epc.out");
		show_file("/tmp/epc.err");
	}
}

static int file_count(const char *path, const char *text)
{
	static char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n;
	int k = 0;

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	for (const char *p = buf; (p = strstr(p, text)); p++)
		k++;
	return k;
}

/* Both fabrics in one process: under the hook in a, one process (peer
 * client2) connects to a local server (a's own address, a dev line of the
 * shared map: shm all the same) and to b's server (over the device), both
 * open at once, 2 MB echoed and checked on each.  Proof from the library's
 * own words: its debug line for each connection names the fabric, and the
 * statistics line counts 2 accelerated; each server counts its one. */
static void test_both_fabrics(void)
{
	const char *name = "both_fabrics_in_one_process";
	int port, ok;
	pid_t pid;

	if (!is_a) {
		char *argv[] = { "/bin/peer", "server", ADDR_B, NULL };

		port = serve_hooked(argv, "/tmp/bf-srv.out", "/tmp/bf-srv.err", NULL, name, &pid);
		ok = port && wait_ok(pid) && file_has("/tmp/bf-srv.err", "accelerated 1,");
		int64_t theirs = sync_peer("both_fabrics_done", ok);

		result(name, ok && theirs == 1, "device server under the hook accelerated %d, client ok %lld", ok,
		       (long long)theirs);
		if (!ok)
			show_file("/tmp/bf-srv.err");
		return;
	}
	char *largv[] = { "/bin/peer", "server", ADDR_A, NULL };
	pid_t local = run_hooked(largv, "/tmp/bf-loc.out", "/tmp/bf-loc.err", NULL);
	int lport = port_of(local, "/tmp/bf-loc.out");

	port = (int)sync_peer(name, 0);
	ok = 0;
	if (lport > 0 && port > 0) {
		char lbuf[16], pbuf[16];
		char *argv[] = { "/bin/peer", "client2", ADDR_A, lbuf, ADDR_B, pbuf, "2000000", NULL };

		snprintf(lbuf, sizeof(lbuf), "%d", lport);
		snprintf(pbuf, sizeof(pbuf), "%d", port);
		setenv("SCILAN_LOG", "debug", 1);
		pid = run_hooked(argv, "/tmp/bf-cli.out", "/tmp/bf-cli.err", NULL);
		unsetenv("SCILAN_LOG");
		ok = wait_ok(pid) && file_count("/tmp/bf-cli.out", "intact 1") == 4 &&
		     !file_has("/tmp/bf-cli.out", "intact 0") && file_has("/tmp/bf-cli.err", "accelerated 2,") &&
		     file_count("/tmp/bf-cli.err", "connected over the shm fabric") == 1 &&
		     file_count("/tmp/bf-cli.err", "connected over the dev fabric") == 1;
	}
	int lok = wait_ok(local) && file_has("/tmp/bf-loc.err", "accelerated 1,");
	int64_t theirs = sync_peer("both_fabrics_done", ok && lok);

	result(name, ok && lok && theirs == 1,
	       "one process: %s:%d over shm and %s:%d over the device, 4 x 1 MB echoed intact, both accelerated %d, "
	       "local server accelerated %d, remote server ok %lld",
	       ADDR_A, lport, ADDR_B, port, ok, lok, (long long)theirs);
	if (!ok || !lok) {
		show_file("/tmp/bf-cli.out");
		show_file("/tmp/bf-cli.err");
		show_file("/tmp/bf-loc.err");
	}
}

int main(int argc, char **argv)
{
	struct scilan_info in;
	int fd, up;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2 || (strcmp(argv[1], "a") && strcmp(argv[1], "b"))) {
		fprintf(stderr, "usage: sl2test a|b [rtt_iters [stream_bytes]]\n");
		return 2;
	}
	is_a = !strcmp(argv[1], "a");
	slring_dst = ADDR_B;
	if (argc > 2)
		rtt_iters = atoi(argv[2]) > 10 ? atoi(argv[2]) : rtt_iters;
	poll_iters = 10 * rtt_iters;
	if (argc > 3)
		stream_bytes = strtoull(argv[3], NULL, 0) ? strtoull(argv[3], NULL, 0) : stream_bytes;

	if (is_a) {
		int lfd = tcp_listen(CTL_PORT);
		ctl = lfd >= 0 ? tcp_accept(lfd) : -1;
		listen_close(lfd);
	} else {
		ctl = tcp_connect(ADDR_A, CTL_PORT, 300);
	}
	result("control_tcp", ctl >= 0, "control connection over virtio-net");
	if (ctl < 0)
		return 1;

	up = wait_link(NODE, 30000);
	fd = open(NODE, O_RDWR);
	up = up && fd >= 0 && info(fd, &in) == 0 && in.link_up && dbg_has("backend ivshmem");
	close(fd);
	int64_t theirs = sync_peer("link_up", up);

	result("link_up", up && theirs == 1, "ivshmem link up here %d, there %lld", up, (long long)theirs);
	if (!up || theirs != 1)
		return 1;

	test_pingpong("pingpong_interrupt", "scilan_interrupt", 0, rtt_iters, 7);
	test_pingpong("pingpong_polling", "scilan_polling", 1L << 30, poll_iters, 6);
	test_tcp_pingpong(rtt_iters);
	test_stream("stream", "scilan_stream", 0);
	test_stream("tcp_stream", "tcp_stream", 1);
	test_killed();
	test_hostile();
	test_hook();
	test_plain_acceptor("raw");
	test_plain_acceptor("uring");
	test_uring_bypass();
	test_epoll_set();
	test_both_fabrics();
	test_cut("link_cut_fails_over", NULL);
	test_cut("link_cut_fails_over_interrupt", "0");
	test_epoll_cut();
	test_cut_cycles();
	test_poweroff();
	return failures ? 1 : 0;
}
