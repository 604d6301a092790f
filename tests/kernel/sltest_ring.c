/* sltest_ring.c — sltest's data over the ring protocol of layout.h, node A
 * to node B through ntb_mock: 64-byte ping-pong (interrupt and polling) and
 * a checksum-verified stream.
 */
#include "sltest.h"

/* Server on node B echoes; client on node A measures each round trip. */
void test_pingpong(const char *name, long spin, int iters)
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
void test_stream(long spin, size_t total)
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
