/* fds.c — scenarios for descriptor calls on connected sockets: fcntl (O_NONBLOCK,
 * F_GETFL/F_SETFL, F_DUPFD, F_DUPFD_CLOEXEC, FD_CLOEXEC), ioctl FIONREAD/FIONBIO,
 * dup/dup2/dup3 aliases, fdopen + stdio.  A plain POSIX program. */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "scen.h"

static void flags(const char *what, int fd)
{
	int fl = fcntl(fd, F_GETFL), fdf = fcntl(fd, F_GETFD);

	say("%s: access %s, O_NONBLOCK %d, FD_CLOEXEC %d", what, (fl & O_ACCMODE) == O_RDWR ? "O_RDWR" : "other",
	    !!(fl & O_NONBLOCK), !!(fdf & FD_CLOEXEC));
}

/* One message a -> b, printed. */
static void carry(const char *what, int a, int b)
{
	char buf[128] = { 0 };
	size_t len = strlen(what) < sizeof(buf) - 1 ? strlen(what) : sizeof(buf) - 1;
	ssize_t w = send(a, what, len, MSG_NOSIGNAL), r;

	/* Blocking, all of it: Nagle may hold a small segment back a while. */
	r = w > 0 ? recv(b, buf, len, MSG_WAITALL) : -1;
	say("carry '%s': send %zd, recv %zd '%s'", what, w, r, r > 0 ? buf : "");
}

struct later {
	pthread_t t;
	int fd;
};

static void *later_main(void *arg)
{
	struct later *l = arg;

	usleep(30000);
	if (send(l->fd, "late", 4, 0) != 4)
		fatal("later send");
	return NULL;
}

static int sc_fcntl(void)
{
	uint16_t port;
	int l = tcp_listener(&port), c = tcp_connect(port), s = MUST(accept(l, NULL, NULL)), d, e;
	char buf[8];
	struct later lt = { .fd = c };

	flags("connected", c);
	flags("listener", l);
	SHOW(fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK));
	flags("after F_SETFL O_NONBLOCK", s);
	SHOW(recv(s, buf, sizeof(buf), 0));
	SHOW(read(s, buf, sizeof(buf)));
	carry("nonblocking still carries", c, s);
	SHOW(fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK));
	flags("after clearing", s);
	/* Blocking again: this recv waits for the thread's data. */
	pthread_create(&lt.t, NULL, later_main, &lt);
	SHOW(recv(s, buf, sizeof(buf), 0));
	pthread_join(lt.t, NULL);
	d = MUST(fcntl(c, F_DUPFD, 100));
	say("F_DUPFD(100) >= 100: %d", d >= 100);
	flags("F_DUPFD copy", d);
	carry("through F_DUPFD", d, s);
	e = MUST(fcntl(c, F_DUPFD_CLOEXEC, 50));
	say("F_DUPFD_CLOEXEC(50) >= 50: %d", e >= 50);
	flags("F_DUPFD_CLOEXEC copy", e);
	carry("through F_DUPFD_CLOEXEC", e, s);
	SHOW(fcntl(c, F_SETFD, FD_CLOEXEC));
	flags("F_SETFD FD_CLOEXEC", c);
	flags("its F_DUPFD copy (fd flags are per descriptor)", d);
	SHOW(fcntl(c, F_SETFD, 0));
	/* File status flags are shared by duplicates. */
	SHOW(fcntl(d, F_SETFL, O_NONBLOCK));
	flags("original after O_NONBLOCK on the copy", c);
	SHOW(recv(c, buf, sizeof(buf), 0));
	SHOW(fcntl(c, F_SETFL, 0));
	flags("copy after clearing on the original", d);
	SHOW(close(c));
	carry("copy after the original closed", d, s);
	carry("and back", s, d);
	/* Non-blocking listener. */
	SHOW(fcntl(l, F_SETFL, O_NONBLOCK));
	SHOWFD(accept(l, NULL, NULL));
	SHOW(fcntl(9999, F_GETFL));
	SHOW(fcntl(d, F_DUPFD, -1));
	close(d);
	close(e);
	close(s);
	close(l);
	return 0;
}

static void nread(const char *what, int fd)
{
	int n = -1;

	errno = 0;
	if (ioctl(fd, FIONREAD, &n) < 0)
		say("FIONREAD %s -> -1 %s", what, en(errno));
	else
		say("FIONREAD %s -> %d", what, n);
}

