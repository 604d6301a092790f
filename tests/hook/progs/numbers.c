/* numbers.c — scenarios for descriptor numbers on connected sockets: closes
 * the hook does not see (raw syscalls) and the numbers reused after them,
 * crowded and full descriptor tables, the limit's edges.  A plain POSIX program. */
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "scen.h"

/* A close the hook does not see (a raw syscall; io_uring's IORING_OP_CLOSE
 * likewise): the next descriptor on that number is a file, a pipe or another
 * socket, and what is written there must land there, not at the old peer. */
static void raw_close(int fd)
{
	syscall(SYS_close, fd);
}

#if defined(__x86_64__)
static void unseen_close(int fd)
{
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "0"((long)SYS_close), "D"((long)fd) : "rcx", "r11", "memory");
	(void)ret;
}
#elif defined(__aarch64__)
static void unseen_close(int fd)
{
	register long x8 __asm__("x8") = SYS_close;
	register long x0 __asm__("x0") = fd;

	__asm__ volatile("svc #0" : "+r"(x0) : "r"(x8) : "memory");
}
#else
#define unseen_close raw_close /* test_numbers.c skips the scenario here */
#endif

/* A new file (open: the call programs make) on number want, the lowest free
 * one but for a few below it (the pair's listener was closed). */
static int open_onto(int want, const char *path)
{
	int f, held[8], n = 0;

	for (;;) {
		f = MUST(open(path, O_RDWR));
		if (f == want || f > want || n == 8)
			break;
		held[n++] = f;
	}
	while (n)
		close(held[--n]);
	unlink(path);
	return f;
}

