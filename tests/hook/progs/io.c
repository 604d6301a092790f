/* io.c — scenarios for the data calls: read/write, readv/writev/sendmsg/recvmsg
 * up to IOV_MAX, the send/recv families with PEEK, DONTWAIT, WAITALL, NOSIGNAL,
 * EPIPE/SIGPIPE, sendfile, 64 MiB each way.  A plain POSIX program. */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "scen.h"

static uint16_t port; /* the listener the kids connect to */
static int lfd;

/* A kid with its own connection (made after the fork: nothing inherited
 * but the listener, which it closes). */
static int kid_connect(void)
{
	close(lfd);
	return tcp_connect(port);
}

/* Kid: read to EOF, report count and checksum, answer "done". */
static int reader(void *arg)
{
	int c = kid_connect();
	char *buf = malloc(1 << 16);
	uint64_t h = FNV_INIT, total = 0;
	ssize_t n;

	(void)arg;
	while ((n = read(c, buf, 1 << 16)) > 0) {
		h = fnv(h, buf, (size_t)n);
		total += (uint64_t)n;
	}
	say("read to EOF: last read %zd, %llu bytes, fnv %016llx", n, (unsigned long long)total,
	    (unsigned long long)h);
	say("write done -> %zd", write(c, "done", 4));
	close(c);
	free(buf);
	return 0;
}

static int sc_rw(void)
{
	static const size_t sizes[] = { 1, 7, 4096, 65536, 1 << 20, 3000001 };
	struct kid k;
	uint64_t h = FNV_INIT, off = 0;
	char *buf = malloc(3000001), tail[8] = { 0 };
	int s;

	lfd = tcp_listener(&port);
	kid_start(&k, "reader", reader, NULL);
	s = MUST(accept(lfd, NULL, NULL));
	SHOW(write(s, buf, 0));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		stream_fill(1, off, buf, sizes[i]);
		h = fnv(h, buf, sizes[i]);
		off += sizes[i];
		/* A blocking write on a stream socket sends everything. */
		say("write %zu -> %zd", sizes[i], write(s, buf, sizes[i]));
	}
	say("expected: %llu bytes, fnv %016llx", (unsigned long long)off, (unsigned long long)h);
	SHOW(shutdown(s, SHUT_WR));
	SHOW(read(s, tail, 0));
	SHOW(read(s, tail, sizeof(tail) - 1));
	say("reply '%s'", tail);
	SHOW(read(s, tail, sizeof(tail)));
	kid_join(&k);
	close(s);
	close(lfd);
	free(buf);
	return 0;
}

/* iovec i of a vector: lengths 0..199 (some empty), over one big buffer. */
static size_t vec_build(struct iovec *iov, int n, char *base)
{
	size_t total = 0;

	for (int i = 0; i < n; i++) {
		iov[i].iov_base = base + total;
		iov[i].iov_len = (size_t)((i * 37) % 200);
		total += iov[i].iov_len;
	}
	return total;
}

/* Kid: read to EOF with readv / recvmsg into IOV_MAX small iovecs. */
static int vec_reader(void *arg)
{
	int c = kid_connect(), use_msg = 0;
	struct iovec iov[IOV_MAX + 1];
	char *buf = malloc(1 << 20);
	uint64_t h = FNV_INIT, total = 0;
	ssize_t n;

	(void)arg;
	vec_build(iov, IOV_MAX, buf);
	for (;;) {
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = IOV_MAX };

		/* Alternate the two calls; both scatter in iovec order. */
		n = (use_msg ^= 1) ? recvmsg(c, &m, 0) : readv(c, iov, IOV_MAX);
		if (n <= 0)
			break;
		if (use_msg && m.msg_flags)
			say("recvmsg msg_flags 0x%x", m.msg_flags);
		for (int i = 0; n > 0 && i < IOV_MAX; i++) {
			size_t k = (size_t)n < iov[i].iov_len ? (size_t)n : iov[i].iov_len;

			h = fnv(h, iov[i].iov_base, k);
			n -= (ssize_t)k;
			total += k;
		}
	}
	say("scattered to EOF: last %zd, %llu bytes, fnv %016llx", n, (unsigned long long)total,
	    (unsigned long long)h);
	{
		struct iovec one = { .iov_base = buf, .iov_len = 1 };

		SHOW(readv(c, &one, 0));
		SHOW(readv(c, iov, IOV_MAX + 1));
	}
	close(c);
	free(buf);
	return 0;
}