static int sc_ioctl(void)
{
	uint16_t port;
	int l = tcp_listener(&port), c = tcp_connect(port), s = MUST(accept(l, NULL, NULL)), on = 1, off = 0;
	char buf[2000];

	nread("empty", s);
	stream_fill(5, 0, buf, 1234);
	MUST(send(c, buf, 1234, 0));
	nread("after 1234 sent", s);
	SHOW(recv(s, buf, 234, 0));
	nread("after 234 read", s);
	SHOW(recv(s, buf, 10, MSG_PEEK));
	nread("after a peek", s);
	SHOW(recv(s, buf, sizeof(buf), 0));
	nread("drained", s);
	nread("listener", l);
	SHOW(ioctl(s, FIONBIO, &on));
	say("O_NONBLOCK after FIONBIO on: %d", !!(fcntl(s, F_GETFL) & O_NONBLOCK));
	SHOW(recv(s, buf, sizeof(buf), 0));
	SHOW(ioctl(s, FIONBIO, &off));
	say("O_NONBLOCK after FIONBIO off: %d", !!(fcntl(s, F_GETFL) & O_NONBLOCK));
	MUST(send(c, "tail", 4, 0));
	SHOW(close(c));
	nread("peer closed with 4 unread", s);
	SHOW(recv(s, buf, sizeof(buf), 0));
	nread("at EOF", s);
	SHOW(ioctl(s, 0x12345678, &on));
	nread("bad fd", 9999);
	close(s);
	close(l);
	return 0;
}

static int sc_dup(void)
{
	uint16_t port;
	int l = tcp_listener(&port), c = tcp_connect(port), s = MUST(accept(l, NULL, NULL)), d, d2, d3, f, r;
	char path[] = "/tmp/hookscen-dup-XXXXXX", buf[8];
	struct stat st;
	struct pollfd pf;

	d = SHOWFD(dup(c));
	carry("through dup", d, s);
	carry("read through dup", s, d);
	SHOW(close(c));
	carry("dup after original closed", d, s);
	d2 = MUST(dup2(d, 50));
	say("dup2(d, 50) returned 50: %d", d2 == 50);
	carry("through dup2", d2, s);
	r = dup2(d, d);
	say("dup2(d, d) returned d: %d", r == d);
	d3 = MUST(dup3(d, 60, O_CLOEXEC));
	say("dup3(d, 60, O_CLOEXEC) returned 60: %d, FD_CLOEXEC %d", d3 == 60, !!(fcntl(d3, F_GETFD) & FD_CLOEXEC));
	carry("through dup3", d3, s);
	SHOW(dup3(d, d, 0));
	SHOW(dup3(d, 61, 0x4));
	SHOWFD(dup(9999));
	SHOW(dup2(9999, 62));
	/* dup2 over an open file: the number now names the socket. */
	f = MUST(mkstemp(path));
	unlink(path);
	r = MUST(dup2(d, f));
	say("dup2 over a file returned its number: %d, now a socket: %d", r == f, fstat(f, &st) == 0 && S_ISSOCK(st.st_mode));
	carry("through the replaced number", f, s);
	/* And the reverse: a file dup2'ed over a socket alias. */
	{
		char path2[] = "/tmp/hookscen-dup-XXXXXX";
		int g = MUST(mkstemp(path2));

		unlink(path2);
		MUST(dup2(g, d3));
		say("socket alias replaced by a file: %s", fstat(d3, &st) == 0 && S_ISREG(st.st_mode) ? "file" : "not a file");
		SHOW(write(d3, "file", 4));
		close(g);
	}
	carry("other aliases unaffected", d2, s);
	/* Closing all but one alias: no EOF for the peer. */
	SHOW(close(d));
	SHOW(close(d2));
	pf = (struct pollfd){ .fd = s, .events = POLLIN | POLLRDHUP };
	SHOW(poll(&pf, 1, 0));
	carry("last alias", f, s);
	/* shutdown through one alias acts on the connection. */
	d = MUST(dup(f));
	SHOW(shutdown(d, SHUT_WR));
	SHOW(recv(s, buf, sizeof(buf), 0));
	carry("other direction after shutdown via an alias", s, f);
	SHOW(close(d));
	SHOW(close(f));
	pf = (struct pollfd){ .fd = s, .events = POLLIN | POLLRDHUP };
	SHOW(poll(&pf, 1, 1000));
	say("peer after the last alias closed: %s", pollmask(pf.revents));
	close(d3);
	close(s);
	/* A duplicated listener accepts. */
	d = MUST(dup(l));
	close(l);
	c = tcp_connect(port);
	s = SHOWFD(accept(d, NULL, NULL));
	carry("accepted through a dup'ed listener", c, s);
	close(c);
	close(s);
	close(d);
	return 0;
}

