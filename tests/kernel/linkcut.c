/* linkcut.c — the device link cut under a plain POSIX program running under
 * the preload hook (tests/kernel/init): a sender blocked on a full ring, a
 * non-blocking full-duplex poll loop, an idle edge-triggered epoll waiter,
 * a receiver asleep in recv, and an idle process that exits.  The kernel
 * TCP connection beside the link stays up, so each connection fails over:
 * a checked stream each way arrives whole, never SIGBUS, never a hang.  And
 * a peer that sent and closed before the cut: its tail still reads, then EOF.
 * A connection two processes hold (fork) at the cut ends in a reset both
 * ends see at once, never with a byte twice; one with a sending and a receiving
 * thread at each end ends whole; one that only sends after the cut keeps
 * its own TCP_USER_TIMEOUT, not the move's; one moved and then exec'd before
 * its first read has the peer's header stripped by the new image, and one
 * passed with SCM_RIGHTS then arrives whole or reset, never with the header;
 * two processes a fork made after the move share its one strip.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "guest.h"
#include "scilan.h"

#define MOCK_LINK "/sys/kernel/debug/ntb_mock/link"

enum mode {
	FULL_SEND,
	POLL_DUPLEX,
	EPOLL_EDGE,
	BLOCKED_RECV,
	IDLE_EXIT,
	CLOSED_TAIL,
	FORKED_HOLDERS,
	THREADS_DUPLEX,
	SEND_ONLY,
	EXEC_BEFORE_STRIP,
	PASSED_BEFORE_STRIP,
	FORKED_BEFORE_STRIP
};
static const char *const names[] = { "linkcut_full_ring_send", "linkcut_poll_full_duplex", "linkcut_epoll_edge_idle",
				      "linkcut_blocked_recv",	"linkcut_idle_exit",	    "linkcut_closed_peer_tail",
				      "linkcut_forked_holders", "linkcut_threads_duplex",   "linkcut_send_only",
				      "linkcut_exec_before_strip", "linkcut_passed_before_strip",
				      "linkcut_forked_before_strip" };
/* What "repeat" cycles through: the connections that stay open mid-stream. */
static const enum mode repeated[] = { FULL_SEND, POLL_DUPLEX, EPOLL_EDGE, BLOCKED_RECV, THREADS_DUPLEX };

/* A stream call's outcome: every byte; a loud end (a reset, which the
 * program sees); an early end; a wrong byte (never acceptable).  After a
 * reset one call gets the error, later ones the end, as on kernel TCP. */
enum { STREAM_LOST = 0, STREAM_WHOLE = 1, STREAM_RESET = -1, STREAM_WRONG = -2 };
/* FORKED_HOLDERS: the exit status of an end that saw the loud reset; and
 * the file the subject makes when it lets go of the connection, which the
 * peer must not have needed to learn of the reset. */
#define EXIT_RESET 20
#define SUBJECT_GONE "/tmp/linkcut.subject_gone"

static int loud(int err)
{
	return err == ECONNRESET || err == EPIPE || err == ETIMEDOUT;
}

/* EXEC_BEFORE_STRIP: what the subject sends of its stream before its exec. */
#define EXEC_FIRST 4096
#define EXEC_DONE "/tmp/linkcut.exec_done"

/* CLOSED_TAIL: what the peer sends before it closes (less than a ring). */
#define TAIL_BYTES 16384

/* Each direction carries this many checked bytes across the cut. */
#define STREAM_BYTES (1u << 20)

static unsigned char pattern(int stream, uint64_t i)
{
	return (unsigned char)(i * 131 + (i >> 11) * 7 + (uint64_t)stream * 29);
}

static void fill(int stream, uint64_t at, unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pattern(stream, at + i);
}

static int check(int stream, uint64_t at, const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pattern(stream, at + i))
			return 0;
	return 1;
}

/* Blocking: send a stream from byte done on, paced (pause_us between 4 KiB
 * pieces) or at once: STREAM_WHOLE if it all went. */
