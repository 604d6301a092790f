/* devlate.c — the driver's late connects (ABI 8) by hand, in the test guest
 * (static, run by tests/kernel/init's "devlate" group): a live TCP
 * connection's CONNECT_LATE is kept apart from the listener's backlog (no
 * ACCEPT, ACCEPT_SOCK or poll sees it), ACCEPT_LATE pairs it carrying the
 * acceptor's switch point to the client's slice, SEAM_POINT carries the
 * client's to the acceptor's, once; plain and late queues never pair each
 * other; bad arguments, revokes and a closing listener give back every slice,
 * and so does a late connect whose client closed without a revoke, at the
 * next late connect (nothing else drains the late queue).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "guest.h"
#include "uapi/scilan.h"

#define CLIENT_NODE "/dev/scilan0"
#define SERVER_NODE "/dev/scilan1"
#define CLIENT_LINK 0
#define SERVER_LINK 1
#define DATA_OFF 8192 /* past the control page: neither driver writes there */

/* A live connection over loopback, its listener registered on the server's
 * link, and the late connect's client endpoint once made. */
struct late_pair {
	int lsock, ldev;  /* TCP listener, its listening endpoint (O_NONBLOCK) */
	int c, s;         /* the connection's two TCP sockets */
	int cdev;         /* the client's endpoint, -1 until made */
};