/* dup3 (as dup2) onto a number that is already open: a file, another
 * connection, an alias of the same connection.  The number then names the
 * connection, and what is sent through it reaches the peer. */
static int sc_dup3_open(void)
{
	char path[] = "/tmp/hookscen-dup3-XXXXXX", buf[8] = { 0 };
	int c, s, c2, s2, f, d, r;
	struct stat st;

	tcp_pair(&c, &s);
	f = MUST(mkstemp(path));
	unlink(path);
	r = MUST(dup3(c, f, O_CLOEXEC));
	say("dup3 over a file returned its number: %d, FD_CLOEXEC %d, a socket %d", r == f,
	    !!(fcntl(f, F_GETFD) & FD_CLOEXEC), fstat(f, &st) == 0 && S_ISSOCK(st.st_mode));
	carry("dup3 over a file", f, s);
	carry("and back", s, f);
	tcp_pair(&c2, &s2);
	/* A dup3 that fails leaves the number's connection as it was. */
	SHOW(dup3(c, c2, 0x4));
	carry("after a failed dup3 onto it", c2, s2);
	r = MUST(dup3(c, c2, O_CLOEXEC));
	say("dup3 over another connection returned its number: %d", r == c2);
	carry("dup3 over a connection", c2, s);
	carry("and back", s, c2);
	SHOW(recv(s2, buf, sizeof(buf), 0)); /* its own connection was closed */
	d = MUST(dup(c));
	r = MUST(dup3(c, d, O_CLOEXEC));
	say("dup3 over an alias of the same connection: %d", r == d);
	carry("dup3 over its own alias", d, s);
	SHOW(close(c));
	SHOW(close(c2));
	carry("after closing the others", d, s);
	SHOW(close(f));
	carry("after closing the others", d, s);
	SHOW(close(d));
	SHOW(recv(s, buf, sizeof(buf), 0));
	close(s);
	close(s2);
	return 0;
}

/* close_range closes sockets too: the peers see EOF, and a file opened on
 * a freed number is a file. */
static int sc_close_range(void)
{
	int c[3], s[3], lo, hi, f;
	char path[] = "/tmp/hookscen-cr-XXXXXX", b;
	struct stat st;

	for (int i = 0; i < 3; i++)
		tcp_pair(&c[i], &s[i]);
	/* Move the client ends to 200..202, then close that range. */
	for (int i = 0; i < 3; i++) {
		MUST(dup2(c[i], 200 + i));
		close(c[i]);
	}
	lo = 200;
	hi = 202;
	carry("before close_range", 201, s[1]);
	SHOW(close_range((unsigned)lo, (unsigned)hi, 0));
	for (int i = 0; i < 3; i++)
		SHOW(recv(s[i], &b, 1, 0));
	f = MUST(mkstemp(path));
	unlink(path);
	MUST(dup2(f, 201));
	close(f);
	say("201 is now a file: %d", fstat(201, &st) == 0 && S_ISREG(st.st_mode));
	SHOW(write(201, "file", 4));
	SHOW(pread(201, path, 4, 0));
	close(201);
	for (int i = 0; i < 3; i++)
		close(s[i]);
	return 0;
}

/* Kid: echo until EOF with plain recv/send. */
static int echo_kid(void *arg)
{
	uint16_t port = *(uint16_t *)arg;
	int c = tcp_connect(port);
	char buf[65536];
	ssize_t n;
	uint64_t total = 0;

	while ((n = recv(c, buf, sizeof(buf), 0)) > 0) {
		if (send_all(c, buf, (size_t)n) != n)
			fatal("echo");
		total += (uint64_t)n;
	}
	say("echoed %llu bytes", (unsigned long long)total);
	close(c);
	return 0;
}