static int send_stream_from(int fd, int stream, unsigned pause_us, uint64_t done)
{
	static _Thread_local unsigned char buf[65536];

	while (done < STREAM_BYTES) {
		size_t n = pause_us ? 4096 : sizeof(buf);
		ssize_t r;

		if (n > STREAM_BYTES - done)
			n = STREAM_BYTES - done;
		fill(stream, done, buf, n);
		r = send(fd, buf, n, MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int err = errno;

			fprintf(stderr, "linkcut: pid %d: send of stream %d at byte %llu: %s\n", (int)getpid(), stream,
				(unsigned long long)done, r < 0 ? strerror(err) : "sent nothing");
			return r < 0 && loud(err) ? STREAM_RESET : STREAM_LOST;
		}
		done += (uint64_t)r;
		if (pause_us)
			usleep(pause_us);
	}
	return 1;
}

static int send_stream(int fd, int stream, unsigned pause_us)
{
	return send_stream_from(fd, stream, pause_us, 0);
}

/* Blocking: receive a stream's bytes [got, end), checking every byte:
 * STREAM_WHOLE if intact. */
static int recv_range(int fd, int stream, uint64_t got, uint64_t end)
{
	static _Thread_local unsigned char buf[65536];

	while (got < end) {
		ssize_t r = recv(fd, buf, end - got < sizeof(buf) ? (size_t)(end - got) : sizeof(buf), 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || !check(stream, got, buf, (size_t)r)) {
			int err = errno;

			fprintf(stderr, "linkcut: pid %d: receive of stream %d at byte %llu: %s\n", (int)getpid(), stream,
				(unsigned long long)got,
				r < 0 ? strerror(err) : r == 0 ? "end of stream" : "bytes that are not the stream's");
			return r > 0 ? STREAM_WRONG : r < 0 && loud(err) ? STREAM_RESET : STREAM_LOST;
		}
		got += (uint64_t)r;
	}
	return STREAM_WHOLE;
}

static int recv_stream_from(int fd, int stream, uint64_t got)
{
	return recv_range(fd, stream, got, STREAM_BYTES);
}

static int recv_stream(int fd, int stream)
{
	return recv_stream_from(fd, stream, 0);
}

static int wait_up(void)
{
	for (int i = 0; i < 300 && !links_up(); i++)
		usleep(20000);
	return links_up();
}

/* The connection left the rings (it failed over): 1; still on them: 0. */
static int moved(int c)
{
	int acc = -1;
	socklen_t len = sizeof(acc);

	return getsockopt(c, SOL_SCILAN, SCILAN_SO_ACCELERATED, &acc, &len) == 0 && acc == 0;
}

struct sender {
	int fd;
	int stream;
	unsigned pause_us;
	uint64_t from;
	int ok;
};

static void *stream_sender(void *arg)
{
	struct sender *t = arg;

	t->ok = send_stream_from(t->fd, t->stream, t->pause_us, t->from);
	return NULL;
}

