/* forkexec.c — a CGI-style server under the preload hook over the device
 * fabric (tests/kernel/init): after accepting, it forks and the child execs
 * a helper (this program again) that inherits the connection's descriptor
 * and exits; the server's connection must keep working, accelerated.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guest.h"
#include "scilan.h"

#define ROUNDS 4

static int echo_round(int s)
{
	char b[4];

	for (size_t got = 0; got < sizeof(b);) {
		ssize_t n = read(s, b + got, sizeof(b) - got);

		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return write(s, b, sizeof(b)) == (ssize_t)sizeof(b) ? 0 : -1;
}

static int ask(int c, char letter)
{
	char out[4], in[4];
	size_t got = 0;

	memset(out, letter, sizeof(out));
	if (write(c, out, sizeof(out)) != (ssize_t)sizeof(out))
		return -1;
	while (got < sizeof(in)) {
		ssize_t n = read(c, in + got, sizeof(in) - got);

		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return memcmp(in, out, sizeof(in)) ? -1 : 0;
}

static int accelerated(int fd)
{
	int v = -1;
	socklen_t len = sizeof(v);

	return getsockopt(fd, SOL_SCILAN, SCILAN_SO_ACCELERATED, &v, &len) == 0 ? v : -1;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(7130) };
	int l, c, one = 1, ok = 0, rounds = 0, st = -1, acc = -1;
	pid_t srv;

	/* The exec'd helper: it inherited the connection, adopted as a ring
	 * connection (not reset, not plain), and exits without using it. */
	if (argc > 2 && !strcmp(argv[1], "helper"))
		return accelerated(atoi(argv[2])) == 1 ? 0 : 5;
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 4) < 0) {
		result("forkexec_helper", 0, "listen: %s", strerror(errno));
		return 1;
	}
	srv = fork();
	if (srv == 0) {
		int s = accept(l, NULL, NULL), hst;
		pid_t h;

		alarm(60);
		if (s < 0 || accelerated(s) != 1 || echo_round(s) < 0)
			_exit(2);
		h = fork();
		if (h == 0) {
			char fdarg[16];

			snprintf(fdarg, sizeof(fdarg), "%d", s);
			execl("/proc/self/exe", "forkexec", "helper", fdarg, (char *)NULL);
			_exit(127);
		}
		if (waitpid(h, &hst, 0) != h || !WIFEXITED(hst) || WEXITSTATUS(hst) != 0)
			_exit(3);
		for (int i = 1; i < ROUNDS; i++)
			if (echo_round(s) < 0)
				_exit(4);
		_exit(0);
	}
	alarm(60);
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (c >= 0 && connect(c, (struct sockaddr *)&a, sizeof(a)) == 0) {
		acc = accelerated(c);
		while (rounds < ROUNDS && ask(c, (char)('a' + rounds)) == 0)
			rounds++;
	}
	if (waitpid(srv, &st, 0) == srv && WIFEXITED(st))
		st = WEXITSTATUS(st);
	ok = rounds == ROUNDS && acc == 1 && st == 0;
	result("forkexec_helper", ok,
	       "%d of %d echoes (the helper exec'd after the first adopted it accelerated: server exit 0), accelerated %d, server exit %d",
	       rounds, ROUNDS, acc, st);
	close(c);
	close(l);
	return ok ? 0 : 1;
}
