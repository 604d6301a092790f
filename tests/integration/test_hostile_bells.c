/* test_hostile_bells.c — a peer of another user (uid 65534 against a root
 * victim) that passes hostile wake-up bells: through the rendezvous (the
 * victim accepts), as the listener (the victim connects), and with a
 * connection passed by SCM_RIGHTS.  The victim never hangs, never dies of
 * SIGPIPE, does not spin, and its connection works, falls back to kernel
 * TCP with every byte, or ends loudly. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fabric/shm/rendezvous.h"
#include "process/scm.h"
#include "ring/layout.h"
#include "ring/segment.h"
#include "testutil.h"

#define NOBODY 65534
#define MESSAGE "hello"
#define VICTIM_BOUND_S 20 /* a hang limit, not a timing assertion */

enum attack {
	BLOCKING_WITH_BYTES, /* O_NONBLOCK cleared on the shared description, bytes left in the pipe */
	DEV_ZERO,            /* /dev/zero as both bells */
	NO_READER,           /* the victim's bell to ring is a pipe whose read end was closed */
	SOCKET,              /* sockets whose other ends are closed */
	REGULAR_FILE,        /* a regular file (a memfd) */
};

struct arena {
	struct tu_sync vsync, async; /* the victim's, the attacker's */
	uint16_t port;
	enum attack attack;
	bool userns;  /* the attacker works from inside a user namespace of its own */
	int pair[2];  /* SCM_RIGHTS: victim's end, attacker's end */
};

/* ---- the attacker's tools ----------------------------------------------------------------- */

static void become_nobody(bool userns)
{
	TU_CHECK(setgroups(0, NULL) == 0 && setgid(NOBODY) == 0 && setuid(NOBODY) == 0, "become uid %d", NOBODY);
	if (userns)
		TU_CHECK(unshare(CLONE_NEWUSER) == 0, "unshare(CLONE_NEWUSER) as uid %d", NOBODY);
}

static struct sl_key loopback(uint16_t port)
{
	struct sl_key k = { .family = AF_INET, .addr = { 127, 0, 0, 1 }, .port = port };

	return k;
}

/* A well-formed sealed segment of our own, its offer word OFFERED. */
static void *make_segment(int *fd, struct sl_seg_header *hdr)
{
	void *base;

	sl_segment_layout(hdr, 65536, 65536);
	*fd = memfd_create("hostile", MFD_ALLOW_SEALING);
	TU_CHECK(*fd >= 0 && ftruncate(*fd, (off_t)hdr->total_size) == 0, "memfd");
	base = mmap(NULL, hdr->total_size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	TU_CHECK(base != MAP_FAILED, "mmap");
	memcpy(base, hdr, sizeof(*hdr));
	atomic_store((_Atomic uint32_t *)((char *)base + SL_SEG_OFFER_OFF), SL_OFFER_OFFERED);
	TU_CHECK(fcntl(*fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0, "seal");
	return base;
}

static struct sl_area_ctl *area(void *base, const struct sl_seg_header *hdr, int which)
{
	return (struct sl_area_ctl *)((char *)base + hdr->area_off[which]);
}

/* The victim rings its peer's bell whenever it sends or frees space. */
static void arm_victim(struct sl_area_ctl *victims)
{
	atomic_store(&victims->wake_on_data, 1);
	atomic_store(&victims->wake_on_space, 1);
}

/* The bells the attacker passes: rx the victim sleeps on, tx the one it rings. */
struct bells {
	int rx, tx;
	int rx_w;  /* the attacker's write end of rx (BLOCKING_WITH_BYTES) */
};

static void make_bells(enum attack a, struct bells *b)
{
	int p1[2], p2[2], fd;

	b->rx_w = -1;
	switch (a) {
	case BLOCKING_WITH_BYTES:
	case NO_READER:
		TU_CHECK(pipe2(p1, O_NONBLOCK) == 0 && pipe2(p2, O_NONBLOCK) == 0, "pipes");
		b->rx = p1[0];
		b->rx_w = p1[1];
		b->tx = p2[1];
		if (a == NO_READER)
			close(p2[0]);
		break;
	case DEV_ZERO:
		b->rx = b->tx = open("/dev/zero", O_RDWR | O_NONBLOCK);
		TU_CHECK(b->rx >= 0, "/dev/zero");
		break;
	case SOCKET:
		TU_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, p1) == 0 &&
				 socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, p2) == 0,
			 "socketpairs");
		close(p1[1]);
		close(p2[1]);
		b->rx = p1[0];
		b->tx = p2[0];
		break;
	case REGULAR_FILE:
		fd = memfd_create("not-a-bell", 0);
		TU_CHECK(fd >= 0 && write(fd, "data", 4) == 4, "memfd");
		b->rx = b->tx = fd;
		break;
	}
}

