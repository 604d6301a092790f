/* test_options.c — socket options: SO_RCVBUF as the ring size (rounding, clamping,
 * fixed at connect, SCILAN_SO_RING_SIZE reads it), SOL_SCILAN and pass-through kernel options, and the
 * SCILAN_POLL_US / SCILAN_RING_KB environment defaults. */
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>

#include "cr_helpers.h"
#include "testutil.h"

/* ---- options ------------------------------------------------------------------------------ */

static int get_int(int fd, int level, int name)
{
	int v = -12345;
	socklen_t len = sizeof(v);

	cr_assert_eq(scilan_getsockopt(fd, level, name, &v, &len), 0, "getsockopt(%d, %d): %s", level, name,
		     strerror(errno));
	cr_assert_eq(len, sizeof(int));
	return v;
}

static void set_int(int fd, int level, int name, int v)
{
	cr_assert_eq(scilan_setsockopt(fd, level, name, &v, sizeof(v)), 0, "setsockopt(%d, %d, %d): %s", level,
		     name, v, strerror(errno));
}

Test(io, so_rcvbuf_sets_ring_size, .timeout = 30)
{
	unsigned char *buf = malloc(1 << 20);
	int c, s, fresh, def;
	ssize_t n;

	fresh = scilan_socket(AF_INET, SOCK_STREAM, 0);
	def = get_int(fresh, SOL_SCILAN, SCILAN_SO_RING_SIZE);
	cr_assert(def >= 4096 && (def & (def - 1)) == 0, "default ring size %d", def);
	set_int(fresh, SOL_SOCKET, SO_RCVBUF, 5000);
	/* SO_RCVBUF itself reads back as the kernel reports it (doubled). */
	cr_assert_eq(get_int(fresh, SOL_SOCKET, SO_RCVBUF), 10000, "SO_RCVBUF not the kernel's value");
	cr_assert_eq(get_int(fresh, SOL_SCILAN, SCILAN_SO_RING_SIZE), 8192, "SO_RCVBUF 5000 not rounded to 8192");
	scilan_close(fresh);

	/* Client ring 8 KiB (5000 rounded up), server ring 16 KiB (set on the listener). */
	pair_or_die(5000, 16384, &c, &s);
	cr_assert_eq(get_int(c, SOL_SCILAN, SCILAN_SO_RING_SIZE), 8192, "client ring in use");
	cr_assert_eq(get_int(s, SOL_SCILAN, SCILAN_SO_RING_SIZE), 16384, "server ring in use");
	/* The rings really have those sizes: an empty ring takes exactly that much. */
	memset(buf, 7, 1 << 20);
	n = scilan_send(c, buf, 1 << 20, MSG_DONTWAIT);
	cr_assert_eq(n, 16384, "send into the server's 16 KiB ring took %zd", n);
	n = scilan_send(s, buf, 1 << 20, MSG_DONTWAIT);
	cr_assert_eq(n, 8192, "send into the client's 8 KiB ring took %zd", n);
	/* Set after connect: the ring in use does not change. */
	set_int(c, SOL_SOCKET, SO_RCVBUF, 1 << 20);
	cr_assert_eq(get_int(c, SOL_SCILAN, SCILAN_SO_RING_SIZE), 8192, "ring size changed after connect");
	scilan_close(c);
	scilan_close(s);

	/* Clamped to the limits. */
	pair_or_die(1, 1, &c, &s);
	cr_assert_eq(get_int(c, SOL_SCILAN, SCILAN_SO_RING_SIZE), 4096);
	cr_assert_eq(get_int(s, SOL_SCILAN, SCILAN_SO_RING_SIZE), 4096);
	scilan_close(c);
	scilan_close(s);
	free(buf);
}

