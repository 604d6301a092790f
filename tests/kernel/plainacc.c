/* plainacc.c — a device-fabric connection that an end takes outside the
 * hook: its acceptor (the listener is the hook's, so the client's driver
 * pairs a ring for it, but the accept is a raw accept4 system call or an
 * io_uring accept), or, after the agreement, its client's sends (io_uring
 * writes).  Run under the preload hook in two guests; every byte must
 * arrive on kernel TCP, checked, in both directions, and nothing may hang;
 * a client that wrote into the ring and then past it is reset at both ends
 * (the order of the two cannot be known), never delivered out of order.
 *   plainacc server ADDR raw|uring|hooked  prints "port N", serves the cases
 *   plainacc client ADDR PORT [uring]      runs the cases, prints "intact 1"
 */
#include <arpa/inet.h>
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A request smaller than the ring (the client then waits for the answer
 * with the offer undecided) and one larger (the client blocks on a full
 * ring first); each answered by a response of its own. */
static const size_t req_len[] = { 1000, 300000 }; /* at most REQ_ROOM */
#define RSP_LEN 100000
#define CASES (sizeof(req_len) / sizeof(req_len[0]))
/* After the io_uring cases, one whose request goes half into the ring
 * (send) and half past it (an io_uring write). */
#define MIXED_LEN 200000
/* Room for the largest request of any case. */
#define REQ_ROOM 300000
_Static_assert(REQ_ROOM >= MIXED_LEN, "the mixed request fits");

static unsigned char pattern(int stream, size_t i)
{
	return (unsigned char)(i * 131 + (i >> 9) * 7 + (size_t)stream * 29);
}

static void fill(int stream, unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pattern(stream, i);
}

static int check(int stream, const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pattern(stream, i))
			return 0;
	return 1;
}

static size_t recv_full(int fd, unsigned char *b, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = recv(fd, b + got, n - got, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	return got;
}

static size_t send_full(int fd, const unsigned char *b, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = send(fd, b + done, n - done, MSG_NOSIGNAL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		done += (size_t)r;
	}
	return done;
}

/* An io_uring write of all of b: what the hook cannot see. */
static size_t uring_send_full(int fd, const unsigned char *b, size_t n)
{
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	size_t done = 0;

	if (io_uring_queue_init(4, &ring, 0) < 0)
		return 0;
	while (done < n) {
		int res = -1;

		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_send(sqe, fd, b + done, n - done, MSG_NOSIGNAL);
		if (io_uring_submit(&ring) == 1 && io_uring_wait_cqe(&ring, &cqe) == 0) {
			res = cqe->res;
			io_uring_cqe_seen(&ring, cqe);
		}
		if (res == -EINTR)
			continue;
		if (res <= 0)
			break;
		done += (size_t)res;
	}
	io_uring_queue_exit(&ring);
	return done;
}

/* Receive until the stream errs or ends, checking every byte: 1 if it
 * ended in ECONNRESET with no wrong byte before it. */
static int recv_until_reset(int fd, unsigned char *b, size_t cap, size_t *got)
{
	*got = 0;
	for (;;) {
		ssize_t r = recv(fd, b, cap, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return errno == ECONNRESET;
		if (r == 0)
			return 0;
		for (ssize_t i = 0; i < r; i++)
			if (b[i] != pattern(1, *got + (size_t)i))
				return 0;
		*got += (size_t)r;
	}
}

static int uring_accept(int lfd)
{
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int fd = -1;

	int err = io_uring_queue_init(4, &ring, 0);

	if (err < 0) {
		printf("io_uring_queue_init: %s\n", strerror(-err));
		return -1;
	}
	printf("io_uring ready\n");
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_accept(sqe, lfd, NULL, NULL, 0);
	if (io_uring_submit(&ring) == 1 && io_uring_wait_cqe(&ring, &cqe) == 0) {
		fd = cqe->res;
		io_uring_cqe_seen(&ring, cqe);
	}
	io_uring_queue_exit(&ring);
	return fd;
}

enum accept_way { RAW, URING, HOOKED };
static const char *const way_name[] = { "raw", "io_uring", "hooked" };

static int server(const char *addr, enum accept_way way)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	unsigned char *req = malloc(REQ_ROOM), *rsp = malloc(RSP_LEN);
	int lfd = socket(AF_INET, SOCK_STREAM, 0), ok = 1;

	inet_pton(AF_INET, addr, &sa.sin_addr);
	if (!req || !rsp || lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 8) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &len) < 0) {
		perror("plainacc server");
		return 1;
	}
	printf("port %d\n", ntohs(sa.sin_port));
	fflush(stdout);
	fill(2, rsp, RSP_LEN);
	for (size_t c = 0; c < CASES; c++) {
		printf("case %zu: accepting\n", c);
		int s = way == URING ? uring_accept(lfd)
			: way == RAW ? (int)syscall(SYS_accept4, lfd, NULL, NULL, 0)
				     : accept(lfd, NULL, NULL);
		size_t got = s >= 0 ? recv_full(s, req, req_len[c]) : 0;
		int intact = got == req_len[c] && check(1, req, got);

		printf("case %zu: %s accept %d, request %zu bytes, intact %d, response sent %zu\n", c, way_name[way],
		       s >= 0, got, intact, s >= 0 ? send_full(s, rsp, RSP_LEN) : 0);
		ok &= intact;
		if (s >= 0)
			close(s);
	}
	if (way == HOOKED) {
		int s = accept(lfd, NULL, NULL), reset = 0;
		size_t got = 0;

		reset = s >= 0 && recv_until_reset(s, req, MIXED_LEN, &got);
		printf("case mixed: request reset %d after %zu bytes in order\n", reset, got);
		ok &= reset;
		if (s >= 0)
			close(s);
	}
	printf("server intact %d\n", ok);
	return !ok;
}

