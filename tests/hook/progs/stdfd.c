/* stdfd.c — scenarios for connections on the standard descriptors and for
 * writers glibc runs with calls no preload sees: a process whose stderr is a
 * connection (its diagnostics must not join the data), dprintf/vdprintf on a
 * connection, a connection inherited through posix_spawn.  Plain POSIX. */
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scen.h"

extern char **environ;

static uint16_t port;
static int lfd;

/* Everything the peer sends until EOF (at most size-1 bytes), as text. */
static size_t read_all(int s, char *buf, size_t size)
{
	size_t n = 0;
	ssize_t r;

	while (n < size - 1 && (r = read(s, buf + n, size - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	return n;
}

/* Kid: its connection becomes stderr; it writes one line and exits (the
 * SCILAN_STATS line is printed at exit). */
static int stderr_kid(void *arg)
{
	int c;

	(void)arg;
	close(lfd);
	c = tcp_connect(port);
	MUST(dup2(c, 2));
	close(c);
	fputs("the kid's own stderr line\n", stderr);
	return 0;
}

/* Kid: as above, then exec with debug logging: the new image adopts the
 * connection on 2, logs while connecting again, and exits. */
static int stderr_exec_kid(void *arg)
{
	char portarg[16];
	int c;

	(void)arg;
	char go;

	close(lfd);
	c = tcp_connect(port);
	/* Accepted before the exec (a connection not yet accepted at exec is
	 * not this scenario's subject). */
	if (recv(c, &go, 1, MSG_WAITALL) != 1)
		fatal("go");
	MUST(dup2(c, 2));
	close(c);
	snprintf(portarg, sizeof(portarg), "%u", port);
	setenv("SCILAN_LOG", "debug", 1);
	execl(scen_self, scen_self, "stderr_exec_role", portarg, (char *)NULL);
	fatal("exec");
}

/* Exec'd role: stderr is the connection. */
static int sc_stderr_exec_role(void)
{
	int c;

	port = (uint16_t)atoi(scen_argv[0]);
	fputs("after the exec\n", stderr);
	char b;

	c = tcp_connect(port); /* the library has things to say about it */
	if (read(c, &b, 1) != 0) /* the parent accepts it, then closes */
		fputs("no EOF\n", stderr);
	close(c);
	fputs("last line\n", stderr);
	return 0;
}

/* The connection carries the kid's stderr lines and nothing else: no
 * statistics line, no log line. */
static int sc_stderr_conn(void)
{
	char buf[4096];
	struct kid k;
	int s, s2;

	lfd = tcp_listener(&port);
	kid_start(&k, "kid", stderr_kid, NULL);
	s = MUST(accept(lfd, NULL, NULL));
	read_all(s, buf, sizeof(buf));
	say("the peer read:\n%s--", buf);
	kid_join(&k);
	close(s);

	for (int plain = 0; plain < 2; plain++) {
		if (plain) {
			/* A listener the hook never saw created: its connections
			 * are kernel TCP under the hook too, and a diagnostic
			 * written to fd 2 would go straight into their data. */
			struct sockaddr_in a;

			close(lfd);
			lfd = MUST(syscall(SYS_socket, AF_INET, SOCK_STREAM, 0));
			loop_addr(0, &a);
			MUST(bind(lfd, (struct sockaddr *)&a, sizeof(a)));
			MUST(listen(lfd, 8));
			socklen_t len = sizeof(a);
			MUST(getsockname(lfd, (struct sockaddr *)&a, &len));
			port = ntohs(a.sin_port);
		}
		kid_start(&k, "exec", stderr_exec_kid, NULL);
		s = MUST(accept(lfd, NULL, NULL));
		MUST(send(s, "g", 1, 0));
		s2 = MUST(accept(lfd, NULL, NULL)); /* the role's second connection */
		close(s2);
		read_all(s, buf, sizeof(buf));
		say("the peer read:\n%s--", buf);
		kid_join(&k);
		close(s);
	}
	close(lfd);
	return 0;
}

/* One line c -> s, printed: the connection still works. */
static void carry_line(int c, int s)
{
	char buf[32] = { 0 };

	send_all(c, "still here\n", 11);
	recv_all(s, buf, 11);
	say("the connection still carries: %s", buf);
}

static int via_vdprintf(int fd, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vdprintf(fd, fmt, ap);
	va_end(ap);
	return n;
}

/* dprintf and vdprintf write with glibc's internal write. */
static int sc_dprintf(void)
{
	char big[10000], buf[12000] = { 0 };
	struct pollfd pf;
	int c, s;
	size_t n = 0;

	tcp_pair(&c, &s);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	SHOW(dprintf(c, "dprintf %d %s\n", 42, "words"));
	SHOW(via_vdprintf(c, "vdprintf %05d\n", 7));
	SHOW(dprintf(c, "%s\n", big));
	SHOW(dprintf(c, "%s", ""));
	SHOW(shutdown(c, SHUT_WR));
	/* Bounded: bytes that went astray must show as a difference, not a hang. */
	pf = (struct pollfd){ .fd = s, .events = POLLIN };
	while (n < sizeof(buf) - 1 && poll(&pf, 1, 5000) == 1) {
		ssize_t r = read(s, buf + n, sizeof(buf) - 1 - n);

		if (r <= 0)
			break;
		n += (size_t)r;
	}
	say("the peer got %zu bytes; first line: %.*s", n, (int)strcspn(buf, "\n"), buf);
	say("the rest: %.30s... %zu x", buf + strlen("dprintf 42 words\n"), strspn(buf + 32, "x"));
	SHOW(dprintf(-1, "bad fd\n"));
	close(c);
	close(s);
	return 0;
}

/* Spawned role, inetd style: the connection is stdin and stdout. */
static int sc_spawn_role(void)
{
	char line[64];

	if (!fgets(line, sizeof(line), stdin))
		snprintf(line, sizeof(line), "nothing\n");
	printf("the spawned child got: %s", line);
	return 0;
}

/* posix_spawn and posix_spawnp (glibc's run the new image without the exec
 * calls the hook wraps) with the connection on the child's 0 and 1. */
static int sc_spawn(void)
{
	char buf[256];
	posix_spawn_file_actions_t fa;
	char *argv_self[] = { (char *)scen_self, "spawn_role", NULL };
	char *argv_sh[] = { "sh", "-c", "read l; echo \"sh got $l\"", NULL };
	int c, s, status, r;
	pid_t pid;

	for (int i = 0; i < 2; i++) {
		tcp_pair(&c, &s);
		MUST(posix_spawn_file_actions_init(&fa));
		MUST(posix_spawn_file_actions_adddup2(&fa, c, 0));
		MUST(posix_spawn_file_actions_adddup2(&fa, c, 1));
		MUST(posix_spawn_file_actions_addclose(&fa, c));
		fflush(stdout);
		r = i == 0 ? posix_spawn(&pid, scen_self, &fa, NULL, argv_self, environ)
			   : posix_spawnp(&pid, "sh", &fa, NULL, argv_sh, environ);
		say("%s -> %s", i == 0 ? "posix_spawn" : "posix_spawnp sh", r ? en(r) : "0");
		posix_spawn_file_actions_destroy(&fa);
		close(c); /* the child serves it */
		SHOW(send_all(s, "hello spawn\n", 12));
		read_all(s, buf, sizeof(buf));
		say("the peer read: %s", buf);
		waitpid(pid, &status, 0);
		say("child exit %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		close(s);
	}
	/* A spawn that fails reports the error, as the real one does. */
	{
		char *argv_none[] = { "/nonexistent/prog", NULL };

		tcp_pair(&c, &s);
		r = posix_spawn(&pid, "/nonexistent/prog", NULL, NULL, argv_none, environ);
		say("posix_spawn of a missing program -> %s", r ? en(r) : "0");
		if (r == 0) {
			waitpid(pid, &status, 0);
			say("child exit %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		}
		carry_line(c, s);
		close(c);
		close(s);
	}
	return 0;
}

/* system() and popen() (glibc spawns their shell with internal calls) with
 * a connection the shell uses by number. */
static int sc_system_popen(void)
{
	char cmd[160], buf[128];
	FILE *f;
	int c, s, st;

	tcp_pair(&c, &s);
	SHOW(send_all(s, "hello system\n", 13));
	snprintf(cmd, sizeof(cmd), "read l <&%d; echo \"sh got $l\" >&%d", c, c);
	st = system(cmd);
	say("system -> exit %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	SHOW(shutdown(c, SHUT_WR));
	read_all(s, buf, sizeof(buf));
	say("the peer read: %s", buf);
	close(c);
	close(s);

	tcp_pair(&c, &s);
	snprintf(cmd, sizeof(cmd), "read l; echo \"popen got $l\" >&%d", c);
	fflush(stdout);
	f = popen(cmd, "w");
	say("popen: %s", f ? "ok" : "NULL");
	if (f) {
		fputs("hello popen\n", f);
		st = pclose(f);
		say("pclose -> exit %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
	SHOW(shutdown(c, SHUT_WR));
	read_all(s, buf, sizeof(buf));
	say("the peer read: %s", buf);
	close(c);
	close(s);

	tcp_pair(&c, &s);
	snprintf(cmd, sizeof(cmd), "echo \"from the shell\"; read l <&%d; echo \"$l\"", s);
	SHOW(send_all(c, "popen reads\n", 12));
	f = popen(cmd, "r");
	say("popen r: %s", f ? "ok" : "NULL");
	if (f) {
		while (fgets(buf, sizeof(buf), f))
			say("popen read: %s", buf);
		st = pclose(f);
		say("pclose -> exit %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
	close(c);
	close(s);
	return 0;
}

/* A connection under three numbers moves 1000 bytes each way and stays
 * open to the end: the SCILAN_STATS line counts its live bytes once. */
static int sc_alias_counters(void)
{
	char buf[1000];
	int c, s, d, e;

	tcp_pair(&c, &s);
	d = MUST(dup(c));
	e = MUST(fcntl(s, F_DUPFD, 10));
	memset(buf, 'a', sizeof(buf));
	SHOW(send_all(d, buf, sizeof(buf)));
	SHOW(recv_all(e, buf, sizeof(buf)));
	SHOW(send_all(s, buf, sizeof(buf)));
	SHOW(recv_all(c, buf, sizeof(buf)));
	return 0;
}

/* Three forked children and their parent each move bytes on a connection
 * of their own and exit: one SCILAN_STATS line each, wherever it goes. */
static int sc_stats_forks(void)
{
	char buf[100];
	int c, s, st;

	for (int i = 0; i < 3; i++) {
		pid_t pid = MUST(fork());

		if (pid == 0) {
			tcp_pair(&c, &s);
			memset(buf, 'k', sizeof(buf));
			if (send_all(c, buf, sizeof(buf)) != (ssize_t)sizeof(buf) ||
			    recv_all(s, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
				exit(1);
			exit(0); /* exit, not _exit: the line is written at exit */
		}
		MUST(waitpid(pid, &st, 0));
		say("child %d: exit %d", i, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
	tcp_pair(&c, &s);
	SHOW(send_all(c, "p", 1));
	SHOW(recv_all(s, buf, 1));
	return 0;
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "stderr_conn", sc_stderr_conn },
		{ "stderr_exec_role", sc_stderr_exec_role },
		{ "dprintf", sc_dprintf },
		{ "spawn", sc_spawn },
		{ "spawn_role", sc_spawn_role },
		{ "system_popen", sc_system_popen },
		{ "alias_counters", sc_alias_counters },
		{ "stats_forks", sc_stats_forks },
		{ NULL, NULL },
	};

	return scen_main(argc, argv, t);
}
