/* agree.c — scenarios where one end of a connection is not (or not wholly)
 * under the hook: io_uring data calls, io_uring and raw-syscall acceptors,
 * an acceptor that cannot open the offer, close right after send.  Every
 * byte must arrive, checked, without a hang.  Links liburing. */
#include <liburing.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "scen.h"
#include "scen_uring.h"

#define REQ_LEN 300000  /* more than a 256 KiB ring: the client blocks on it */
#define RSP_LEN 200000
#define BANNER "220 scilan test banner\r\n"

static uint16_t port;
static int lfd;

/* ---- the hooked end ----------------------------------------------------------- */

/* Send the request, read the response: both checked against the stream. */
static void client_exchange(const char *what, int c, bool banner, bool wait_epoll)
{
	char *req = malloc(REQ_LEN), *rsp = malloc(RSP_LEN), b[sizeof(BANNER)];
	ssize_t sent, got;

	if (banner && wait_epoll) {
		/* An event loop's wait for the greeting, before any recv. */
		int ep = MUST(epoll_create1(0));
		struct epoll_event ev = { .events = EPOLLIN }, out;

		MUST(epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev));
		SHOW(epoll_wait(ep, &out, 1, 20000));
		say("%s: epoll events %s", what, epmask(out.events));
		close(ep);
	}
	if (banner) {
		got = recv_all(c, b, strlen(BANNER));
		say("%s: banner %zd bytes, intact %d", what, got, got == (ssize_t)strlen(BANNER) && !memcmp(b, BANNER, (size_t)got));
	}
	stream_fill(1, 0, req, REQ_LEN);
	sent = send_all(c, req, REQ_LEN);
	got = recv_all(c, rsp, RSP_LEN);
	say("%s: sent %zd, received %zd, intact %d", what, sent, got, stream_check(2, 0, rsp, (size_t)got));
	SHOW(recv(c, b, 1, 0));
	free(req);
	free(rsp);
}

/* The server's side of the exchange with whatever calls it is given. */
static void server_exchange(int s, size_t (*recv_fn)(int, char *, size_t), size_t (*send_fn)(int, const char *, size_t))
{
	char *req = malloc(REQ_LEN), *rsp = malloc(RSP_LEN);
	size_t got = recv_fn(s, req, REQ_LEN);

	say("request %zu bytes, intact %d", got, stream_check(1, 0, req, got));
	stream_fill(2, 0, rsp, RSP_LEN);
	say("response sent %zu", send_fn(s, rsp, RSP_LEN));
	free(req);
	free(rsp);
}

static size_t libc_recv_all(int fd, char *buf, size_t len)
{
	ssize_t n = recv_all(fd, buf, len);

	return n > 0 ? (size_t)n : 0;
}

static size_t libc_send_all(int fd, const char *buf, size_t len)
{
	ssize_t n = send_all(fd, buf, len);

	return n > 0 ? (size_t)n : 0;
}

/* ---- acceptors the hook does not see -------------------------------------------- */

/* io_uring accept, recv and send: a plain acceptor that waits for the
 * client's request. */
static int uring_server(void *arg)
{
	int s;

	(void)arg;
	uring_init();
	s = uring_accept(lfd);
	if (s < 0) {
		errno = -s;
		fatal("io_uring accept");
	}
	server_exchange(s, uring_recv_all, uring_send_all);
	close(s);
	return 0;
}

static int sc_uring_server(void)
{
	struct kid k;
	int c;

	lfd = tcp_listener(&port);
	kid_start(&k, "uring server", uring_server, NULL);
	c = tcp_connect(port);
	client_exchange("client", c, false, false);
	close(c);
	kid_join(&k);
	return 0;
}

/* A raw accept4 system call on a listener the hook registered. */
static int raw_accept(void)
{
	return (int)MUST(syscall(SYS_accept4, lfd, NULL, NULL, 0));
}

static int raw_server(void *arg)
{
	bool banner = arg != NULL;
	int s = raw_accept();

	if (banner)
		say("banner sent %zu", libc_send_all(s, BANNER, strlen(BANNER)));
	server_exchange(s, libc_recv_all, libc_send_all);
	close(s);
	return 0;
}

static int raw_pair(bool banner, bool wait_epoll)
{
	struct kid k;
	int c;

	lfd = tcp_listener(&port);
	kid_start(&k, "raw server", raw_server, banner ? "" : NULL);
	c = tcp_connect(port);
	client_exchange("client", c, banner, wait_epoll);
	close(c);
	kid_join(&k);
	return 0;
}

