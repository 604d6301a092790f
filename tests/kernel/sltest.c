/* sltest.c — the in-guest tests of scilan.ko through ntb_mock (static binary
 * run by tests/kernel/init): ping-pong and a checksum-verified stream over
 * the ring protocol of layout.h, a killed mapped process, link down, hostile
 * arguments.  Prints "TEST <name> PASS|FAIL <detail>" per test.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "layout.h"
#include "uapi/scilan.h"

#define NODE_A "/dev/scilan0"
#define NODE_B "/dev/scilan1"
#define MOCK_LINK "/sys/kernel/debug/ntb_mock/link"
#define SL_MAX_FDS 600

static int failures;

static void result(const char *name, int ok, const char *fmt, ...)
{
	char detail[256] = "";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	printf("TEST %s %s %s\n", name, ok ? "PASS" : "FAIL", detail);
	fflush(stdout);
	if (!ok)
		failures++;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int info(int fd, struct scilan_info *in)
{
	return ioctl(fd, SCILAN_IOC_INFO, in);
}

/* Waits for the handshake; the mock's link comes up within a few polls. */
static int wait_link(const char *node, int ms)
{
	struct scilan_info in;
	int fd, up = 0;

	for (int i = 0; i < ms / 10 && !up; i++) {
		fd = open(node, O_RDWR);
		if (fd >= 0) {
			up = info(fd, &in) == 0 && in.link_up;
			close(fd);
		}
		if (!up)
			usleep(10000);
	}
	return up;
}

/* One connected endpoint with its two mappings: the ring we receive into
 * (our slice) and the ring we send into (the peer's slice). */
struct conn {
	int fd;
	uint32_t slice;
	uint8_t *local, *peer;
	struct sl_area_ctl *lctl, *pctl;
	uint8_t *ldata, *pdata;
	uint64_t cap, w, r;
	long spin;          /* polls before sleeping; 0 = interrupt mode */
	long sleeps;
};

static int conn_map(struct conn *c)
{
	struct scilan_info in;

	if (info(c->fd, &in) < 0)
		return -1;
	c->slice = in.slice_size;
	c->local = mmap(NULL, c->slice, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, SCILAN_MMAP_LOCAL);
	c->peer = mmap(NULL, c->slice, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, SCILAN_MMAP_PEER(c->slice));
	if (c->local == MAP_FAILED || c->peer == MAP_FAILED)
		return -1;
	c->lctl = (struct sl_area_ctl *)c->local;
	c->pctl = (struct sl_area_ctl *)c->peer;
	c->ldata = c->local + SL_AREA_CTL_SIZE;
	c->pdata = c->peer + SL_AREA_CTL_SIZE;
	c->cap = 1;
	while (c->cap * 2 <= c->slice - SL_AREA_CTL_SIZE)
		c->cap *= 2;
	c->w = c->r = 0;
	return 0;
}

static int conn_connect(struct conn *c, const char *node, unsigned port, long spin)
{
	struct scilan_connect req = { .port = port };

	memset(c, 0, sizeof(*c));
	c->spin = spin;
	c->fd = open(node, O_RDWR);
	if (c->fd < 0 || ioctl(c->fd, SCILAN_IOC_CONNECT, &req) < 0)
		return -1;
	return conn_map(c);
}

static int listen_on(const char *node, unsigned port)
{
	struct scilan_listen req = { .port = port };
	int fd = open(node, O_RDWR);

	if (fd < 0 || ioctl(fd, SCILAN_IOC_LISTEN, &req) < 0)
		return -1;
	return fd;
}

static int conn_accept(struct conn *c, const char *node, int lfd, long spin)
{
	memset(c, 0, sizeof(*c));
	c->spin = spin;
	c->fd = open(node, O_RDWR);
	if (c->fd < 0 || ioctl(c->fd, SCILAN_IOC_ACCEPT, &lfd) < 0)
		return -1;
	return conn_map(c);
}

/* Step 3 of the sleep protocol: the arm store reaches the peer's memory
 * before we re-check ours.  On NTB a read through the peer mapping (PCIe
 * completions do not pass posted writes); on the mock a full fence. */
static void flush_remote(struct conn *c)
{
	atomic_thread_fence(memory_order_seq_cst);
	(void)atomic_load_explicit(&c->pctl->peer_state, memory_order_acquire);
}

