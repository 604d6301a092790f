/* test_listener_close.c — a listener closed (or shut down) with a connection
 * still in its accept queue: kernel TCP resets it, and so must a scilan client
 * whose offer is out, whatever it is doing then.  Each case runs on a kernel
 * TCP pair and on a scilan pair; the two transcripts must be the same.  And
 * the reset of a plain acceptor that arrives while the client's fall-back
 * copies its ring onto the kernel socket. */
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/sockios.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "testutil.h"

/* What the client does when the listener stops. */
enum act {
	BLOCKED_RECV,     /* blocked in recv */
	BLOCKED_POLL,     /* blocked in poll for POLLIN */
	RECV,             /* idle, then recv */
	RECV_NONBLOCK,    /* idle, then recv(MSG_DONTWAIT) */
	SEND,             /* idle, then send */
	POLL_IN_OUT,      /* idle, then poll for POLLIN|POLLOUT without waiting */
	POLL_OUT,         /* idle, then poll for POLLOUT without waiting */
	SHUTDOWN_WR,      /* idle, then shutdown(SHUT_WR) */
	SO_ERROR_READ,    /* idle, then getsockopt(SO_ERROR) */
	CONNECT_NONBLOCKING, /* connected without blocking; then poll and SO_ERROR */
};

struct run {
	enum act act;
	bool scilan;
	bool late;        /* the listener stops after the agreement's second */
	bool shut_listener; /* shutdown(SHUT_RDWR) instead of close */
	int l, c;
	_Atomic bool blocking; /* the client thread is about to block */
	char t[1024];     /* the transcript */
};

static void note(struct run *r, const char *what, long rc, int err)
{
	size_t n = strlen(r->t);

	snprintf(r->t + n, sizeof(r->t) - n, "%s -> %ld%s%s\n", what, rc, rc < 0 ? " " : "",
		 rc < 0 ? strerror(err) : "");
}

static void note_poll(struct run *r, const char *what, int rc, short revents, int err)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%s revents 0x%x", what, rc > 0 ? (unsigned)revents : 0u);
	note(r, buf, rc, err);
}

static void do_poll(struct run *r, const char *what, short events, int timeout_ms)
{
	struct pollfd pfd = { .fd = r->c, .events = events };
	int rc = scilan_poll(&pfd, 1, timeout_ms);

	note_poll(r, what, rc, pfd.revents, errno);
}

static void do_recv(struct run *r, const char *what, int flags)
{
	char b[16];
	ssize_t n = scilan_recv(r->c, b, sizeof(b), flags);

	note(r, what, (long)n, errno);
}

static void do_send(struct run *r, const char *what)
{
	ssize_t n = scilan_send(r->c, "more", 4, MSG_NOSIGNAL);

	note(r, what, (long)n, errno);
}

/* The client's thread while the listener stops: a blocking call. */
static void *blocked_client(void *p)
{
	struct run *r = p;

	atomic_store(&r->blocking, true);
	if (r->act == BLOCKED_RECV)
		do_recv(r, "blocked recv", 0);
	else
		do_poll(r, "blocked poll POLLIN", POLLIN, 20000);
	return NULL;
}

/* The kernel socket under the client shows the reset: the listener's RST
 * arrived (asked of the kernel directly, which takes nothing from it). */
static void wait_for_reset(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	cr_assert_eq(poll(&pfd, 1, 10000), 1, "the listener's close never reset the connection");
	cr_assert(pfd.revents & POLLERR, "revents 0x%x", (unsigned)pfd.revents);
}

static void act_after(struct run *r)
{
	int err = 0, rc;
	socklen_t len = sizeof(err);

	switch (r->act) {
	case RECV:
		do_recv(r, "recv", 0);
		break;
	case RECV_NONBLOCK:
		do_recv(r, "recv nonblocking", MSG_DONTWAIT);
		break;
	case SEND:
		do_send(r, "send");
		break;
	case POLL_IN_OUT:
		do_poll(r, "poll POLLIN|POLLOUT", POLLIN | POLLOUT, 0);
		break;
	case POLL_OUT:
		do_poll(r, "poll POLLOUT", POLLOUT, 0);
		break;
	case SHUTDOWN_WR:
		rc = scilan_shutdown(r->c, SHUT_WR);
		note(r, "shutdown SHUT_WR", rc, errno);
		break;
	case CONNECT_NONBLOCKING:
		do_poll(r, "poll POLLIN|POLLOUT", POLLIN | POLLOUT, 0);
		/* fall through */
	case SO_ERROR_READ:
		rc = scilan_getsockopt(r->c, SOL_SOCKET, SO_ERROR, &err, &len);
		note(r, "getsockopt SO_ERROR", rc, errno);
		note(r, "SO_ERROR is", err, 0);
		break;
	default:
		break;
	}
}

/* A non-blocking connect, then a wait for it to complete, as an event loop
 * makes them. */