/* PASSED_BEFORE_STRIP: one descriptor over a Unix socket. */
static int send_fd(int via, int fd)
{
	char b = 'f', ctl[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec v = { &b, 1 };
	struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(via, &m, 0) == 1 ? 0 : -1;
}

static int receive_fd(int via)
{
	char b, ctl[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec v = { &b, 1 };
	struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	struct cmsghdr *cm;
	int fd = -1;

	if (recvmsg(via, &m, 0) != 1 || !(cm = CMSG_FIRSTHDR(&m)) || cm->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* The end of EXEC_BEFORE_STRIP's and PASSED_BEFORE_STRIP's streams after
 * the hand-over: every byte both ways (0); passed, a loud reset both ends
 * see (EXIT_RESET); never a wrong byte (24). */
static int after_hand_over(int c, enum mode how)
{
	static unsigned char buf[4096];
	uint64_t got = EXEC_FIRST;
	int in, out, avail = 0, p[2];
	ssize_t n;

	close(open(EXEC_DONE, O_CREAT | O_WRONLY, 0600));
	if (how == EXEC_BEFORE_STRIP) {
		/* What is there to read, once the peer's bytes came: never
		 * nothing (a program takes 0 after POLLIN for the end). */
		for (int i = 0; i < 300 && avail <= 0; i++) {
			usleep(10000);
			if (ioctl(c, FIONREAD, &avail) < 0)
				return 26;
		}
		if (avail <= 0) {
			fprintf(stderr, "linkcut: FIONREAD said %d with the peer's bytes there\n", avail);
			return 26;
		}
		/* The first bytes through a pipe (splice): the kernel's buffers,
		 * without the peer's header. */
		if (pipe(p) < 0 || (n = splice(c, NULL, p[1], NULL, sizeof(buf), 0)) <= 0 ||
		    read(p[0], buf, (size_t)n) != n || !check(2, got, buf, (size_t)n)) {
			fprintf(stderr, "linkcut: splice from the connection: %s\n", strerror(errno));
			return 27;
		}
		got += (uint64_t)n;
		close(p[0]);
		close(p[1]);
	}
	in = recv_stream_from(c, 2, got);
	out = in == STREAM_WHOLE ? send_stream_from(c, 1, 0, EXEC_FIRST) : in;
	/* Passed before the peer's header came: the receiver could not strip
	 * it, so the connection was reset (a loud end both ends see). */
	if (how == PASSED_BEFORE_STRIP && (in == STREAM_RESET || out == STREAM_RESET) && in != STREAM_WRONG)
		return EXIT_RESET;
	if (in == STREAM_WHOLE && out == STREAM_WHOLE)
		return 0;
	return in == STREAM_RESET || out == STREAM_RESET ? EXIT_RESET : in == STREAM_WRONG ? 24 : 25;
}

/* The subject, the connecting end: 0 when both streams arrived intact
 * across the cut (or, idle, it exits); 2.. when something else happened.
 * Stream 1 is the subject's, stream 2 its peer's. */
static int subject(enum mode m, int c, int ready, int go)
{
	static unsigned char buf[65536];
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
	time_t end = time(NULL) + 40;
	uint64_t sent = 0, got = 0;
	int ep;

	switch (m) {
	case FULL_SEND: /* blocked on the full ring at the cut; its peer reads after it */
		if (write(ready, "r", 1) != 1)
			return 2;
		if (send_stream(c, 1, 0) != STREAM_WHOLE)
			return 3;
		return recv_stream(c, 2) != STREAM_WHOLE ? 4 : moved(c) ? 0 : 13;
	case POLL_DUPLEX: /* both ways at once, non-blocking, the cut in the middle */
		fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK);
		if (write(ready, "r", 1) != 1)
			return 2;
		while ((sent < STREAM_BYTES || got < STREAM_BYTES) && time(NULL) < end) {
			struct pollfd p = { .fd = c, .events = (short)(POLLIN | (sent < STREAM_BYTES ? POLLOUT : 0)) };
			ssize_t n;

			if (sent < STREAM_BYTES) {
				size_t k = STREAM_BYTES - sent < 4096 ? (size_t)(STREAM_BYTES - sent) : 4096;

				fill(1, sent, buf, k);
				n = send(c, buf, k, MSG_NOSIGNAL);
				if (n < 0 && errno != EAGAIN)
					return 4;
				sent += n > 0 ? (uint64_t)n : 0;
			}
			n = recv(c, buf, sizeof(buf), 0);
			if (n == 0 || (n < 0 && errno != EAGAIN) || (n > 0 && !check(2, got, buf, (size_t)n))) {
				fprintf(stderr, "linkcut: pid %d: receive of stream 2 at byte %llu: %s\n", (int)getpid(),
					(unsigned long long)got,
					n > 0 ? "not the bytes sent" : n == 0 ? "end of stream" : strerror(errno));
				return 5;
			}
			got += n > 0 ? (uint64_t)n : 0;
			poll(&p, 1, 2);
			usleep(2000); /* paced: the cut falls in the middle */
		}
		return sent != STREAM_BYTES || got != STREAM_BYTES ? 6 : moved(c) ? 0 : 13;
	case EPOLL_EDGE: /* idle in an edge-triggered epoll_wait with nothing to send */
		ep = epoll_create1(0);
		fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK);
		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev) < 0 || write(ready, "r", 1) != 1)
			return 2;
		while (got < STREAM_BYTES) {
			ssize_t n;

			if (epoll_wait(ep, &ev, 1, 20000) != 1)
				return 7;
			while ((n = recv(c, buf, sizeof(buf), 0)) > 0) {
				if (!check(2, got, buf, (size_t)n))
					return 8;
				got += (uint64_t)n;
			}
			/* The peer's end right behind its last byte is its due:
			 * only an end before the whole stream is a loss. */
			if ((n == 0 && got < STREAM_BYTES) || (n < 0 && errno != EAGAIN)) {
				fprintf(stderr, "linkcut: pid %d: edge-triggered receive of stream 2 at byte %llu: %s\n",
					(int)getpid(), (unsigned long long)got, n == 0 ? "end of stream" : strerror(errno));
				return 9;
			}
		}
		return moved(c) ? 0 : 13;
	case BLOCKED_RECV: /* asleep in recv (interrupt wait) at the cut */
		if (write(ready, "r", 1) != 1)
			return 2;
		return recv_stream(c, 2) != STREAM_WHOLE ? 10 : moved(c) ? 0 : 13;
	case IDLE_EXIT:
		if (write(ready, "r", 1) != 1)
			return 2;
		/* Told once the link is down; exits with the connection open. */
		return read(go, buf, 1) == 1 ? 0 : 11;
	case CLOSED_TAIL: /* the peer sent and closed; the link goes before we read */
		/* One byte taken first: the peer then knows we read its ring
		 * (no move of the tail at its close, stall.c), so the tail
		 * waits in our ring when the link goes. */
		if (recv(c, buf, 1, 0) != 1 || buf[0] != 'h' || write(ready, "r", 1) != 1 || read(go, buf, 1) != 1)
			return 2;
		/* A look at the connection after the cut (the driver's mark
		 * makes it see the link down) before the tail is read. */
		struct pollfd p = { .fd = c, .events = POLLIN };

		if (poll(&p, 1, 1000) != 1 || !(p.revents & POLLIN))
			return 16;
		while (got < TAIL_BYTES) {
			ssize_t n = recv(c, buf, sizeof(buf), 0);

			if (n <= 0 || !check(2, got, buf, (size_t)n))
				return 14;
			got += (uint64_t)n;
		}
		return got == TAIL_BYTES && recv(c, buf, 1, 0) == 0 ? 0 : 15;
	case SEND_ONLY: { /* it never reads: the move's user timeout must not outlive the move */
		int ut = -1;
		socklen_t ul = sizeof(ut);

		if (write(ready, "r", 1) != 1)
			return 2;
		if (send_stream(c, 1, 2000) != STREAM_WHOLE)
			return 3;
		/* The strip needs the peer's header, which its first read
		 * after the cut sends: a slow guest may not have sent it
		 * before our last piece.  One more send, a second later. */
		if (getsockopt(c, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, &ul) == 0 && ut != 0) {
			sleep(1);
			if (send(c, buf, 0, MSG_NOSIGNAL) != 0)
				return 3;
		}
		if (getsockopt(c, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, &ul) < 0 || ut != 0) {
			fprintf(stderr, "linkcut: TCP_USER_TIMEOUT %d after the move (the program's: 0)\n", ut);
			return 22;
		}
		return moved(c) ? 0 : 13;
	}
	case EXEC_BEFORE_STRIP:
	case PASSED_BEFORE_STRIP:
	case FORKED_BEFORE_STRIP: { /* moved by a send after the cut, then exec, passed or forked before any read */
		char num[16];
		int sv[2], st = -1, half;
		pid_t k = -1;

		if (m == PASSED_BEFORE_STRIP) {
			/* The receiver, forked before the cut, holds nothing of
			 * the connection until it is passed. */
			if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0 || (k = fork()) < 0)
				return 2;
			if (k == 0) {
				int r;

				close(c);
				if (write(sv[1], "c", 1) != 1 || (r = receive_fd(sv[1])) < 0)
					_exit(2);
				_exit(after_hand_over(r, PASSED_BEFORE_STRIP));
			}
			if (read(sv[0], num, 1) != 1)
				return 2;
		}

		/* Some of the peer's stream read on the rings: its re-send
		 * may start before what we read, which the strip drops. */
		while (got < EXEC_FIRST) {
			ssize_t n = recv(c, buf, EXEC_FIRST - got, 0);

			if (n <= 0 || !check(2, got, buf, (size_t)n))
				return 2;
			got += (uint64_t)n;
		}
		if (write(ready, "r", 1) != 1 || read(go, buf, 1) != 1)
			return 2;
		fill(1, 0, buf, EXEC_FIRST);
		if (send(c, buf, EXEC_FIRST, MSG_NOSIGNAL) != EXEC_FIRST)
			return 3;
		if (!moved(c))
			return 13;
		/* The peer's header is stripped at the first read, which is
		 * the new image's or the receiver's. */
		if (m == PASSED_BEFORE_STRIP) {
			if (send_fd(sv[0], c) < 0)
				return 2;
			close(c);
			return waitpid(k, &st, 0) == k && WIFEXITED(st) ? WEXITSTATUS(st) : 2;
		}
		if (m == FORKED_BEFORE_STRIP) {
			/* Both hold it: the child reads the first half of the
			 * peer's stream (stripping its header), then we read the
			 * rest and send ours. */
			if (pipe(sv) < 0 || (k = fork()) < 0)
				return 2;
			if (k == 0) {
				close(open(EXEC_DONE, O_CREAT | O_WRONLY, 0600));
				st = recv_range(c, 2, EXEC_FIRST, STREAM_BYTES / 2);
				_exit(st == STREAM_WHOLE && write(sv[1], "h", 1) == 1 ? 0 : st == STREAM_WRONG ? 24 : 25);
			}
			close(sv[1]);
			half = read(sv[0], num, 1) == 1;
			if (waitpid(k, &st, 0) != k || !WIFEXITED(st))
				return 2;
			if (!half || WEXITSTATUS(st))
				return WEXITSTATUS(st) ? WEXITSTATUS(st) : 2;
			st = recv_range(c, 2, STREAM_BYTES / 2, STREAM_BYTES);
			if (st != STREAM_WHOLE)
				return st == STREAM_WRONG ? 24 : st == STREAM_RESET ? 28 : 25;
			return send_stream_from(c, 1, 0, EXEC_FIRST) == STREAM_WHOLE ? 0 : 25;
		}
		snprintf(num, sizeof(num), "%d", c);
		execl("/proc/self/exe", "linkcut", "exec-child", num, (char *)NULL);
		return 23;
	}
	case THREADS_DUPLEX: { /* a sender thread and a blocked receiver at each end */
		pthread_t th;
		struct sender t = { .fd = c, .stream = 1, .pause_us = 1000 };
		int in;

		if (write(ready, "r", 1) != 1 || pthread_create(&th, NULL, stream_sender, &t))
			return 2;
		in = recv_stream(c, 2);
		pthread_join(th, NULL);
		return in != STREAM_WHOLE || t.ok != STREAM_WHOLE ? 19 : moved(c) ? 0 : 13;
	}
	case FORKED_HOLDERS: { /* a child holds it too, and looks at it after the cut */
		pid_t k = fork();
		int in, out, st = -1;

		if (k < 0)
			return 2;
		if (k == 0) {
			struct pollfd p = { .fd = c, .events = POLLIN | POLLOUT };

			/* Its look and its exit both meet the link down. */
			_exit(read(go, buf, 1) == 1 && poll(&p, 1, 100) >= 0 ? 0 : 1);
		}
		if (write(ready, "r", 1) != 1)
			return 2;
		in = recv_stream(c, 2);
		out = in == STREAM_WHOLE ? send_stream(c, 1, 0) : in;
		if (waitpid(k, &st, 0) != k || !WIFEXITED(st) || WEXITSTATUS(st))
			return 17;
		if (in == STREAM_WHOLE && out == STREAM_WHOLE)
			return 18; /* two holders at the cut cannot fail over */
		if ((in != STREAM_RESET && out != STREAM_RESET) || in == STREAM_WRONG)
			return 18;
		/* Held on: the peer must see the reset now, not at our close. */
		sleep(3);
		close(open(SUBJECT_GONE, O_CREAT | O_WRONLY, 0600));
		return EXIT_RESET;
	}
	}
	return 12;
}