/* After the victim took the bells: through the description it shares with
 * the victim (if it does), make its next read block, with bytes left so that
 * its drain reads a full buffer first, and its next ring block on a full
 * pipe. */
static void spring(enum attack a, const struct bells *b)
{
	char junk[4096];

	if (a != BLOCKING_WITH_BYTES)
		return;
	memset(junk, SL_TOKEN_DATA, sizeof(junk));
	while (write(b->tx, junk, sizeof(junk)) > 0) {
	}
	TU_CHECK(fcntl(b->tx, F_SETFL, 0) == 0, "clear O_NONBLOCK on the victim's tx bell");
	TU_CHECK(fcntl(b->rx, F_SETFL, 0) == 0, "clear O_NONBLOCK on the victim's rx bell");
	TU_CHECK(write(b->rx_w, junk, 64) == 64, "bytes left in the victim's rx bell");
}

/* Wait (bounded) until the victim decided the offer: attached or refused. */
static uint32_t decided(void *base)
{
	_Atomic uint32_t *word = (_Atomic uint32_t *)((char *)base + SL_SEG_OFFER_OFF);

	for (int i = 0; i < 10000 && atomic_load(word) == SL_OFFER_OFFERED; i++)
		usleep(1000);
	return atomic_load(word);
}

/* The end of the attack: report, wait for the victim's idle second, then
 * the stream's last bytes on the kernel connection and its end. */
static void finish(struct arena *ar, int tcp)
{
	uint64_t v;

	TU_CHECK(tu_sync_put_child(&ar->async, 1) == 0, "report the attack");
	TU_CHECK(tu_sync_get_child(&ar->async, &v) == 0, "wait for the go");
	TU_CHECK(send(tcp, MESSAGE, strlen(MESSAGE), MSG_NOSIGNAL) == (ssize_t)strlen(MESSAGE), "raw send");
	close(tcp);
}

