/* test_threads.c — multi-threaded use of libscilan, built and run under
 * ThreadSanitizer (Criterion cannot run under TSan: its fork arena collides
 * with TSan's address space, Criterion issue #274), so this program carries
 * its own small harness and prints "threads: N passed, M failed".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scilan.h"

#define CHECK(cond, ...)                                                         \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "  FAIL %s:%d: ", __FILE__, __LINE__);   \
			fprintf(stderr, __VA_ARGS__);                            \
			fprintf(stderr, " (errno %s)\n", strerror(errno));       \
			return -1;                                               \
		}                                                                \
	} while (0)

struct pair {
	int client, server;
};

/* A connected, accelerated pair inside this process. */
static int make_pair(struct pair *p)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l = scilan_socket(AF_INET, SOCK_STREAM, 0), acc = 0;
	socklen_t alen = sizeof(acc);

	CHECK(l >= 0, "socket");
	CHECK(scilan_bind(l, (struct sockaddr *)&a, sizeof(a)) == 0, "bind");
	CHECK(scilan_listen(l, 4) == 0, "listen");
	CHECK(getsockname(l, (struct sockaddr *)&a, &len) == 0, "getsockname");
	p->client = scilan_socket(AF_INET, SOCK_STREAM, 0);
	CHECK(scilan_connect(p->client, (struct sockaddr *)&a, sizeof(a)) == 0, "connect");
	p->server = scilan_accept(l, NULL, NULL);
	CHECK(p->server >= 0, "accept");
	scilan_close(l);
	CHECK(scilan_getsockopt(p->server, SOL_SCILAN, SCILAN_SO_ACCELERATED, &acc, &alen) == 0 && acc == 1,
	      "pair not accelerated");
	return 0;
}

struct flow {
	int fd;
	uint64_t bytes;
	uint64_t sum;      /* order-independent: bytes may interleave between threads */
	int ok;
	int err;           /* errno of the failing call */
};

static void *send_flow(void *arg)
{
	struct flow *f = arg;
	unsigned char buf[1500];
	uint64_t left = f->bytes;
	unsigned seed = (unsigned)(uintptr_t)f;

	f->sum = 0;
	f->ok = 1;
	while (left) {
		size_t n = 1 + (size_t)(rand_r(&seed) % sizeof(buf));
		if (n > left)
			n = (size_t)left;
		for (size_t i = 0; i < n; i++) {
			buf[i] = (unsigned char)rand_r(&seed);
			f->sum += buf[i];
		}
		for (size_t off = 0; off < n;) {
			ssize_t w = scilan_send(f->fd, buf + off, n - off, MSG_NOSIGNAL);
			if (w <= 0) {
				f->ok = 0;
				f->err = errno;
				return NULL;
			}
			off += (size_t)w;
		}
		left -= n;
	}
	return NULL;
}

static void *recv_flow(void *arg)
{
	struct flow *f = arg;
	unsigned char buf[4096];
	ssize_t r;

	f->ok = 1;
	f->sum = 0;
	f->bytes = 0;
	while ((r = scilan_recv(f->fd, buf, sizeof(buf), 0)) > 0) {
		for (ssize_t i = 0; i < r; i++)
			f->sum += buf[i];
		f->bytes += (uint64_t)r;
	}
	if (r < 0) {
		f->ok = 0;
		f->err = errno;
	}
	return NULL;
}

/* Several threads, each on its own connection, all at once. */
static int many_connections(void)
{
	enum { N = 4 };
	struct pair p[N];
	struct flow tx[N], rx[N];
	pthread_t tt[N], rt[N];

	for (int i = 0; i < N; i++) {
		CHECK(make_pair(&p[i]) == 0, "pair %d", i);
		tx[i] = (struct flow){ .fd = p[i].client, .bytes = 4 << 20 };
		rx[i] = (struct flow){ .fd = p[i].server };
		pthread_create(&rt[i], NULL, recv_flow, &rx[i]);
		pthread_create(&tt[i], NULL, send_flow, &tx[i]);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(tt[i], NULL);
		scilan_shutdown(p[i].client, SHUT_WR);
		pthread_join(rt[i], NULL);
		CHECK(tx[i].ok && rx[i].ok, "flow %d failed", i);
		CHECK(rx[i].bytes == tx[i].bytes && rx[i].sum == tx[i].sum, "flow %d: %llu/%llu bytes", i,
		      (unsigned long long)rx[i].bytes, (unsigned long long)tx[i].bytes);
		scilan_close(p[i].client);
		scilan_close(p[i].server);
	}
	return 0;
}