static int sc_vec(void)
{
	static const int counts[] = { 1, 2, 3, 16, 64, 500, IOV_MAX };
	struct iovec *iov = calloc(IOV_MAX + 1, sizeof(*iov));
	char *buf = malloc(1 << 20);
	uint64_t h = FNV_INIT, off = 0;
	struct kid k;
	int s;

	say("IOV_MAX %d", IOV_MAX);
	lfd = tcp_listener(&port);
	kid_start(&k, "reader", vec_reader, NULL);
	s = MUST(accept(lfd, NULL, NULL));
	for (int round = 0; round < 2; round++) {
		for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
			size_t total = vec_build(iov, counts[i], buf);
			struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)counts[i] };
			ssize_t n;

			stream_fill(2, off, buf, total);
			h = fnv(h, buf, total);
			off += total;
			n = round ? sendmsg(s, &m, 0) : writev(s, iov, counts[i]);
			say("%s(%d iovecs, %zu bytes) -> %zd", round ? "sendmsg" : "writev", counts[i], total, n);
		}
	}
	/* Limits: more than IOV_MAX is refused; zero iovecs send nothing. */
	vec_build(iov, IOV_MAX + 1, buf);
	SHOW(writev(s, iov, IOV_MAX + 1));
	{
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = IOV_MAX + 1 };

		SHOW(sendmsg(s, &m, 0));
		m.msg_iovlen = 0;
		SHOW(sendmsg(s, &m, 0));
	}
	SHOW(writev(s, iov, 0));
	{
		volatile int neg = -1; /* hidden from the compiler's bounds check */

		SHOW(writev(s, iov, neg));
	}
	say("expected: %llu bytes, fnv %016llx", (unsigned long long)off, (unsigned long long)h);
	close(s);
	kid_join(&k);
	close(lfd);
	free(buf);
	free(iov);
	return 0;
}

/* Kid for MSG_WAITALL: pieces with pauses, then (second round) a short
 * piece and EOF. */
static int trickler(void *arg)
{
	int c = kid_connect(), *chan = arg;
	char buf[300];

	stream_fill(3, 0, buf, sizeof(buf));
	for (int i = 0; i < 3; i++) {
		say("send piece -> %zd", send(c, buf + i * 100, 100, 0));
		if (i == 0)
			chan_get(chan[1]); /* the parent is about to wait */
		usleep(20000); /* not a timing assertion: makes the wait real */
	}
	chan_get(chan[1]);
	say("send short -> %zd", send(c, buf, 50, 0));
	close(c);
	return 0;
}

static int sc_flags(void)
{
	char buf[400], peek[16];
	struct sockaddr_in from;
	socklen_t fl;
	int c, s, chan[2];
	struct kid k;

	tcp_pair(&c, &s);
	/* send / recv / sendto / recvfrom on a connected socket. */
	SHOW(send(c, "0123456789", 10, 0));
	memset(peek, 0, sizeof(peek));
	SHOW(recv(s, peek, 4, MSG_PEEK));
	say("peeked '%s'", peek);
	memset(peek, 0, sizeof(peek));
	SHOW(recv(s, peek, sizeof(peek) - 1, MSG_PEEK));
	say("peeked all '%s'", peek);
	memset(peek, 0, sizeof(peek));
	SHOW(recv(s, peek, 3, 0));
	say("then read '%s'", peek);
	memset(peek, 0, sizeof(peek));
	fl = sizeof(from);
	SHOW(recvfrom(s, peek, sizeof(peek) - 1, 0, (struct sockaddr *)&from, &fl));
	say("recvfrom '%s' addrlen %u", peek, fl);
	SHOW(recv(s, peek, sizeof(peek), MSG_DONTWAIT));
	SHOW(recv(s, peek, sizeof(peek), MSG_DONTWAIT | MSG_PEEK));
	SHOW(recv(s, peek, 0, MSG_DONTWAIT));
	SHOW(sendto(c, "ab", 2, 0, NULL, 0));
	SHOW(sendto(c, "cd", 2, MSG_DONTWAIT, NULL, 0));
	SHOW(send(c, "ef", 2, MSG_MORE));
	SHOW(send(c, "gh", 2, MSG_NOSIGNAL));
	SHOW(recv(s, buf, 8, MSG_WAITALL));
	{
		struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
		struct msghdr m = { .msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov, .msg_iovlen = 1 };

		SHOW(send(c, "msg", 3, 0));
		SHOW(recvmsg(s, &m, 0));
		say("recvmsg namelen %u flags 0x%x", m.msg_namelen, m.msg_flags);
		m.msg_namelen = sizeof(from);
		SHOW(recvmsg(s, &m, MSG_DONTWAIT));
	}
	close(c);
	close(s);
	/* MSG_WAITALL against a peer that sends in pieces. */
	lfd = tcp_listener(&port);
	chan_open(chan);
	kid_start(&k, "trickler", trickler, chan);
	close(chan[1]);
	s = MUST(accept(lfd, NULL, NULL));
	chan_put(chan[0], 'w');
	SHOW(recv(s, buf, 300, MSG_WAITALL));
	say("waitall data intact %d", stream_check(3, 0, buf, 300));
	chan_put(chan[0], 'w');
	SHOW(recv(s, buf, 300, MSG_WAITALL));
	SHOW(recv(s, buf, 300, MSG_WAITALL));
	kid_join(&k);
	close(s);
	close(lfd);
	return 0;
}

