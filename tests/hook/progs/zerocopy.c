/* zerocopy.c — MSG_ZEROCOPY: with SO_ZEROCOPY set, each send is completed
 * by a notification on the socket's error queue (POLLERR, then
 * recvmsg(MSG_ERRQUEUE)), which the sender waits for before reusing its
 * buffer; without SO_ZEROCOPY the flag is ignored.
 */
#include <time.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "scen.h"

#ifndef SO_EE_ORIGIN_ZEROCOPY
#define SO_EE_ORIGIN_ZEROCOPY 5
#endif

static char buf[1000], in[1000];

/* Wait for the completion of the sends numbered from..to, as a zero-copy
 * sender does before it touches the buffer again. */
static void completion(int fd)
{
	char control[128];
	struct msghdr msg = { .msg_control = control, .msg_controllen = sizeof(control) };
	struct pollfd p = { .fd = fd, .events = 0 };
	struct cmsghdr *cm;

	errno = 0;
	long r = poll(&p, 1, 5000);
	say("poll for the completion -> %ld %s", r, r > 0 ? pollmask(p.revents) : en(errno));
	if (r <= 0)
		return;
	SHOW(recvmsg(fd, &msg, MSG_ERRQUEUE));
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		struct sock_extended_err ee;

		memcpy(&ee, CMSG_DATA(cm), sizeof(ee));
		say("completion: origin %s, sends %u..%u", ee.ee_origin == SO_EE_ORIGIN_ZEROCOPY ? "zerocopy" : "other",
		    ee.ee_info, ee.ee_data);
	}
}

static int sc_zerocopy(void)
{
	int c, s, one = 1;

	memset(buf, 'z', sizeof(buf));
	say("-- SO_ZEROCOPY set: the send is completed on the error queue");
	tcp_pair(&c, &s);
	SHOW(setsockopt(c, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)));
	SHOW(send(c, buf, sizeof(buf), MSG_ZEROCOPY));
	completion(c);
	SHOW(recv_all(s, in, sizeof(in)));
	say("intact: %d", memcmp(in, buf, sizeof(buf)) == 0);
	SHOW(send(c, buf, 10, 0));
	SHOW(recv(s, in, sizeof(in), 0));
	close(c);
	close(s);

	say("-- without SO_ZEROCOPY the flag changes nothing");
	tcp_pair(&c, &s);
	SHOW(send(c, buf, sizeof(buf), MSG_ZEROCOPY));
	SHOW(recv_all(s, in, sizeof(in)));
	SHOW(recv(c, in, sizeof(in), MSG_ERRQUEUE | MSG_DONTWAIT));
	close(c);
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "zerocopy", sc_zerocopy },
		{ NULL, NULL },
	};

	return scen_main(argc, argv, t);
}
