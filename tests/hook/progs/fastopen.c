/* fastopen.c — TCP Fast Open from the client side (curl --tcp-fastopen,
 * RPC clients): with TCP_FASTOPEN_CONNECT the kernel's connect returns at
 * once and the SYN leaves with the first bytes; MSG_FASTOPEN connects inside
 * sendto.  Each connection echoes 3000 bytes, checked.  A plain POSIX program.
 *   connect  TCP_FASTOPEN_CONNECT, connect, write: the option reads back
 *            as set, and every byte comes back
 *   sendto   sendto(MSG_FASTOPEN) on an unconnected socket
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "scen.h"

#define CONNS 3
#define BYTES 3000

static int echo_server(void *arg)
{
	int l = *(int *)arg;

	for (int i = 0; i < CONNS; i++) {
		int c = MUST(accept(l, NULL, NULL));

		say("connection %d: echoed %llu bytes", i, (unsigned long long)echo_fd(c, c));
		close(c);
	}
	return 0;
}

/* The echo of what was sent on c (its first n bytes already sent), then the end. */
static void finish(int i, int c, const char *msg, ssize_t n)
{
	char back[BYTES];
	ssize_t got;

	if (n < 0) {
		say("connection %d: first send %s", i, en(errno));
		n = 0;
	}
	if (send_all(c, msg + n, BYTES - (size_t)n) != BYTES - n)
		say("connection %d: send %s", i, en(errno));
	MUST(shutdown(c, SHUT_WR));
	got = recv_all(c, back, sizeof(back));
	say("connection %d: %zd bytes back, %s; then %s", i, got,
	    got == BYTES && !memcmp(back, msg, BYTES) ? "intact" : "WRONG", recv(c, back, 1, 0) == 0 ? "the end" : "more");
	close(c);
}

static int run(bool with_sendto)
{
	uint16_t port;
	int l = tcp_listener(&port), one = 1;
	struct sockaddr_in a;
	struct kid k;

	loop_addr(port, &a);
	kid_start(&k, "server", echo_server, &l);
	for (int i = 0; i < CONNS; i++) {
		int c = MUST(socket(AF_INET, SOCK_STREAM, 0)), v = -1;
		socklen_t len = sizeof(v);
		char msg[BYTES];
		ssize_t n;

		memset(msg, 'a' + i, sizeof(msg));
		if (with_sendto) {
			n = sendto(c, msg, sizeof(msg), MSG_FASTOPEN, (struct sockaddr *)&a, sizeof(a));
		} else {
			MUST(setsockopt(c, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &one, sizeof(one)));
			MUST(connect(c, (struct sockaddr *)&a, sizeof(a)));
			MUST(getsockopt(c, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &v, &len));
			say("connection %d: TCP_FASTOPEN_CONNECT reads %d", i, v);
			n = send(c, msg, sizeof(msg), 0);
		}
		finish(i, c, msg, n);
	}
	close(l);
	return kid_join(&k);
}

static int sc_connect(void)
{
	return run(false);
}

static int sc_sendto(void)
{
	return run(true);
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "connect", sc_connect },
		{ "sendto", sc_sendto },
		{ NULL, NULL },
	};

	return scen_main(argc, argv, t);
}