/* Sleep on the endpoint until a token (or EOF/reset): -1 on error. */
static int wait_token(struct conn *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	uint32_t tok;
	ssize_t n;

	c->sleeps++;
	if (poll(&p, 1, 5000) <= 0)
		return -1;
	n = read(c->fd, &tok, sizeof(tok));
	return n == sizeof(tok) ? 0 : -1;
}

static void stimulate(struct conn *c, _Atomic uint32_t *arm, uint32_t token)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(arm, memory_order_relaxed) && atomic_exchange(arm, 0))
		ioctl(c->fd, SCILAN_IOC_STIMULATE, &token);
}

static int conn_send(struct conn *c, const void *buf, size_t n)
{
	const uint8_t *p = buf;

	while (n) {
		uint64_t rd = atomic_load_explicit(&c->lctl->peer_read, memory_order_acquire);
		uint64_t room = c->cap - (c->w - rd);
		size_t k, off, first;

		if (c->w - rd > c->cap)
			return -1; /* garbage from the peer */
		if (!room) {
			for (long i = 0; i < c->spin && !room; i++)
				room = c->cap - (c->w - atomic_load_explicit(&c->lctl->peer_read, memory_order_acquire));
			if (room)
				continue;
			atomic_store(&c->pctl->wake_on_space, 1);
			flush_remote(c);
			if (c->cap - (c->w - atomic_load(&c->lctl->peer_read)) == 0 && wait_token(c) < 0)
				return -1;
			atomic_store(&c->pctl->wake_on_space, 0);
			continue;
		}
		k = n < room ? n : room;
		off = c->w & (c->cap - 1);
		first = k < c->cap - off ? k : c->cap - off;
		memcpy(c->pdata + off, p, first);
		memcpy(c->pdata, p + first, k - first);
		c->w += k;
		atomic_store_explicit(&c->pctl->rx_write, c->w, memory_order_release);
		stimulate(c, &c->lctl->wake_on_data, SCILAN_TOKEN_DATA);
		p += k;
		n -= k;
	}
	return 0;
}

static int conn_recv(struct conn *c, void *buf, size_t n)
{
	uint8_t *p = buf;

	while (n) {
		uint64_t w = atomic_load_explicit(&c->lctl->rx_write, memory_order_acquire);
		size_t k, off, first;

		if (w - c->r > c->cap)
			return -1;
		if (w == c->r) {
			for (long i = 0; i < c->spin && w == c->r; i++)
				w = atomic_load_explicit(&c->lctl->rx_write, memory_order_acquire);
			if (w != c->r)
				continue;
			atomic_store(&c->pctl->wake_on_data, 1);
			flush_remote(c);
			if (atomic_load(&c->lctl->rx_write) == c->r && wait_token(c) < 0)
				return -1;
			atomic_store(&c->pctl->wake_on_data, 0);
			continue;
		}
		k = n < w - c->r ? n : w - c->r;
		off = c->r & (c->cap - 1);
		first = k < c->cap - off ? k : c->cap - off;
		memcpy(p, c->ldata + off, first);
		memcpy(p + first, c->ldata, k - first);
		c->r += k;
		atomic_store_explicit(&c->pctl->peer_read, c->r, memory_order_release);
		stimulate(c, &c->lctl->wake_on_space, SCILAN_TOKEN_SPACE);
		p += k;
		n -= k;
	}
	return 0;
}

/* Closing is unmapping too: a mapping holds the endpoint open. */
static void conn_close(struct conn *c)
{
	if (c->local && c->local != MAP_FAILED)
		munmap(c->local, c->slice);
	if (c->peer && c->peer != MAP_FAILED)
		munmap(c->peer, c->slice);
	if (c->fd >= 0)
		close(c->fd);
	c->local = c->peer = NULL;
	c->fd = -1;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

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
		close(lfd);
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
	close(lfd);
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
	close(lfd);
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
	close(lfd);
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

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok ? 0 : -1;
}