static int sc_raw_client_first(void)
{
	return raw_pair(false, false);
}

static int sc_raw_banner(void)
{
	return raw_pair(true, false);
}

static int sc_raw_banner_epoll(void)
{
	return raw_pair(true, true);
}

/* close() right after send(), before the plain acceptor took the
 * connection: everything sent arrives, then EOF. */
static int drain_server(void *arg)
{
	char *buf = malloc(REQ_LEN + 1);
	ssize_t got;
	int s;

	(void)arg;
	s = raw_accept();
	got = recv_all(s, buf, REQ_LEN + 1);
	say("received %zd bytes before EOF, intact %d", got, stream_check(1, 0, buf, (size_t)(got > 0 ? got : 0)));
	close(s);
	free(buf);
	return 0;
}

static int sc_close_after_send(void)
{
	char *req = malloc(REQ_LEN / 2);
	struct kid k;
	int c;

	lfd = tcp_listener(&port);
	kid_start(&k, "raw server", drain_server, NULL);
	c = tcp_connect(port);
	stream_fill(1, 0, req, REQ_LEN / 2);
	SHOW(send_all(c, req, REQ_LEN / 2));
	SHOW(close(c));
	kid_join(&k);
	free(req);
	return 0;
}

/* A client that execs with its connection before the plain acceptor
 * spoke: the new image must find every byte the old one sent on the path
 * it takes (the offer is decided at the hand-over). */
static int exec_client(void *arg)
{
	char *req = malloc(REQ_LEN / 2), fdarg[16];
	int c;

	(void)arg;
	close(lfd);
	c = tcp_connect(port);
	stream_fill(1, 0, req, REQ_LEN / 2);
	say("old image sent %zd", send_all(c, req, REQ_LEN / 2));
	snprintf(fdarg, sizeof(fdarg), "%d", c);
	execl(scen_self, scen_self, "exec_rest", fdarg, (char *)NULL);
	fatal("execl");
}

static int sc_exec_rest(void)
{
	char *req = malloc(REQ_LEN - REQ_LEN / 2), *rsp = malloc(RSP_LEN), b;
	int c = scen_argc > 0 ? atoi(scen_argv[0]) : -1;
	ssize_t got;

	stream_fill(1, REQ_LEN / 2, req, REQ_LEN - REQ_LEN / 2);
	say("new image sent %zd", send_all(c, req, REQ_LEN - REQ_LEN / 2));
	got = recv_all(c, rsp, RSP_LEN);
	say("new image received %zd, intact %d", got, stream_check(2, 0, rsp, (size_t)(got > 0 ? got : 0)));
	SHOW(recv(c, &b, 1, 0));
	close(c);
	return 0;
}

static int sc_exec_while_offered(void)
{
	struct kid k;
	int s;

	lfd = tcp_listener(&port);
	kid_start(&k, "exec client", exec_client, NULL);
	s = raw_accept();
	server_exchange(s, libc_recv_all, libc_send_all);
	close(s);
	kid_join(&k);
	return 0;
}

/* A hooked acceptor that cannot open the offer (no descriptor left for
 * it): the connection must still carry everything, on kernel TCP. */
/* An acceptor with room for arg descriptors beside the accepted socket: 0,
 * none for the offer; 1, the rendezvous connection but none of what it
 * passes, then the offer file and one of its bells but not the segment; 2,
 * the rendezvous connection and the segment but not the bells passed with
 * it; 3, also the connector's bell but not its own (the offer file's bells
 * then fit beside the segment). */
static int starved_server(void *arg)
{
	struct rlimit old, low;
	int s, lowest = MUST(fcntl(lfd, F_DUPFD, 0));

	close(lowest);
	MUST(getrlimit(RLIMIT_NOFILE, &old));
	low = old;
	low.rlim_cur = (rlim_t)lowest + 1 + (rlim_t)(intptr_t)arg;
	MUST(setrlimit(RLIMIT_NOFILE, &low));
	s = accept(lfd, NULL, NULL);
	MUST(setrlimit(RLIMIT_NOFILE, &old));
	if (s < 0)
		fatal("accept");
	server_exchange(s, libc_recv_all, libc_send_all);
	close(s);
	return 0;
}

static int starved(intptr_t room)
{
	struct kid k;
	int c;

	lfd = tcp_listener(&port);
	kid_start(&k, "starved server", starved_server, (void *)room);
	c = tcp_connect(port);
	client_exchange("client", c, false, false);
	close(c);
	kid_join(&k);
	return 0;
}