static volatile sig_atomic_t sigpipes;
static void on_sigpipe(int sig)
{
	(void)sig;
	sigpipes++;
}

/* Send until an error; report the first error and the EPIPE count.  How
 * many sends succeed first depends on when the peer's close is learnt (TCP
 * may accept one), so only the outcome is printed. */
static void send_until_error(const char *what, int fd, int flags, bool use_write)
{
	int succeeded = 0, epipes = 0, first = 0;

	sigpipes = 0;
	for (int i = 0; i < 8; i++) {
		ssize_t n;

		errno = 0;
		n = use_write ? write(fd, "x", 1) : send(fd, "x", 1, flags);
		if (n == 1 && !first) {
			succeeded++;
			continue;
		}
		if (!first)
			first = errno;
		epipes += errno == EPIPE;
	}
	say("%s: at most one send before the error: %d, first error %s, all errors EPIPE %d, "
	    "one SIGPIPE per EPIPE %d, SIGPIPEs %s",
	    what, succeeded <= 1, en(first), epipes == 8 - succeeded, sigpipes == 0 || (int)sigpipes == epipes,
	    sigpipes ? "some" : "none");
}

static int default_sigpipe(void *arg)
{
	int c = *(int *)arg;

	signal(SIGPIPE, SIG_DFL);
	say("sending with the default SIGPIPE action");
	for (int i = 0; i < 8; i++)
		send(c, "x", 1, 0);
	say("still alive (wrong)");
	return 0;
}

static int sc_epipe(void)
{
	struct sigaction sa = { .sa_handler = on_sigpipe };
	char b;
	int c, s;

	sigemptyset(&sa.sa_mask);
	MUST(sigaction(SIGPIPE, &sa, NULL));
	/* Our own SHUT_WR: EPIPE at once, with SIGPIPE unless MSG_NOSIGNAL. */
	tcp_pair(&c, &s);
	SHOW(shutdown(c, SHUT_WR));
	send_until_error("after own SHUT_WR, MSG_NOSIGNAL", c, MSG_NOSIGNAL, false);
	send_until_error("after own SHUT_WR, send", c, 0, false);
	send_until_error("after own SHUT_WR, write", c, 0, true);
	close(c);
	close(s);
	/* The peer closed (having read everything). */
	tcp_pair(&c, &s);
	SHOW(close(s));
	SHOW(recv(c, &b, 1, 0));
	send_until_error("peer closed, MSG_NOSIGNAL", c, MSG_NOSIGNAL, false);
	close(c);
	tcp_pair(&c, &s);
	close(s);
	send_until_error("peer closed, send", c, 0, false);
	close(c);
	tcp_pair(&c, &s);
	close(s);
	send_until_error("peer closed, write", c, 0, true);
	close(c);
	signal(SIGPIPE, SIG_IGN);
	tcp_pair(&c, &s);
	close(s);
	send_until_error("peer closed, SIGPIPE ignored", c, 0, false);
	close(c);
	/* The default action kills. */
	{
		struct kid k;

		tcp_pair(&c, &s);
		close(s);
		kid_start(&k, "default", default_sigpipe, &c);
		kid_join(&k);
		close(c);
	}
	return 0;
}

