/* devtest.c — libscilan's device fabric in the test guest (static, linked with
 * libscilan; run by tests/kernel/init): the native API over 127.0.0.1 with
 * SCILAN_FABRIC=dev and the map "1 127.0.0.1 dev scilan0", so every client
 * goes through /dev/scilan0 and the listener takes it on /dev/scilan1.
 * Prints "TEST <name> PASS|FAIL <detail>" per test.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "devutil.h"

/* Echo server in a child; the parent measures round trips of 64 bytes. */
static void test_pingpong(const char *name, uint16_t port, int poll_us, int iters)
{
	int l = listener(port), c, ok, acc = -1;
	double *rtt = calloc((size_t)iters, sizeof(double));
	char msg[64], back[64];
	pid_t pid;

	if (l < 0 || !rtt) {
		result(name, 0, "listen: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		int s = scilan_accept(l, NULL, NULL);

		if (s < 0 || accelerated(s) != 1 || set_poll_us(s, poll_us) < 0)
			_exit(2);
		for (int i = 0; i < iters; i++)
			if (recv_all(s, msg, sizeof(msg)) < 0 || send_all(s, msg, sizeof(msg)) < 0)
				_exit(3);
		_exit(scilan_recv(s, msg, 1, 0) == 0 ? 0 : 4);
	}
	c = connect_to(port);
	ok = c >= 0 && (acc = accelerated(c)) == 1 && set_poll_us(c, poll_us) == 0;
	for (int i = 0; i < iters && ok; i++) {
		double t0 = now_us();

		memset(msg, 'a' + i % 26, sizeof(msg));
		ok = send_all(c, msg, sizeof(msg)) == 0 && recv_all(c, back, sizeof(back)) == 0 &&
		     memcmp(msg, back, sizeof(msg)) == 0;
		rtt[i] = now_us() - t0;
	}
	scilan_close(c);
	ok = child_ok(pid) && ok;
	qsort(rtt, (size_t)iters, sizeof(double), cmp_double);
	result(name, ok, "%d round trips of 64 B (TCG-emulated), p50 %.1f us, p99 %.1f us, accelerated %d", iters,
	       rtt[iters / 2], rtt[iters * 99 / 100], acc);
	scilan_close(l);
	free(rtt);
}

/* A pseudo-random stream in uneven pieces; the receiver regenerates it,
 * checks every byte and returns its FNV-1a checksum through a pipe. */
static void test_stream(uint16_t port, size_t total)
{
	static unsigned char buf[65536 + 13];
	uint64_t sum = 0xcbf29ce484222325ull, rsum = 0, seed = 7;
	int l = listener(port), pfd[2], c, ok;
	double t0;
	pid_t pid;

	if (l < 0 || pipe(pfd) < 0) {
		result("dev_stream", 0, "listen: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		uint64_t h = 0xcbf29ce484222325ull, rseed = 7;
		int s = scilan_accept(l, NULL, NULL);
		size_t got = 0;
		ssize_t k;

		if (s < 0 || accelerated(s) != 1)
			_exit(2);
		while ((k = scilan_recv(s, buf, sizeof(buf) - 5, 0)) > 0) {
			for (ssize_t i = 0; i < k; i++) {
				if (buf[i] != (unsigned char)xorshift(&rseed))
					_exit(4);
				h = (h ^ buf[i]) * 0x100000001b3ull;
			}
			got += (size_t)k;
		}
		if (k < 0 || got != total || write(pfd[1], &h, sizeof(h)) != sizeof(h))
			_exit(3);
		_exit(0);
	}
	c = connect_to(port);
	ok = c >= 0 && accelerated(c) == 1;
	t0 = now_us();
	for (size_t sent = 0, piece = 1; ok && sent < total; piece = piece * 7 % 65531 + 1) {
		size_t k = total - sent < piece ? total - sent : piece;

		for (size_t i = 0; i < k; i++) {
			buf[i] = (unsigned char)xorshift(&seed);
			sum = (sum ^ buf[i]) * 0x100000001b3ull;
		}
		ok = send_all(c, buf, k) == 0;
		sent += k;
	}
	ok = ok && scilan_shutdown(c, SHUT_WR) == 0 && read(pfd[0], &rsum, sizeof(rsum)) == sizeof(rsum);
	t0 = now_us() - t0;
	ok = child_ok(pid) && ok && rsum == sum;
	result("dev_stream", ok, "%zu bytes, checksum %016llx %s, %.1f MB/s (TCG-emulated)", total,
	       (unsigned long long)rsum, rsum == sum ? "equal" : "DIFFERS", total / t0);
	scilan_close(c);
	scilan_close(l);
	close(pfd[0]);
	close(pfd[1]);
}

/* Clients connecting at once must each be paired with their own kernel
 * connection: each sends its own port, the server compares it with the
 * accepted socket's peer port, and answers with the port plus one. */
static void test_concurrent(uint16_t port, int n)
{
	int l = listener(port), bad = 0, accel = 0;
	pid_t pids[16];

	if (l < 0) {
		result("dev_concurrent_pairing", 0, "listen: %s", strerror(errno));
		return;
	}
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			struct sockaddr_in me;
			socklen_t len = sizeof(me);
			uint32_t mine, back;
			int c = connect_to(port);

			if (c < 0 || getsockname(c, (struct sockaddr *)&me, &len) < 0)
				_exit(2);
			mine = ntohs(me.sin_port);
			if (send_all(c, &mine, sizeof(mine)) < 0 || recv_all(c, &back, sizeof(back)) < 0)
				_exit(3);
			_exit(back == mine + 1 && accelerated(c) == 1 ? 0 : 4);
		}
	}
	for (int i = 0; i < n; i++) {
		struct sockaddr_in peer;
		socklen_t len = sizeof(peer);
		int s = scilan_accept(l, (struct sockaddr *)&peer, &len);
		uint32_t id, reply;

		if (s < 0 || recv_all(s, &id, sizeof(id)) < 0) {
			bad++;
			continue;
		}
		accel += accelerated(s) == 1;
		bad += id != ntohs(peer.sin_port);
		reply = id + 1;
		send_all(s, &reply, sizeof(reply));
		scilan_close(s);
	}
	for (int i = 0; i < n; i++)
		bad += !child_ok(pids[i]);
	result("dev_concurrent_pairing", bad == 0 && accel == n, "%d clients, %d mismatched or failed, %d accelerated",
	       n, bad, accel);
	scilan_close(l);
}