Test(io, other_options, .timeout = 30)
{
	int c, s, fill;

	pair_or_die(0, 0, &c, &s);
	set_int(c, SOL_SOCKET, SO_SNDBUF, 65536);
	cr_assert_gt(get_int(c, SOL_SOCKET, SO_SNDBUF), 0);
	cr_assert_eq(get_int(c, SOL_SOCKET, SO_ERROR), 0);
	cr_assert_eq(get_int(s, SOL_SOCKET, SO_ERROR), 0);
	set_int(c, IPPROTO_TCP, TCP_NODELAY, 1);
	cr_assert_neq(get_int(c, IPPROTO_TCP, TCP_NODELAY), 0);
	set_int(c, IPPROTO_TCP, TCP_NODELAY, 0);
	cr_assert_eq(get_int(c, IPPROTO_TCP, TCP_NODELAY), 0);
	set_int(c, SOL_SCILAN, SCILAN_SO_POLL_US, 123);
	cr_assert_eq(get_int(c, SOL_SCILAN, SCILAN_SO_POLL_US), 123);
	set_int(c, SOL_SCILAN, SCILAN_SO_POLL_US, 0);
	cr_assert_eq(get_int(c, SOL_SCILAN, SCILAN_SO_POLL_US), 0);
	cr_assert_eq(get_int(s, SOL_SCILAN, SCILAN_SO_RING_FILL), 0);
	cr_assert_eq(tu_send_all(c, "0123456789", 10, 0), 10);
	fill = get_int(s, SOL_SCILAN, SCILAN_SO_RING_FILL);
	cr_assert_eq(fill, 10, "ring fill %d after 10 bytes", fill);
	/* Interrupt mode still moves data. */
	{
		char b[10];

		cr_assert_eq(tu_recv_all(s, b, 10), 10);
		cr_assert_arr_eq(b, "0123456789", 10);
		cr_assert_eq(tu_send_all(s, "back", 4, 0), 4);
		cr_assert_eq(tu_recv_all(c, b, 4), 4);
	}
	/* SO_KEEPALIVE and friends pass through to the kernel socket. */
	set_int(c, SOL_SOCKET, SO_KEEPALIVE, 1);
	cr_assert_neq(get_int(c, SOL_SOCKET, SO_KEEPALIVE), 0);
	scilan_close(c);
	scilan_close(s);
}

Test(io, env_defaults, .timeout = 30)
{
	int fd, c, s;

	/* Settings are read once per process at first use: this test's process is fresh. */
	setenv("SCILAN_POLL_US", "7", 1);
	setenv("SCILAN_RING_KB", "8", 1);
	fd = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(get_int(fd, SOL_SCILAN, SCILAN_SO_POLL_US), 7, "SCILAN_POLL_US=7 not applied");
	cr_assert_eq(get_int(fd, SOL_SCILAN, SCILAN_SO_RING_SIZE), 8192, "SCILAN_RING_KB=8 not applied");
	scilan_close(fd);
	pair_or_die(0, 0, &c, &s);
	cr_assert_eq(get_int(c, SOL_SCILAN, SCILAN_SO_RING_SIZE), 8192);
	cr_assert_eq(get_int(s, SOL_SCILAN, SCILAN_SO_RING_SIZE), 8192);
	cr_assert_eq(get_int(c, SOL_SCILAN, SCILAN_SO_POLL_US), 7);
	cr_assert_eq(scilan_send(c, (char[16384]){ 0 }, 16384, MSG_DONTWAIT), 8192);
	scilan_close(c);
	scilan_close(s);
}

/* Unset, SCILAN_POLL_US leaves the spin to the learning (spin_policy.c),
 * which SCILAN_SO_POLL_US reports as -1 and can force and hand back. */
