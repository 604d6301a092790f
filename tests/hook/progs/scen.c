/* scen.c — the shared part of the hook scenario programs (scen.h): transcript
 * output, errno and mask names, loopback helpers, echo/exchange, forked kids with
 * captured output, sync channels, the deterministic stream, dispatch. */
#include "scen.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

const char *scen_self;
static unsigned scen_limit = 50;
int scen_argc;
char **scen_argv;

void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

void fatal(const char *fmt, ...)
{
	int e = errno;
	va_list ap;

	printf("FATAL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" (errno %s)\n", en(e));
	fflush(stdout);
	exit(2);
}

const char *en(int e)
{
	const char *n = e ? strerrorname_np(e) : "0";

	return n ? n : "E?";
}

void show(const char *what, long rc)
{
	if (rc < 0)
		say("%s -> %ld %s", what, rc, en(errno));
	else
		say("%s -> %ld", what, rc);
}

void showfd(const char *what, long rc)
{
	if (rc < 0)
		say("%s -> %ld %s", what, rc, en(errno));
	else
		say("%s -> fd", what);
}

static const char *maskname(uint32_t m, const uint32_t *bits, const char *const *names, int n)
{
	static __thread char buf[8][128];
	static __thread int slot;
	char *b = buf[slot++ % 8];

	b[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (!(m & bits[i]))
			continue;
		if (b[0])
			strcat(b, "|");
		strcat(b, names[i]);
		m &= ~bits[i];
	}
	if (m)
		snprintf(b + strlen(b), 32, "%s0x%x", b[0] ? "|" : "", m);
	if (!b[0])
		strcpy(b, "0");
	return b;
}

const char *pollmask(int r)
{
	static const uint32_t bits[] = { POLLIN, POLLPRI, POLLOUT, POLLERR, POLLHUP, POLLNVAL, POLLRDHUP,
					 POLLRDNORM, POLLWRNORM, POLLRDBAND, POLLWRBAND };
	static const char *const names[] = { "IN", "PRI", "OUT", "ERR", "HUP", "NVAL", "RDHUP",
					     "RDNORM", "WRNORM", "RDBAND", "WRBAND" };

	return maskname((uint32_t)(unsigned short)r, bits, names, 11);
}

const char *epmask(uint32_t e)
{
	static const uint32_t bits[] = { EPOLLIN, EPOLLPRI, EPOLLOUT, EPOLLERR, EPOLLHUP, EPOLLRDHUP,
					 EPOLLRDNORM, EPOLLWRNORM, EPOLLET, EPOLLONESHOT };
	static const char *const names[] = { "IN", "PRI", "OUT", "ERR", "HUP", "RDHUP",
					     "RDNORM", "WRNORM", "ET", "ONESHOT" };

	return maskname(e, bits, names, 10);
}

void loop_addr(uint16_t port, void *sa)
{
	struct sockaddr_in *a = sa;

	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_port = htons(port);
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

int tcp_listener(uint16_t *port)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int l = MUST(socket(AF_INET, SOCK_STREAM, 0));

	loop_addr(0, &a);
	MUST(bind(l, (struct sockaddr *)&a, sizeof(a)));
	MUST(listen(l, 64));
	MUST(getsockname(l, (struct sockaddr *)&a, &len));
	*port = ntohs(a.sin_port);
	return l;
}

int tcp_connect(uint16_t port)
{
	struct sockaddr_in a;
	int c = MUST(socket(AF_INET, SOCK_STREAM, 0));

	loop_addr(port, &a);
	MUST(connect(c, (struct sockaddr *)&a, sizeof(a)));
	return c;
}

void tcp_pair(int *c, int *s)
{
	uint16_t port;
	int l = tcp_listener(&port);

	*c = tcp_connect(port);
	*s = MUST(accept(l, NULL, NULL));
	close(l);
}

uint16_t dead_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int s = MUST(socket(AF_INET, SOCK_STREAM, 0));

	loop_addr(0, &a);
	MUST(bind(s, (struct sockaddr *)&a, sizeof(a)));
	MUST(getsockname(s, (struct sockaddr *)&a, &len));
	close(s);
	return ntohs(a.sin_port);
}