static int sc_starved_acceptor(void)
{
	return starved(0);
}

/* The acceptor holds, or can open, the segment for its connection but not
 * all it needs with it: it refuses the offer, the client moves at once. */
static int sc_starved_offer_file(void)
{
	return starved(1);
}

static int sc_starved_rdv_segment(void)
{
	return starved(2);
}

static int sc_starved_rdv_bell(void)
{
	return starved(3);
}

/* A hooked acceptor that may not open the client's descriptors (EACCES on
 * /proc/<pid>/fd: a non-dumpable client, as for a server running as another
 * user).  Root may open them anyway, so the server gives up CAP_SYS_PTRACE. */
static void drop_ptrace_capability(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data) < 0)
		return;
	data[CAP_SYS_PTRACE / 32].effective &= ~(1u << (CAP_SYS_PTRACE % 32));
	syscall(SYS_capset, &hdr, data);
}

static int guarded_server(void *arg)
{
	int s;

	(void)arg;
	drop_ptrace_capability();
	s = MUST(accept(lfd, NULL, NULL));
	server_exchange(s, libc_recv_all, libc_send_all);
	close(s);
	return 0;
}

static int sc_undumpable_client(void)
{
	struct kid k;
	int c;

	lfd = tcp_listener(&port);
	kid_start(&k, "guarded server", guarded_server, NULL);
	MUST(prctl(PR_SET_DUMPABLE, 0));
	c = tcp_connect(port);
	client_exchange("client", c, false, false);
	close(c);
	kid_join(&k);
	return 0;
}

/* ---- a hooked acceptor slow to accept ------------------------------------------ */

/* A busy server's backlog: the connection waits in the listener's queue
 * for longer than the agreement's second.  Nothing can happen to it before
 * accept, so the client must not take the silence for a plain server. */
static int late_server(void *arg)
{
	int s;

	(void)arg;
	usleep(2500 * 1000);
	s = MUST(accept(lfd, NULL, NULL));
	server_exchange(s, libc_recv_all, libc_send_all);
	close(s);
	return 0;
}

static int sc_late_acceptor(void)
{
	struct kid k;
	int c;

	lfd = tcp_listener(&port);
	kid_start(&k, "late server", late_server, NULL);
	c = tcp_connect(port);
	client_exchange("client", c, false, false);
	close(c);
	kid_join(&k);
	return 0;
}

/* ---- a hooked acceptor, a client that bypasses the hook after connect ---------- */

static int echo_server(void *arg)
{
	int s;

	(void)arg;
	s = MUST(accept(lfd, NULL, NULL));
	say("echoed %llu bytes", (unsigned long long)echo_fd(s, s));
	close(s);
	return 0;
}

static int sc_uring_client(void)
{
	size_t len = 65536, sent, got;
	char *out = malloc(len), *in = malloc(len);
	struct kid k;
	int c;

	lfd = tcp_listener(&port);
	kid_start(&k, "echo server", echo_server, NULL);
	c = tcp_connect(port);
	uring_init();
	stream_fill(3, 0, out, len);
	sent = uring_send_all(c, out, len);
	got = uring_recv_all(c, in, len);
	say("client: sent %zu, echoed %zu, intact %d", sent, got, stream_check(3, 0, in, got));
	io_uring_prep_shutdown(io_uring_get_sqe(&scen_ring), c, SHUT_WR);
	say("io_uring shutdown -> %d", uring_wait());
	say("io_uring recv at EOF -> %zu", uring_recv_all(c, in, 1));
	kid_join(&k);
	SHOW(close(c));
	free(out);
	free(in);
	return 0;
}

/* ---- a hooked acceptor that only reads, through io_uring ------------------- */

static int uring_reader(void *arg)
{
	char *in = malloc(REQ_LEN + 1);
	size_t got;
	int s;

	(void)arg;
	s = MUST(accept(lfd, NULL, NULL));
	uring_init();
	got = uring_recv_all(s, in, REQ_LEN + 1);
	say("reader got %zu, intact %d", got, got == REQ_LEN && stream_check(5, 0, in, got));
	close(s);
	return 0;
}

/* More than a ring: the client blocks on space the reader never frees in
 * the ring, until its stall shows (stall.c) and the rest goes by kernel TCP. */