static int client(const char *addr, int port, int uring)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	unsigned char *req = malloc(REQ_ROOM), *rsp = malloc(RSP_LEN);
	int ok = 1;

	inet_pton(AF_INET, addr, &sa.sin_addr);
	if (!req || !rsp)
		return 1;
	fill(1, req, REQ_ROOM);
	for (size_t c = 0; c < CASES; c++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		int conn = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		size_t sent = !conn ? 0 : uring ? uring_send_full(fd, req, req_len[c]) : send_full(fd, req, req_len[c]);
		size_t got = conn ? recv_full(fd, rsp, RSP_LEN) : 0;
		unsigned char b;
		int intact = sent == req_len[c] && got == RSP_LEN && check(2, rsp, got);
		int eof = conn && recv(fd, &b, 1, 0) == 0;

		printf("case %zu: connect %s, sent %zu, received %zu, intact %d, eof %d\n", c,
		       conn ? "ok" : strerror(errno), sent, got, intact, eof);
		ok &= intact && eof;
		if (fd >= 0)
			close(fd);
	}
	if (uring) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		int conn = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		size_t half = MIXED_LEN / 2, sent = conn ? send_full(fd, req, half) : 0;
		ssize_t r;

		/* The first half into the ring (read by the server), then
		 * the rest past the hook: the server must reset. */
		usleep(200000);
		sent += sent == half ? uring_send_full(fd, req + half, MIXED_LEN - half) : 0;
		do
			r = recv(fd, rsp, RSP_LEN, 0);
		while (r < 0 && errno == EINTR);
		printf("case mixed: sent %zu, then %s\n", sent, r < 0 ? strerror(errno) : r ? "bytes" : "the end");
		/* The server's reset may come before the io_uring send ends. */
		ok &= sent >= half && r < 0 && errno == ECONNRESET;
		if (fd >= 0)
			close(fd);
	}
	printf("intact %d\n", ok);
	return !ok;
}

/* A server that dies says how, for the guest's log. */
static void died(int sig)
{
	char line[48];
	int n = snprintf(line, sizeof(line), "plainacc: killed by signal %d\n", sig);

	if (write(1, line, (size_t)n) < 0)
		_exit(128 + sig);
	_exit(128 + sig);
}

int main(int argc, char **argv)
{
	signal(SIGSEGV, died);
	signal(SIGBUS, died);
	signal(SIGSYS, died);
	signal(SIGILL, died);
	signal(SIGABRT, died);
	/* Every line at once: a run killed at its deadline still shows where. */
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 4 && !strcmp(argv[1], "server"))
		return server(argv[2], !strcmp(argv[3], "uring") ? URING : !strcmp(argv[3], "hooked") ? HOOKED : RAW);
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "client"))
		return client(argv[2], atoi(argv[3]), argc == 5 && !strcmp(argv[4], "uring"));
	fprintf(stderr, "usage: plainacc server ADDR raw|uring|hooked | client ADDR PORT [uring]\n");
	return 2;
}