ssize_t send_all(int fd, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = send(fd, (const char *)buf + done, len - done, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return (ssize_t)done;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

ssize_t recv_all(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = recv(fd, (char *)buf + done, len - done, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return (ssize_t)done;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

uint64_t echo_fd(int fd_in, int fd_out)
{
	char *buf = malloc(65536);
	uint64_t total = 0;
	ssize_t n;

	while ((n = read(fd_in, buf, 65536)) > 0 || (n < 0 && errno == EINTR)) {
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(fd_out, buf + off, (size_t)(n - off));

			if (w <= 0)
				fatal("echo write");
			off += w;
		}
		total += (uint64_t)(n > 0 ? n : 0);
	}
	if (n < 0)
		fatal("echo read");
	free(buf);
	return total;
}

bool exchange(int c, uint64_t seed, size_t len, size_t *sent_out, size_t *got_out)
{
	char *out = malloc(len), *in = malloc(len);
	size_t sent = 0, got = 0;
	bool ok;

	stream_fill(seed, 0, out, len);
	while (got < len) {
		struct pollfd pf = { .fd = c, .events = POLLIN | (sent < len ? POLLOUT : 0) };

		if (poll(&pf, 1, 30000) <= 0)
			fatal("exchange: poll");
		if ((pf.revents & POLLOUT) && sent < len) {
			ssize_t n = send(c, out + sent, len - sent < 65536 ? len - sent : 65536, MSG_DONTWAIT);

			if (n > 0)
				sent += (size_t)n;
		}
		if (pf.revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t n = recv(c, in + got, len - got, MSG_DONTWAIT);

			if (n == 0)
				break;
			if (n > 0)
				got += (size_t)n;
			else if (errno != EAGAIN)
				fatal("exchange: recv");
		}
	}
	ok = got == len && memcmp(in, out, len) == 0;
	if (sent_out)
		*sent_out = sent;
	if (got_out)
		*got_out = got;
	free(out);
	free(in);
	return ok;
}

void kid_start(struct kid *k, const char *name, int (*fn)(void *), void *arg)
{
	k->name = name;
	k->out = MUST(memfd_create("kid-out", MFD_CLOEXEC));
	fflush(stdout);
	k->pid = MUST(fork());
	if (k->pid == 0) {
		scen_kid_alarm(); /* alarms are not inherited */
		MUST(dup2(k->out, STDOUT_FILENO));
		exit(fn(arg));
	}
}

int kid_join(struct kid *k)
{
	int status;
	char *text;
	off_t size;

	while (waitpid(k->pid, &status, 0) < 0)
		if (errno != EINTR)
			fatal("waitpid %s", k->name);
	size = lseek(k->out, 0, SEEK_END);
	text = calloc(1, (size_t)size + 1);
	if (size > 0 && pread(k->out, text, (size_t)size, 0) != size)
		fatal("read output of %s", k->name);
	close(k->out);
	for (char *line = text; *line;) {
		char *nl = strchr(line, '\n');

		if (nl)
			*nl = '\0';
		say("[%s] %s", k->name, line);
		if (!nl)
			break;
		line = nl + 1;
	}
	free(text);
	if (WIFEXITED(status))
		say("[%s] exit %d", k->name, WEXITSTATUS(status));
	else
		say("[%s] killed by %s", k->name, sigabbrev_np(WTERMSIG(status)));
	return status;
}

void chan_open(int sv[2])
{
	MUST(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
}

void chan_put(int fd, char c)
{
	while (write(fd, &c, 1) != 1)
		if (errno != EINTR)
			fatal("chan_put");
}

int chan_get(int fd)
{
	unsigned char c;
	ssize_t n;

	do
		n = read(fd, &c, 1);
	while (n < 0 && errno == EINTR);
	return n == 1 ? c : -1;
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

void stream_fill(uint64_t seed, uint64_t off, void *buf, size_t len)
{
	unsigned char *p = buf;

	while (len) {
		uint64_t w = mix(seed * 0x100000001b3ull + off / 8);
		unsigned k = (unsigned)(off % 8);

		if (k == 0 && len >= 8) {
			memcpy(p, &w, 8);
			p += 8, off += 8, len -= 8;
			continue;
		}
		*p++ = (unsigned char)(w >> (8 * k));
		off++, len--;
	}
}

bool stream_check(uint64_t seed, uint64_t off, const void *buf, size_t len)
{
	unsigned char tmp[4096];
	const unsigned char *p = buf;

	while (len) {
		size_t n = len < sizeof(tmp) ? len : sizeof(tmp);

		stream_fill(seed, off, tmp, n);
		if (memcmp(tmp, p, n) != 0)
			return false;
		p += n, off += n, len -= n;
	}
	return true;
}

uint64_t fnv(uint64_t h, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* A hang limit, not a timing assertion: SIGALRM's default action kills us,
 * before the runner's own limit, so the transcript shows where it stopped. */
void scen_alarm(void)
{
	alarm(scen_limit);
}

void scen_kid_alarm(void)
{
	alarm(scen_limit > 10 ? scen_limit - 5 : scen_limit);
}

int scen_main(int argc, char **argv, const struct scenario *table)
{
	scen_self = argv[0];
	scen_argc = argc > 2 ? argc - 2 : 0;
	scen_argv = argv + 2;
	if (getenv("SCEN_LIMIT") && atoi(getenv("SCEN_LIMIT")) > 0)
		scen_limit = (unsigned)atoi(getenv("SCEN_LIMIT"));
	scen_alarm();
	for (const struct scenario *s = table; argc >= 2 && s->name; s++)
		if (strcmp(s->name, argv[1]) == 0)
			return s->fn();
	printf("usage: %s SCENARIO; scenarios:", argv[0]);
	for (const struct scenario *s = table; s->name; s++)
		printf(" %s", s->name);
	printf("\n");
	return 2;
}

int scen_send_fd(int via, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { "f", 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return (int)sendmsg(via, &m, 0);
}

int scen_recv_fd(int via)
{
	char cbuf[CMSG_SPACE(64 * sizeof(int))] = { 0 }, b;
	struct iovec iov = { &b, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	int fd = -1;

	if (recvmsg(via, &m, MSG_CMSG_CLOEXEC) != 1 || !CMSG_FIRSTHDR(&m))
		return -1;
	memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof(int));
	return fd;
}

void scen_exec_unhooked(int chan, const char *scenario)
{
	char fdarg[16];

	snprintf(fdarg, sizeof(fdarg), "%d", chan);
	MUST(fcntl(chan, F_SETFD, 0));
	unsetenv("LD_PRELOAD");
	execl(scen_self, scen_self, scenario, fdarg, (char *)NULL);
	fatal("exec");
}

void scen_pairs(int n, int **cs, int **ss)
{
	struct rlimit rl;
	uint16_t port;
	int l;

	MUST(getrlimit(RLIMIT_NOFILE, &rl));
	rl.rlim_cur = rl.rlim_max;
	if (rl.rlim_cur < 8 * (rlim_t)n + 256 || setrlimit(RLIMIT_NOFILE, &rl) < 0)
		fatal("RLIMIT_NOFILE below %d", 8 * n + 256);
	*cs = calloc((size_t)n, sizeof(**cs));
	*ss = calloc((size_t)n, sizeof(**ss));
	if (!*cs || !*ss)
		fatal("no memory for %d pairs", n);
	l = tcp_listener(&port);
	for (int i = 0; i < n; i++) {
		(*cs)[i] = tcp_connect(port);
		(*ss)[i] = MUST(accept(l, NULL, NULL));
	}
	close(l);
}

void scen_unpairs(int n, int *cs, int *ss)
{
	for (int i = 0; i < n; i++) {
		if (cs[i] >= 0)
			close(cs[i]);
		if (ss[i] >= 0)
			close(ss[i]);
	}
	free(cs);
	free(ss);
}

void scen_drain(int fd)
{
	char buf[4096];

	while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0) {
	}
}

void carry(const char *what, int a, int b)
{
	char buf[128] = { 0 };
	size_t len = strlen(what) < sizeof(buf) - 1 ? strlen(what) : sizeof(buf) - 1;
	ssize_t w = send(a, what, len, MSG_NOSIGNAL), r;

	/* Blocking, all of it: Nagle may hold a small segment back a while. */
	r = w > 0 ? recv(b, buf, len, MSG_WAITALL) : -1;
	say("carry '%s': send %zd, recv %zd '%s'", what, w, r, r > 0 ? buf : "");
}