/* A client of uid 65534 whose offer carries hostile bells. */
static int hostile_client(void *p)
{
	struct arena *ar = p;
	struct sl_key dst = loopback(ar->port), src = loopback(0);
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(ar->port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sl_seg_header hdr;
	struct bells b;
	int fds[SL_RDV_FDS], conn, tcp;
	uint32_t w;
	void *base;

	become_nobody(ar->userns);
	base = make_segment(&fds[0], &hdr);
	make_bells(ar->attack, &b);
	fds[1] = b.tx; /* the connector's bell: the victim rings it */
	fds[2] = b.rx;
	arm_victim(area(base, &hdr, 1));
	tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	TU_CHECK(tcp >= 0, "socket");
	conn = sl_rdv_connect(&dst);
	TU_CHECK(conn >= 0, "reach the victim's rendezvous");
	TU_CHECK(sl_rdv_send_unchecked(conn, tcp, &dst, &src, fds, false) == 0, "offer sent");
	TU_CHECK(connect(tcp, (struct sockaddr *)&to, sizeof(to)) == 0, "connect");
	w = decided(base);
	tu_log("the victim's word on the offer: %u", (unsigned)w);
	spring(ar->attack, &b);
	finish(ar, tcp);
	return 0;
}

/* A listener of uid 65534, with the rendezvous name bound: the victim's
 * offer comes to it, it attaches, then turns the victim's bells against it. */
static int hostile_server(void *p)
{
	struct arena *ar = p;
	struct sockaddr_in at = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(at);
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * SL_RDV_FDS)];
	} ctl;
	char msg[256];
	struct iovec iov = { .iov_base = msg, .iov_len = sizeof(msg) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
	struct sl_seg_header hdr;
	struct sl_key key;
	struct pollfd pfd;
	struct bells b;
	int l, rdv, e, t, fds[SL_RDV_FDS];
	uint32_t offered = SL_OFFER_OFFERED;
	void *base;

	become_nobody(ar->userns);
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	TU_CHECK(l >= 0 && bind(l, (struct sockaddr *)&at, sizeof(at)) == 0 && listen(l, 4) == 0, "listen");
	TU_CHECK(getsockname(l, (struct sockaddr *)&at, &len) == 0, "getsockname");
	key = loopback(ntohs(at.sin_port));
	rdv = sl_rdv_listen(&key);
	TU_CHECK(rdv >= 0, "bind the rendezvous name");
	TU_CHECK(tu_sync_put_child(&ar->async, key.port) == 0, "report the port");
	pfd = (struct pollfd){ .fd = rdv, .events = POLLIN };
	TU_CHECK(poll(&pfd, 1, 10000) == 1, "no offer came");
	e = accept(rdv, NULL, NULL);
	TU_CHECK(e >= 0, "accept the offer");
	pfd = (struct pollfd){ .fd = e, .events = POLLIN };
	TU_CHECK(poll(&pfd, 1, 10000) == 1 && recvmsg(e, &m, 0) > 0 && CMSG_FIRSTHDR(&m) &&
			 CMSG_FIRSTHDR(&m)->cmsg_len == CMSG_LEN(sizeof(int) * SL_RDV_FDS),
		 "the offer's descriptors");
	memcpy(fds, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof(fds));
	t = accept(l, NULL, NULL);
	TU_CHECK(t >= 0, "accept");
	TU_CHECK(pread(fds[0], &hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr), "header");
	base = mmap(NULL, hdr.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	TU_CHECK(base != MAP_FAILED, "map the victim's segment");
	TU_CHECK(atomic_compare_exchange_strong((_Atomic uint32_t *)((char *)base + SL_SEG_OFFER_OFF), &offered,
						SL_OFFER_ATTACHED),
		 "attach");
	atomic_fetch_or(&area(base, &hdr, 0)->peer_state, SL_PEER_ATTACHED);
	arm_victim(area(base, &hdr, 0));
	/* The victim's own bells, as it passed them: rx is fds[1]. */
	b = (struct bells){ .rx = fds[1], .tx = fds[2], .rx_w = fds[1] };
	spring(ar->attack, &b);
	finish(ar, t);
	return 0;
}

/* An attacker of uid 65534 that passes the victim, over a Unix socket, a
 * TCP connection of its own dressed as a ring connection with hostile bells. */
static int hostile_passer(void *p)
{
	struct arena *ar = p;
	struct sockaddr_in at = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(at);
	struct manifest man = { .magic = MANIFEST_MAGIC, .app_fds = 1, .count = 1, .e = { { .index = 0, .domain = AF_INET, .own = 0 } } };
	size_t man_len = offsetof(struct manifest, e) + sizeof(man.e[0]);
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * 5)];
	} ctl;
	struct iovec iov = { .iov_base = "c", .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
	struct sl_seg_header hdr;
	struct bells b;
	int l, c, s, fds[5];
	void *base;

	close(ar->pair[0]);
	become_nobody(ar->userns);
	l = socket(AF_INET, SOCK_STREAM, 0);
	TU_CHECK(l >= 0 && bind(l, (struct sockaddr *)&at, sizeof(at)) == 0 && listen(l, 4) == 0, "listen");
	TU_CHECK(getsockname(l, (struct sockaddr *)&at, &len) == 0, "getsockname");
	c = socket(AF_INET, SOCK_STREAM, 0);
	TU_CHECK(c >= 0 && connect(c, (struct sockaddr *)&at, sizeof(at)) == 0, "connect");
	s = accept(l, NULL, NULL);
	TU_CHECK(s >= 0, "accept");
	base = make_segment(&fds[1], &hdr);
	atomic_store((_Atomic uint32_t *)((char *)base + SL_SEG_OFFER_OFF), SL_OFFER_ATTACHED);
	arm_victim(area(base, &hdr, 0));
	make_bells(ar->attack, &b);
	fds[0] = c;
	fds[2] = b.rx; /* the passed side's own bell */
	fds[3] = b.tx;
	fds[4] = memfd_create("scilan-scm", MFD_ALLOW_SEALING);
	TU_CHECK(fds[4] >= 0 && pwrite(fds[4], &man, man_len, 0) == (ssize_t)man_len &&
			 fcntl(fds[4], F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) == 0,
		 "manifest");
	memset(&ctl, 0, sizeof(ctl));
	CMSG_FIRSTHDR(&m)->cmsg_level = SOL_SOCKET;
	CMSG_FIRSTHDR(&m)->cmsg_type = SCM_RIGHTS;
	CMSG_FIRSTHDR(&m)->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(CMSG_FIRSTHDR(&m)), fds, sizeof(fds));
	TU_CHECK(sendmsg(ar->pair[1], &m, MSG_NOSIGNAL) == 1, "pass the connection");
	/* The victim took it when it asks for the rest of the stream. */
	TU_CHECK(tu_sync_get_child(&ar->async, &(uint64_t){ 0 }) == 0, "wait for the victim's receipt");
	spring(ar->attack, &b);
	close(c);
	finish(ar, s);
	return 0;
}