static int sc_sendfile(void)
{
	static const size_t sizes[] = { 0, 1, 10000, 65536, 3 * (1 << 20) + 123 };
	char path[] = "/tmp/hookscen-sendfile-XXXXXX", *buf = malloc(4 << 20), tail[8] = { 0 };
	uint64_t h = FNV_INIT, sent = 0;
	int f = MUST(mkstemp(path)), s;
	struct kid k;
	off_t off;

	unlink(path);
	lfd = tcp_listener(&port);
	kid_start(&k, "reader", reader, NULL);
	s = MUST(accept(lfd, NULL, NULL));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t done = 0;

		stream_fill(4 + i, 0, buf, sizes[i]);
		MUST(ftruncate(f, 0));
		MUST(pwrite(f, buf, sizes[i], 0));
		h = fnv(h, buf, sizes[i]);
		/* With an offset pointer: the file position stays put. */
		off = 0;
		while (done < sizes[i]) {
			ssize_t n = sendfile(s, f, &off, sizes[i] - done);

			if (n <= 0)
				fatal("sendfile");
			done += (size_t)n;
		}
		sent += done;
		say("sendfile %zu bytes: offset now %lld, file position %lld", sizes[i], (long long)off,
		    (long long)lseek(f, 0, SEEK_CUR));
	}
	/* Past the end: nothing.  More than there is: what there is. */
	off = 4 << 20;
	SHOW(sendfile(s, f, &off, 100));
	off = (off_t)sizes[4] - 10;
	SHOW(sendfile(s, f, &off, 100));
	h = fnv(h, buf + sizes[4] - 10, 10);
	sent += 10;
	/* NULL offset: the file position moves. */
	MUST(lseek(f, (off_t)sizes[4] - 1000, SEEK_SET));
	SHOW(sendfile(s, f, NULL, 600));
	say("file position after NULL-offset sendfile: end-%lld", (long long)sizes[4] - lseek(f, 0, SEEK_CUR));
	h = fnv(h, buf + sizes[4] - 1000, 600);
	sent += 600;
	SHOW(sendfile(s, f, NULL, 0));
	say("expected: %llu bytes, fnv %016llx", (unsigned long long)sent, (unsigned long long)h);
	SHOW(shutdown(s, SHUT_WR));
	SHOW(read(s, tail, sizeof(tail) - 1));
	say("reply '%s'", tail);
	kid_join(&k);
	close(s);
	close(f);
	close(lfd);
	free(buf);
	return 0;
}

/* A file truncated while sendfile sends it: the kernel's sendfile returns
 * a short count, with no signal.  The peer reads nothing until the truncate,
 * so the send is blocked on a full connection when it happens (the file is
 * larger than any socket buffer and any ring). */
#define TRUNC_FILE (32u << 20)
#define TRUNC_TO (1u << 20)

struct truncator {
	int file, chan;
};

static void *truncate_later(void *arg)
{
	struct truncator *t = arg;

	usleep(300 * 1000); /* let the sendfile start and block */
	MUST(ftruncate(t->file, TRUNC_TO));
	chan_put(t->chan, 'g'); /* now the reader may drain */
	return NULL;
}

/* Kid: wait for the truncate, read to EOF checking the stream, send back
 * the count. */
static int trunc_reader(void *arg)
{
	int *sv = arg, c;
	char *buf = malloc(1 << 16), reply[32];
	uint64_t total = 0;
	bool intact = true;
	ssize_t n;

	close(sv[0]);
	c = kid_connect();
	if (chan_get(sv[1]) != 'g')
		fatal("chan");
	while ((n = read(c, buf, 1 << 16)) > 0) {
		intact &= stream_check(9, total, buf, (size_t)n);
		total += (uint64_t)n;
	}
	say("read to EOF, intact %d", intact);
	n = snprintf(reply, sizeof(reply), "%llu", (unsigned long long)total);
	send_all(c, reply, (size_t)n);
	close(c);
	free(buf);
	return 0;
}

static int sc_sendfile_truncated(void)
{
	char path[] = "/tmp/hookscen-sendtrunc-XXXXXX", *buf = malloc(1 << 20), reply[32] = { 0 };
	struct truncator t;
	int f = MUST(mkstemp(path)), s, sv[2];
	pthread_t th;
	struct kid k;
	ssize_t n;
	off_t off = 0;

	unlink(path);
	for (uint64_t at = 0; at < TRUNC_FILE; at += 1 << 20) {
		stream_fill(9, at, buf, 1 << 20);
		MUST(pwrite(f, buf, 1 << 20, (off_t)at));
	}
	lfd = tcp_listener(&port);
	chan_open(sv);
	kid_start(&k, "reader", trunc_reader, sv);
	close(sv[1]);
	s = MUST(accept(lfd, NULL, NULL));
	t = (struct truncator){ f, sv[0] };
	MUST(pthread_create(&th, NULL, truncate_later, &t));
	n = sendfile(s, f, &off, TRUNC_FILE);
	pthread_join(th, NULL);
	say("sendfile of %u bytes truncated to %u: short %d, at least the new size %d, offset moved by it %d",
	    TRUNC_FILE, TRUNC_TO, n > 0 && n < (ssize_t)TRUNC_FILE, n >= (ssize_t)TRUNC_TO, off == (off_t)n);
	SHOW(sendfile(s, f, &off, TRUNC_FILE));
	SHOW(shutdown(s, SHUT_WR));
	recv_all(s, reply, sizeof(reply) - 1);
	say("the peer got exactly what sendfile reported: %d", strtoll(reply, NULL, 10) == (long long)n);
	kid_join(&k);
	close(s);
	close(f);
	close(lfd);
	close(sv[0]);
	free(buf);
	return 0;
}

