/* test_fallback.c — why a connection is kernel TCP: each situation the native
 * API can create (plain peers, no runtime directory, a bad map, the device
 * fabric, a revoked, refused, forged or undecided offer, a non-dumpable
 * client or a taken name where the listener has no rendezvous, descriptors
 * exhausted, a bypass) records its reason, which SCILAN_STATS counts,
 * SCILAN_LOG=info names, and `scilan_ctl stat --all --json` lists.
 * The hook-only situations are in tests/hook/test_reasons.c. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/config.h"
#include "fabric/shm/registry.h"
#include "fabric/shm/rendezvous.h"
#include "scilan.h"
#include "fabric/shm/offer_names.h"
#include "runtime/stats.h"
#include "testutil.h"
#include "young_helpers.h"
#include "fallback_helpers.h"

static int capture = -1;

static void setup(void)
{
	setenv("SCILAN_LOG", "info", 1);
	capture = tu_capture_begin();
	cr_assert_geq(capture, 0);
}

TestSuite(fallback, .init = setup, .timeout = 60);

/* The reason is counted (exactly n times), named in the SCILAN_STATS line and
 * logged once per fallback.  Ends the capture of stderr. */
static void expect_counted(const char *name, uint64_t n)
{
	struct sl_stats st;
	char line[128], buf[1024], *err;
	int fds[2];
	ssize_t k;

	sl_stats_read(&st);
	cr_expect_eq(st.fb[reason_of(name)], n, "%s counted %llu times, expected %llu", name,
		     (unsigned long long)st.fb[reason_of(name)], (unsigned long long)n);
	cr_assert_eq(pipe(fds), 0);
	sl_stats_print(fds[1]);
	close(fds[1]);
	k = read(fds[0], buf, sizeof(buf) - 1);
	close(fds[0]);
	buf[k > 0 ? k : 0] = '\0';
	snprintf(line, sizeof(line), "%s %llu", name, (unsigned long long)n);
	cr_expect(strstr(buf, "; fallback reasons: ") && strstr(buf, line), "stats line without '%s': %s", line, buf);
	err = tu_capture_end(capture);
	capture = -1;
	snprintf(line, sizeof(line), "kernel TCP, %s: ", name);
	cr_expect(strstr(err, line), "no log line '%s'; stderr:\n%s", line, err);
	free(err);
}

/* Our connection on fd as `scilan_ctl stat [--all] --json` (of this build)
 * lists it, copied into obj ("" if not listed). */