/* A client killed after sending: the server reads the data, then
 * ECONNRESET, as on the shm fabric. */
static void test_killed(uint16_t port)
{
	int l = listener(port), s, err = 0;
	char buf[8] = "";
	ssize_t n1 = -1, n2;
	pid_t pid;

	if (l < 0) {
		result("dev_killed_peer", 0, "listen: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		int c = connect_to(port);

		if (c < 0 || send_all(c, "hello", 5) < 0)
			_exit(2);
		pause();
		_exit(0);
	}
	s = scilan_accept(l, NULL, NULL);
	set_poll_us(s, 0);
	if (s >= 0)
		n1 = recv_all(s, buf, 5) == 0 ? 5 : -1;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	n2 = scilan_recv(s, buf, sizeof(buf), 0);
	err = errno;
	result("dev_killed_peer", s >= 0 && accelerated(s) == 1 && n1 == 5 && !memcmp(buf, "hello", 5) && n2 < 0 &&
		       err == ECONNRESET,
	       "data %zd bytes, then recv %zd (%s)", n1, n2, n2 < 0 ? strerror(err) : "no error");
	scilan_close(s);
	scilan_close(l);
}

/* A port whose listener is a plain kernel socket: no device listener over
 * the link, so the connection is plain TCP and still works. */
static void test_plain_listener(uint16_t port)
{
	struct sockaddr_in a = loopback(port);
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0), c, s = -1, ok;
	char buf[4] = "";

	ok = l >= 0 && setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
	     bind(l, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(l, 4) == 0;
	c = ok ? connect_to(port) : -1;
	if (c >= 0)
		s = accept(l, NULL, NULL);
	ok = c >= 0 && s >= 0 && accelerated(c) == 0 && send_all(c, "ping", 4) == 0 && read(s, buf, 4) == 4 &&
	     !memcmp(buf, "ping", 4) && write(s, "pong", 4) == 4 && recv_all(c, buf, 4) == 0 && !memcmp(buf, "pong", 4);
	result("dev_plain_fallback", ok, "connect %s, accelerated %d", c >= 0 ? "ok" : strerror(errno),
	       c >= 0 ? accelerated(c) : -1);
	scilan_close(c);
	close(s);
	close(l);
}

/* The cable is cut under a receiver blocked in recv (interrupt mode): the
 * recv fails with ECONNRESET; later connections work once the link is back. */
static void test_link_cut(uint16_t port)
{
	int l = listener(port), c, st, again = 0;
	pid_t pid;

	if (l < 0) {
		result("dev_link_cut", 0, "listen: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		int s = scilan_accept(l, NULL, NULL);
		char b;
		ssize_t n;

		if (s < 0 || accelerated(s) != 1 || set_poll_us(s, 0) < 0)
			_exit(2);
		n = scilan_recv(s, &b, 1, 0); /* nobody sends: blocks */
		_exit(n < 0 && errno == ECONNRESET ? 0 : 10 + (n < 0 ? 0 : 1));
	}
	c = connect_to(port);
	usleep(300000);
	write_file(MOCK_LINK, "0");
	alarm(20);
	st = child_ok(pid);
	alarm(0);
	scilan_close(c);
	write_file(MOCK_LINK, "1");
	/* Back up: a new connection is accelerated again. */
	for (int i = 0; i < 100 && !again; i++) {
		usleep(50000);
		c = connect_to(port);
		if (c >= 0 && accelerated(c) == 1) {
			int s = scilan_accept(l, NULL, NULL);
			char b = 0;

			again = s >= 0 && send_all(c, "z", 1) == 0 && recv_all(s, &b, 1) == 0 && b == 'z';
			scilan_close(s);
		} else if (c >= 0) {
			close(scilan_accept(l, NULL, NULL));
		}
		scilan_close(c);
	}
	result("dev_link_cut", st && again, "blocked recv got ECONNRESET %d, accelerated again after link up %d", st,
	       again);
	scilan_close(l);
}

/* Bytes of a checked stream: byte i of stream `which` is a function of i. */
static unsigned char stream_byte(int which, uint64_t i)
{
	return (unsigned char)((i * (which == 1 ? 131 : 197) + (i >> 9)) % 251);
}

/* One request of n bytes from c to a and its reply, each checked. */
static int exchange(int c, int a, uint64_t off, size_t n)
{
	unsigned char out[4096], in[4096];
	int ok = n <= sizeof(out);

	for (int dir = 1; dir <= 2 && ok; dir++) {
		for (size_t i = 0; i < n; i++)
			out[i] = stream_byte(dir, off + i);
		ok = send_all(dir == 1 ? c : a, out, n) == 0 && recv_all(dir == 1 ? a : c, in, n) == 0 &&
		     memcmp(out, in, n) == 0;
	}
	return ok;
}

#define ANSWER_DELAY "/sys/module/scilan/parameters/verify_answer_delay_ms"

/* A second thread's calls on the connector (sends of nothing): it looks at
 * its offer word, and follows an agreement, while the first thread waits in
 * the acceptor's claim. */
struct nudge {
	int fd;
	volatile int stop;
};

static void *nudger(void *arg)
{
	struct nudge *n = arg;
	struct timespec ms = { 0, 1000000 };

	while (!n->stop) {
		scilan_send(n->fd, "", 0, MSG_DONTWAIT);
		nanosleep(&ms, NULL);
	}
	return NULL;
}

/* A connection the short-connection policy kept on kernel TCP moves onto
 * the device live (the late connect of the driver's ABI 8): both ends
 * accelerated within a bounded number of exchanges at their own calls,
 * every byte of both streams checked across the switch.  answer_delay: ms
 * the client's driver holds its answer to the acceptor after agreeing, so
 * that the client's program, which sees the agreement at once, makes its
 * SEAM_POINT first (the point must still reach the acceptor's driver after
 * the answer: ahead of it, it was refused and the connection reset); a
 * second thread's calls on the connector then follow while the first
 * waits in the acceptor's claim. */
static void test_promoted(const char *name, uint16_t port, const char *answer_delay)
{
	int l = listener(port), c = -1, a = -1, kept = 0, rounds = 0, ok = 1, acc_c = 0, acc_a = 0;
	int delayed = write_file(ANSWER_DELAY, answer_delay) == 0;
	uint64_t off = 0;

	for (int i = 0; l >= 0 && i < 64 && !kept; i++) {
		char b = 'x';

		c = connect_to(port);
		a = c >= 0 ? scilan_accept(l, NULL, NULL) : -1;
		if (a < 0)
			break;
		kept = i >= 8 && accelerated(c) == 0 && accelerated(a) == 0;
		if (!kept) {
			ok = send_all(c, &b, 1) == 0 && recv_all(a, &b, 1) == 0;
			scilan_close(c);
			scilan_close(a);
			c = a = -1;
		}
	}
	struct nudge nudge = { .fd = c };
	pthread_t nudging;
	int nudged = kept && strcmp(answer_delay, "0") && pthread_create(&nudging, NULL, nudger, &nudge) == 0;

	for (; kept && ok && rounds < 3000 && !(acc_c && acc_a); rounds++) {
		size_t n = 1 + (size_t)(rounds * 977 % 4000);

		ok = exchange(c, a, off, n);
		off += n;
		acc_c = accelerated(c) == 1;
		acc_a = accelerated(a) == 1;
		if (!(acc_c && acc_a))
			usleep(2000);
	}
	if (nudged) {
		nudge.stop = 1;
		pthread_join(nudging, NULL);
	}
	/* And on the rings from there on. */
	for (int i = 0; ok && acc_c && acc_a && i < 200; i++, off += 3000)
		ok = exchange(c, a, off, 3000);
	write_file(ANSWER_DELAY, "0");
	result(name, delayed && kept && ok && acc_c && acc_a,
	       "answer delay %s ms set %d; a connection kept plain by the short-connection policy %d: accelerated (connector %d, acceptor %d) after %d exchanges; %llu bytes each way checked across the move %d",
	       answer_delay, delayed, kept, acc_c, acc_a, rounds, (unsigned long long)off, ok);
	scilan_close(c);
	scilan_close(a);
	scilan_close(l);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "all";
	int all = !strcmp(what, "all");

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (dev_setup("1 127.0.0.1 dev scilan0\n") < 0)
		return 1;
	if (all || !strcmp(what, "pingpong")) {
		test_pingpong("dev_pingpong_polling", 7101, 1000000, 5000);
		test_pingpong("dev_pingpong_interrupt", 7102, 0, 500);
	}
	if (all || !strcmp(what, "stream"))
		test_stream(7103, 64u << 20);
	if (all || !strcmp(what, "concurrent"))
		test_concurrent(7104, 8);
	if (all || !strcmp(what, "killed"))
		test_killed(7105);
	if (all || !strcmp(what, "plain"))
		test_plain_listener(7106);
	if (all || !strcmp(what, "promoted")) {
		test_promoted("dev_promoted_live", 7108, "0");
		test_promoted("dev_promoted_point_before_answer", 7109, "300");
	}
	if (all || !strcmp(what, "linkcut"))
		test_link_cut(7107);
	return failures ? 1 : 0;
}