static struct sockaddr_in loopback(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

static struct scilan_connect connect_req(int sock, uint16_t port, uint16_t flags)
{
	struct scilan_connect req = { .sockfd = sock, .dport = port, .flags = flags };

	req.daddr[10] = req.daddr[11] = 0xff;
	req.daddr[12] = 127;
	req.daddr[15] = 1;
	return req;
}

static void pair_close(struct late_pair *p)
{
	int *fds[] = { &p->cdev, &p->c, &p->s, &p->ldev, &p->lsock };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

/* The listener and the live connection; the late connect is the caller's. */
static int pair_open(struct late_pair *p, uint16_t port)
{
	struct sockaddr_in a = loopback(port);
	struct scilan_listen lreq = { 0 };
	int one = 1;

	*p = (struct late_pair){ .lsock = -1, .ldev = -1, .c = -1, .s = -1, .cdev = -1 };
	p->lsock = socket(AF_INET, SOCK_STREAM, 0);
	if (p->lsock < 0 || setsockopt(p->lsock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(p->lsock, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(p->lsock, 8) < 0)
		goto fail;
	lreq.sockfd = p->lsock;
	p->ldev = open(SERVER_NODE, O_RDWR | O_NONBLOCK);
	if (p->ldev < 0 || ioctl(p->ldev, SCILAN_IOC_LISTEN, &lreq) < 0)
		goto fail;
	p->c = socket(AF_INET, SOCK_STREAM, 0);
	if (p->c < 0 || connect(p->c, (struct sockaddr *)&a, sizeof(a)) < 0)
		goto fail;
	p->s = accept(p->lsock, NULL, NULL);
	if (p->s < 0)
		goto fail;
	return 0;
fail:
	printf("  devlate: set-up on port %u: %s\n", port, strerror(errno));
	pair_close(p);
	return -1;
}

static int late_connect(struct late_pair *p, uint16_t port)
{
	struct scilan_connect req = connect_req(p->c, port, SCILAN_CONNECT_LATE);

	p->cdev = open(CLIENT_NODE, O_RDWR);
	return p->cdev < 0 ? -1 : ioctl(p->cdev, SCILAN_IOC_CONNECT, &req);
}

static int accept_late(int sock, uint64_t point, int *dev)
{
	struct scilan_accept_late req = { .sockfd = sock, .point = point };

	*dev = open(SERVER_NODE, O_RDWR);
	return *dev < 0 ? -1 : ioctl(*dev, SCILAN_IOC_ACCEPT_LATE, &req);
}

/* An endpoint's local slice, mapped (NULL on failure); *len its size. */
static volatile uint8_t *local_slice(int dev, size_t *len)
{
	struct scilan_info in;
	void *m;

	if (ioctl(dev, SCILAN_IOC_INFO, &in) < 0)
		return NULL;
	*len = in.slice_size;
	m = mmap(NULL, in.slice_size, PROT_READ | PROT_WRITE, MAP_SHARED, dev, SCILAN_MMAP_LOCAL);
	return m == MAP_FAILED ? NULL : m;
}

static volatile uint8_t *peer_slice(int dev, size_t len)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, dev, SCILAN_MMAP_PEER(len));

	return m == MAP_FAILED ? NULL : m;
}

static uint64_t point_word(volatile uint8_t *slice)
{
	return *(volatile uint64_t *)(slice + SCILAN_SLICE_POINT_OFF);
}

static uint32_t agree_word(volatile uint8_t *slice)
{
	return *(volatile uint32_t *)(slice + SCILAN_SLICE_AGREE_OFF);
}

/* The listener's debugfs line says how many late connects it holds. */
static long late_shown(uint16_t port)
{
	char line[256], want[32];
	long n = -1;
	FILE *f = fopen("/sys/kernel/debug/scilan/scilan1/state", "r");

	if (!f)
		return -1;
	snprintf(want, sizeof(want), " port %u ", port);
	while (fgets(line, sizeof(line), f)) {
		const char *l = strstr(line, " late ");

		if (!strncmp(line, "listener ", 9) && strstr(line, want) && l)
			n = strtol(l + 6, NULL, 10);
	}
	fclose(f);
	return n;
}

/* A late connect waits apart: the listener's ACCEPT (O_NONBLOCK) and poll,
 * and ACCEPT_SOCK of its own accepted socket, see nothing; only
 * ACCEPT_LATE pairs it. */
static void test_kept_apart(uint16_t port)
{
	struct late_pair p;
	struct scilan_accept_sock as;
	struct pollfd pf;
	int e = -1, a = -1, lfd, got_accept, got_sock, polled, late_rc, shown;

	if (pair_open(&p, port) < 0 || late_connect(&p, port) < 0) {
		result("late_kept_apart", 0, "late connect: %s", strerror(errno));
		pair_close(&p);
		return;
	}
	shown = (int)late_shown(port);
	lfd = p.ldev;
	e = open(SERVER_NODE, O_RDWR);
	got_accept = ioctl(e, SCILAN_IOC_ACCEPT, &lfd) == 0 ? 0 : errno;
	as = (struct scilan_accept_sock){ .sockfd = p.s };
	got_sock = ioctl(e, SCILAN_IOC_ACCEPT_SOCK, &as) == 0 ? 0 : errno;
	pf = (struct pollfd){ .fd = p.ldev, .events = POLLIN };
	polled = poll(&pf, 1, 0);
	late_rc = accept_late(p.s, 1, &a) == 0 ? 0 : errno;
	result("late_kept_apart", shown == 1 && got_accept == EAGAIN && got_sock == EAGAIN && polled == 0 && !late_rc,
	       "listener shows late %d; ACCEPT %s, ACCEPT_SOCK %s, listener poll %d; then ACCEPT_LATE %s", shown,
	       strerror(got_accept), strerror(got_sock), polled, strerror(late_rc));
	if (e >= 0)
		close(e);
	if (a >= 0)
		close(a);
	pair_close(&p);
}

/* The pairing carries the acceptor's point into the client's slice, before
 * ATTACHED; SEAM_POINT the client's into the acceptor's, once; the two
 * slices are each other's; the client can no longer revoke. */
static void test_points(uint16_t port)
{
	const uint64_t apoint = 0x123456789abcull, cpoint = 77;
	struct late_pair p;
	volatile uint8_t *cl = NULL, *cp = NULL, *sl = NULL;
	size_t len = 0, slen = 0;
	uint64_t before = 0, after = 0, second_point = 0;
	int a = -1, ok = 0, again = 0, abandon = 0, data = 0;

	if (pair_open(&p, port) < 0 || late_connect(&p, port) < 0) {
		result("late_points", 0, "late connect: %s", strerror(errno));
		pair_close(&p);
		return;
	}
	cl = local_slice(p.cdev, &len);
	if (cl && point_word(cl) == SCILAN_POINT_UNKNOWN && agree_word(cl) == 0 && accept_late(p.s, apoint, &a) == 0 &&
	    (sl = local_slice(a, &slen)) && (cp = peer_slice(p.cdev, len))) {
		before = point_word(sl);
		ok = agree_word(cl) == SCILAN_AGREE_ATTACHED && point_word(cl) == apoint &&
		     before == SCILAN_POINT_UNKNOWN && ioctl(p.cdev, SCILAN_IOC_SEAM_POINT, &cpoint) == 0;
		after = point_word(sl);
		second_point = 78;
		again = ioctl(p.cdev, SCILAN_IOC_SEAM_POINT, &second_point) == 0 ? 0 : errno;
		abandon = ioctl(p.cdev, SCILAN_IOC_ABANDON) == 0 ? 0 : errno;
		for (int i = 0; i < 64; i++)
			cp[DATA_OFF + i] = (uint8_t)(i * 7 + 1);
		data = 1;
		for (int i = 0; i < 64; i++)
			data &= sl[DATA_OFF + i] == (uint8_t)(i * 7 + 1);
	}
	ok = ok && after == cpoint && point_word(sl) == cpoint && again == EINVAL && abandon == EALREADY && data;
	result("late_points", ok,
	       "client's slice: ATTACHED %d, acceptor's point %d; acceptor's point word %#llx before SEAM_POINT, %llu after; a second SEAM_POINT %s, ABANDON %s; slices paired %d",
	       cl && agree_word(cl) == SCILAN_AGREE_ATTACHED, cl && point_word(cl) == apoint, (unsigned long long)before,
	       (unsigned long long)after, strerror(again), strerror(abandon), data);
	if (cl)
		munmap((void *)cl, len);
	if (cp)
		munmap((void *)cp, len);
	if (sl)
		munmap((void *)sl, slen);
	if (a >= 0)
		close(a);
	pair_close(&p);
}

/* A plain connect and a late one never take each other's place: a queued
 * plain connect is not ACCEPT_LATE's (and stays ACCEPT_SOCK's). */
static void test_plain_apart(uint16_t port)
{
	struct sockaddr_in a = loopback(port), src = loopback(0);
	struct late_pair p;
	struct scilan_connect req;
	struct scilan_accept_sock as;
	socklen_t slen = sizeof(src);
	int c2 = -1, s2 = -1, d = -1, e = -1, late_rc = -1, sock_rc = -1, ok = 0;

	if (pair_open(&p, port) < 0) {
		result("late_plain_apart", 0, "set-up");
		return;
	}
	/* A plain device connect comes before its TCP connect. */
	c2 = socket(AF_INET, SOCK_STREAM, 0);
	d = open(CLIENT_NODE, O_RDWR);
	if (c2 >= 0 && d >= 0 && bind(c2, (struct sockaddr *)&src, sizeof(src)) == 0 &&
	    getsockname(c2, (struct sockaddr *)&src, &slen) == 0) {
		req = connect_req(c2, port, 0);
		if (ioctl(d, SCILAN_IOC_CONNECT, &req) == 0 && connect(c2, (struct sockaddr *)&a, sizeof(a)) == 0 &&
		    (s2 = accept(p.lsock, NULL, NULL)) >= 0) {
			late_rc = accept_late(s2, 5, &e) == 0 ? 0 : errno;
			close(e);
			as = (struct scilan_accept_sock){ .sockfd = s2 };
			e = open(SERVER_NODE, O_RDWR);
			sock_rc = ioctl(e, SCILAN_IOC_ACCEPT_SOCK, &as) == 0 ? 0 : errno;
			ok = late_rc == EAGAIN && sock_rc == 0;
		}
	}
	result("late_plain_apart", ok, "a queued plain connect: ACCEPT_LATE %s, then ACCEPT_SOCK %s",
	       strerror(late_rc), strerror(sock_rc));
	int fds[] = { c2, s2, d, e };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	pair_close(&p);
}

/* Bad arguments and wrong states, each refused with its errno. */
static void test_refusals(uint16_t port)
{
	struct sockaddr_in any = loopback(0);
	struct late_pair p;
	struct scilan_connect req;
	int bad = 0, checks = 0, unconnected = -1, d = -1, a = -1;
	uint64_t point = 9;

	if (pair_open(&p, port) < 0) {
		result("late_refusals", 0, "set-up");
		return;
	}
	/* Late needs a live connection: a bound, unconnected socket is not. */
	unconnected = socket(AF_INET, SOCK_STREAM, 0);
	bind(unconnected, (struct sockaddr *)&any, sizeof(any));
	d = open(CLIENT_NODE, O_RDWR);
	req = connect_req(unconnected, port, SCILAN_CONNECT_LATE);
	EXPECT(ioctl(d, SCILAN_IOC_CONNECT, &req) < 0, ENOTCONN);
	req = connect_req(p.c, port, 0x2);
	EXPECT(ioctl(d, SCILAN_IOC_CONNECT, &req) < 0, EINVAL);
	/* The unknown point is not a point. */
	EXPECT(accept_late(p.s, SCILAN_POINT_UNKNOWN, &a) < 0, EINVAL);
	close(a);
	/* Nothing queued for the socket yet. */
	EXPECT(accept_late(p.s, 3, &a) < 0, EAGAIN);
	close(a);
	/* SEAM_POINT: not on a fresh endpoint, nor before the agreement. */
	EXPECT(ioctl(d, SCILAN_IOC_SEAM_POINT, &point) < 0, EINVAL);
	EXPECT(late_connect(&p, port) == 0, 0);
	EXPECT(ioctl(p.cdev, SCILAN_IOC_SEAM_POINT, &point) < 0, ENOTCONN);
	point = SCILAN_POINT_UNKNOWN;
	EXPECT(ioctl(p.cdev, SCILAN_IOC_SEAM_POINT, &point) < 0, EINVAL);
	result("late_refusals", bad == 0, "%d of %d checks as expected", checks - bad, checks);
	close(unconnected);
	close(d);
	pair_close(&p);
}

/* A revoked late connect (ABANDON, then its close) is gone from the
 * acceptor's side; a closing listener gives back its late connects' slices;
 * the slices in use end where they began. */
static void test_revoked_and_closed(uint16_t port)
{
	long base_c, base_s;
	struct late_pair p, q;
	int a = -1, revoked = -1, taken = -1, queued = -1, shown = -1, settled;

	/* An earlier test's closes give their slices back as the peer's
	 * driver answers: a base taken meanwhile would count one that is
	 * still going (seen on a loaded host, base 1, end 0). */
	settle_for(CLIENT_LINK, "slices_busy", 0, 3000);
	settle_for(SERVER_LINK, "slices_busy", 0, 3000);
	base_c = dbg_value(CLIENT_LINK, "slices_busy");
	base_s = dbg_value(SERVER_LINK, "slices_busy");

	if (pair_open(&p, port) == 0 && late_connect(&p, port) == 0) {
		revoked = ioctl(p.cdev, SCILAN_IOC_ABANDON) == 0;
		close(p.cdev);
		p.cdev = -1;
		settle_for(SERVER_LINK, "slices_busy", base_s, 3000);
		taken = accept_late(p.s, 4, &a) == 0 ? 0 : errno;
		close(a);
	}
	pair_close(&p);
	if (pair_open(&q, port + 1) == 0 && late_connect(&q, port + 1) == 0) {
		queued = 1;
		shown = (int)late_shown(port + 1);
		close(q.ldev); /* the listener goes; its late connect with it */
		q.ldev = -1;
	}
	pair_close(&q);
	settled = settle_for(CLIENT_LINK, "slices_busy", base_c, 3000) &&
		  settle_for(SERVER_LINK, "slices_busy", base_s, 3000);
	result("late_revoked_and_closed", revoked == 1 && taken == EAGAIN && queued == 1 && shown == 1 && settled,
	       "revoked %d, then ACCEPT_LATE %s; a listener closed with %d late connect(s) queued; slices busy back to %ld/%ld: %d",
	       revoked, strerror(taken), shown, base_c, base_s, settled);
}

/* A client that closes its late connect without a revoke (a process that
 * died mid-offer) leaves it queued, holding a slice of the acceptor's, until
 * the next late connect to the listener, which finds it dead and drops it. */
static void test_dead_pruned(uint16_t port)
{
	long base_s = dbg_value(SERVER_LINK, "slices_busy");
	struct late_pair p, q;
	long held = -1, after = -1, shown = -1;
	int ok = 0;

	if (pair_open(&p, port) == 0 && late_connect(&p, port) == 0) {
		close(p.cdev); /* no ABANDON: its CLOSE only says the client left */
		p.cdev = -1;
		usleep(200000);
		held = dbg_value(SERVER_LINK, "slices_busy");
		/* A second connection to the same listener moves late. */
		q = (struct late_pair){ .lsock = -1, .ldev = -1, .c = -1, .s = -1, .cdev = -1 };
		q.c = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = loopback(port);

		if (q.c >= 0 && connect(q.c, (struct sockaddr *)&a, sizeof(a)) == 0 &&
		    (q.s = accept(p.lsock, NULL, NULL)) >= 0 && late_connect(&q, port) == 0) {
			ok = settle_for(SERVER_LINK, "slices_busy", base_s + 1, 3000);
			after = dbg_value(SERVER_LINK, "slices_busy");
			shown = late_shown(port);
		}
		pair_close(&q);
	}
	pair_close(&p);
	result("late_dead_pruned", ok && held == base_s + 1 && shown == 1,
	       "slices busy on the acceptor's link: %ld before, %ld with the closed client's late connect queued, %ld after the next one (the dead one dropped); listener shows late %ld",
	       base_s, held, after, shown);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_kept_apart(7301);
	test_points(7302);
	test_plain_apart(7303);
	test_refusals(7304);
	test_revoked_and_closed(7305);
	test_dead_pruned(7307);
	return failures ? 1 : 0;
}