static void ctl_entry(bool all, int fd, char *obj, size_t size)
{
	static char out[1 << 18];
	char self[PATH_MAX], cmd[PATH_MAX * 2], want[64], field[32], *at, *end;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	size_t len = 0;
	FILE *p;

	cr_assert_gt(n, 0);
	self[n] = '\0';
	snprintf(cmd, sizeof(cmd), "%s/../../bin/scilan_ctl stat %s--json 2>/dev/null", dirname(self),
		 all ? "--all " : "");
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (len + 1 < sizeof(out) && (n = (ssize_t)fread(out + len, 1, sizeof(out) - 1 - len, p)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	cr_assert_eq(pclose(p), 0, "%s failed", cmd);
	snprintf(want, sizeof(want), "{\"pid\":%d,", (int)getpid());
	snprintf(field, sizeof(field), "\"fd\":%d,", fd);
	obj[0] = '\0';
	for (at = strstr(out, want); at && (end = strchr(at, '}')); at = strstr(end, want)) {
		*end = '\0';
		if (strstr(at, field)) {
			snprintf(obj, size, "%s}", at);
			return;
		}
		*end = '}';
	}
}

/* `scilan_ctl stat --all --json` lists our fallback connection on fd with
 * its reason and side; `stat --json` without --all does not. */
static void expect_listed(int fd, const char *reason, const char *side)
{
	char obj[1024], field[64];

	ctl_entry(true, fd, obj, sizeof(obj));
	cr_assert(*obj, "fd %d (%s) not listed by stat --all --json", fd, reason);
	snprintf(field, sizeof(field), "\"reason\":\"%s\"", reason);
	cr_expect(strstr(obj, field), "fd %d listed without %s: %s", fd, field, obj);
	cr_expect(strstr(obj, "\"accelerated\":false") && strstr(obj, "\"fabric\":\"tcp\""), "fd %d: %s", fd, obj);
	snprintf(field, sizeof(field), "\"side\":\"%s\"", side);
	cr_expect(strstr(obj, field), "fd %d listed without %s: %s", fd, field, obj);
	ctl_entry(false, fd, obj, sizeof(obj));
	cr_expect(!*obj, "fd %d (%s) listed by stat --json without --all: %s", fd, reason, obj);
}

/* An accelerated connection is listed as such (with --all too). */
static void expect_accelerated_listed(int fd, const char *side)
{
	char obj[1024], field[64];

	tu_grow_up(); /* listed from the first wait after the young period */
	ctl_entry(true, fd, obj, sizeof(obj));
	snprintf(field, sizeof(field), "\"side\":\"%s\"", side);
	cr_expect(strstr(obj, "\"accelerated\":true") && strstr(obj, "\"reason\":\"\"") && strstr(obj, field),
		  "accelerated fd %d: '%s'", fd, obj);
}

/* A connection to host:port, ours or libc's; -1 with errno. */
static int connect_to(in_addr_t host, uint16_t port, bool ours)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(host), .sin_port = htons(port) };
	int c = ours ? scilan_socket(AF_INET, SOCK_STREAM, 0) : socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (c >= 0 && (ours ? scilan_connect(c, (struct sockaddr *)&to, sizeof(to))
			    : connect(c, (struct sockaddr *)&to, sizeof(to))) < 0) {
		int err = errno;

		close(c);
		errno = err;
		return -1;
	}
	return c;
}

/* ---- the connecting side ------------------------------------------------------------------ */