/* Non-blocking sends fill the connection until EAGAIN; the writer sees no
 * space until the reader drains, then POLLOUT; nothing is lost. */
static int sc_nonblock(void)
{
	static char chunk[65536];
	int c, s;
	uint64_t sent = 0, got = 0;
	bool intact = true;
	struct pollfd pf;
	ssize_t n;

	tcp_pair(&c, &s);
	MUST(fcntl(c, F_SETFL, O_NONBLOCK));
	MUST(fcntl(s, F_SETFL, O_NONBLOCK));
	SHOW(recv(s, chunk, sizeof(chunk), 0));
	for (;;) {
		stream_fill(30, sent, chunk, sizeof(chunk));
		n = send(c, chunk, sizeof(chunk), 0);
		if (n < 0)
			break;
		sent += (uint64_t)n;
	}
	say("send until %s; something sent %d", en(errno), sent > 0);
	SHOW(send(c, chunk, 1, 0));
	pf = (struct pollfd){ .fd = c, .events = POLLOUT };
	SHOW(poll(&pf, 1, 0));
	/* Drain everything that was sent (the reader may have to wait for
	 * the rest of the writer's queue to arrive). */
	while (got < sent) {
		char buf[65536];

		pf = (struct pollfd){ .fd = s, .events = POLLIN };
		if (poll(&pf, 1, 10000) != 1)
			fatal("drain poll");
		n = recv(s, buf, sizeof(buf), 0);
		if (n <= 0)
			fatal("drain recv");
		intact = intact && stream_check(30, got, buf, (size_t)n);
		got += (uint64_t)n;
	}
	say("drained all that was sent: %d, intact %d", got == sent, intact);
	pf = (struct pollfd){ .fd = c, .events = POLLOUT };
	SHOW(poll(&pf, 1, 10000));
	say("writer revents %s", pollmask(pf.revents));
	SHOW(recv(s, chunk, sizeof(chunk), 0));
	close(c);
	close(s);
	return 0;
}

#define LARGE (64ull << 20)

/* Kid: echo everything back. */
static int echoer(void *arg)
{
	int c = kid_connect();
	char *buf = malloc(1 << 17);
	uint64_t total = 0;
	ssize_t n;

	(void)arg;
	while ((n = recv(c, buf, 1 << 17, 0)) > 0) {
		if (send_all(c, buf, (size_t)n) != n)
			fatal("echo send");
		total += (uint64_t)n;
	}
	say("echoed %llu bytes, then EOF (%zd)", (unsigned long long)total, n);
	close(c);
	free(buf);
	return 0;
}

static void *large_sender(void *arg)
{
	int s = *(int *)arg;
	char *buf = malloc(1 << 20);
	uint64_t off = 0;

	while (off < LARGE) {
		size_t n = 1000003; /* odd sizes: chunks straddle ring boundaries */

		if (n > LARGE - off)
			n = (size_t)(LARGE - off);
		stream_fill(9, off, buf, n);
		if (send_all(s, buf, n) != (ssize_t)n)
			fatal("large send");
		off += n;
	}
	shutdown(s, SHUT_WR);
	free(buf);
	return NULL;
}

static int sc_large(void)
{
	char *buf = malloc(1 << 20);
	uint64_t got = 0;
	bool intact = true;
	pthread_t t;
	struct kid k;
	ssize_t n;
	int s;

	lfd = tcp_listener(&port);
	kid_start(&k, "echo", echoer, NULL);
	s = MUST(accept(lfd, NULL, NULL));
	pthread_create(&t, NULL, large_sender, &s);
	while ((n = recv(s, buf, 1 << 20, 0)) > 0) {
		intact = intact && stream_check(9, got, buf, (size_t)n);
		got += (uint64_t)n;
	}
	pthread_join(t, NULL);
	say("sent %llu, received back %llu, data intact %d, last recv %zd", LARGE, (unsigned long long)got, intact,
	    n);
	kid_join(&k);
	close(s);
	close(lfd);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "rw", sc_rw },       { "vec", sc_vec },     { "flags", sc_flags }, { "epipe", sc_epipe },
		{ "sendfile", sc_sendfile }, { "sendfile_truncated", sc_sendfile_truncated }, { "large", sc_large }, { "nonblock", sc_nonblock }, { NULL, NULL },
	};

	return scen_main(argc, argv, t);
}