static int sc_uring_reader(void)
{
	char *out = malloc(REQ_LEN);
	struct kid k;
	int c;

	lfd = tcp_listener(&port);
	kid_start(&k, "uring reader", uring_reader, NULL);
	c = tcp_connect(port);
	stream_fill(5, 0, out, REQ_LEN);
	say("sent %zd", send_all(c, out, REQ_LEN));
	close(c);
	kid_join(&k);
	return 0;
}

/* ---- a hooked acceptor that reads through io_uring after the writer left ---- */

/* Less than a ring each: the writer never waits on the ring, so only its
 * close can notice that nobody took a byte (1000 B also fits the kernel's
 * send buffer at once; 100000 B needs the reader to drain it). */
static const size_t after_close_len[] = { 1000, 100000 };

static int uring_reader_after_close(void *arg)
{
	int *sv = arg;
	char *in = malloc(after_close_len[1] + 1);

	uring_init();
	for (size_t i = 0; i < sizeof(after_close_len) / sizeof(after_close_len[0]); i++) {
		size_t want = after_close_len[i], got;
		int s = MUST(accept(lfd, NULL, NULL));

		chan_put(sv[1], 'a');
		if (chan_get(sv[1]) != 'c') /* the writer sent and closed */
			return 1;
		got = uring_recv_all(s, in, want + 1);
		say("reader got %zu of %zu, intact %d", got, want, got == want && stream_check(6, i, in, got));
		close(s);
	}
	free(in);
	return 0;
}

static int sc_uring_reader_after_close(void)
{
	char *out = malloc(after_close_len[1]);
	struct kid k;
	int sv[2];

	lfd = tcp_listener(&port);
	chan_open(sv);
	kid_start(&k, "uring reader", uring_reader_after_close, sv);
	close(sv[1]);
	for (size_t i = 0; i < sizeof(after_close_len) / sizeof(after_close_len[0]); i++) {
		int c = tcp_connect(port);

		if (chan_get(sv[0]) != 'a') /* accepted: the offer is agreed */
			break;
		stream_fill(6, i, out, after_close_len[i]);
		say("sent %zd", send_all(c, out, after_close_len[i]));
		SHOW(close(c));
		chan_put(sv[0], 'c');
	}
	kid_join(&k);
	free(out);
	return 0;
}

/* The writer exits without closing: the library's exit path moves them. */
static int send_and_exit(void *arg)
{
	char *out = malloc(after_close_len[0]);
	int c = tcp_connect(port), *sv = arg;

	if (chan_get(sv[1]) != 'a')
		return 1;
	stream_fill(7, 0, out, after_close_len[0]);
	say("sent %zd", send_all(c, out, after_close_len[0]));
	exit(0); /* c still open */
}

static int sc_uring_reader_after_exit(void)
{
	char *in = malloc(after_close_len[0] + 1);
	struct kid k;
	size_t got;
	int sv[2], s;

	lfd = tcp_listener(&port);
	chan_open(sv);
	kid_start(&k, "writer", send_and_exit, sv);
	close(sv[1]);
	s = MUST(accept(lfd, NULL, NULL));
	chan_put(sv[0], 'a');
	kid_join(&k);
	uring_init();
	got = uring_recv_all(s, in, after_close_len[0] + 1);
	say("reader got %zu of %zu, intact %d", got, after_close_len[0],
	    got == after_close_len[0] && stream_check(7, 0, in, got));
	close(s);
	free(in);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "uring_server", sc_uring_server },
		{ "raw_client_first", sc_raw_client_first },
		{ "raw_banner", sc_raw_banner },
		{ "raw_banner_epoll", sc_raw_banner_epoll },
		{ "close_after_send", sc_close_after_send },
		{ "starved_acceptor", sc_starved_acceptor },
		{ "starved_offer_file", sc_starved_offer_file },
		{ "starved_rdv_segment", sc_starved_rdv_segment },
		{ "starved_rdv_bell", sc_starved_rdv_bell },
		{ "undumpable_client", sc_undumpable_client },
		{ "late_acceptor", sc_late_acceptor },
		{ "exec_while_offered", sc_exec_while_offered },
		{ "exec_rest", sc_exec_rest },
		{ "uring_client", sc_uring_client },
		{ "uring_reader", sc_uring_reader },
		{ "uring_reader_after_close", sc_uring_reader_after_close },
		{ "uring_reader_after_exit", sc_uring_reader_after_exit },
		{ NULL, NULL },
	};

	return scen_main(argc, argv, t);
}