/* The cable is cut under a receiver blocked in read(): ECONNRESET; its
 * mappings were zapped, so touching them raises SIGBUS; a new connection
 * works once the link is back. */
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
		/* The mappings were zapped: touching them faults now. */
		signal(SIGBUS, sigbus_handler);
		if (sigsetjmp(sigbus_jmp, 1) == 0) {
			(void)*(volatile uint8_t *)s.peer;
			_exit(4);
		}
		if (sigsetjmp(sigbus_jmp, 1) == 0) {
			*(volatile uint8_t *)s.local = 1;
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
	close(lfd);
	result("link_down_reset", ok && again,
	       "blocked read got ECONNRESET and both mappings SIGBUS %d (child exit %d), reconnect after link up %d",
	       ok, WIFEXITED(first) ? WEXITSTATUS(first) : -1, again);
}

#define EXPECT(cond, err) do { \
		errno = 0; \
		if (!(cond) || errno != (err)) { \
			printf("  hostile: line %d: expected errno %d, got %d (%s)\n", __LINE__, err, errno, \
			       strerror(errno)); \
			bad++; \
		} \
		checks++; \
	} while (0)

/* Bad ioctl arguments and out-of-range mappings get errors, never an oops
 * (the runner fails the suite on any Oops/WARNING/BUG in the console). */
static void test_hostile(void)
{
	struct scilan_connect cr = { .port = 4242 };
	struct scilan_listen lr = { .port = 0 };
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
	EXPECT(ioctl(fd, SCILAN_IOC_LISTEN, &lr) < 0, EINVAL);
	lr.port = 70000;
	EXPECT(ioctl(fd, SCILAN_IOC_LISTEN, &lr) < 0, EINVAL);
	EXPECT(ioctl(fd, SCILAN_IOC_CONNECT, NULL) < 0, EFAULT);
	EXPECT(ioctl(fd, SCILAN_IOC_CONNECT, &cr) < 0, ECONNREFUSED);
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

		EXPECT(ioctl(c.fd, SCILAN_IOC_LISTEN, &(struct scilan_listen){ .port = 5 }) < 0, EINVAL);
		EXPECT(ioctl(c.fd, SCILAN_IOC_CONNECT, &cr) < 0, EISCONN);
		EXPECT(mmap(NULL, sz, PROT_READ, MAP_SHARED, c.fd, 2 * sz) == MAP_FAILED, EINVAL);
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
			unsigned long cmd = _IOC(rand() % 4, SCILAN_IOC_MAGIC, rand() % 10, rand() % 64);
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
	close(lfd);
	close(fd);
	result("hostile_args", bad == 0, "%d checks, %d unexpected", checks, bad);
}

/* Connect until the slices run out (EAGAIN), never accepting: the listener's
 * close then closes every queued connection, and nothing is left over. */
static void test_exhaustion(void)
{
	struct scilan_listen lr = { .port = 12, .backlog = 1024 };
	struct scilan_connect cr = { .port = 12 };
	struct scilan_info in;
	int lfd = open(NODE_B, O_RDWR), fds[SL_MAX_FDS], n = 0, err = 0;

	if (lfd < 0 || ioctl(lfd, SCILAN_IOC_LISTEN, &lr) < 0 || info(lfd, &in) < 0) {
		result("slice_exhaustion", 0, "listen: %s", strerror(errno));
		return;
	}
	while (n < SL_MAX_FDS) {
		fds[n] = open(NODE_A, O_RDWR);
		if (fds[n] < 0 || ioctl(fds[n], SCILAN_IOC_CONNECT, &cr) < 0) {
			err = errno;
			if (fds[n] >= 0)
				close(fds[n]);
			break;
		}
		n++;
	}
	for (int i = 0; i < n; i++)
		close(fds[i]);
	close(lfd);
	result("slice_exhaustion", (unsigned)n == in.nslices && err == EAGAIN,
	       "%d connections of %u slices, then %s", n, in.nslices, strerror(err));
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "all";
	int all = !strcmp(what, "all");

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (!wait_link(NODE_A, 10000) || !wait_link(NODE_B, 10000)) {
		result("link_up", 0, "the mock link did not come up");
		return 1;
	}
	result("link_up", 1, "");
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
	if (all) {
		int clean = settle(0, "endpoints", 0) && settle(1, "endpoints", 0) &&
			    settle(0, "slices_busy", 0) && settle(1, "slices_busy", 0);

		result("no_leftovers", clean, "endpoints %ld/%ld, busy slices %ld/%ld", dbg_value(0, "endpoints"),
		       dbg_value(1, "endpoints"), dbg_value(0, "slices_busy"), dbg_value(1, "slices_busy"));
	}
	return failures ? 1 : 0;
}