/* ---- the victim (root) -------------------------------------------------------------------- */

/* Read to the end: every byte of MESSAGE then the end (0, or ECONNRESET of
 * a peer that died while on the rings), or a loud end (ECONNRESET) after a
 * prefix of it.  With shut_ok, an end before any byte (a received
 * connection refused and shut down) is loud enough: the library said so. */
static void read_to_end(int fd, bool shut_ok)
{
	char got[64] = { 0 };
	size_t have = 0;
	ssize_t n;

	while ((n = scilan_recv(fd, got + have, sizeof(got) - 1 - have, 0)) > 0)
		have += (size_t)n;
	TU_CHECK(have <= strlen(MESSAGE) && memcmp(got, MESSAGE, have) == 0, "bytes not of the stream: '%s'", got);
	if (n == 0 && !(shut_ok && have == 0))
		TU_CHECK(have == strlen(MESSAGE), "EOF after '%s': bytes lost quietly", got);
	if (n < 0)
		TU_CHECK(errno == ECONNRESET || errno == EPIPE, "recv: %s", strerror(errno));
	tu_log("victim read '%s', then %s", got, n == 0 ? "EOF" : strerror(errno));
}

static void report(struct arena *ar, int fd)
{
	int acc = tu_accelerated(fd);

	tu_log("victim's connection accelerated: %d", acc);
	if (acc == 1)
		TU_CHECK(tu_set_poll_us(fd, 0) == 0, "poll_us"); /* sleep on the bell at once */
	TU_CHECK(tu_sync_put_child(&ar->vsync, 1) == 0, "report");
}

static int victim_server(void *p)
{
	struct arena *ar = p;
	uint16_t port;
	int l, s;

	l = tu_listen(AF_INET, 4, &port);
	TU_CHECK(l >= 0, "listen");
	TU_CHECK(tu_sync_put_child(&ar->vsync, port) == 0, "report the port");
	s = tu_accept(l);
	TU_CHECK(s >= 0, "accept");
	report(ar, s);
	/* Rings the peer's bell (it armed): a pipe nobody reads raised SIGPIPE. */
	TU_CHECK(scilan_send(s, "x", 1, MSG_NOSIGNAL) == 1 || errno == EPIPE || errno == ECONNRESET, "send: %s",
		 strerror(errno));
	read_to_end(s, false);
	scilan_close(s);
	scilan_close(l);
	return 0;
}