Test(fallback, plain_listener_is_no_listener)
{
	uint16_t port;
	int l, c;

	cr_assert_not_null(tu_isolated_rundir());
	l = tu_plain_listen(AF_INET, 4, &port);
	c = tu_connect(AF_INET, port);
	cr_assert_geq(c, 0, "connect: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(c), 0);
	expect_listed(c, "no-listener", "connect");
	expect_counted("no-listener", 1);
	scilan_close(c);
	close(l);
}

/* A hooked listener whose acceptor takes the connection with the kernel's
 * accept (an io_uring or raw-syscall server) and speaks first. */
Test(fallback, plain_acceptor_is_unconfirmed)
{
	uint16_t port;
	int l, c, s;
	char b[2];

	cr_assert_not_null(tu_isolated_rundir());
	l = tu_listen(AF_INET, 4, &port);
	c = tu_connect(AF_INET, port);
	cr_assert_geq(c, 0, "connect: %s", strerror(errno));
	s = accept(l, NULL, NULL);
	cr_assert_geq(s, 0);
	cr_assert_eq(send(s, "hi", 2, 0), 2);
	cr_assert_eq(tu_recv_all(c, b, 2), 2, "recv: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(c), 0);
	expect_listed(c, "unconfirmed", "connect");
	expect_counted("unconfirmed", 1);
	scilan_close(c);
	close(s);
	scilan_close(l);
}

Test(fallback, close_before_accept_is_undecided)
{
	uint16_t port;
	int l, c, s;

	cr_assert_not_null(tu_isolated_rundir());
	l = tu_listen(AF_INET, 4, &port);
	c = tu_connect(AF_INET, port);
	cr_assert_geq(c, 0, "connect: %s", strerror(errno));
	cr_assert_eq(tu_send_all(c, "x", 1, 0), 1);
	scilan_close(c); /* closed: nothing left to list */
	s = tu_accept(l);
	cr_assert_geq(s, 0);
	expect_counted("undecided", 1);
	scilan_close(s);
	scilan_close(l);
}

/* The offer's FIFOs are gone when the acceptor looks (as if swept): it
 * refuses the offer, and the connecting side finds it refused.  Only an offer
 * file names its FIFOs: one passed through the rendezvous carries them open. */
Test(fallback, refused_offer_both_ends)
{
	char dir[PATH_MAX], path[PATH_MAX + 300], b[1];
	const char *rundir = tu_isolated_rundir();
	struct dirent *de;
	uint16_t port;
	int l, c, s, squat, gone = 0;
	DIR *d;

	cr_assert_not_null(rundir);
	l = listen_without_rendezvous(&port, &squat);
	c = tu_connect(AF_INET, port);
	cr_assert_geq(c, 0, "connect: %s", strerror(errno));
	snprintf(dir, sizeof(dir), "%s/offer", rundir);
	d = opendir(dir);
	cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
	while ((de = readdir(d)))
		if (strstr(de->d_name, ".bell")) {
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			gone += unlink(path) == 0;
		}
	closedir(d);
	cr_assert_eq(gone, 2, "the offer's two FIFOs");
	s = tu_accept(l);
	cr_assert_geq(s, 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(s), 0);
	cr_assert_eq(tu_send_all(s, "y", 1, 0), 1);
	cr_assert_eq(tu_recv_all(c, b, 1), 1, "recv: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(c), 0);
	expect_listed(s, "bad-offer", "accept");
	expect_listed(c, "refused", "connect");
	expect_counted("refused", 1);
	{
		struct sl_stats st;

		sl_stats_read(&st);
		cr_expect_eq(st.fb[SL_FB_BAD_OFFER], 1);
	}
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
	close(squat);
}

/* The name our offer would take is in use (a wake-up FIFO is there), and
 * the listener has no rendezvous to pass the offer through instead.  In our
 * namespace offers are named by the connecting socket's cookie, so only
 * someone who read ours can be in the way. */
Test(fallback, offer_name_in_use_is_busy)
{
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_storage dst;
	struct sl_key to = { .family = AF_INET }, by_socket = { .family = AF_INET };
	char offer[SL_OFFER_PATH_SIZE], bell[SL_BELL_PATH_SIZE];
	uint64_t cookie;
	socklen_t len, cookie_len = sizeof(cookie);
	uint16_t port;
	int l, c, squat;

	cr_assert_not_null(tu_isolated_rundir());
	l = listen_without_rendezvous(&port, &squat);
	c = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(getsockopt(c, SOL_SOCKET, SO_COOKIE, &cookie, &cookie_len), 0);
	memcpy(to.addr, &me.sin_addr, 4);
	to.port = port;
	cr_assert_eq(sl_shm_offer_path(&to, &by_socket, cookie, offer, sizeof(offer)), 0);
	cr_assert_eq(sl_shm_bell_path(offer, 0, bell, sizeof(bell)), 0);
	cr_assert_eq(mkfifo(bell, 0600), 0, "%s: %s", bell, strerror(errno));
	len = tu_loopback(AF_INET, port, &dst);
	cr_assert_eq(scilan_connect(c, (struct sockaddr *)&dst, len), 0, "connect: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(c), 0);
	expect_listed(c, "busy", "connect");
	expect_counted("busy", 1);
	unlink(bell);
	scilan_close(c);
	scilan_close(l);
	close(squat);
}

/* One descriptor left: the set-up's lookup gets it, its FIFOs do not. */
Test(fallback, descriptors_exhausted_is_resource)
{
	struct sockaddr_storage dst;
	struct rlimit old, lim;
	uint16_t port, plain_port;
	int l, pl, first, c, fillers[64], nf = 0, fd;
	socklen_t len;

	cr_assert_not_null(tu_isolated_rundir());
	l = tu_listen(AF_INET, 4, &port);
	/* A listed fallback first: the statistics file exists before the limit. */
	pl = tu_plain_listen(AF_INET, 4, &plain_port);
	first = tu_connect(AF_INET, plain_port);
	cr_assert_geq(first, 0);
	c = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(c, 0);
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	lim = old;
	lim.rlim_cur = (rlim_t)c + 16;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &lim), 0);
	while ((fd = dup(0)) >= 0 && nf < 64)
		fillers[nf++] = fd;
	cr_assert(nf > 0 && nf < 64);
	close(fillers[--nf]);
	len = tu_loopback(AF_INET, port, &dst);
	cr_assert_eq(scilan_connect(c, (struct sockaddr *)&dst, len), 0, "connect: %s", strerror(errno));
	while (nf)
		close(fillers[--nf]);
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	cr_assert_eq(tu_accelerated(c), 0);
	expect_listed(c, "resource", "connect");
	expect_counted("resource", 1);
	scilan_close(c);
	scilan_close(first);
	close(pl);
	scilan_close(l);
}

/* A runtime directory others may write is refused. */
Test(fallback, unsafe_rundir_is_no_rundir)
{
	const char *dir = tu_tmpdir();
	uint16_t port;
	int l, c;

	cr_assert_not_null(dir);
	cr_assert_eq(chmod(dir, 0777), 0);
	setenv("SCILAN_RUNDIR", dir, 1);
	l = tu_plain_listen(AF_INET, 4, &port);
	c = tu_connect(AF_INET, port);
	cr_assert_geq(c, 0);
	/* No runtime directory: nowhere to publish it for scilan_ctl. */
	expect_counted("no-rundir", 1);
	scilan_close(c);
	close(l);
}

/* An unreadable cluster map turns scilan off in the process. */
Test(fallback, bad_map_is_off)
{
	char conf[PATH_MAX];
	uint16_t port;
	int l, c;
	FILE *f;

	cr_assert_not_null(tu_isolated_rundir());
	snprintf(conf, sizeof(conf), "%s/bad.conf", tu_tmpdir());
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fputs("this is not a map line\n", f);
	fclose(f);
	setenv("SCILAN_CONF", conf, 1);
	l = tu_plain_listen(AF_INET, 4, &port);
	c = tu_connect(AF_INET, port);
	cr_assert_geq(c, 0);
	expect_counted("off", 1);
	scilan_close(c);
	close(l);
}

static void dev_fabric_with_map(const char *line)
{
	char conf[PATH_MAX];
	FILE *f;

	cr_assert_not_null(tu_isolated_rundir());
	snprintf(conf, sizeof(conf), "%s/cluster.conf", tu_tmpdir());
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fputs(line, f);
	fclose(f);
	setenv("SCILAN_CONF", conf, 1);
	setenv("SCILAN_FABRIC", "dev", 1);
}

Test(fallback, device_fabric_not_in_map)
{
	uint16_t port;
	int l, c;

	dev_fabric_with_map("1 10.99.0.1 dev scilan0\n");
	l = tu_plain_listen(AF_INET, 4, &port);
	c = tu_connect(AF_INET, port);
	cr_assert_geq(c, 0);
	expect_listed(c, "not-in-map", "connect");
	expect_counted("not-in-map", 1);
	scilan_close(c);
	close(l);
}

/* Mapped over a device that does not exist (or whose link is down). */
Test(fallback, device_fabric_link_down)
{
	uint16_t port;
	int l, c;

	cr_assert(access("/dev/scilan9", F_OK) != 0);
	dev_fabric_with_map("1 127.0.0.1 dev scilan9\n");
	l = tu_plain_listen(AF_INET, 4, &port);
	c = tu_connect(AF_INET, port);
	cr_assert_geq(c, 0);
	expect_listed(c, "link-down", "connect");
	expect_counted("link-down", 1);
	scilan_close(c);
	close(l);
}

/* ---- the accepting side ------------------------------------------------------------------- */


Test(fallback, plain_client_is_no_offer)
{
	uint16_t port;
	int l, c, s;

	cr_assert_not_null(tu_isolated_rundir());
	l = tu_listen(AF_INET, 4, &port);
	c = tu_plain_connect(AF_INET, port);
	cr_assert_geq(c, 0);
	s = tu_accept(l);
	cr_assert_geq(s, 0);
	cr_assert_eq(tu_accelerated(s), 0);
	expect_listed(s, "no-offer", "accept");
	expect_counted("no-offer", 1);
	scilan_close(s);
	close(c);
	scilan_close(l);
}

/* A plain client forges an offer through the listener's rendezvous for its
 * own connection (accepted there: it owns the other end) with an unsealed
 * file for a segment: refused as bad, the connection stays kernel TCP. */
Test(fallback, forged_passed_offer_is_bad_offer)
{
	struct sl_key dst = { .family = AF_INET, .addr = { 127, 0, 0, 1 } }, src = dst;
	struct sockaddr_storage ss;
	uint16_t port;
	int l, c, s, conn, fds[SL_RDV_FDS], p[2];
	socklen_t len;
	char b;

	cr_assert_not_null(tu_isolated_rundir());
	l = tu_listen(AF_INET, 4, &port);
	c = socket(AF_INET, SOCK_STREAM, 0);
	/* From a port where the acceptor looks for offers. */
	cr_assert_eq(tu_bind_offer_port(c), 0, "bind: %s", strerror(errno));
	dst.port = port;
	src.port = tu_local_port(c);
	fds[0] = memfd_create("forged", MFD_CLOEXEC);
	cr_assert_geq(fds[0], 0);
	cr_assert_eq(ftruncate(fds[0], 1 << 20), 0);
	cr_assert_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	fds[1] = p[0];
	fds[2] = p[1];
	conn = sl_rdv_connect(&dst);
	cr_assert_geq(conn, 0, "rendezvous: %s", strerror(errno));
	cr_assert_eq(sl_rdv_send(conn, c, &dst, &src, fds, false), 0, "send: %s", strerror(errno));
	close(conn);
	len = tu_loopback(AF_INET, port, &ss);
	cr_assert_eq(connect(c, (struct sockaddr *)&ss, len), 0);
	s = tu_accept(l);
	cr_assert_geq(s, 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(s), 0);
	cr_assert_eq(send(c, "q", 1, 0), 1);
	cr_assert_eq(tu_recv_all(s, &b, 1), 1, "recv: %s", strerror(errno));
	cr_assert_eq(b, 'q');
	expect_listed(s, "bad-offer", "accept");
	expect_counted("bad-offer", 1);
	for (int i = 0; i < SL_RDV_FDS; i++)
		close(fds[i]);
	scilan_close(s);
	close(c);
	scilan_close(l);
}

/* The listener could not be registered: its registry is not a directory
 * and another socket holds its rendezvous name. */
Test(fallback, unregistered_listener)
{
	const char *rundir = tu_isolated_rundir();
	char path[PATH_MAX];
	uint16_t port;
	int l, c, s, fd, squat;

	cr_assert_not_null(rundir);
	cr_assert(*sl_config()->rundir, "runtime directory %s refused", rundir);
	snprintf(path, sizeof(path), "%s/listen", rundir);
	rmdir(path);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	close(fd);
	l = listen_without_rendezvous(&port, &squat);
	c = tu_plain_connect(AF_INET, port);
	s = tu_accept(l);
	cr_assert_geq(s, 0);
	/* scilan_ctl refuses a runtime directory in that state. */
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(mkdir(path, 0700), 0);
	expect_listed(s, "unregistered", "accept");
	expect_counted("unregistered", 1);
	scilan_close(s);
	close(c);
	scilan_close(l);
	close(squat);
}

/* The client was killed after its connect: its segment waits in the
 * rendezvous queue and is attached; the acceptor then finds the peer gone. */
Test(fallback, killed_client_is_attached_then_eof)
{
	uint16_t port;
	int l, s, status;
	pid_t pid;
	char b;

	cr_assert_not_null(tu_isolated_rundir());
	l = tu_listen(AF_INET, 4, &port);
	pid = connecting_child(port, false);
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	s = tu_accept(l);
	cr_assert_geq(s, 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(s), 1);
	expect_accelerated_listed(s, "accept");
	/* A dead peer's end: end of file or the loud reset, never bytes or a hang. */
	{
		ssize_t n = scilan_recv(s, &b, 1, 0);

		cr_assert(n == 0 || (n < 0 && errno == ECONNRESET), "recv: %zd (%s)", n, strerror(errno));
	}
	scilan_close(s);
	scilan_close(l);
}

/* The client closed after its connect, before the accept: it revoked the
 * offer waiting in the rendezvous queue, and the acceptor finds it so. */
Test(fallback, closed_client_is_revoked)
{
	struct tu_sync sync;
	uint16_t port;
	uint64_t v;
	int l, s, status;
	pid_t pid;
	char b;

	cr_assert_not_null(tu_isolated_rundir());
	l = tu_listen(AF_INET, 4, &port);
	cr_assert_eq(tu_sync_init(&sync), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int c = tu_connect(AF_INET, port);

		tu_sync_put_child(&sync, c >= 0 && tu_send_all(c, "z", 1, 0) == 1 && scilan_close(c) == 0);
		_exit(0);
	}
	close(sync.child_fd);
	cr_assert_eq(tu_sync_get(&sync, &v), 0);
	cr_assert_eq(v, 1, "the child's connect, send or close failed");
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	s = tu_accept(l);
	cr_assert_geq(s, 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(s), 0);
	cr_assert_eq(tu_recv_all(s, &b, 1), 1, "recv: %s", strerror(errno));
	cr_assert_eq(b, 'z');
	expect_listed(s, "revoked", "accept");
	expect_counted("revoked", 1);
	scilan_close(s);
	scilan_close(l);
}

/* /proc/<pid>/fd of a non-dumpable client is refused (EACCES), as a client
 * of another user's is, when the offer file is the only way (no rendezvous);
 * root may open it anyway, so we give up CAP_SYS_PTRACE first. */
Test(fallback, undumpable_client_is_other_user)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];
	uint16_t port;
	int l, s, squat;
	pid_t pid;

	cr_assert_not_null(tu_isolated_rundir());
	l = listen_without_rendezvous(&port, &squat);
	pid = connecting_child(port, true);
	cr_assert_eq(syscall(SYS_capget, &hdr, data), 0);
	data[CAP_SYS_PTRACE / 32].effective &= ~(1u << (CAP_SYS_PTRACE % 32));
	cr_assert_eq(syscall(SYS_capset, &hdr, data), 0);
	s = tu_accept(l);
	cr_assert_geq(s, 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(s), 0);
	expect_listed(s, "other-user", "accept");
	expect_counted("other-user", 1);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	scilan_close(s);
	scilan_close(l);
	close(squat);
}