static int connect_nonblocking(struct run *r, uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t len = tu_loopback(AF_INET, port, &ss);
	int fd = r->scilan ? scilan_socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)
			   : socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	int rc = fd < 0 ? -1 : r->scilan ? scilan_connect(fd, (struct sockaddr *)&ss, len)
					 : connect(fd, (struct sockaddr *)&ss, len);

	cr_assert(rc == 0 || errno == EINPROGRESS, "connect: %s", strerror(errno));
	r->c = fd;
	do_poll(r, "poll for the connect", POLLOUT, 10000);
	return fd;
}

static void run_one(struct run *r)
{
	pthread_t client;
	uint16_t port;
	bool blocked = r->act == BLOCKED_RECV || r->act == BLOCKED_POLL;

	r->t[0] = 0;
	r->l = r->scilan ? tu_listen(AF_INET, 4, &port) : tu_plain_listen(AF_INET, 4, &port);
	cr_assert_geq(r->l, 0, "listen: %s", strerror(errno));
	if (r->act == CONNECT_NONBLOCKING)
		connect_nonblocking(r, port);
	else
		r->c = r->scilan ? tu_connect(AF_INET, port) : tu_plain_connect(AF_INET, port);
	cr_assert_geq(r->c, 0, "connect: %s", strerror(errno));
	/* On the rings, its offer out: nobody accepted it. */
	cr_assert_eq(tu_accelerated(r->c), r->scilan ? 1 : -1);
	note(r, "send before", (long)scilan_send(r->c, "hello", 5, MSG_NOSIGNAL), errno);
	if (r->late)
		tu_sleep_ms(1300); /* past SL_AGREE_WAIT_MS: the deadline is no longer ahead */
	if (blocked) {
		cr_assert_eq(pthread_create(&client, NULL, blocked_client, r), 0);
		while (!atomic_load(&r->blocking))
			tu_sleep_ms(1);
		tu_sleep_ms(50); /* most likely blocked by now; the outcome is the same if not */
	}
	if (r->shut_listener)
		cr_assert_eq(scilan_shutdown(r->l, SHUT_RDWR), 0, "shutdown: %s", strerror(errno));
	else
		cr_assert_eq(scilan_close(r->l), 0);
	if (blocked) {
		cr_assert_eq(pthread_join(client, NULL), 0);
	} else {
		wait_for_reset(r->c);
		act_after(r);
	}
	/* What the stream says afterwards. */
	do_recv(r, "then recv", MSG_DONTWAIT);
	do_recv(r, "then recv", MSG_DONTWAIT);
	do_send(r, "then send");
	note(r, "close", scilan_close(r->c), errno);
	if (r->shut_listener)
		scilan_close(r->l);
}

/* The case on kernel TCP, then on scilan: the same transcript. */
static void same_as_kernel(enum act act, bool late, bool shut_listener)
{
	static struct run kernel, ours;

	cr_assert_not_null(tu_isolated_rundir());
	tu_offer_always();
	tu_watchdog(60, "listener close case");
	kernel = (struct run){ .act = act, .scilan = false, .late = false, .shut_listener = shut_listener };
	ours = (struct run){ .act = act, .scilan = true, .late = late, .shut_listener = shut_listener };
	run_one(&kernel);
	run_one(&ours);
	cr_assert_str_eq(ours.t, kernel.t, "scilan:\n%s\nkernel TCP:\n%s", ours.t, kernel.t);
	tu_watchdog_cancel();
}

Test(listener_close, blocked_recv_is_reset) { same_as_kernel(BLOCKED_RECV, false, false); }
Test(listener_close, blocked_poll_is_reset) { same_as_kernel(BLOCKED_POLL, false, false); }
Test(listener_close, idle_recv_is_reset) { same_as_kernel(RECV, false, false); }
Test(listener_close, idle_nonblocking_recv_is_reset) { same_as_kernel(RECV_NONBLOCK, false, false); }
Test(listener_close, idle_send_is_reset) { same_as_kernel(SEND, false, false); }
Test(listener_close, poll_in_out_shows_the_reset) { same_as_kernel(POLL_IN_OUT, false, false); }
Test(listener_close, poll_out_shows_the_reset) { same_as_kernel(POLL_OUT, false, false); }
Test(listener_close, shutdown_after_reset) { same_as_kernel(SHUTDOWN_WR, false, false); }
Test(listener_close, so_error_after_reset) { same_as_kernel(SO_ERROR_READ, false, false); }
Test(listener_close, nonblocking_connect_then_reset) { same_as_kernel(CONNECT_NONBLOCKING, false, false); }

/* The same once the agreement's second is up (the client then revokes at
 * any look, not only at a readable kernel socket). */
Test(listener_close, late_blocked_recv_is_reset) { same_as_kernel(BLOCKED_RECV, true, false); }
Test(listener_close, late_blocked_poll_is_reset) { same_as_kernel(BLOCKED_POLL, true, false); }
Test(listener_close, late_idle_recv_is_reset) { same_as_kernel(RECV, true, false); }
Test(listener_close, late_idle_send_is_reset) { same_as_kernel(SEND, true, false); }
Test(listener_close, late_poll_in_out_shows_the_reset) { same_as_kernel(POLL_IN_OUT, true, false); }
Test(listener_close, late_poll_out_shows_the_reset) { same_as_kernel(POLL_OUT, true, false); }
Test(listener_close, late_shutdown_after_reset) { same_as_kernel(SHUTDOWN_WR, true, false); }

