/* procs.c — scenarios for sockets across processes: fork, pre-forked acceptors,
 * vfork+exec, inetd-style exec on stdin/stdout, FD_CLOEXEC across exec, daemon(),
 * and what fork must keep exact: read indices, sleepers, holders.
 * A plain POSIX program; it re-executes itself for the exec'd roles. */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scen.h"

static uint16_t port;
static int lfd;

/* Exchange len bytes with an echoing peer and print the outcome. */
static void request(const char *what, int c, uint64_t seed, size_t len)
{
	size_t sent, got;
	bool ok = exchange(c, seed, len, &sent, &got);

	say("%s: sent %zu, echoed %zu, intact %d", what, sent, got, ok);
}

static int serve_child(void *arg)
{
	int s = *(int *)arg;

	close(lfd);
	say("served %llu bytes", (unsigned long long)echo_fd(s, s));
	close(s);
	return 0;
}

static int nothing(void *arg)
{
	(void)arg;
	return 0;
}

static int close_copy(void *arg)
{
	say("close(copy) -> %d", close(*(int *)arg));
	return 0;
}

static int sc_fork(void)
{
	struct kid k[2];
	int c[2], s;

	lfd = tcp_listener(&port);
	/* accept; fork; the parent closes; the child serves. */
	for (int i = 0; i < 2; i++) {
		c[i] = tcp_connect(port);
		s = MUST(accept(lfd, NULL, NULL));
		kid_start(&k[i], i ? "server 2" : "server 1", serve_child, &s);
		SHOW(close(s));
	}
	request("connection 1", c[0], 10, 300000);
	request("connection 2", c[1], 11, 300000);
	SHOW(shutdown(c[0], SHUT_WR));
	SHOW(shutdown(c[1], SHUT_WR));
	kid_join(&k[0]);
	kid_join(&k[1]);
	for (int i = 0; i < 2; i++) {
		char b;

		SHOW(recv(c[i], &b, 1, 0));
		close(c[i]);
	}
	/* A child that inherits a connection and exits, or closes its copy,
	 * takes nothing from the parent. */
	c[0] = tcp_connect(port);
	s = MUST(accept(lfd, NULL, NULL));
	kid_start(&k[0], "exits", nothing, NULL);
	kid_join(&k[0]);
	kid_start(&k[0], "closes", close_copy, &s);
	kid_join(&k[0]);
	{
		struct pollfd pf = { .fd = c[0], .events = POLLIN | POLLRDHUP };

		SHOW(poll(&pf, 1, 0));
	}
	kid_start(&k[0], "server 3", serve_child, &s);
	close(s);
	request("after children came and went", c[0], 12, 100000);
	SHOW(shutdown(c[0], SHUT_WR));
	kid_join(&k[0]);
	close(c[0]);
	close(lfd);
	return 0;
}

/* Pre-forked worker: accept two connections, answer one request on each. */
static int worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 2; i++) {
		char req[32] = { 0 }, resp[64];
		int s = MUST(accept(lfd, NULL, NULL));
		ssize_t n = recv(s, req, sizeof(req) - 1, 0);

		if (n <= 0)
			fatal("worker recv");
		snprintf(resp, sizeof(resp), "re: %s", req);
		send_all(s, resp, strlen(resp));
		close(s);
	}
	say("served 2");
	return 0;
}

static int sc_prefork(void)
{
	struct kid k[3];
	int c[6];

	lfd = tcp_listener(&port);
	for (int i = 0; i < 3; i++)
		kid_start(&k[i], i == 0 ? "worker 1" : i == 1 ? "worker 2" : "worker 3", worker, NULL);
	/* Six clients at once; which worker takes which is the kernel's choice. */
	for (int i = 0; i < 6; i++) {
		char req[32];

		c[i] = tcp_connect(port);
		snprintf(req, sizeof(req), "request %d", i);
		MUST(send(c[i], req, strlen(req), 0));
	}
	for (int i = 0; i < 6; i++) {
		char resp[64] = { 0 };
		ssize_t n = recv_all(c[i], resp, sizeof(resp) - 1);

		say("client %d: %zd bytes '%s'", i, n, resp);
		close(c[i]);
	}
	for (int i = 0; i < 3; i++)
		kid_join(&k[i]);
	close(lfd);
	return 0;
}