/* Through the rendezvous, the segment comes as a descriptor: a non-dumpable
 * client is accelerated (CAP_SYS_PTRACE given up, as above). */
Test(fallback, undumpable_client_by_rendezvous_is_accelerated)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];
	uint16_t port;
	int l, s;
	pid_t pid;

	cr_assert_not_null(tu_isolated_rundir());
	l = tu_listen(AF_INET, 4, &port);
	pid = connecting_child(port, true);
	cr_assert_eq(syscall(SYS_capget, &hdr, data), 0);
	data[CAP_SYS_PTRACE / 32].effective &= ~(1u << (CAP_SYS_PTRACE % 32));
	cr_assert_eq(syscall(SYS_capset, &hdr, data), 0);
	s = tu_accept(l);
	cr_assert_geq(s, 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(s), 1);
	expect_accelerated_listed(s, "accept");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	scilan_close(s);
	scilan_close(l);
}

/* The accepting process has a descriptor for the connection and none to
 * open the offer with. */
Test(fallback, starved_acceptor_is_resource)
{
	struct rlimit old, lim;
	uint16_t port;
	int l, pc, first, s, fillers[64], nf = 0, fd;
	pid_t pid;

	cr_assert_not_null(tu_isolated_rundir());
	l = tu_listen(AF_INET, 8, &port);
	/* A listed fallback first: the statistics file exists before the limit. */
	pc = tu_plain_connect(AF_INET, port);
	first = tu_accept(l);
	cr_assert_geq(first, 0);
	pid = connecting_child(port, false);
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	lim = old;
	lim.rlim_cur = (rlim_t)first + 16;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &lim), 0);
	while ((fd = dup(0)) >= 0 && nf < 64)
		fillers[nf++] = fd;
	cr_assert(nf > 0 && nf < 64);
	close(fillers[--nf]); /* for the accepted connection */
	s = tu_accept(l);
	while (nf)
		close(fillers[--nf]);
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	cr_assert_geq(s, 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(s), 0);
	expect_listed(s, "resource", "accept");
	expect_counted("resource", 1);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	scilan_close(s);
	scilan_close(first);
	close(pc);
	scilan_close(l);
}