/* Two senders and two receivers on one connection. */
static int shared_socket(void)
{
	struct pair p;
	struct flow tx[2], rx[2];
	pthread_t tt[2], rt[2];

	CHECK(make_pair(&p) == 0, "pair");
	for (int i = 0; i < 2; i++) {
		tx[i] = (struct flow){ .fd = p.client, .bytes = 2 << 20 };
		rx[i] = (struct flow){ .fd = p.server };
		pthread_create(&rt[i], NULL, recv_flow, &rx[i]);
		pthread_create(&tt[i], NULL, send_flow, &tx[i]);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(tt[i], NULL);
	scilan_shutdown(p.client, SHUT_WR);
	for (int i = 0; i < 2; i++)
		pthread_join(rt[i], NULL);
	CHECK(tx[0].ok && tx[1].ok && rx[0].ok && rx[1].ok, "a flow failed: send %s/%s, recv %s/%s",
	      strerror(tx[0].err), strerror(tx[1].err), strerror(rx[0].err), strerror(rx[1].err));
	CHECK(rx[0].bytes + rx[1].bytes == tx[0].bytes + tx[1].bytes, "bytes lost");
	CHECK(rx[0].sum + rx[1].sum == tx[0].sum + tx[1].sum, "bytes corrupted");
	scilan_close(p.client);
	scilan_close(p.server);
	return 0;
}

static void *blocked_recv(void *arg)
{
	int *fd_and_result = arg;
	char c;

	fd_and_result[1] = (int)scilan_recv(fd_and_result[0], &c, 1, 0);
	return NULL;
}

/* Run fn (with the server end) in a thread blocked in the server end's
 * recv, interrupt-mode, after the main thread let it block; returns the
 * reader's result, or -3 if the pair could not be made. */
static int blocked_reader_then(void *(*fn)(void *), int *server, int *client)
{
	struct pair p;
	pthread_t t;
	int arg[2];
	int zero = 0;

	if (make_pair(&p) != 0)
		return -3;
	scilan_setsockopt(p.server, SOL_SCILAN, SCILAN_SO_POLL_US, &zero, sizeof(zero));
	arg[0] = p.server;
	arg[1] = -2;
	pthread_create(&t, NULL, blocked_recv, arg);
	usleep(100000);
	fn(&p.server);
	pthread_join(t, NULL);
	*server = p.server;
	*client = p.client;
	return arg[1];
}

static void *shut_rd(void *fd)
{
	scilan_shutdown(*(int *)fd, SHUT_RD);
	return NULL;
}

static void *close_fd(void *fd)
{
	scilan_close(*(int *)fd);
	return NULL;
}

/* shutdown(SHUT_RD) from another thread ends a blocked recv with EOF. */
static int shutdown_wakes_reader(void)
{
	int server, client, r = blocked_reader_then(shut_rd, &server, &client);

	CHECK(r == 0, "blocked recv returned %d, want 0", r);
	scilan_close(client);
	scilan_close(server);
	return 0;
}

/* close() from another thread while one is blocked in recv: the reader
 * returns (EOF or an error) and nothing touches unmapped memory. */
static int close_while_blocked(void)
{
	int server, client, r = blocked_reader_then(close_fd, &server, &client);

	CHECK(r <= 0 && r != -3, "blocked recv returned %d after close", r);
	scilan_close(client);
	return 0;
}

static void *poller(void *arg)
{
	int *fd_and_result = arg;
	struct pollfd pfd = { .fd = fd_and_result[0], .events = POLLIN };

	fd_and_result[1] = scilan_poll(&pfd, 1, 20000) == 1 && (pfd.revents & POLLIN);
	return NULL;
}

/* A poll in one thread is woken by data another thread sends. */
static int poll_woken_by_other_thread(void)
{
	struct pair p;
	pthread_t t;
	int arg[2];
	int zero = 0;

	CHECK(make_pair(&p) == 0, "pair");
	scilan_setsockopt(p.server, SOL_SCILAN, SCILAN_SO_POLL_US, &zero, sizeof(zero));
	arg[0] = p.server;
	arg[1] = -1;
	pthread_create(&t, NULL, poller, arg);
	usleep(50000);
	CHECK(scilan_send(p.client, "x", 1, 0) == 1, "send");
	pthread_join(t, NULL);
	CHECK(arg[1] == 1, "poll did not report POLLIN");
	scilan_close(p.client);
	scilan_close(p.server);
	return 0;
}

int main(void)
{
	static const struct {
		const char *name;
		int (*fn)(void);
	} tests[] = {
		{ "many_connections", many_connections },
		{ "shared_socket", shared_socket },
		{ "shutdown_wakes_reader", shutdown_wakes_reader },
		{ "poll_woken_by_other_thread", poll_woken_by_other_thread },
		{ "close_while_blocked", close_while_blocked },
	};
	int passed = 0, failed = 0;

	alarm(300); /* a hang is a failure, not a stuck CI run */
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		int r = tests[i].fn();

		printf("%s %s\n", r == 0 ? "PASS" : "FAIL", tests[i].name);
		fflush(stdout);
		r == 0 ? passed++ : failed++;
	}
	printf("threads: %d passed, %d failed\n", passed, failed);
	return failed != 0;
}
