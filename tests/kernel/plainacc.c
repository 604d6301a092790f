/* plainacc.c — a device-fabric connection whose acceptor takes it outside
 * the hook: the listener is the hook's (so the client's driver pairs a ring
 * for it), the accept is a raw accept4 system call or an io_uring accept.
 * Run under the preload hook in two guests; every byte must arrive on
 * kernel TCP, checked, in both directions, and nothing may hang.
 *   plainacc server ADDR raw|uring      prints "port N", serves the cases
 *   plainacc client ADDR PORT           runs the cases, prints "intact 1"
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
static const size_t req_len[] = { 1000, 300000 };
#define RSP_LEN 100000
#define CASES (sizeof(req_len) / sizeof(req_len[0]))

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

static int server(const char *addr, int uring)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	unsigned char *req = malloc(req_len[CASES - 1]), *rsp = malloc(RSP_LEN);
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
		int s = uring ? uring_accept(lfd) : (int)syscall(SYS_accept4, lfd, NULL, NULL, 0);
		size_t got = s >= 0 ? recv_full(s, req, req_len[c]) : 0;
		int intact = got == req_len[c] && check(1, req, got);

		printf("case %zu: %s accept %d, request %zu bytes, intact %d, response sent %zu\n", c,
		       uring ? "io_uring" : "raw", s >= 0, got, intact, s >= 0 ? send_full(s, rsp, RSP_LEN) : 0);
		ok &= intact;
		if (s >= 0)
			close(s);
	}
	printf("server intact %d\n", ok);
	return !ok;
}

static int client(const char *addr, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	unsigned char *req = malloc(req_len[CASES - 1]), *rsp = malloc(RSP_LEN);
	int ok = 1;

	inet_pton(AF_INET, addr, &sa.sin_addr);
	if (!req || !rsp)
		return 1;
	fill(1, req, req_len[CASES - 1]);
	for (size_t c = 0; c < CASES; c++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		int conn = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		size_t sent = conn ? send_full(fd, req, req_len[c]) : 0;
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
		return server(argv[2], !strcmp(argv[3], "uring"));
	if (argc == 4 && !strcmp(argv[1], "client"))
		return client(argv[2], atoi(argv[3]));
	fprintf(stderr, "usage: plainacc server ADDR raw|uring | client ADDR PORT\n");
	return 2;
}