/* ---- after the agreement ------------------------------------------------------------------ */

/* The accepting side's program writes on the kernel socket (as io_uring
 * would): the connecting side leads the move, the accepting side follows. */
Test(fallback, kernel_bytes_bypass_and_peer_moved)
{
	int c, s;
	char b[4];

	cr_assert_not_null(tu_isolated_rundir());
	cr_assert_eq(tu_pair(AF_INET, &c, &s), 0);
	cr_assert_eq(tu_accelerated(c), 1);
	expect_accelerated_listed(c, "connect");
	expect_accelerated_listed(s, "accept");
	cr_assert_eq(send(s, "raw", 3, 0), 3); /* libc's: past the rings */
	cr_assert_eq(tu_recv_all(c, b, 3), 3, "recv: %s", strerror(errno));
	cr_assert_arr_eq(b, "raw", 3);
	cr_assert_eq(tu_send_all(s, "x", 1, 0), 1);
	cr_assert_eq(tu_recv_all(c, b, 1), 1);
	cr_assert_eq(tu_accelerated(c), 0);
	cr_assert_eq(tu_accelerated(s), 0);
	expect_listed(c, "bypass", "connect");
	expect_listed(s, "peer-moved", "accept");
	{
		struct sl_stats st;

		sl_stats_read(&st);
		cr_expect_eq(st.fb[SL_FB_PEER_MOVED], 1);
	}
	expect_counted("bypass", 1);
	scilan_close(c);
	scilan_close(s);
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text), "%s: %s", path, strerror(errno));
	close(fd);
}

