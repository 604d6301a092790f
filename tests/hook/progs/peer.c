/* peer.c — both ends of one connection as separate programs (mixed and two-node
 * tests): `peer server ADDR` prints "port N" and echoes one connection;
 * `peer client ADDR PORT BYTES` exchanges BYTES and checks the echo and EOF. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "scen.h"

static void addr_of(const char *text, uint16_t port, struct sockaddr_in *a)
{
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_port = htons(port);
	if (inet_pton(AF_INET, text, &a->sin_addr) != 1)
		fatal("bad address %s", text);
}

static int sc_server(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int l, s, one = 1;

	if (scen_argc < 1)
		fatal("peer server ADDR");
	addr_of(scen_argv[0], 0, &a);
	l = MUST(socket(AF_INET, SOCK_STREAM, 0));
	MUST(setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	MUST(bind(l, (struct sockaddr *)&a, sizeof(a)));
	MUST(listen(l, 4));
	MUST(getsockname(l, (struct sockaddr *)&a, &len));
	/* The first line is for the test driver (not part of the transcript). */
	say("port %u", ntohs(a.sin_port));
	s = MUST(accept(l, NULL, NULL));
	say("accepted");
	say("served %llu bytes, then EOF", (unsigned long long)echo_fd(s, s));
	SHOW(close(s));
	SHOW(close(l));
	return 0;
}

static int sc_client(void)
{
	struct sockaddr_in a;
	size_t sent, got;
	int c;
	bool ok;
	char b;

	if (scen_argc < 3)
		fatal("peer client ADDR PORT BYTES");
	addr_of(scen_argv[0], (uint16_t)atoi(scen_argv[1]), &a);
	c = MUST(socket(AF_INET, SOCK_STREAM, 0));
	SHOW(connect(c, (struct sockaddr *)&a, sizeof(a)));
	ok = exchange(c, 42, (size_t)atol(scen_argv[2]), &sent, &got);
	say("sent %zu, echoed %zu, intact %d", sent, got, ok);
	SHOW(shutdown(c, SHUT_WR));
	SHOW(recv(c, &b, 1, 0));
	SHOW(close(c));
	return 0;
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = { { "server", sc_server }, { "client", sc_client }, { NULL, NULL } };

	return scen_main(argc, argv, t);
}