static int victim_client(void *p)
{
	struct arena *ar = p;
	int c = tu_connect(AF_INET, ar->port);

	TU_CHECK(c >= 0, "connect");
	report(ar, c);
	TU_CHECK(scilan_send(c, "x", 1, MSG_NOSIGNAL) == 1 || errno == EPIPE || errno == ECONNRESET, "send: %s",
		 strerror(errno));
	read_to_end(c, false);
	scilan_close(c);
	return 0;
}

static int victim_receiver(void *p)
{
	struct arena *ar = p;
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	char b;
	struct iovec iov = { .iov_base = &b, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
	int fd;

	close(ar->pair[1]);
	TU_CHECK(scilan_recvmsg(ar->pair[0], &m, 0) == 1, "recvmsg: %s", strerror(errno));
	TU_CHECK(CMSG_FIRSTHDR(&m) && CMSG_FIRSTHDR(&m)->cmsg_len == CMSG_LEN(sizeof(int)), "one descriptor");
	memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof(int));
	report(ar, fd);
	read_to_end(fd, true);
	scilan_close(fd);
	return 0;
}

/* ---- the referee ---------------------------------------------------------------------------- */

/* utime + stime of a child, in seconds. */
static double cpu_of(pid_t pid)
{
	char path[64], line[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	cr_assert_not_null(fgets(line, sizeof(line), f));
	fclose(f);
	p = strrchr(line, ')');
	cr_assert_not_null(p);
	/* After the name: state is field 3, utime 14, stime 15. */
	cr_assert_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st), 2);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Did the child end within the bound?  Else killed and reaped. */
static bool ended_within(struct tu_child *k, unsigned secs)
{
	for (unsigned i = 0; i < secs * 100; i++) {
		if (waitpid(k->pid, &k->status, WNOHANG) == k->pid) {
			int status = k->status;

			tu_reap(k); /* its waitpid finds none: the output is collected */
			k->status = status;
			return true;
		}
		usleep(10000);
	}
	tu_kill(k);
	tu_reap(k);
	return false;
}

enum victim_kind { SERVER, CLIENT, RECEIVER };