/* The subject's peer, the accepting end: after the cut (FULL_SEND,
 * EPOLL_EDGE, BLOCKED_RECV) or at once, it receives the subject's stream
 * while a thread sends its own.  0 if both were whole. */
static int peer(enum mode m, int l, int cut)
{
	struct sender t = { .stream = 2,
			    .pause_us = m == POLL_DUPLEX || m == THREADS_DUPLEX ? 500 : m == FULL_SEND ? 0 : 200 };
	int s = accept(l, NULL, NULL), in = 1;
	pthread_t th;
	char b;

	if (s < 0)
		return 2;
	if (m == CLOSED_TAIL) {
		static unsigned char tail[TAIL_BYTES];

		fill(2, 0, tail, sizeof(tail));
		if (send(s, "h", 1, 0) != 1)
			return 7;
		usleep(100000); /* the subject took it */
		return send(s, tail, sizeof(tail), 0) == (ssize_t)sizeof(tail) && close(s) == 0 ? 0 : 8;
	}
	if (m == IDLE_EXIT) {
		ssize_t n;

		if (read(cut, &b, 1) != 1)
			return 3;
		/* The subject exits with the connection open: its end. */
		while ((n = read(s, &b, 1)) > 0)
			;
		return n == 0 || (n < 0 && errno == ECONNRESET) ? 0 : 4;
	}
	if (m == EXEC_BEFORE_STRIP || m == PASSED_BEFORE_STRIP || m == FORKED_BEFORE_STRIP) {
		static unsigned char first[EXEC_FIRST];

		fill(2, 0, first, sizeof(first));
		if (send(s, first, sizeof(first), 0) != (ssize_t)sizeof(first))
			return 7;
		t.from = EXEC_FIRST;
	}
	if (m != POLL_DUPLEX && m != THREADS_DUPLEX && read(cut, &b, 1) != 1)
		return 3;
	/* Our move (our header) only once the subject's new image runs: its
	 * old one must not have stripped the header already. */
	for (int i = 0; (m == EXEC_BEFORE_STRIP || m == PASSED_BEFORE_STRIP || m == FORKED_BEFORE_STRIP) && i < 1000 &&
			access(EXEC_DONE, F_OK) != 0;
	     i++)
		usleep(10000);
	if (m == SEND_ONLY)
		return recv_stream(s, 1) == STREAM_WHOLE ? 0 : 6;
	t.fd = s;
	if (pthread_create(&th, NULL, stream_sender, &t))
		return 5;
	if (m == FULL_SEND || m == POLL_DUPLEX || m == FORKED_HOLDERS || m == THREADS_DUPLEX || m == EXEC_BEFORE_STRIP ||
	    m == PASSED_BEFORE_STRIP || m == FORKED_BEFORE_STRIP)
		in = recv_stream(s, 1);
	pthread_join(th, NULL);
	if (m == FORKED_HOLDERS)
		return (in == STREAM_RESET || t.ok == STREAM_RESET) && in != STREAM_WRONG
			       ? access(SUBJECT_GONE, F_OK) == 0 ? 21 : EXIT_RESET
			       : 6;
	if (m == PASSED_BEFORE_STRIP && !(in == STREAM_WHOLE && t.ok == STREAM_WHOLE))
		return (in == STREAM_RESET || t.ok == STREAM_RESET) && in != STREAM_WRONG ? EXIT_RESET : 6;
	return in == STREAM_WHOLE && t.ok == STREAM_WHOLE ? 0 : 6;
}