/* Exec'd role: echo on the descriptor named by argv, report on stdout. */
static int sc_serve_fd(void)
{
	int fd = scen_argc > 1 ? atoi(scen_argv[0]) : -1, out = scen_argc > 1 ? atoi(scen_argv[1]) : -1;
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	if (fd < 0 || out < 0)
		fatal("serve_fd FD OUTFD");
	dprintf(out, "getpeername -> %d\n", getpeername(fd, (struct sockaddr *)&a, &len));
	dprintf(out, "served %llu bytes\n", (unsigned long long)echo_fd(fd, fd));
	close(fd);
	return 0;
}

/* environ with LD_PRELOAD naming another library (libc itself, a no-op), as
 * a launcher that sets its own preload would leave it. */
static char **env_other_preload(void)
{
	extern char **environ;
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 2, sizeof(*env));
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0)
			env[k++] = environ[i];
	env[k++] = "LD_PRELOAD=libc.so.6";
	return env;
}

/* Exec path (with env) as the server of an accepted connection that has
 * bytes waiting; the client exchanges through it.  With greets, bytes wait
 * both ways: the server wrote before the exec too, and the new image
 * greets before it echoes. */
static int exec_server_greeting(const char *path, char **env, uint64_t seed, bool greets)
{
	int c, s, status, out = MUST(memfd_create("execd-out", 0));
	char fdarg[16], outarg[16], text[256] = { 0 }, early[8] = { 0 };
	pid_t pid;

	lfd = tcp_listener(&port);
	c = tcp_connect(port);
	s = MUST(accept(lfd, NULL, NULL));
	MUST(send(c, "early", 5, 0));
	if (greets)
		MUST(send(s, "ready", 5, 0));
	snprintf(fdarg, sizeof(fdarg), "%d", s);
	snprintf(outarg, sizeof(outarg), "%d", out);
	fflush(stdout);
	pid = MUST(fork());
	if (pid == 0) {
		/* The client's end stays ours alone: a copy of it in the child,
		 * moved to kernel TCP at the exec while we read its ring, would
		 * be two processes of one end using it at once (unsupported). */
		if (greets)
			close(c);
		execle(path, path, "serve_fd", fdarg, outarg, (char *)NULL, env);
		_exit(127);
	}
	SHOW(close(s));
	if (greets) {
		char hi[16] = { 0 };

		SHOW(recv(c, hi, 10, MSG_WAITALL));
		say("the server before and after the exec: '%s'", hi);
	}
	SHOW(recv(c, early, 5, MSG_WAITALL));
	say("echo of the bytes sent before the exec: '%s'", early);
	request("through the exec'd server", c, seed, 300000);
	SHOW(shutdown(c, SHUT_WR));
	waitpid(pid, &status, 0);
	MUST(pread(out, text, sizeof(text) - 1, 0));
	say("exec'd server said:\n%sexec'd server exit %d", text, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	close(out);
	close(c);
	close(lfd);
	return 0;
}

static int exec_server(const char *path, char **env, uint64_t seed)
{
	return exec_server_greeting(path, env, seed, false);
}

/* An exec whose environment preloads something else: the new image must
 * still read the connection (the hook joins the preload list). */
static int sc_exec_other_preload(void)
{
	char **env = env_other_preload();
	int r = exec_server(scen_self, env, 14);

	free(env);
	return r;
}

/* An exec of a static executable (procs-static, this program linked
 * statically), which loads no preload: the connection must reach it on
 * kernel TCP, the bytes that waited in the rings included. */
static int sc_exec_static(void)
{
	extern char **environ;
	char path[4096];

	snprintf(path, sizeof(path), "%s-static", scen_self);
	return exec_server(path, environ, 15);
}

/* An exec of a program that makes its own system calls (goimage: Go's
 * build-id note, or only its .go.buildinfo section; raw read and write):
 * the hook it loads never sees its socket I/O, so the connection must reach
 * it on kernel TCP, the bytes that waited in the rings included. */
static int exec_go_image(const char *name, uint64_t seed)
{
	extern char **environ;
	char path[4096];
	const char *slash = strrchr(scen_self, '/');

	snprintf(path, sizeof(path), "%.*s%s", slash ? (int)(slash - scen_self + 1) : 0, scen_self, name);
	return exec_server_greeting(path, environ, seed, true);
}

static int sc_exec_go(void)
{
	return exec_go_image("goimage", 16);
}

static int sc_exec_go_buildinfo(void)
{
	return exec_go_image("goimage-buildinfo", 17);
}

static int sc_vfork_exec(void)
{
	int c, s, status, out = MUST(memfd_create("execd-out", 0));
	char fdarg[16], outarg[16], text[256] = { 0 };
	pid_t pid;

	lfd = tcp_listener(&port);
	c = tcp_connect(port);
	s = MUST(accept(lfd, NULL, NULL));
	/* Bytes that wait in the connection across the exec. */
	MUST(send(c, "early", 5, 0));
	snprintf(fdarg, sizeof(fdarg), "%d", s);
	/* The exec'd server writes its transcript to a file we print after it
	 * exits, so the two processes' lines do not interleave. */
	snprintf(outarg, sizeof(outarg), "%d", out);
	fflush(stdout);
	pid = vfork();
	if (pid == 0) {
		execl(scen_self, scen_self, "serve_fd", fdarg, outarg, (char *)NULL);
		_exit(127);
	}
	SHOW(close(s));
	{
		char early[8] = { 0 };

		SHOW(recv(c, early, 5, MSG_WAITALL));
		say("echo of the bytes sent before the exec: '%s'", early);
	}
	request("through the exec'd server", c, 13, 500000);
	SHOW(shutdown(c, SHUT_WR));
	waitpid(pid, &status, 0);
	MUST(pread(out, text, sizeof(text) - 1, 0));
	say("exec'd server said:\n%sexec'd server exit %d", text, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	close(out);
	close(c);
	close(lfd);
	return 0;
}

/* Exec'd role, inetd style: the connection is stdin and stdout; the
 * transcript goes to fd 3. */
static int sc_inetd_service(void)
{
	char line[64] = { 0 };
	size_t n = 0;

	/* Unbuffered reads up to the newline, as a line-oriented service. */
	while (n < sizeof(line) - 1 && read(0, line + n, 1) == 1 && line[n] != '\n')
		n++;
	line[n] = '\0';
	dprintf(3, "service: first line '%s'\n", line);
	if (write(1, "ok\n", 3) != 3)
		fatal("service write");
	dprintf(3, "service: echoed %llu bytes\n", (unsigned long long)echo_fd(0, 1));
	return 0;
}

static int inetd_child(void *arg)
{
	int s = *(int *)arg;
	char head[4] = { 0 };

	close(lfd);
	ssize_t n;

	/* The first bytes are read before the exec, the rest after it. */
	n = recv(s, head, 3, MSG_WAITALL);
	say("before exec: recv %zd '%s'", n, head);
	MUST(dup2(STDOUT_FILENO, 3));
	MUST(dup2(s, 0));
	MUST(dup2(s, 1));
	close(s);
	execl(scen_self, scen_self, "inetd_service", (char *)NULL);
	fatal("exec");
}

static int sc_inetd(void)
{
	struct kid k;
	int c, s;
	char reply[4] = { 0 };

	lfd = tcp_listener(&port);
	c = tcp_connect(port);
	MUST(send(c, "hello\n", 6, 0));
	s = MUST(accept(lfd, NULL, NULL));
	kid_start(&k, "inetd child", inetd_child, &s);
	close(s);
	SHOW(recv(c, reply, 3, MSG_WAITALL));
	say("reply '%.2s'", reply);
	request("through the service", c, 14, 400000);
	SHOW(shutdown(c, SHUT_WR));
	SHOW(recv(c, reply, 1, 0));
	kid_join(&k);
	close(c);
	close(lfd);
	return 0;
}

/* Exec'd role: nothing (the socket it did not inherit is gone). */
static int sc_noop(void)
{
	say("exec'd noop ran");
	return 0;
}

static int cloexec_child(void *arg)
{
	int s = *(int *)arg;

	close(lfd);
	MUST(fcntl(s, F_SETFD, FD_CLOEXEC));
	execl(scen_self, scen_self, "noop", (char *)NULL);
	fatal("exec");
}

static int sc_exec_cloexec(void)
{
	struct kid k;
	int c, s;
	char b;

	lfd = tcp_listener(&port);
	c = tcp_connect(port);
	s = MUST(accept(lfd, NULL, NULL));
	kid_start(&k, "cloexec child", cloexec_child, &s);
	kid_join(&k);
	/* The parent's copy keeps the connection open. */
	{
		struct pollfd pf = { .fd = c, .events = POLLIN | POLLRDHUP };

		SHOW(poll(&pf, 1, 0));
	}
	MUST(send(c, "x", 1, 0));
	SHOW(recv(s, &b, 1, 0));
	SHOW(close(s));
	SHOW(recv(c, &b, 1, 0));
	close(c);
	close(lfd);
	return 0;
}

static int launcher(void *arg)
{
	(void)arg;
	/* daemon(): fork, the parent exits, the child starts a session with
	 * stdio on /dev/null.  The daemon serves one connection and exits. */
	if (daemon(1, 0) < 0)
		fatal("daemon");
	scen_kid_alarm(); /* alarms are not inherited across fork */
	{
		int s = MUST(accept(lfd, NULL, NULL));

		echo_fd(s, s);
		close(s);
	}
	exit(0);
}

static int sc_daemon(void)
{
	struct kid k;
	int c;
	char b;

	lfd = tcp_listener(&port);
	kid_start(&k, "launcher", launcher, NULL);
	kid_join(&k);
	close(lfd); /* only the daemon holds the listener now */
	c = tcp_connect(port);
	request("through the daemon", c, 15, 200000);
	SHOW(shutdown(c, SHUT_WR));
	SHOW(recv(c, &b, 1, 0));
	close(c);
	return 0;
}

/* ---- fork: where each process continues, sleepers, holders ---------------- */

#define FORK_BIG (1u << 20)

static int read_stream_child(void *arg)
{
	int c = *(int *)arg;
	char *buf = malloc(FORK_BIG);
	ssize_t n = recv_all(c, buf, FORK_BIG);

	/* What the parent read before the fork must not come again. */
	say("child read %zd bytes, continuing at 1000: %d", n, n > 0 && stream_check(20, 1000, buf, (size_t)n));
	MUST(send_all(c, "child", 5));
	free(buf);
	return 0;
}

static uint64_t turn_off;

static int read_turn_child(void *arg)
{
	char buf[3000];
	ssize_t n = recv_all(*(int *)arg, buf, sizeof(buf));

	say("read %zd bytes, continuing where the last reader stopped: %d", n,
	    n > 0 && stream_check(20, turn_off, buf, (size_t)n));
	if (turn_off == 1000 + FORK_BIG + 5000)
		_exit(0);
	return 0;
}

static int sc_fork_read_index(void)
{
	struct kid k;
	int c, s;
	char *buf = malloc(FORK_BIG);
	char two[16] = { 0 };

	tcp_pair(&c, &s);
	stream_fill(20, 0, buf, 1000);
	MUST(send_all(s, buf, 1000));
	SHOW(recv_all(c, buf, 1000));
	say("parent read 1000 bytes, intact %d", stream_check(20, 0, buf, 1000));
	kid_start(&k, "reader", read_stream_child, &c);
	stream_fill(20, 1000, buf, FORK_BIG);
	SHOW(send_all(s, buf, FORK_BIG));
	kid_join(&k);
	/* The parent takes over where the child stopped, both ways. */
	stream_fill(20, 1000 + FORK_BIG, buf, 5000);
	MUST(send_all(s, buf, 5000));
	memset(buf, 0, 5000);
	SHOW(recv_all(c, buf, 5000));
	say("parent continues at the child's index: %d", stream_check(20, 1000 + FORK_BIG, buf, 5000));
	MUST(send_all(c, "parent", 6));
	SHOW(recv_all(s, two, 11));
	say("server got '%s'", two);
	/* Two more children in turn, the first ending with _exit: each starts
	 * where the last reader stopped, though the parent read nothing since. */
	for (int i = 0; i < 2; i++) {
		uint64_t off = 1000 + FORK_BIG + 5000 + (uint64_t)i * 3000;

		turn_off = off;
		kid_start(&k, i ? "third reader" : "second reader, _exit", read_turn_child, &c);
		stream_fill(20, off, buf, 3000);
		MUST(send_all(s, buf, 3000));
		kid_join(&k);
	}
	SHOW(close(c));
	SHOW(recv(s, two, 1, 0));
	close(s);
	free(buf);
	return 0;
}

static int sleeper_fd;

static void *sleeping_reader(void *arg)
{
	static char got[16];

	(void)arg;
	memset(got, 0, sizeof(got));
	if (recv_all(sleeper_fd, got, 5) != 5)
		return NULL;
	return got;
}

static int close_sleepers_socket(void *arg)
{
	say("close -> %d", close(*(int *)arg));
	return 0;
}

#define BLOCKED_SEND (8u << 20) /* more than kernel TCP buffers on loopback */

static void *sleeping_writer(void *arg)
{
	static ssize_t sent;
	char *buf = malloc(BLOCKED_SEND);

	stream_fill(21, 0, buf, BLOCKED_SEND);
	sent = send_all(*(int *)arg, buf, BLOCKED_SEND);
	free(buf);
	return &sent;
}

static double cpu_seconds(void)
{
	struct rusage r;

	getrusage(RUSAGE_SELF, &r);
	return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) + (r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

static int sc_fork_thread_sleeps(void)
{
	struct kid k;
	pthread_t t, t2;
	void *res;
	char b[8] = { 0 };
	int c, s;

	tcp_pair(&c, &s);
	sleeper_fd = s;
	if (pthread_create(&t, NULL, sleeping_reader, NULL))
		fatal("pthread_create");
	/* Let the reader get past its spin into the kernel sleep; the outcome
	 * is the same if it has not, only the case is weaker. */
	usleep(200000);
	/* fork; the child closes what it inherited (fork + close + exec helpers). */
	kid_start(&k, "closer", close_sleepers_socket, &s);
	kid_join(&k);
	SHOW(send_all(c, "hello", 5));
	if (pthread_join(t, &res))
		fatal("pthread_join");
	say("sleeping thread got '%s'", res ? (char *)res : "(nothing)");
	SHOW(send_all(s, "back", 4));
	SHOW(recv_all(c, b, 4));
	say("client got '%s'", b);
	SHOW(close(s));
	SHOW(recv(c, b, 1, 0));
	close(c);

	/* The same with a thread asleep in send on a full connection. */
	tcp_pair(&c, &s);
	if (pthread_create(&t, NULL, sleeping_writer, &s))
		fatal("pthread_create");
	usleep(200000);
	kid_start(&k, "closer", close_sleepers_socket, &s);
	kid_join(&k);
	{
		char *buf = malloc(BLOCKED_SEND);
		ssize_t n = recv_all(c, buf, BLOCKED_SEND);

		say("client read %zd bytes, intact %d", n, n > 0 && stream_check(21, 0, buf, (size_t)n));
		free(buf);
	}
	if (pthread_join(t, &res))
		fatal("pthread_join");
	say("sleeping writer sent %zd", *(ssize_t *)res);
	SHOW(close(s));
	SHOW(recv(c, b, 1, 0));
	close(c);

	/* Both at once, a reader and a writer: the child's close must leave
	 * them asleep, not bounce a wake-up between them (CPU spent while
	 * nothing happens; a generous bound, only a busy loop exceeds it). */
	tcp_pair(&c, &s);
	sleeper_fd = s;
	if (pthread_create(&t, NULL, sleeping_reader, NULL) || pthread_create(&t2, NULL, sleeping_writer, &s))
		fatal("pthread_create");
	usleep(200000);
	kid_start(&k, "closer", close_sleepers_socket, &s);
	kid_join(&k);
	{
		double before = cpu_seconds();

		usleep(1000000);
		say("parent idle while both threads sleep: %d", cpu_seconds() - before < 0.3);
	}
	SHOW(send_all(c, "hello", 5));
	if (pthread_join(t, &res))
		fatal("pthread_join");
	say("sleeping reader got '%s'", res ? (char *)res : "(nothing)");
	{
		char *buf = malloc(BLOCKED_SEND);
		ssize_t n = recv_all(c, buf, BLOCKED_SEND);

		say("client read %zd bytes, intact %d", n, n > 0 && stream_check(21, 0, buf, (size_t)n));
		free(buf);
	}
	if (pthread_join(t2, &res))
		fatal("pthread_join");
	say("sleeping writer sent %zd", *(ssize_t *)res);
	SHOW(close(s));
	SHOW(recv(c, b, 1, 0));
	close(c);
	return 0;
}

static int dup_and_exit(void *arg)
{
	int d = dup(*(int *)arg);

	say("dup -> %s", d >= 0 ? "fd" : en(errno));
	return 0; /* exit() with the connection under two numbers */
}

static int sc_fork_dup_exit(void)
{
	struct kid k;
	struct pollfd pf;
	int c, s;
	char b[8] = { 0 };

	tcp_pair(&c, &s);
	kid_start(&k, "dup, exit", dup_and_exit, &s);
	kid_join(&k);
	/* The child's exit closed nothing for the client: the parent serves. */
	pf = (struct pollfd){ .fd = c, .events = POLLIN | POLLOUT | POLLRDHUP };
	SHOW(poll(&pf, 1, 0));
	say("revents %s", pollmask(pf.revents));
	SHOW(send(c, "ping", 4, MSG_NOSIGNAL));
	SHOW(recv_all(s, b, 4));
	SHOW(send(s, "pong", 4, MSG_NOSIGNAL));
	SHOW(recv_all(c, b, 4));
	say("client got '%s'", b);
	SHOW(close(s));
	SHOW(recv(c, b, 1, 0));
	close(c);
	return 0;
}

static int close_both(void *arg)
{
	int *fds = arg;

	say("close(s) -> %d, close(d) -> %d", close(fds[0]), close(fds[1]));
	return 0;
}

static int sc_dup_fork_close(void)
{
	struct kid k;
	int c, fds[2];
	char b[8] = { 0 };

	tcp_pair(&c, &fds[0]);
	fds[1] = MUST(dup(fds[0]));
	kid_start(&k, "closes both", close_both, fds);
	kid_join(&k);
	SHOW(send_all(fds[1], "last", 4));
	SHOW(close(fds[0]));
	SHOW(close(fds[1]));
	SHOW(recv_all(c, b, 4));
	say("client got '%s'", b);
	SHOW(recv(c, b, 1, 0));
	close(c);
	return 0;
}

static int send_then_exit_now(void *arg)
{
	int s = *(int *)arg;

	MUST(send_all(s, "child", 5));
	say("_exit");
	_exit(0); /* no destructors, as os._exit in a Python worker */
}

static int send_then_sigkill(void *arg)
{
	int s = *(int *)arg;

	MUST(send_all(s, "child", 5));
	say("SIGKILL");
	kill(getpid(), SIGKILL);
	return 1;
}

/* The child dies without running any code of ours; the parent closes
 * later: the client sees the child's bytes and then EOF, as with TCP. */
static void holder_dies(const char *name, int (*fn)(void *), bool reap_first)
{
	struct kid k;
	int c, s;
	char b[8] = { 0 };

	tcp_pair(&c, &s);
	kid_start(&k, name, fn, &s);
	if (reap_first) {
		kid_join(&k);
	} else {
		siginfo_t si;

		/* A zombie, not reaped yet: it holds nothing any more. */
		MUST(waitid(P_PID, (id_t)k.pid, &si, WEXITED | WNOWAIT));
	}
	SHOW(close(s));
	SHOW(recv_all(c, b, 5));
	say("client got '%s'", b);
	SHOW(recv(c, b, 1, 0));
	if (!reap_first)
		kid_join(&k);
	close(c);
}

static int sc_fork_exit_no_destructors(void)
{
	holder_dies("_exit", send_then_exit_now, true);
	holder_dies("SIGKILL", send_then_sigkill, true);
	holder_dies("_exit, unreaped", send_then_exit_now, false);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "fork", sc_fork },
		{ "prefork", sc_prefork },
		{ "vfork_exec", sc_vfork_exec },
		{ "exec_other_preload", sc_exec_other_preload },
		{ "exec_static", sc_exec_static },
		{ "exec_go", sc_exec_go },
		{ "exec_go_buildinfo", sc_exec_go_buildinfo },
		{ "inetd", sc_inetd },
		{ "exec_cloexec", sc_exec_cloexec },
		{ "daemon", sc_daemon },
		{ "fork_read_index", sc_fork_read_index },
		{ "fork_thread_sleeps", sc_fork_thread_sleeps },
		{ "fork_dup_exit", sc_fork_dup_exit },
		{ "dup_fork_close", sc_dup_fork_close },
		{ "fork_exit_no_destructors", sc_fork_exit_no_destructors },
		/* roles the scenarios exec */
		{ "serve_fd", sc_serve_fd },
		{ "inetd_service", sc_inetd_service },
		{ "noop", sc_noop },
		{ NULL, NULL },
	};

	return scen_main(argc, argv, t);
}