static int sc_stdio(void)
{
	uint16_t port;
	int l = tcp_listener(&port), s;
	FILE *in, *out;
	char line[128], *big = malloc(200000), *back = malloc(200000);
	int ok = 0, ch;
	struct kid k;

	kid_start(&k, "echo", echo_kid, &port);
	s = MUST(accept(l, NULL, NULL));
	in = fdopen(s, "r");
	out = fdopen(MUST(dup(s)), "w");
	say("fdopen: in %s, out %s, fileno(in) is the socket %d", in ? "ok" : "NULL", out ? "ok" : "NULL",
	    fileno(in) == s);
	for (int i = 0; i < 100; i++)
		fprintf(out, "line %d of the stdio test\n", i);
	SHOW(fflush(out));
	for (int i = 0; i < 100; i++) {
		char want[64];

		snprintf(want, sizeof(want), "line %d of the stdio test\n", i);
		ok += fgets(line, sizeof(line), in) && strcmp(line, want) == 0;
	}
	say("fgets got %d of 100 lines back", ok);
	SHOW(fputs("xyz\n", out));
	SHOW(fputc('!', out));
	SHOW(fflush(out));
	ch = getc(in);
	say("getc '%c'", ch);
	ch = ungetc(ch, in);
	say("ungetc -> '%c'", ch);
	ch = getc(in);
	say("getc again '%c'", ch);
	say("fgets rest: %s", fgets(line, sizeof(line), in) ? line : "NULL\n");
	ch = getc(in);
	say("getc '%c'", ch);
	stream_fill(6, 0, big, 200000);
	say("fwrite 200000 -> %zu", fwrite(big, 1, 200000, out));
	SHOW(fflush(out));
	{
		size_t n = fread(back, 1, 200000, in);

		say("fread 200000 -> %zu, intact %d", n, memcmp(big, back, 200000) == 0);
	}
	/* Closing the writing stream closes only its descriptor. */
	SHOW(fclose(out));
	SHOW(shutdown(fileno(in), SHUT_WR));
	{
		char *got = fgets(line, sizeof(line), in);

		say("fgets at EOF: %s, feof %d", got ? "line" : "NULL", feof(in) != 0);
	}
	SHOW(fclose(in));
	kid_join(&k);
	/* One "r+" stream for both directions. */
	kid_start(&k, "echo", echo_kid, &port);
	s = MUST(accept(l, NULL, NULL));
	in = fdopen(s, "r+");
	SHOW(fprintf(in, "both ways %d\n", 42));
	SHOW(fflush(in));
	say("r+ fgets: %s", fgets(line, sizeof(line), in) ? line : "NULL\n");
	SHOW(fprintf(in, "second\n"));
	SHOW(fflush(in));
	say("r+ fgets: %s", fgets(line, sizeof(line), in) ? line : "NULL\n");
	SHOW(fclose(in));
	kid_join(&k);
	close(l);
	free(big);
	free(back);
	return 0;
}

/* One message a -> b while b is already blocked in recv (b sleeps, so a's
 * send must wake it), printed. */
static void carry_to_sleeper(const char *what, int a, int b)
{
	struct later lt = { .fd = a };
	char buf[8] = { 0 };
	ssize_t r;

	MUST(pthread_create(&lt.t, NULL, later_main, &lt));
	r = recv(b, buf, 4, MSG_WAITALL);
	pthread_join(lt.t, NULL);
	say("%s: recv %zd '%s'", what, r, r > 0 ? buf : "");
}

/* Numbers the program never opened: it cannot know which ones the hook holds
 * for itself.  bash dup2s onto fixed numbers (`exec 5<>`), daemons close every
 * number they did not open, close_range sweeps ranges.  The connection must
 * carry on (waking sleepers) and nothing may be written into the program's
 * files. */
static int sc_foreign_numbers(void)
{
	enum { TOP = 2100 };
	static bool mine[TOP];
	char path[] = "/tmp/hookscen-fn-XXXXXX";
	struct rlimit rl;
	struct stat st;
	int c, s, f, fill, taken = 0;

	/* What is open before any connection exists is the program's own. */
	for (int fd = 0; fd < TOP; fd++)
		mine[fd] = fcntl(fd, F_GETFD) >= 0;
	tcp_pair(&c, &s);
	mine[c] = mine[s] = true;
	carry_to_sleeper("before", c, s);
	/* A file onto every number it believes free, leaving some room below
	 * the limit. */
	f = MUST(mkstemp(path));
	unlink(path);
	MUST(getrlimit(RLIMIT_NOFILE, &rl));
	fill = rl.rlim_cur > TOP ? TOP : (int)rl.rlim_cur - 64;
	for (int fd = 3; fd < fill; fd++)
		if (!mine[fd] && fd != f)
			taken += dup2(f, fd) == fd;
	say("dup2 onto most free numbers: %d", taken > 100);
	carry_to_sleeper("server sleeps", c, s);
	carry_to_sleeper("client sleeps", s, c);
	say("the file is still empty: %d", fstat(f, &st) == 0 && st.st_size == 0);
	for (int fd = 3; fd < fill; fd++)
		if (!mine[fd])
			close(fd);
	/* Daemon style: everything not ours, blindly. */
	for (int fd = 3; fd < TOP; fd++)
		if (!mine[fd])
			close(fd);
	carry_to_sleeper("after closing every number not ours", c, s);
	carry_to_sleeper("and back", s, c);
	SHOW(close_range((unsigned)(c > s ? c : s) + 1, ~0u, 0));
	carry_to_sleeper("after close_range above", c, s);
	carry_to_sleeper("and back", s, c);
	close(c);
	close(s);
	return 0;
}

