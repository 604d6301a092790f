/* conn_loop.c — a plain POSIX program for perf/syscalls/bench.sh: N short
 * connections (one request byte, one reply byte, close), as a server
 * (optionally accepting in a forked child, as a pre-forked server does) or
 * as a client.  scilan reaches it only through the preload hook.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int usage(void)
{
	fprintf(stderr, "usage: conn_loop server|forked-server|late-listen-server|client PORT N\n"
			"  server: listen on 127.0.0.1:PORT, print \"ready\", serve N connections\n"
			"  client: make N connections to 127.0.0.1:PORT\n");
	return 2;
}

static int serve(int l, long n)
{
	char b[64];

	for (long i = 0; i < n; i++) {
		int c = accept(l, NULL, NULL);

		if (c < 0) {
			perror("conn_loop: accept");
			return 1;
		}
		if (read(c, b, sizeof(b)) != 1 || write(c, "y", 1) != 1) {
			perror("conn_loop: server exchange");
			return 1;
		}
		close(c);
	}
	return 0;
}

static int connect_loop(const struct sockaddr_in *a, long n)
{
	char b[64];

	for (long i = 0; i < n; i++) {
		int s = socket(AF_INET, SOCK_STREAM, 0);

		if (s < 0 || connect(s, (const struct sockaddr *)a, sizeof(*a)) < 0) {
			perror("conn_loop: connect");
			return 1;
		}
		if (write(s, "x", 1) != 1 || read(s, b, sizeof(b)) != 1) {
			perror("conn_loop: client exchange");
			return 1;
		}
		close(s);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	char *end;
	long port, n;
	int l, one = 1, status;
	bool late;
	pid_t child;

	if (argc != 4)
		return usage();
	port = strtol(argv[2], &end, 10);
	if (*end || port <= 0 || port > 65535)
		return usage();
	n = strtol(argv[3], &end, 10);
	if (*end || n <= 0)
		return usage();
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (!strcmp(argv[1], "client"))
		return connect_loop(&a, n);
	late = !strcmp(argv[1], "late-listen-server");
	if (strcmp(argv[1], "server") && strcmp(argv[1], "forked-server") && !late)
		return usage();
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || (!late && listen(l, 128) < 0)) {
		perror("conn_loop: listen");
		return 1;
	}
	if (strcmp(argv[1], "server")) {
		/* The parent keeps the socket open, as a pre-fork master does:
		 * the child accepts on a socket another process holds.  Late:
		 * the child makes it listen (varnish's worker, a socket handed
		 * to a service), so a hooked one asks for named offers. */
		child = fork();
		if (child < 0) {
			perror("conn_loop: fork");
			return 1;
		}
		if (child > 0) {
			if (waitpid(child, &status, 0) < 0)
				return 1;
			return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
		}
		if (late && listen(l, 128) < 0) {
			perror("conn_loop: listen");
			return 1;
		}
	}
	printf("ready\n");
	fflush(stdout);
	return serve(l, n);
}
