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
#include <unistd.h>

#include "scen.h"

static void flags(const char *what, int fd)
{
	int fl = fcntl(fd, F_GETFL), fdf = fcntl(fd, F_GETFD);

	say("%s: access %s, O_NONBLOCK %d, FD_CLOEXEC %d", what, (fl & O_ACCMODE) == O_RDWR ? "O_RDWR" : "other",
	    !!(fl & O_NONBLOCK), !!(fdf & FD_CLOEXEC));
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

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "fcntl", sc_fcntl }, { "ioctl", sc_ioctl },   { "dup", sc_dup },
		{ "stdio", sc_stdio }, { "close_range", sc_close_range }, { "foreign_numbers", sc_foreign_numbers },
		{ "std_streams", sc_std_streams },
		{ "dup3_open", sc_dup3_open }, { "std_lowest", sc_std_lowest },
		{ NULL, NULL },
	};

	return scen_main(argc, argv, t);
}
