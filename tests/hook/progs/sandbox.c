/* sandbox.c — scenarios for a process that confines itself the way OpenSSH's
 * pre-authentication child does (RLIMIT_NOFILE 1, a seccomp filter refusing
 * recv/send/membarrier) while its connection has bytes in flight both ways;
 * and a process that makes its first thread under a filter that kills for
 * membarrier.  A plain POSIX program: only read, write and shutdown (and
 * pthread_create) after the filter. */
#include <errno.h>
#include <linux/filter.h>
#include <pthread.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "scen.h"

#define CLIENT_SEED 20
#define SERVER_SEED 21
#define CLIENT_BYTES 100000 /* the server reads HEAD of them before its sandbox */
#define CLIENT_EARLY 30000  /* sent before the sandbox, the rest after */
#define HEAD 1000
#define SERVER_EARLY 50000 /* written before the sandbox; the client reads PEEK of them first */
#define PEEK 2000
#define SERVER_LATE 30000

static int chan[2];
static int client_fd; /* the parent's end: the server child closes its copy, as sshd's does */

#define REFUSE(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)

/* What a sandbox like OpenSSH's refuses of what the rings would need. */
static void enter_sandbox(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		REFUSE(SYS_recvfrom), REFUSE(SYS_sendto), REFUSE(SYS_membarrier),
		REFUSE(SYS_recvmsg), REFUSE(SYS_sendmsg),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	struct rlimit one = { 1, 1 };

	SHOW(setrlimit(RLIMIT_NOFILE, &one));
	SHOW(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	SHOW(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog));
}

static size_t read_full(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

static size_t write_full(int fd, const char *buf, size_t len)
{
	size_t put = 0;

	while (put < len) {
		ssize_t n = write(fd, buf + put, len - put);

		if (n <= 0)
			break;
		put += (size_t)n;
	}
	return put;
}

static int sandboxed_server(void *arg)
{
	int s = *(int *)arg;
	char *buf = malloc(CLIENT_BYTES), *out = malloc(SERVER_EARLY + SERVER_LATE);
	size_t got;

	SHOW(close(client_fd));
	got = read_full(s, buf, HEAD);
	say("read before the sandbox: %zu, intact %d", got, stream_check(CLIENT_SEED, 0, buf, got));
	stream_fill(SERVER_SEED, 0, out, SERVER_EARLY + SERVER_LATE);
	say("wrote before the sandbox: %zu", write_full(s, out, SERVER_EARLY));
	if (chan_get(chan[1]) != 'g')
		return 1;
	enter_sandbox();
	got = read_full(s, buf, CLIENT_EARLY - HEAD);
	say("read in the sandbox: %zu, intact %d", got, stream_check(CLIENT_SEED, HEAD, buf, got));
	/* Waits like sshd's: a poll of the connection, which the client
	 * answers only now. */
	{
		struct pollfd p = { .fd = s, .events = POLLIN };
		int r = poll(&p, 1, 20000);

		say("poll in the sandbox -> %d %s", r, pollmask(p.revents));
	}
	got = read_full(s, buf, CLIENT_BYTES - CLIENT_EARLY);
	say("read after the poll: %zu, intact %d", got, stream_check(CLIENT_SEED, CLIENT_EARLY, buf, got));
	say("wrote in the sandbox: %zu", write_full(s, out + SERVER_EARLY, SERVER_LATE));
	SHOW(shutdown(s, SHUT_WR));
	got = read_full(s, buf, 1);
	say("read at the client's end: %zu", got);
	return 0;
}

/* A connection whose server, a forked holder like sshd's pre-auth child,
 * enters the sandbox with unread bytes in both directions; its parent keeps
 * its copy open, like sshd's monitor. */
static int sc_seccomp_child(void)
{
	char *out = malloc(CLIENT_BYTES), *in = malloc(SERVER_EARLY + SERVER_LATE);
	uint16_t port;
	int lfd = tcp_listener(&port), c, s;
	struct kid k;
	size_t got;

	chan_open(chan);
	c = tcp_connect(port);
	s = MUST(accept(lfd, NULL, NULL));
	client_fd = c;
	kid_start(&k, "server", sandboxed_server, &s);
	stream_fill(CLIENT_SEED, 0, out, CLIENT_BYTES);
	say("client sent %zd", send_all(c, out, CLIENT_EARLY));
	got = (size_t)recv_all(c, in, PEEK);
	say("client read before the sandbox: %zu, intact %d", got, stream_check(SERVER_SEED, 0, in, got));
	chan_put(chan[0], 'g');
	usleep(100000); /* the server waits in its sandbox (a later send is fine too) */
	say("client sent %zd", send_all(c, out + CLIENT_EARLY, CLIENT_BYTES - CLIENT_EARLY));
	got = (size_t)recv_all(c, in, SERVER_EARLY + SERVER_LATE - PEEK);
	say("client read after: %zu, intact %d", got, stream_check(SERVER_SEED, PEEK, in, got));
	SHOW(recv(c, in, 1, 0));
	SHOW(shutdown(c, SHUT_WR));
	kid_join(&k);
	SHOW(close(s));
	SHOW(close(c));
	SHOW(close(lfd));
	free(out);
	free(in);
	return 0;
}

static void *thread_says(void *arg)
{
	(void)arg;
	say("the thread runs");
	return NULL;
}

/* A filter that kills for what the library would ask of the kernel before
 * a first thread (the membarrier registration), then that thread: the
 * library leaves the sandboxed process's threads to it. */
static int sc_thread_after_filter(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_membarrier, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	pthread_t t;

	SHOW(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	SHOW(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog));
	SHOW(pthread_create(&t, NULL, thread_says, NULL));
	SHOW(pthread_join(t, NULL));
	return 0;
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "seccomp_child", sc_seccomp_child },
		{ "thread_after_filter", sc_thread_after_filter },
		{ NULL, NULL },
	};

	return scen_main(argc, argv, t);
}