static void adaptive_by_default(const char *env)
{
	int c, s, bad = -2;
	char b[4];

	if (env)
		setenv("SCILAN_POLL_US", env, 1);
	else
		unsetenv("SCILAN_POLL_US");
	pair_or_die(0, 0, &c, &s);
	cr_assert_eq(get_int(c, SOL_SCILAN, SCILAN_SO_POLL_US), -1, "the default spin is not the learnt one");
	cr_assert_eq(get_int(s, SOL_SCILAN, SCILAN_SO_POLL_US), -1, "an accepted socket does not learn its spin");
	for (int i = 0; i < 200; i++) {
		cr_assert_eq(tu_send_all(c, "ping", 4, 0), 4);
		cr_assert_eq(tu_recv_all(s, b, 4), 4);
		cr_assert_eq(tu_send_all(s, "pong", 4, 0), 4);
		cr_assert_eq(tu_recv_all(c, b, 4), 4);
		cr_assert_arr_eq(b, "pong", 4);
	}
	set_int(c, SOL_SCILAN, SCILAN_SO_POLL_US, 5);
	cr_assert_eq(get_int(c, SOL_SCILAN, SCILAN_SO_POLL_US), 5);
	set_int(c, SOL_SCILAN, SCILAN_SO_POLL_US, -1);
	cr_assert_eq(get_int(c, SOL_SCILAN, SCILAN_SO_POLL_US), -1);
	cr_assert_eq(scilan_setsockopt(c, SOL_SCILAN, SCILAN_SO_POLL_US, &bad, sizeof(bad)), -1);
	cr_assert_eq(errno, EINVAL);
	scilan_close(c);
	scilan_close(s);
}

Test(io, poll_us_adaptive_by_default, .timeout = 30)
{
	adaptive_by_default(NULL);
}

Test(io, poll_us_auto_is_adaptive, .timeout = 30)
{
	adaptive_by_default("auto");
}

Test(io, env_ring_kb_rounds_up, .timeout = 30)
{
	int fd;

	setenv("SCILAN_RING_KB", "5", 1);
	fd = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(get_int(fd, SOL_SCILAN, SCILAN_SO_RING_SIZE), 8192, "SCILAN_RING_KB=5 not rounded to 8 KiB");
	scilan_close(fd);
}

/* ---- SCILAN_PROFILE: named sets of the settings above ------------------------------------ */

/* The poll time and ring a fresh socket gets under the environment set. */
static void expect_socket_settings(int poll_us, int ring)
{
	int fd = scilan_socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(fd, 0);
	cr_expect_eq(get_int(fd, SOL_SCILAN, SCILAN_SO_POLL_US), poll_us, "poll time %d, expected %d",
		     get_int(fd, SOL_SCILAN, SCILAN_SO_POLL_US), poll_us);
	cr_expect_eq(get_int(fd, SOL_SCILAN, SCILAN_SO_RING_SIZE), ring, "ring %d, expected %d",
		     get_int(fd, SOL_SCILAN, SCILAN_SO_RING_SIZE), ring);
	scilan_close(fd);
}

Test(io, profile_latency_spins, .timeout = 30)
{
	unsetenv("SCILAN_POLL_US");
	unsetenv("SCILAN_RING_KB");
	setenv("SCILAN_PROFILE", "latency", 1);
	expect_socket_settings(200, 256 * 1024);
}

Test(io, profile_low_cpu_sleeps_at_once, .timeout = 30)
{
	unsetenv("SCILAN_POLL_US");
	unsetenv("SCILAN_RING_KB");
	setenv("SCILAN_PROFILE", "low-cpu", 1);
	expect_socket_settings(0, 256 * 1024);
}

Test(io, profile_balanced_is_the_default, .timeout = 30)
{
	unsetenv("SCILAN_POLL_US");
	unsetenv("SCILAN_RING_KB");
	setenv("SCILAN_PROFILE", "balanced", 1);
	expect_socket_settings(-1, 256 * 1024);
}

/* A setting given by its own variable wins over the profile's. */
Test(io, profile_yields_to_explicit_settings, .timeout = 30)
{
	setenv("SCILAN_PROFILE", "low-cpu", 1);
	setenv("SCILAN_POLL_US", "7", 1);
	setenv("SCILAN_RING_KB", "8", 1);
	expect_socket_settings(7, 8192);
}

Test(io, profile_unknown_is_reported_and_balanced, .timeout = 30)
{
	int token;
	char *err;

	unsetenv("SCILAN_POLL_US");
	unsetenv("SCILAN_RING_KB");
	setenv("SCILAN_PROFILE", "turbo", 1);
	token = tu_capture_begin();
	cr_assert_geq(token, 0);
	expect_socket_settings(-1, 256 * 1024);
	err = tu_capture_end(token);
	cr_expect(strstr(err, "SCILAN_PROFILE=turbo") && strstr(err, "latency|balanced|low-cpu"), "stderr: %s", err);
	free(err);
}