static void chomp(char *line)
{
	line[strcspn(line, "\n")] = '\0';
}

/* stdout and stdin while fds 1 and 0 are the connection (bash's `>&5`, an
 * inetd-style child): stdio writes and reads must reach the peer. */
static int sc_std_streams(void)
{
	static const char sent[] = "through stdout 1\nsecond line\n";
	char buf[64] = { 0 }, line[64];
	int c, s, saved;

	tcp_pair(&c, &s);
	fflush(stdout);
	saved = MUST(dup(1));
	MUST(dup2(c, 1));
	printf("through stdout %d\n", 1);
	fputs("second line\n", stdout);
	fflush(stdout);
	MUST(dup2(saved, 1));
	close(saved);
	{
		ssize_t got = recv_all(s, buf, strlen(sent));

		say("peer got %zd bytes, equal %d", got, strcmp(buf, sent) == 0);
	}

	saved = MUST(dup(0));
	MUST(dup2(s, 0));
	SHOW(send_all(c, "line one\nline two\n", 18));
	for (int i = 0; i < 2; i++) {
		if (!fgets(line, sizeof(line), stdin))
			snprintf(line, sizeof(line), "NULL");
		chomp(line);
		say("fgets from stdin: %s", line);
	}
	MUST(dup2(saved, 0));
	close(saved);
	clearerr(stdin);
	carry("the connection still carries", c, s);
	close(c);
	close(s);
	return 0;
}

/* The standard streams follow every call that can put a connection on 0-2,
 * not only dup2/dup3: dup() and fcntl(F_DUPFD*) take the lowest free number,
 * and so does accept() (inetd-style code closes 0 and 1 first). */
static int sc_std_lowest(void)
{
	static const char sent[] = "printf via dup 1\nstderr via F_DUPFD_CLOEXEC\n";
	char buf[128] = { 0 }, line[64];
	int c, s, saved1, saved2, saved0, l, a, k;
	uint16_t port;

	tcp_pair(&c, &s);
	fflush(stdout);
	saved1 = MUST(dup(1));
	saved2 = MUST(dup(2));
	close(1);
	k = dup(c); /* lands on 1 */
	printf("printf via dup %d\n", k);
	fflush(stdout);
	close(2);
	k = fcntl(c, F_DUPFD_CLOEXEC, 2); /* lands on 2 */
	fprintf(stderr, "stderr via F_DUPFD_CLOEXEC\n");
	MUST(dup2(saved1, 1));
	MUST(dup2(saved2, 2));
	close(saved1);
	close(saved2);
	say("fcntl(F_DUPFD_CLOEXEC) landed on 2: %d", k == 2);
	{
		ssize_t got = recv_all(s, buf, strlen(sent));

		say("peer got %zd bytes, equal %d", got, strcmp(buf, sent) == 0);
	}

	/* accept() onto 0: stdin reads what the peer sends. */
	l = tcp_listener(&port);
	saved0 = MUST(dup(0));
	c = tcp_connect(port);
	close(0);
	a = accept(l, NULL, NULL);
	say("accept landed on 0: %d", a == 0);
	SHOW(send_all(c, "from the peer\n", 14));
	if (!fgets(line, sizeof(line), stdin))
		snprintf(line, sizeof(line), "NULL");
	chomp(line);
	say("fgets from stdin: %s", line);
	close(0);
	MUST(dup2(saved0, 0));
	close(saved0);
	clearerr(stdin);
	close(c);
	close(l);
	close(s);
	return 0;
}

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
#define unseen_close raw_close /* test_fds.c skips the scenario here */
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
		{ "fcntl", sc_fcntl }, { "ioctl", sc_ioctl },   { "dup", sc_dup },
		{ "stdio", sc_stdio }, { "close_range", sc_close_range }, { "foreign_numbers", sc_foreign_numbers },
		{ "std_streams", sc_std_streams },
		{ "dup3_open", sc_dup3_open }, { "std_lowest", sc_std_lowest },
		{ "raw_close", sc_raw_close }, { "unseen_close", sc_unseen_close }, { "reused_numbers", sc_reused_numbers },
		{ "crowded", sc_crowded },
		{ "crowded_sender", sc_crowded_sender }, { "dense_numbers", sc_dense_numbers },
		{ "whole_limit", sc_whole_limit }, { "full_limit", sc_full_limit },
		{ "young_top", sc_young_top },
		{ NULL, NULL },
	};

	return scen_main(argc, argv, t);
}
