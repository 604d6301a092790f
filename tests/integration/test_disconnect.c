/* test_disconnect.c — connect() to AF_UNSPEC, the program's own disconnect:
 * as kernel TCP, an accelerated connection is reset at both ends and the
 * socket connects again; a listener stops listening and may listen again;
 * a plain connection is the kernel's.  Never a hang, never a byte astray. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cr_helpers.h"
#include "testutil.h"

static const struct sockaddr unspec = { .sa_family = AF_UNSPEC };

static struct sockaddr_in loopback(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

static uint16_t port_of(int fd)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	return ntohs(a.sin_port);
}

/* A connection from a tu_listen listener that stays open, accelerated at
 * both ends. */
static void accelerated_from(int l, uint16_t port, int *c, int *s, const char *when)
{
	cr_assert_geq(*c = tu_connect(AF_INET, port), 0, "connect %s: %s", when, strerror(errno));
	cr_assert_geq(*s = tu_accept(l), 0, "accept %s: %s", when, strerror(errno));
	cr_assert_eq(tu_accelerated(*c), 1, "client end not accelerated %s", when);
	cr_assert_eq(tu_accelerated(*s), 1, "server end not accelerated %s", when);
}

/* Before, the rings went on as if nothing happened (the kernel had sent its
 * RST): the peer read what followed, and after a reconnect the client's
 * bytes went into the old ring while its new acceptor waited on kernel TCP. */
Test(disconnect, accelerated_connection_resets_both_ends_and_connects_again, .timeout = 30)
{
	uint16_t port;
	int l = tu_listen(AF_INET, 4, &port), c, s, s2;
	struct sockaddr_in to = loopback(port);
	char b[16];

	cr_assert_geq(l, 0);
	accelerated_from(l, port, &c, &s, "before the disconnect");
	exchange_or_die(c, s, "before");

	cr_assert_eq(scilan_connect(c, &unspec, sizeof(unspec)), 0, "connect(AF_UNSPEC): %s", strerror(errno));
	/* The peer: reset, as the kernel's RST would have it. */
	errno = 0;
	cr_assert_eq(scilan_recv(s, b, sizeof(b), 0), -1, "the peer read on after the disconnect");
	cr_assert_eq(errno, ECONNRESET, "peer: %s", strerror(errno));
	/* This end: no longer connected. */
	errno = 0;
	cr_assert_eq(scilan_send(c, "x", 1, MSG_NOSIGNAL), -1, "sent after the disconnect");
	cr_assert(errno == ECONNRESET || errno == EPIPE, "sender: %s", strerror(errno));

	/* And it connects again, to the same listener, every byte arriving. */
	cr_assert_eq(scilan_connect(c, (struct sockaddr *)&to, sizeof(to)), 0, "reconnect: %s", strerror(errno));
	cr_assert_geq(s2 = tu_accept(l), 0);
	exchange_or_die(c, s2, "again");
	scilan_close(c);
	cr_assert_eq(scilan_recv(s2, b, sizeof(b), 0), 0, "EOF after the client's close");
	scilan_close(s2);
	scilan_close(s);
	scilan_close(l);
}

/* Before, the listener stayed registered with its rendezvous: connectors
 * found it and offered to a socket that no longer listened. */
Test(disconnect, listener_stops_listening_and_listens_again, .timeout = 30)
{
	uint16_t port;
	int l = tu_listen(AF_INET, 4, &port), c, s;
	struct sockaddr_in at;

	cr_assert_geq(l, 0);
	cr_assert_eq(scilan_connect(l, &unspec, sizeof(unspec)), 0, "connect(AF_UNSPEC): %s", strerror(errno));
	/* Its port went with the listen (it was the kernel's pick). */
	errno = 0;
	c = tu_connect(AF_INET, port);
	cr_assert_lt(c, 0, "a connect reached a listener that stopped listening");
	cr_assert_eq(errno, ECONNREFUSED, "%s", strerror(errno));

	at = loopback(0);
	cr_assert_eq(scilan_bind(l, (struct sockaddr *)&at, sizeof(at)) == 0 || errno == EINVAL, 1);
	cr_assert_eq(scilan_listen(l, 4), 0, "listen again: %s", strerror(errno));
	accelerated_from(l, port_of(l), &c, &s, "after the listen again");
	exchange_or_die(c, s, "relisten");
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
}

/* A connection on kernel TCP (its server is no listener of ours) is the
 * kernel's to disconnect, and its next connection too. */
Test(disconnect, plain_connection_is_the_kernels, .timeout = 30)
{
	uint16_t port;
	int l = tu_plain_listen(AF_INET, 4, &port), c, s, s2;
	struct sockaddr_in at = loopback(port);
	char b[16];

	cr_assert_geq(l, 0);
	cr_assert_geq(c = tu_connect(AF_INET, port), 0);
	cr_assert_geq(s = accept(l, NULL, NULL), 0);
	cr_assert_eq(tu_accelerated(c), 0);
	exchange_or_die(c, s, "plain");

	cr_assert_eq(scilan_connect(c, &unspec, sizeof(unspec)), 0, "connect(AF_UNSPEC): %s", strerror(errno));
	errno = 0;
	cr_assert_eq(recv(s, b, sizeof(b), 0), -1);
	cr_assert_eq(errno, ECONNRESET, "peer: %s", strerror(errno));
	cr_assert_eq(scilan_connect(c, (struct sockaddr *)&at, sizeof(at)), 0, "reconnect: %s", strerror(errno));
	cr_assert_geq(s2 = accept(l, NULL, NULL), 0);
	exchange_or_die(c, s2, "plain again");
	scilan_close(c);
	close(s2);
	close(s);
	close(l);
}