static void play(enum victim_kind kind, enum attack attack, bool userns)
{
	struct arena *ar = tu_shared_alloc(sizeof(*ar));
	struct tu_child victim, attacker;
	char why[128];
	uint64_t v;
	double before, used;
	bool victim_ended;

	if (geteuid() != 0)
		cr_skip_test("needs root to play uid %d against root", NOBODY);
	cr_assert_not_null(tu_isolated_rundir());
	tu_watchdog(110, "hostile bells");
	ar->attack = attack;
	ar->userns = userns;
	/* Each sync made just before its child: a spawn splits the pending ones. */
	if (kind == SERVER) {
		cr_assert_eq(tu_sync_init(&ar->vsync), 0);
		cr_assert_eq(tu_spawn(&victim, victim_server, ar), 0);
		cr_assert_eq(tu_sync_get(&ar->vsync, &v), 0, "victim:\n%s", (tu_reap(&victim), victim.output));
		ar->port = (uint16_t)v;
		cr_assert_eq(tu_sync_init(&ar->async), 0);
		cr_assert_eq(tu_spawn(&attacker, hostile_client, ar), 0);
	} else if (kind == CLIENT) {
		cr_assert_eq(tu_sync_init(&ar->async), 0);
		cr_assert_eq(tu_spawn(&attacker, hostile_server, ar), 0);
		cr_assert_eq(tu_sync_get(&ar->async, &v), 0, "attacker:\n%s", (tu_reap(&attacker), attacker.output));
		ar->port = (uint16_t)v;
		cr_assert_eq(tu_sync_init(&ar->vsync), 0);
		cr_assert_eq(tu_spawn(&victim, victim_client, ar), 0);
	} else {
		cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, ar->pair), 0);
		cr_assert_eq(tu_sync_init(&ar->async), 0);
		cr_assert_eq(tu_spawn(&attacker, hostile_passer, ar), 0);
		cr_assert_eq(tu_sync_init(&ar->vsync), 0);
		cr_assert_eq(tu_spawn(&victim, victim_receiver, ar), 0);
		close(ar->pair[0]);
		close(ar->pair[1]);
	}
	cr_assert_eq(tu_sync_get(&ar->vsync, &v), 0, "victim did not connect:\n%s\nattacker:\n%s",
		     (tu_reap(&victim), victim.output), (tu_kill(&attacker), tu_reap(&attacker), attacker.output));
	if (kind == RECEIVER)
		cr_assert_eq(tu_sync_put(&ar->async, 1), 0);
	cr_assert_eq(tu_sync_get(&ar->async, &v), 0, "attacker:\n%s", (tu_reap(&attacker), attacker.output));
	/* The victim waits for the rest of the stream: asleep, not spinning. */
	before = cpu_of(victim.pid);
	tu_sleep_ms(1000);
	used = cpu_of(victim.pid) - before;
	cr_assert_eq(tu_sync_put(&ar->async, 1), 0);
	victim_ended = ended_within(&victim, VICTIM_BOUND_S);
	tu_reap(&attacker);
	cr_log_info("victim:\n%s\nattacker:\n%s", victim.output, attacker.output);
	cr_assert(victim_ended, "the victim hung (killed after %d s):\n%s", VICTIM_BOUND_S, victim.output);
	cr_assert(!(WIFSIGNALED(victim.status) && WTERMSIG(victim.status) == SIGPIPE), "the victim died of SIGPIPE:\n%s",
		  victim.output);
	cr_assert(tu_exited_with(&victim, 0), "victim %s:\n%s", tu_status_str(&victim, why, sizeof(why)),
		  victim.output);
	cr_assert(tu_exited_with(&attacker, 0), "attacker %s:\n%s", tu_status_str(&attacker, why, sizeof(why)),
		  attacker.output);
	/* Loose: a spinning victim uses the whole second (or its CPU share). */
	cr_assert_lt(used, 0.5, "the victim spun: %.2f s of CPU over an idle second", used);
	tu_watchdog_cancel();
}

Test(hostile_bells, server_blocking_bell_with_bytes_left, .timeout = 120)
{
	play(SERVER, BLOCKING_WITH_BYTES, false);
}

Test(hostile_bells, server_blocking_bell_from_a_user_namespace, .timeout = 120)
{
	play(SERVER, BLOCKING_WITH_BYTES, true);
}

Test(hostile_bells, server_dev_zero_bell, .timeout = 120)
{
	play(SERVER, DEV_ZERO, false);
}

Test(hostile_bells, server_bell_without_reader, .timeout = 120)
{
	play(SERVER, NO_READER, false);
}

Test(hostile_bells, server_socket_bell, .timeout = 120)
{
	play(SERVER, SOCKET, false);
}

Test(hostile_bells, server_regular_file_bell, .timeout = 120)
{
	play(SERVER, REGULAR_FILE, false);
}

Test(hostile_bells, client_blocking_bell_with_bytes_left, .timeout = 120)
{
	play(CLIENT, BLOCKING_WITH_BYTES, false);
}

Test(hostile_bells, passed_connection_blocking_bell_with_bytes_left, .timeout = 120)
{
	play(RECEIVER, BLOCKING_WITH_BYTES, false);
}

Test(hostile_bells, passed_connection_dev_zero_bell, .timeout = 120)
{
	play(RECEIVER, DEV_ZERO, false);
}

Test(hostile_bells, passed_connection_bell_without_reader, .timeout = 120)
{
	play(RECEIVER, NO_READER, false);
}