/* Every local port in TIME_WAIT after other programs' connections (plain
 * connects, client first), and an offer that must be named by the 4-tuple:
 * for a listener of another network namespace, which the cluster map says
 * has this address (emulated nodes; here an address of the map that is not
 * ours, and no rendezvous).  The bind that fixes our end before the offer
 * finds no port, while the kernel's connect reuses a TIME_WAIT one.  The
 * connection works on kernel TCP, for a reason that says what ran out (it
 * said "another failure" without a word).  Offers to listeners of our own
 * namespace name the socket and need no bind: test_local_ports.c. */
Test(fallback, no_local_port_for_the_offer)
{
	uint16_t port;
	char got[8] = { 0 };
	int l, c, s, squat;

	cr_assert_not_null(tu_isolated_rundir());
	if (unshare(CLONE_NEWNET) < 0)
		cr_skip_test("unshare(CLONE_NEWNET): %s", strerror(errno));
	cr_assert_eq(tu_loopback_up(), 0, "lo up: %s", strerror(errno));
	cr_assert_eq(tu_cluster_map("2 127.0.0.2 shm\n"), 0);
	l = listen_at_without_rendezvous(0x7f000002, &port, &squat);
	write_file("/proc/sys/net/ipv4/ip_local_port_range", "40000 40001");
	for (int i = 0; i < 2; i++) {
		c = connect_to(0x7f000002, port, false);
		s = tu_accept(l);
		cr_assert(c >= 0 && s >= 0, "connection %d: %s", i, strerror(errno));
		close(c); /* first: the client's port goes to TIME_WAIT */
		scilan_close(s);
	}
	/* TIME_WAIT reuse wants a timestamp a second newer (loopback). */
	usleep(1100 * 1000);
	c = connect_to(0x7f000002, port, true);
	cr_assert_geq(c, 0, "connect with both ports in TIME_WAIT: %s", strerror(errno));
	s = tu_accept(l);
	cr_assert_geq(s, 0);
	cr_assert_eq(tu_accelerated(c), 0);
	cr_assert_eq(scilan_send(c, "ping", 4, 0), 4);
	cr_assert_eq(tu_recv_all(s, got, 4), 4);
	cr_assert_str_eq(got, "ping");
	expect_counted("resource", 1);
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
	close(squat);
}