/* A socket that never connected: nothing to disconnect, and still ours to
 * accelerate (it used to be made plain for good). */
Test(disconnect, fresh_socket_stays_accelerable, .timeout = 30)
{
	uint16_t port;
	int l = tu_listen(AF_INET, 4, &port), c, s;
	struct sockaddr_in to = loopback(port);

	cr_assert_geq(l, 0);
	cr_assert_geq(c = scilan_socket(AF_INET, SOCK_STREAM, 0), 0);
	cr_assert_eq(scilan_connect(c, &unspec, sizeof(unspec)), 0, "connect(AF_UNSPEC): %s", strerror(errno));
	cr_assert_eq(scilan_connect(c, (struct sockaddr *)&to, sizeof(to)), 0, "connect: %s", strerror(errno));
	cr_assert_geq(s = tu_accept(l), 0);
	cr_assert_eq(tu_accelerated(c), 1, "client end not accelerated");
	exchange_or_die(c, s, "fresh");
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
}

/* A non-blocking connect whose offer the acceptor has not answered yet:
 * the offer is revoked, the acceptor's end is the kernel's reset one, and
 * the number connects again (kernel TCP) with every byte arriving.  It hung
 * before: the client's bytes went into the old ring. */
Test(disconnect, offer_not_yet_answered_is_revoked, .timeout = 30)
{
	uint16_t port;
	int l = tu_listen(AF_INET, 4, &port), c, s, s2, r;
	struct sockaddr_in to = loopback(port);
	struct pollfd out;
	char b[16];

	cr_assert_geq(l, 0);
	cr_assert_geq(c = scilan_socket(AF_INET, SOCK_STREAM, 0), 0);
	cr_assert_eq(tu_set_nonblock(c, true), 0);
	r = scilan_connect(c, (struct sockaddr *)&to, sizeof(to));
	cr_assert(r == 0 || errno == EINPROGRESS, "connect: %s", strerror(errno));
	cr_assert_eq(scilan_connect(c, &unspec, sizeof(unspec)), 0, "connect(AF_UNSPEC): %s", strerror(errno));

	/* The first connection, reset before its accept: read as the kernel's. */
	cr_assert_geq(s = tu_accept(l), 0);
	errno = 0;
	r = (int)scilan_recv(s, b, sizeof(b), 0);
	cr_assert(r == 0 || (r < 0 && errno == ECONNRESET), "first connection read %d (%s)", r, strerror(errno));

	r = scilan_connect(c, (struct sockaddr *)&to, sizeof(to));
	cr_assert(r == 0 || errno == EINPROGRESS, "reconnect: %s", strerror(errno));
	out = (struct pollfd){ .fd = c, .events = POLLOUT };
	cr_assert_eq(scilan_poll(&out, 1, 10000), 1, "the reconnect never completed");
	cr_assert_eq(tu_set_nonblock(c, false), 0);
	cr_assert_geq(s2 = tu_accept(l), 0);
	exchange_or_die(c, s2, "in progress");
	scilan_close(c);
	scilan_close(s2);
	scilan_close(s);
	scilan_close(l);
}

/* A connect still in its handshake (the listener's queue is full, its SYN
 * dropped): its offer is withdrawn, and the next connect's two ends agree.
 * (Made fresh, the socket offered again under the same cookie, and the
 * acceptor took the withdrawn offer still in its queue: kernel TCP there,
 * while the client waited out the agreement's second.) */
Test(disconnect, connect_still_in_its_handshake_withdraws_its_offer, .timeout = 30)
{
	uint16_t port;
	int l = tu_listen(AF_INET, 1, &port), queued[2], c, s, r;
	struct sockaddr_in to = loopback(port);
	struct pollfd out;

	cr_assert_geq(l, 0);
	for (int i = 0; i < 2; i++)
		cr_assert_geq(queued[i] = tu_connect(AF_INET, port), 0);
	cr_assert_geq(c = scilan_socket(AF_INET, SOCK_STREAM, 0), 0);
	cr_assert_eq(tu_set_nonblock(c, true), 0);
	errno = 0;
	r = scilan_connect(c, (struct sockaddr *)&to, sizeof(to));
	cr_assert(r < 0 && errno == EINPROGRESS, "the queue was not full: %d (%s)", r, strerror(errno));
	out = (struct pollfd){ .fd = c, .events = POLLOUT };
	cr_assert_eq(scilan_poll(&out, 1, 0), 0, "the handshake completed");
	cr_assert_eq(scilan_connect(c, &unspec, sizeof(unspec)), 0, "connect(AF_UNSPEC): %s", strerror(errno));

	for (int i = 0; i < 2; i++) {
		cr_assert_geq(s = tu_accept(l), 0);
		exchange_or_die(queued[i], s, "queued");
		scilan_close(s);
		scilan_close(queued[i]);
	}
	cr_assert_eq(tu_set_nonblock(c, false), 0);
	cr_assert_eq(scilan_connect(c, (struct sockaddr *)&to, sizeof(to)), 0, "reconnect: %s", strerror(errno));
	cr_assert_geq(s = tu_accept(l), 0);
	exchange_or_die(c, s, "again");
	cr_assert_eq(tu_accelerated(c), tu_accelerated(s), "the two ends disagree on the transport");
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
}
