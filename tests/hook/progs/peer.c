/* peer.c — both ends of one connection as separate programs (mixed and two-node
 * tests): `peer server ADDR [PORT]` prints "port N" and echoes one connection;
 * `peer client ADDR PORT BYTES [FROM]` exchanges BYTES and checks the echo and
 * EOF (bound to address FROM first, if given); `peer client2 ADDR1 PORT1 ADDR2
 * PORT2 BYTES` does the same with two servers from one process, both
 * connections open at once (a local server and another node's: two fabrics).
 * ADDR is IPv4 or IPv6, an IPv6 one with an optional scope (fe80::1%eth0). */
#include <arpa/inet.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "scen.h"

static socklen_t addr_of(const char *text, uint16_t port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *a = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	char addr[INET6_ADDRSTRLEN + IF_NAMESIZE + 1], *scope;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, text, &a->sin_addr) == 1) {
		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		return sizeof(*a);
	}
	snprintf(addr, sizeof(addr), "%s", text);
	scope = strchr(addr, '%');
	if (scope) {
		*scope++ = '\0';
		a6->sin6_scope_id = if_nametoindex(scope);
		if (!a6->sin6_scope_id)
			fatal("no interface %s", scope);
	}
	if (inet_pton(AF_INET6, addr, &a6->sin6_addr) != 1)
		fatal("bad address %s", text);
	a6->sin6_family = AF_INET6;
	a6->sin6_port = htons(port);
	return sizeof(*a6);
}

static unsigned port_of(const struct sockaddr_storage *ss)
{
	return ntohs(ss->ss_family == AF_INET ? ((const struct sockaddr_in *)ss)->sin_port :
						((const struct sockaddr_in6 *)ss)->sin6_port);
}

static int sc_server(void)
{
	struct sockaddr_storage a;
	socklen_t len;
	int l, s, one = 1;

	if (scen_argc < 1)
		fatal("peer server ADDR [PORT]");
	len = addr_of(scen_argv[0], scen_argc > 1 ? (uint16_t)atoi(scen_argv[1]) : 0, &a);
	l = MUST(socket(a.ss_family, SOCK_STREAM, 0));
	MUST(setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	MUST(bind(l, (struct sockaddr *)&a, len));
	MUST(listen(l, 4));
	len = sizeof(a);
	MUST(getsockname(l, (struct sockaddr *)&a, &len));
	/* The first line is for the test driver (not part of the transcript). */
	say("port %u", port_of(&a));
	s = MUST(accept(l, NULL, NULL));
	say("accepted");
	say("served %llu bytes, then EOF", (unsigned long long)echo_fd(s, s));
	SHOW(close(s));
	SHOW(close(l));
	return 0;
}

static int sc_client(void)
{
	struct sockaddr_storage a;
	socklen_t len;
	size_t sent, got;
	int c;
	bool ok;
	char b;

	if (scen_argc < 3)
		fatal("peer client ADDR PORT BYTES [FROM]");
	len = addr_of(scen_argv[0], (uint16_t)atoi(scen_argv[1]), &a);
	c = MUST(socket(a.ss_family, SOCK_STREAM, 0));
	if (scen_argc > 3) {
		struct sockaddr_storage from;
		socklen_t from_len = addr_of(scen_argv[3], 0, &from);

		MUST(bind(c, (struct sockaddr *)&from, from_len));
	}
	SHOW(connect(c, (struct sockaddr *)&a, len));
	ok = exchange(c, 42, (size_t)atol(scen_argv[2]), &sent, &got);
	say("sent %zu, echoed %zu, intact %d", sent, got, ok);
	SHOW(shutdown(c, SHUT_WR));
	SHOW(recv(c, &b, 1, 0));
	SHOW(close(c));
	return 0;
}

static int sc_client2(void)
{
	struct sockaddr_storage a[2];
	socklen_t len[2];
	size_t sent, got, bytes;
	int c[2];
	bool ok;
	char b;

	if (scen_argc < 5)
		fatal("peer client2 ADDR1 PORT1 ADDR2 PORT2 BYTES");
	bytes = (size_t)atol(scen_argv[4]);
	for (int i = 0; i < 2; i++) {
		len[i] = addr_of(scen_argv[2 * i], (uint16_t)atoi(scen_argv[2 * i + 1]), &a[i]);
		c[i] = MUST(socket(a[i].ss_family, SOCK_STREAM, 0));
		SHOW(connect(c[i], (struct sockaddr *)&a[i], len[i]));
	}
	/* Both open: each half of the data on each, in turn. */
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 2; i++) {
			ok = exchange(c[i], 42 + (uint64_t)(2 * round + i), bytes / 2, &sent, &got);
			say("%s: sent %zu, echoed %zu, intact %d", scen_argv[2 * i], sent, got, ok);
		}
	for (int i = 0; i < 2; i++) {
		SHOW(shutdown(c[i], SHUT_WR));
		SHOW(recv(c[i], &b, 1, 0));
		SHOW(close(c[i]));
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = { { "server", sc_server }, { "client", sc_client },
					     { "client2", sc_client2 }, { NULL, NULL } };

	return scen_main(argc, argv, t);
}