static const char *running;
static pid_t kids[2];

static void timed_out(int sig)
{
	(void)sig;
	printf("TEST %s FAIL timed out (subject pid %d, its peer pid %d)\n", running, (int)kids[1], (int)kids[0]);
	kill(kids[0], SIGKILL);
	kill(kids[1], SIGKILL);
	write_file(MOCK_LINK, "1");
	_exit(1);
}

static void run(enum mode m, uint16_t port, const char *name)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1, pr[2], pg[2], ps[2], st = -1, sst = -1, acc = 0, up, both;
	socklen_t len = sizeof(acc);
	pid_t srv, sub;
	char r;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	unlink(SUBJECT_GONE);
	unlink(EXEC_DONE);
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 4) < 0 || pipe(pr) < 0 || pipe(pg) < 0 ||
	    pipe(ps) < 0) {
		result(name, 0, "setup: %s", strerror(errno));
		return;
	}
	srv = fork();
	if (srv == 0)
		_exit(peer(m, l, ps[0]));
	sub = fork();
	if (sub == 0) {
		int c = socket(AF_INET, SOCK_STREAM, 0);

		close(pr[0]);
		if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) < 0 ||
		    getsockopt(c, SOL_SCILAN, SCILAN_SO_ACCELERATED, &acc, &len) < 0 || acc != 1)
			_exit(1);
		_exit(subject(m, c, pr[1], pg[0]));
	}
	close(pr[1]); /* a subject that fails early: EOF, not a hang */
	running = name;
	kids[0] = srv;
	kids[1] = sub;
	signal(SIGALRM, timed_out);
	alarm(60);
	if (read(pr[0], &r, 1) == 1) {
		usleep(300000); /* into its blocking call, or mid-stream */
		write_file(MOCK_LINK, "0");
	}
	usleep(200000);
	if ((m == IDLE_EXIT || m == CLOSED_TAIL || m == FORKED_HOLDERS || m == EXEC_BEFORE_STRIP ||
	     m == PASSED_BEFORE_STRIP || m == FORKED_BEFORE_STRIP) &&
	    write(pg[1], "g", 1) != 1)
		perror("go");
	if (write(ps[1], "g", 1) != 1)
		perror("go");
	if (waitpid(sub, &st, 0) != sub)
		st = -1;
	if (waitpid(srv, &sst, 0) != srv)
		sst = -1;
	alarm(0);
	write_file(MOCK_LINK, "1");
	up = wait_up();
	/* Two holders: a loud reset at both ends. */
	both = WIFEXITED(st) && WIFEXITED(sst) && WEXITSTATUS(st) == WEXITSTATUS(sst);
	/* Passed before its strip: whole, or a reset both ends saw. */
	result(name,
	       both &&
		       (WEXITSTATUS(st) == (m == FORKED_HOLDERS ? EXIT_RESET : 0) ||
			(m == PASSED_BEFORE_STRIP && WEXITSTATUS(st) == EXIT_RESET)) &&
		       up,
	       "subject %s %d, its peer %s %d (0: every byte both ways across the cut, failed over to kernel TCP; "
	       "1: not accelerated; 13: still on the rings; 20: a reset both ends saw; 21: the peer saw it only "
	       "at the subject's close; 22: the move's user timeout stayed; 24: the image after exec (or the "
	       "process the connection was passed to) did not read the peer's stream whole; 26: FIONREAD said "
	       "nothing was there; 27: splice failed or carried wrong bytes; 28: the second of two forked holders "
	       "was reset), link up again %d",
	       WIFSIGNALED(st) ? "killed by signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
	       WIFSIGNALED(sst) ? "killed by signal" : "exit", WIFSIGNALED(sst) ? WTERMSIG(sst) : WEXITSTATUS(sst), up);
	close(l);
	close(pr[0]);
	close(pg[0]);
	close(pg[1]);
	close(ps[0]);
	close(ps[1]);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "all";

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(what, "exec-child"))
		return argc > 2 ? after_hand_over(atoi(argv[2]), EXEC_BEFORE_STRIP) : 2;
	/* "repeat N": N cuts and restores, each under a fresh connection
	 * mid-stream, cycling through the ways of waiting. */
	if (!strcmp(what, "repeat")) {
		int rounds = argc > 2 ? atoi(argv[2]) : 20;

		for (int i = 0; i < rounds; i++) {
			enum mode m = repeated[i % (int)(sizeof(repeated) / sizeof(repeated[0]))];
			char name[64];

			snprintf(name, sizeof(name), "linkcut_repeat_%02d_%s", i, names[m] + strlen("linkcut_"));
			run(m, (uint16_t)(7120 + m), name);
		}
		return failures ? 1 : 0;
	}
	for (int m = FULL_SEND; m <= FORKED_BEFORE_STRIP; m++)
		if (!strcmp(what, "all") || strstr(names[m], what))
			run((enum mode)m, (uint16_t)(7120 + m), names[m]);
	return failures ? 1 : 0;
}
