/* echo_pair.c — a plain socket program (it knows nothing of scilan) for the
 * preload tests: `server PORT MODE` echoes one connection, waiting with the
 * MODE call (poll, select, epoll, epoll-et); `client PORT BYTES` sends a
 * pattern with writev, reads it back and prints what it observed;
 * `split-client PORT BYTES` forks: the child writes, the parent reads.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "echo_pair: %s: %s\n", what, strerror(errno));
	exit(1);
}

static struct sockaddr_in loopback(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* Wait until fd is readable with the chosen call; the epoll set also holds a
 * pipe so that kernel and scilan members are mixed. */
static void wait_readable(int fd, const char *mode, int ep)
{
	if (strcmp(mode, "poll") == 0) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, -1) != 1)
			die("poll");
	} else if (strcmp(mode, "select") == 0) {
		fd_set rd;

		FD_ZERO(&rd);
		FD_SET(fd, &rd);
		if (select(fd + 1, &rd, NULL, NULL, NULL) != 1 || !FD_ISSET(fd, &rd))
			die("select");
	} else {
		struct epoll_event ev;
		int n;

		do
			n = epoll_wait(ep, &ev, 1, -1);
		while (n < 0 && errno == EINTR);
		if (n != 1 || ev.data.fd != fd)
			die("epoll_wait");
	}
}

static int serve(int port, const char *mode)
{
	struct sockaddr_in a = loopback(port);
	int one = 1, l, c, ep = -1, pipefd[2];
	char buf[65536];
	long total = 0;

	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 4) < 0)
		die("listen");
	printf("listening\n");
	fflush(stdout);
	c = accept(l, NULL, NULL);
	if (c < 0)
		die("accept");
	if (fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK) < 0 || pipe(pipefd) < 0)
		die("fcntl");
	if (strncmp(mode, "epoll", 5) == 0) {
		struct epoll_event ev = { .events = EPOLLIN | (strcmp(mode, "epoll-et") == 0 ? EPOLLET : 0) };

		ep = epoll_create1(EPOLL_CLOEXEC);
		ev.data.fd = c;
		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev) < 0)
			die("epoll_ctl");
		ev.events = EPOLLIN;
		ev.data.fd = pipefd[0];
		if (epoll_ctl(ep, EPOLL_CTL_ADD, pipefd[0], &ev) < 0)
			die("epoll_ctl pipe");
	}
	for (;;) {
		ssize_t n = read(c, buf, sizeof(buf));

		if (n == 0)
			break;
		if (n < 0 && errno == EAGAIN) {
			wait_readable(c, mode, ep);
			continue;
		}
		if (n < 0)
			die("read");
		total += n;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(c, buf + off, (size_t)(n - off));

			if (w < 0 && errno == EAGAIN) {
				struct pollfd p = { .fd = c, .events = POLLOUT };

				poll(&p, 1, -1);
				continue;
			}
			if (w < 0)
				die("write");
			off += w;
		}
	}
	printf("server echoed %ld bytes, then EOF\n", total);
	close(c);
	close(l);
	return 0;
}

static int client(int port, long bytes)
{
	struct sockaddr_in a = loopback(port);
	unsigned char chunk[3][1000], in[65536];
	struct iovec iov[3];
	unsigned long sum_out = 0, sum_in = 0;
	long sent = 0, got = 0;
	struct stat st;
	int c = socket(AF_INET, SOCK_STREAM, 0);

	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("connect");
	if (fstat(c, &st) < 0 || !S_ISSOCK(st.st_mode))
		die("fstat");
	printf("connected; fstat says socket\n");
	for (int k = 0; k < 3; k++) {
		for (int i = 0; i < 1000; i++)
			chunk[k][i] = (unsigned char)(k * 7 + i * 13);
		iov[k].iov_base = chunk[k];
		iov[k].iov_len = 1000;
	}
	while (sent < bytes || got < bytes) {
		if (sent < bytes) {
			ssize_t w = writev(c, iov, 3);

			if (w != 3000)
				die("writev");
			for (int k = 0; k < 3; k++)
				for (int i = 0; i < 1000; i++)
					sum_out = sum_out * 31 + chunk[k][i];
			sent += w;
		}
		while (got < sent) {
			ssize_t r = recv(c, in, sizeof(in), sent < bytes ? MSG_DONTWAIT : 0);

			if (r < 0 && errno == EAGAIN)
				break;
			if (r <= 0)
				die("recv");
			for (ssize_t i = 0; i < r; i++)
				sum_in = sum_in * 31 + in[i];
			got += r;
		}
	}
	shutdown(c, SHUT_WR);
	printf("sent %ld, received %ld, checksums %s, EOF %s\n", sent, got, sum_in == sum_out ? "equal" : "DIFFER",
	       recv(c, in, 1, 0) == 0 ? "seen" : "missing");
	close(c);
	return 0;
}

/* The rlogin pattern: one connection, a forked writer and a reading parent. */
static int split_client(int port, long bytes)
{
	struct sockaddr_in a = loopback(port);
	unsigned char out[4096], in[65536];
	unsigned long sum_out = 0, sum_in = 0;
	long got = 0;
	int status, c = socket(AF_INET, SOCK_STREAM, 0);
	pid_t child;

	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("connect");
	for (int i = 0; i < (int)sizeof(out); i++)
		out[i] = (unsigned char)(i * 29 + 3);
	for (long sent = 0; sent < bytes; sent += (long)sizeof(out))
		for (size_t i = 0; i < sizeof(out) && sent + (long)i < bytes; i++)
			sum_out = sum_out * 31 + out[i];
	child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		for (long sent = 0; sent < bytes;) {
			size_t want = bytes - sent < (long)sizeof(out) ? (size_t)(bytes - sent) : sizeof(out);
			ssize_t w = send(c, out, want, MSG_NOSIGNAL);

			if (w < 0)
				die("child send");
			/* Keep the pattern aligned to its 4096-byte period. */
			for (ssize_t done = w; done < (ssize_t)want;) {
				ssize_t k = send(c, out + done, want - (size_t)done, MSG_NOSIGNAL);

				if (k < 0)
					die("child send");
				done += k;
			}
			sent += (long)want;
		}
		shutdown(c, SHUT_WR);
		_exit(0);
	}
	for (;;) {
		ssize_t r = recv(c, in, sizeof(in), 0);

		if (r < 0)
			die("recv");
		if (r == 0)
			break;
		for (ssize_t i = 0; i < r; i++)
			sum_in = sum_in * 31 + in[i];
		got += r;
	}
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("child");
	printf("split: writer child sent %ld, parent received %ld, checksums %s\n", bytes, got,
	       sum_in == sum_out ? "equal" : "DIFFER");
	close(c);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "server") == 0)
		return serve(atoi(argv[2]), argv[3]);
	if (argc == 4 && strcmp(argv[1], "client") == 0)
		return client(atoi(argv[2]), atol(argv[3]));
	if (argc == 4 && strcmp(argv[1], "split-client") == 0)
		return split_client(atoi(argv[2]), atol(argv[3]));
	fprintf(stderr, "usage: echo_pair server PORT poll|select|epoll|epoll-et | client|split-client PORT BYTES\n");
	return 2;
}