/* A listener shut down rather than closed resets its queue the same way. */
Test(listener_close, listener_shutdown_resets_queue) { same_as_kernel(RECV, false, true); }
Test(listener_close, listener_shutdown_poll_in_out) { same_as_kernel(POLL_IN_OUT, false, true); }

/* ---- a reset while the fall-back copies ------------------------------------- */

#define REQUEST (128 * 1024) /* within the ring, far beyond the kernel buffers below */

struct copy_run {
	int c;
	ssize_t sent, got, then_got, then_sent;
	int send_err, recv_err, then_send_err;
};

static void *send_then_recv(void *p)
{
	struct copy_run *r = p;
	char *buf = calloc(1, REQUEST), b;

	r->sent = scilan_send(r->c, buf, REQUEST, MSG_NOSIGNAL);
	r->send_err = errno;
	r->got = scilan_recv(r->c, &b, 1, 0);
	r->recv_err = errno;
	r->then_got = scilan_recv(r->c, &b, 1, MSG_DONTWAIT);
	r->then_sent = scilan_send(r->c, "x", 1, MSG_NOSIGNAL);
	r->then_send_err = errno;
	free(buf);
	return NULL;
}

static int queued(int fd, unsigned long what)
{
	int n = -1;

	return ioctl(fd, what, &n) == 0 ? n : -1;
}

/* A plain acceptor (the kernel's accept: the offer is never taken) that
 * closes with the request unread, while the client still has request bytes
 * the kernel buffers could not take (on kernel TCP: its send blocks; on
 * scilan: the fall-back's copy of the ring, a second after the connect). */
static void reset_while_sending(bool scilan, struct copy_run *r)
{
	int small = 4096, l, a, stuck = 0;
	pthread_t client;
	uint16_t port;

	l = scilan ? tu_listen(AF_INET, 4, &port) : tu_plain_listen(AF_INET, 4, &port);
	cr_assert_geq(l, 0);
	/* The kernel's buffers only (the rings keep their size). */
	cr_assert_eq(setsockopt(l, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
	r->c = scilan ? tu_connect(AF_INET, port) : tu_plain_connect(AF_INET, port);
	cr_assert_geq(r->c, 0);
	cr_assert_eq(setsockopt(r->c, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	cr_assert_eq(tu_accelerated(r->c), scilan ? 1 : -1);
	a = accept(l, NULL, NULL);
	cr_assert_geq(a, 0, "accept: %s", strerror(errno));
	cr_assert_eq(pthread_create(&client, NULL, send_then_recv, r), 0);
	/* Wait until bytes arrive and more wait behind them (a hang limit,
	 * not a timed assertion: the watchdog ends a run that never gets there). */
	while (!(queued(a, SIOCINQ) > 0 && queued(r->c, SIOCOUTQ) > 0 &&
		 queued(a, SIOCINQ) + queued(r->c, SIOCOUTQ) < REQUEST && ++stuck >= 3))
		tu_sleep_ms(10);
	cr_assert_eq(close(a), 0); /* unread bytes: the kernel sends RST */
	cr_assert_eq(pthread_join(client, NULL), 0);
	scilan_close(r->c);
	scilan_close(l);
}

Test(listener_close, reset_while_the_fall_back_copies_the_ring, .timeout = 60)
{
	struct copy_run kernel = { 0 }, ours = { 0 };

	cr_assert_not_null(tu_isolated_rundir());
	tu_offer_always();
	tu_watchdog(50, "reset while copying");
	reset_while_sending(false, &kernel);
	reset_while_sending(true, &ours);
	/* Kernel TCP: the blocked send returns what it took, the recv the reset. */
	cr_assert(kernel.sent > 0 && kernel.sent < REQUEST, "kernel send %zd (%s)", kernel.sent,
		  strerror(kernel.send_err));
	cr_assert(kernel.got == -1 && kernel.recv_err == ECONNRESET, "kernel recv %zd (%s)", kernel.got,
		  strerror(kernel.recv_err));
	/* scilan took the whole request into the ring; the reset must not turn
	 * into an end of file. */
	cr_assert_eq(ours.sent, REQUEST, "send %zd (%s)", ours.sent, strerror(ours.send_err));
	cr_assert(ours.got == -1 && ours.recv_err == ECONNRESET, "recv %zd (%s)", ours.got, strerror(ours.recv_err));
	/* Then, as on kernel TCP: end of file, and EPIPE. */
	cr_assert_eq(kernel.then_got, 0);
	cr_assert(kernel.then_sent == -1 && kernel.then_send_err == EPIPE);
	cr_assert_eq(ours.then_got, 0);
	cr_assert(ours.then_sent == -1 && ours.then_send_err == EPIPE, "then send %zd (%s)", ours.then_sent,
		  strerror(ours.then_send_err));
	tu_watchdog_cancel();
}