static int sc_raw_close(void)
{
	char path[] = "/tmp/hookscen-rawclose-XXXXXX", buf[32] = { 0 };
	int c, s, f, p[2], sv[2], d, n;
	struct pollfd pf;

	close(MUST(mkstemp(path)));
	tcp_pair(&c, &s);
	carry("before", c, s);
	raw_close(c);
	f = open_onto(c, path);
	say("the file got the connection's number: %d", f == c);
	SHOW(write(f, "into the file", 13));
	SHOW(pread(f, buf, sizeof(buf) - 1, 0));
	say("the file holds '%s'", buf);
	SHOW(recv(s, buf, sizeof(buf), 0)); /* the old peer: EOF, nothing else */
	close(f);
	close(s);

	tcp_pair(&c, &s);
	raw_close(c);
	MUST(pipe(p));
	say("the pipe got the connection's number: %d", p[0] == c || p[1] == c);
	SHOW(write(p[1], "pipe", 4));
	memset(buf, 0, sizeof(buf));
	SHOW(read(p[0], buf, sizeof(buf) - 1));
	say("the pipe carried '%s'", buf);
	close(p[0]);
	close(p[1]);
	close(s);

	/* One alias closed raw: the others keep the connection. */
	tcp_pair(&c, &s);
	d = MUST(dup(c));
	raw_close(d);
	MUST(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	say("the socketpair got the alias's number: %d", sv[0] == d || sv[1] == d);
	SHOW(send(sv[0], "unix", 4, 0));
	memset(buf, 0, sizeof(buf));
	SHOW(recv(sv[1], buf, sizeof(buf) - 1, 0));
	say("the socketpair carried '%s'", buf);
	carry("the connection lives on under its other number", c, s);
	pf = (struct pollfd){ .fd = s, .events = POLLIN };
	SHOW(poll(&pf, 1, 0));
	close(sv[0]);
	close(sv[1]);
	close(c);
	n = (int)recv(s, buf, sizeof(buf), 0);
	say("peer after the last close: %d", n);
	close(s);

	return 0;
}

/* Closed by a call the hook cannot see at all (the syscall instruction
 * itself, as io_uring's close or a static part of a program would), with
 * bytes in an offer the acceptor has not decided: the socketpair that gets
 * the number must carry only its own bytes, both ways (the stale
 * connection's release must not move ring bytes, a shutdown or a reset onto
 * it).  Under the hook the offer's bytes are lost to the peer, which the
 * library says (test_fds.c checks both). */
static int sc_unseen_close(void)
{
	char buf[32] = { 0 };
	uint16_t port;
	int l = tcp_listener(&port), c, a, sv[2];
	ssize_t n;

	c = tcp_connect(port);
	SHOW(send(c, "ring bytes", 10, 0));
	unseen_close(c);
	MUST(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	say("the socketpair got the connection's number: %d", sv[0] == c || sv[1] == c);
	SHOW(send(sv[0], "unix", 4, 0));
	SHOW(send(sv[1], "back", 4, 0));
	SHOW(recv(sv[1], buf, sizeof(buf) - 1, 0));
	say("one way the socketpair carried '%s'", buf);
	memset(buf, 0, sizeof(buf));
	SHOW(recv(sv[0], buf, sizeof(buf) - 1, 0));
	say("the other way '%s'", buf);
	close(sv[0]);
	close(sv[1]);
	/* The accepting side: the bytes, or a loud end where they were lost
	 * (never a clean end of stream without them). */
	a = MUST(accept(l, NULL, NULL));
	memset(buf, 0, sizeof(buf));
	n = recv(a, buf, sizeof(buf) - 1, 0);
	say("the acceptor read %zd (%s)", n, n < 0 ? strerror(errno) : buf);
	close(a);
	close(l);
	return 0;
}

/* ---- numbers the library let go of ------------------------------------------- */

/* The library keeps its own descriptors at high numbers and hides them from
 * the program (a close of one is EBADF).  One it closed must be the
 * program's again at once: nginx near its descriptor limit got EBADF from
 * close() on sockets whose numbers a connection's segment had used. */
static int sc_reused_numbers(void)
{
	struct rlimit rl = { 512, 512 };
	uint16_t port;
	int l, failed = 0, opened = 0, fds[512];

	/* The library's numbers start at 448, and it keeps within 32 of them. */
	MUST(setrlimit(RLIMIT_NOFILE, &rl));
	l = tcp_listener(&port);
	for (int i = 0; i < 8; i++) {
		int c = tcp_connect(port), s = MUST(accept(l, NULL, NULL));
		char b = 'x';

		MUST(send(c, &b, 1, 0));
		MUST(recv(s, &b, 1, 0));
		close(c);
		close(s);
	}
	close(l);
	/* Every number up to the limit, then each closed. */
	for (int i = 0; i < 512; i++) {
		fds[i] = dup(1);
		if (fds[i] < 0)
			break;
		opened++;
	}
	for (int i = 0; i < opened; i++)
		if (close(fds[i]) < 0)
			failed++;
	say("opened at least 460: %d, closes failed: %d", opened >= 460, failed);
	return 0;
}

/* Connections taking 120 of 320 descriptors on kernel TCP (both ends
 * here): the library's own (a segment and two bells per connection on the
 * rings, 420 for all of them) must not make the program's calls fail; the
 * connections beyond the library's share use kernel TCP. */
static int sc_crowded(void)
{
	struct rlimit rl = { 320, 320 };
	int c[60], s[60], errors = 0, l;
	uint16_t port;

	MUST(setrlimit(RLIMIT_NOFILE, &rl));
	l = tcp_listener(&port);
	for (int i = 0; i < 60; i++) {
		struct sockaddr_in a;
		char b = 'x';

		loop_addr(port, &a);
		c[i] = socket(AF_INET, SOCK_STREAM, 0);
		s[i] = -1;
		if (c[i] < 0 || connect(c[i], (struct sockaddr *)&a, sizeof(a)) < 0 ||
		    (s[i] = accept(l, NULL, NULL)) < 0 || send(c[i], &b, 1, 0) != 1 || recv(s[i], &b, 1, 0) != 1)
			errors++;
	}
	for (int i = 0; i < 60; i++) {
		if (c[i] >= 0)
			close(c[i]);
		if (s[i] >= 0)
			close(s[i]);
	}
	close(l);
	say("60 connections, errors %d", errors);
	return 0;
}

/* A program whose soft and hard limits are equal (redis sets both to
 * maxclients + 32; containers often run so): the library's descriptors come
 * out of the program's own, so they must stay a small share of them.
 * Connections until a call runs out: on kernel TCP about 125 (two sockets
 * each in 256); the library keeps within a quarter of the limit.  Its bells
 * once cut that to 52 (redis with maxclients 1,000 in a limit of 1,100
 * failed accept with EMFILE from its ~400th client on). */
static int sc_full_limit(void)
{
	struct rlimit rl = { 256, 256 };
	int c[200], s[200], n = 0, l;
	uint16_t port;

	MUST(setrlimit(RLIMIT_NOFILE, &rl));
	l = tcp_listener(&port);
	for (; n < 200; n++) {
		struct sockaddr_in a;
		char b = 'x';

		loop_addr(port, &a);
		c[n] = socket(AF_INET, SOCK_STREAM, 0);
		if (c[n] < 0)
			break;
		if (connect(c[n], (struct sockaddr *)&a, sizeof(a)) < 0 || (s[n] = accept(l, NULL, NULL)) < 0) {
			close(c[n]);
			break;
		}
		if (send(c[n], &b, 1, 0) != 1 || recv(s[n], &b, 1, 0) != 1)
			return 1;
	}
	for (int i = 0; i < n; i++) {
		close(c[i]);
		close(s[i]);
	}
	close(l);
	say("connections before the limit, at least 90 (three quarters of the limit the program's): %d", n >= 90);
	return 0;
}

/* The program's numbers are the kernel's: the library's own descriptors
 * (bells, segments) must not take numbers the program would get.  redis
 * sizes its event loop by maxclients and silently ignored clients whose
 * numbers the library had pushed past it. */
static int dense_numbers(rlim_t soft, rlim_t hard)
{
	struct rlimit rl = { soft, hard };
	int c[600], s[600], errors = 0, highest = 0, l;
	uint16_t port;

	MUST(setrlimit(RLIMIT_NOFILE, &rl));
	l = tcp_listener(&port);
	for (int i = 0; i < 600; i++) {
		struct sockaddr_in a;
		char b = 'x';

		loop_addr(port, &a);
		c[i] = socket(AF_INET, SOCK_STREAM, 0);
		s[i] = -1;
		if (c[i] < 0 || connect(c[i], (struct sockaddr *)&a, sizeof(a)) < 0 ||
		    (s[i] = accept(l, NULL, NULL)) < 0 || send(c[i], &b, 1, 0) != 1 || recv(s[i], &b, 1, 0) != 1)
			errors++;
		if (c[i] > highest)
			highest = c[i];
		if (s[i] > highest)
			highest = s[i];
	}
	for (int i = 0; i < 600; i++) {
		if (c[i] >= 0)
			close(c[i]);
		if (s[i] >= 0)
			close(s[i]);
	}
	close(l);
	/* 1,201 sockets from number 3 up, beside stdio and the runner's few. */
	say("600 connections, errors %d, highest number within 1,220: %d", errors, highest <= 1220);
	return 0;
}

/* No room above the limit (soft = hard): ours take the top of the range. */
static int sc_dense_numbers(void)
{
	return dense_numbers(8192, 8192);
}

/* A program whose limit is just what it needs (redis sets maxclients + 32):
 * every number below it stays the program's, ours go above it. */
static int sc_whole_limit(void)
{
	return dense_numbers(1240, 8192);
}

/* Soft = hard = 20,000: a client's first numbers of the library's stay low
 * (the kernel zeroes a table as large as the highest number in use, some
 * 40 us at 20,000), then move up as the program's own come near them; the
 * program's numbers stay the kernel's throughout.  The server, a child,
 * answers each connection with its byte. */
static int serve_three(void *arg)
{
	int *to_parent = arg, l;
	uint16_t port;

	l = tcp_listener(&port);
	MUST(write(*to_parent, &port, sizeof(port)));
	for (int i = 0; i < 3; i++) {
		int s = MUST(accept(l, NULL, NULL));
		char b;

		if (recv(s, &b, 1, 0) == 1)
			MUST(send(s, &b, 1, 0));
		close(s);
	}
	close(l);
	return 0;
}

/* The kernel's descriptor table size (FDSize in /proc/self/status): the
 * library's own descriptors are hidden from the program, not from it. */
static int table_size(void)
{
	char line[256];
	int n = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "FDSize: %d", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

/* One exchange; *table: the descriptor table's size before its close. */
static int exchange_once(uint16_t port, int *table)
{
	int c = tcp_connect(port), ok;
	char b = 'x';

	ok = send(c, &b, 1, 0) == 1 && recv(c, &b, 1, 0) == 1 && b == 'x';
	if (table)
		*table = table_size();
	close(c);
	return ok;
}

static int sc_young_top(void)
{
	struct rlimit rl = { 20000, 20000 };
	int highest = -1, ok = 1, p[2], table = -1;
	static int fds[4500];
	uint16_t port;
	struct kid k;

	if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
		say("limit not settable");
		return 0;
	}
	MUST(pipe(p));
	kid_start(&k, "server", serve_three, &p[1]);
	close(p[1]);
	if (read(p[0], &port, sizeof(port)) != (ssize_t)sizeof(port))
		say("no port from the server");
	close(p[0]);
	ok &= exchange_once(port, &table);
	say("a connection open, a descriptor table of at most 4,096: %d", table <= 4096);
	/* Past half of 4,096, then a connection, then on to 4,500 numbers. */
	for (int i = 0; i < 2500; i++)
		fds[i] = MUST(dup(1));
	ok &= exchange_once(port, NULL);
	for (int i = 2500; i < 4500; i++)
		fds[i] = MUST(dup(1));
	ok &= exchange_once(port, NULL);
	for (int i = 0; i < 4500; i++)
		highest = fds[i] > highest ? fds[i] : highest;
	/* Beside the runner's few, a closed connection's descriptors may still
	 * be on their way out (a segment released after its peer's word). */
	say("connections %d, 4,500 program numbers from %d up to at most 4,512: %d", ok, fds[0],
	    highest <= 4512);
	for (int i = 0; i < 4500; i++)
		close(fds[i]);
	say("server %d", kid_join(&k));
	return 0;
}

/* A client near its limit that sends on each connection and reads every
 * answer only at the end (a connection pool warming up): its offers stay
 * undecided on its side, each holding the segment's descriptor, until the
 * library gives those back when a socket() runs out. */
static int answer_each(void *arg)
{
	int l = *(int *)arg;

	for (int i = 0; i < 100; i++) {
		int s = MUST(accept(l, NULL, NULL));
		char b;

		if (recv(s, &b, 1, 0) == 1)
			MUST(send(s, &b, 1, 0));
		close(s); /* after the answer: the client reads it later */
	}
	return 0;
}

static int sc_crowded_sender(void)
{
	struct rlimit rl = { 320, 320 };
	int c[100], errors = 0, l;
	uint16_t port;
	struct kid k;

	l = tcp_listener(&port);
	kid_start(&k, "server", answer_each, &l);
	MUST(setrlimit(RLIMIT_NOFILE, &rl));
	for (int i = 0; i < 100; i++) {
		struct sockaddr_in a;

		loop_addr(port, &a);
		c[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (c[i] < 0 || connect(c[i], (struct sockaddr *)&a, sizeof(a)) < 0 || send(c[i], "x", 1, 0) != 1)
			errors++;
	}
	for (int i = 0; i < 100; i++) {
		char b = 0;

		if (c[i] < 0 || recv(c[i], &b, 1, 0) != 1 || b != 'x')
			errors++;
		if (c[i] >= 0)
			close(c[i]);
	}
	say("100 connections, errors %d", errors);
	kid_join(&k);
	close(l);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "raw_close", sc_raw_close }, { "unseen_close", sc_unseen_close }, { "reused_numbers", sc_reused_numbers },
		{ "crowded", sc_crowded },
		{ "crowded_sender", sc_crowded_sender }, { "dense_numbers", sc_dense_numbers },
		{ "whole_limit", sc_whole_limit }, { "full_limit", sc_full_limit },
		{ "young_top", sc_young_top },
		{ NULL, NULL },
	};

	return scen_main(argc, argv, t);
}
