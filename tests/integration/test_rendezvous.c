/* test_rendezvous.c — the connect offer must match exactly the connection the
 * listener accepts: connecting to the unspecified address (Linux: loopback),
 * and two clients with the same port on different source addresses.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static void expect_echo(int c, int s, const char *msg)
{
	char buf[64] = { 0 };
	size_t len = strlen(msg);

	cr_assert_eq(scilan_send(c, msg, len, 0), (ssize_t)len, "send: %s", strerror(errno));
	cr_assert_eq(tu_recv_all(s, buf, len), (ssize_t)len, "recv on the accepted socket: %s", strerror(errno));
	cr_assert_str_eq(buf, msg, "data went to another connection");
}

Test(rendezvous, connect_to_unspecified_address, .timeout = 30)
{
	struct sockaddr_in any = { .sin_family = AF_INET };
	uint16_t port;
	int l = tu_listen(AF_INET, 4, &port), c, s;

	cr_assert_geq(l, 0);
	any.sin_port = htons(port);
	c = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(scilan_connect(c, (struct sockaddr *)&any, sizeof(any)), 0, "connect 0.0.0.0: %s", strerror(errno));
	s = tu_accept(l);
	cr_assert_geq(s, 0);
	cr_assert_eq(tu_accelerated(c), tu_accelerated(s), "ends disagree: client %d, server %d", tu_accelerated(c),
		     tu_accelerated(s));
	expect_echo(c, s, "hello via 0.0.0.0");
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
}

static int client_from(const char *src_ip, uint16_t src_port, uint16_t port)
{
	struct sockaddr_in src = { .sin_family = AF_INET, .sin_port = htons(src_port) };
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, c = scilan_socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, src_ip, &src.sin_addr);
	inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
	scilan_setsockopt(c, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	cr_assert_eq(scilan_bind(c, (struct sockaddr *)&src, sizeof(src)), 0, "bind %s:%u: %s", src_ip, src_port,
		     strerror(errno));
	cr_assert_eq(scilan_connect(c, (struct sockaddr *)&dst, sizeof(dst)), 0, "connect: %s", strerror(errno));
	return c;
}

Test(rendezvous, same_port_different_source_addresses, .timeout = 30)
{
	uint16_t port, src_port;
	int l = tu_listen(AF_INET, 4, &port), c1, c2, s1, s2, probe;
	struct sockaddr_in a = { .sin_family = AF_INET };

	cr_assert_geq(l, 0);
	/* A free port number to use twice, from 127.0.0.2 and 127.0.0.3. */
	probe = scilan_socket(AF_INET, SOCK_STREAM, 0);
	inet_pton(AF_INET, "127.0.0.2", &a.sin_addr);
	cr_assert_eq(scilan_bind(probe, (struct sockaddr *)&a, sizeof(a)), 0);
	src_port = tu_local_port(probe);
	scilan_close(probe);
	c1 = client_from("127.0.0.2", src_port, port);
	s1 = tu_accept(l);
	c2 = client_from("127.0.0.3", src_port, port);
	s2 = tu_accept(l);
	cr_assert(s1 >= 0 && s2 >= 0);
	cr_assert_eq(tu_accelerated(c1), tu_accelerated(s1), "first pair disagrees");
	cr_assert_eq(tu_accelerated(c2), tu_accelerated(s2), "second pair disagrees");
	expect_echo(c1, s1, "from-c1");
	expect_echo(c2, s2, "from-c2");
	scilan_close(c1);
	scilan_close(c2);
	scilan_close(s1);
	scilan_close(s2);
	scilan_close(l);
}

/* A client that connects without blocking and then polls for the server's
 * greeting: the greeting arrives in the ring, not in the kernel socket. */
Test(rendezvous, nonblocking_connect_then_poll_for_greeting, .timeout = 30)
{
	struct sockaddr_storage ss;
	struct pollfd pfd;
	char buf[16] = { 0 };
	uint16_t port;
	int l = tu_listen(AF_INET, 4, &port), c, s, r;
	socklen_t len = tu_loopback(AF_INET, port, &ss);

	cr_assert_geq(l, 0);
	c = scilan_socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	r = scilan_connect(c, (struct sockaddr *)&ss, len);
	cr_assert(r == 0 || errno == EINPROGRESS, "connect: %s", strerror(errno));
	s = tu_accept(l);
	cr_assert_geq(s, 0);
	cr_assert_eq(scilan_send(s, "greeting", 8, 0), 8);
	pfd = (struct pollfd){ .fd = c, .events = POLLIN };
	cr_assert_eq(scilan_poll(&pfd, 1, 10000), 1, "poll did not see the greeting");
	cr_assert(pfd.revents & POLLIN);
	cr_assert_eq(scilan_recv(c, buf, sizeof(buf), 0), 8);
	cr_assert_str_eq(buf, "greeting");
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void interrupted_recv(bool restart, int *result, int *err)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = restart ? SA_RESTART : 0 };
	struct itimerval it = { .it_value = { 0, 200000 } };
	char c;
	int cfd, sfd, zero = 0;

	cr_assert_eq(tu_pair(AF_INET, &cfd, &sfd), 0);
	scilan_setsockopt(sfd, SOL_SCILAN, SCILAN_SO_POLL_US, &zero, sizeof(zero));
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	if (restart) {
		/* Data after the signal: a restarted recv gets it. */
		if (fork() == 0) {
			usleep(600000);
			scilan_send(cfd, "x", 1, 0);
			_exit(0);
		}
	}
	*result = (int)scilan_recv(sfd, &c, 1, 0);
	*err = errno;
	scilan_close(cfd);
	scilan_close(sfd);
}

/* As with kernel TCP: SA_RESTART handlers restart recv, others end it with EINTR. */
Test(rendezvous, signal_restart_semantics, .timeout = 30)
{
	int result, err;

	interrupted_recv(false, &result, &err);
	cr_assert_eq(result, -1, "recv without SA_RESTART returned %d", result);
	cr_assert_eq(err, EINTR, "errno %s", strerror(err));
	interrupted_recv(true, &result, &err);
	cr_assert_eq(result, 1, "recv with SA_RESTART returned %d (%s)", result, strerror(err));
}

/* accept; fork; the parent closes its copy and the child serves: the client
 * must not see the parent's close (kernel TCP: the socket lives on). */
Test(rendezvous, parent_closes_child_serves, .timeout = 30)
{
	char buf[8] = { 0 };
	uint16_t port;
	int l = tu_listen(AF_INET, 4, &port), c, s, status;
	pid_t child;

	cr_assert_geq(l, 0);
	c = tu_connect(AF_INET, port);
	s = tu_accept(l);
	cr_assert(c >= 0 && s >= 0);
	child = fork();
	if (child == 0) {
		char req[4];

		if (tu_recv_all(s, req, 4) != 4 || scilan_send(s, "pong", 4, 0) != 4)
			_exit(1);
		scilan_close(s);
		_exit(0);
	}
	scilan_close(s);
	cr_assert_eq(scilan_send(c, "ping", 4, 0), 4);
	cr_assert_eq(tu_recv_all(c, buf, 4), 4, "the parent's close ended the child's connection");
	cr_assert_str_eq(buf, "pong");
	cr_assert_eq(scilan_recv(c, buf, sizeof(buf), 0), 0, "no EOF after the child's close");
	waitpid(child, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed");
	scilan_close(c);
	scilan_close(l);
}
