/* queues.c — what a program learns of a connection's queues besides its
 * data: FIONREAD, SIOCOUTQ (which a sender polls until what it wrote is
 * delivered), SIOCOUTQNSD, and recvmsg's TCP_INQ control message.
 */
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "scen.h"

#ifndef TCP_INQ
#define TCP_INQ 36
#endif
#ifndef TCP_CM_INQ
#define TCP_CM_INQ TCP_INQ
#endif

static void await_in(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	MUST(poll(&p, 1, 5000));
}

static int sc_ioctls(void)
{
	int c, s, v, tries;

	tcp_pair(&c, &s);
	send_all(c, "0123456789", 10);
	await_in(s);
	MUST(ioctl(s, FIONREAD, &v));
	say("FIONREAD at the receiver: %d", v);
	/* Delivered once the peer holds it, read or not (its ACK may lag). */
	for (tries = 0; tries < 200 && (MUST(ioctl(c, SIOCOUTQ, &v)), v != 0); tries++)
		usleep(10 * 1000);
	say("SIOCOUTQ at the sender drains to %d while the receiver has read nothing", v);
	MUST(ioctl(c, SIOCOUTQNSD, &v));
	say("SIOCOUTQNSD at the sender: %d", v);
	MUST(ioctl(s, FIONREAD, &v));
	say("FIONREAD at the receiver, still: %d", v);
	close(c);
	close(s);
	return 0;
}

/* One recvmsg of up to len bytes: its result and the TCP_INQ it carried. */
static void recv_inq(int fd, size_t len)
{
	char data[64], control[64];
	struct iovec iov = { data, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof(control) };
	struct cmsghdr *cm;
	int inq = -1;

	errno = 0;
	long r = recvmsg(fd, &msg, 0);
	for (cm = CMSG_FIRSTHDR(&msg); r >= 0 && cm; cm = CMSG_NXTHDR(&msg, cm))
		if (cm->cmsg_level == IPPROTO_TCP && cm->cmsg_type == TCP_CM_INQ)
			memcpy(&inq, CMSG_DATA(cm), sizeof(inq));
	if (r < 0)
		say("recvmsg(%zu) -> -1 %s", len, en(errno));
	else if (inq < 0)
		say("recvmsg(%zu) -> %ld, no TCP_INQ", len, r);
	else
		say("recvmsg(%zu) -> %ld, TCP_INQ %d", len, r, inq);
}

static int sc_inq(void)
{
	int c, s, on = 1, v;
	socklen_t len = sizeof(v);

	tcp_pair(&c, &s);
	send_all(c, "0123456789", 10);
	await_in(s);
	recv_inq(s, 3);
	SHOW(setsockopt(s, IPPROTO_TCP, TCP_INQ, &on, sizeof(on)));
	MUST(getsockopt(s, IPPROTO_TCP, TCP_INQ, &v, &len));
	say("TCP_INQ reads back %d", v);
	recv_inq(s, 3);
	recv_inq(s, 4);
	say("-- after the FIN, the hint says: read on");
	SHOW(shutdown(c, SHUT_WR));
	await_in(s);
	recv_inq(s, 4);
	on = 0;
	SHOW(setsockopt(s, IPPROTO_TCP, TCP_INQ, &on, sizeof(on)));
	recv_inq(s, 4);
	close(c);
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "ioctls", sc_ioctls },
		{ "inq", sc_inq },
		{ NULL, NULL },
	};

	return scen_main(argc, argv, t);
}
