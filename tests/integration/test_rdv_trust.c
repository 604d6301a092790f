/* test_rdv_trust.c — the rendezvous treats what reaches the listener's
 * abstract socket as untrusted (rendezvous.c): a process of another user
 * cannot slip its ring into someone else's connection, nor collect segments
 * by binding the rendezvous name first (needs root: uid 65534 strangers);
 * and an offer queued where no hooked accept takes it holds no memory once
 * its client went plain.  The same from inside a user namespace that leaves
 * uids unmapped: test_rdv_userns.c. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <stdio.h>
#include <unistd.h>

#include "ring/layout.h"
#include "fabric/shm/rendezvous.h"
#include "ring/segment.h"
#include "runtime/fallback.h"
#include "rdv_stranger.h"
#include "socket/sock_state.h"
#include "testutil.h"

Test(rdv_trust, stranger_cannot_inject_a_ring, .timeout = 60)
{
	struct rdv_stranger *st = tu_shared_alloc(sizeof(*st));
	struct sockaddr_storage dst;
	struct tu_child kid;
	uint16_t port;
	int l, c, s;
	uint64_t v;
	char buf[32] = { 0 };

	if (geteuid() != 0)
		cr_skip_test("needs root to switch to uid %d", NOBODY);
	tu_watchdog(50, "stranger");
	l = tu_listen(AF_INET, 8, &port);
	cr_assert_geq(l, 0);
	/* The victim's own end is fixed first, so the stranger can name it;
	 * in the offers' range, where its acceptor looks. */
	c = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(tu_bind_offer_port(c), 0, "bind: %s", strerror(errno));
	st->dst = rdv_loopback(port);
	st->src = rdv_loopback(tu_local_port(c));
	cr_assert_eq(tu_sync_init(&st->sync), 0);
	cr_assert_eq(tu_spawn(&kid, rdv_forge_offer, st), 0);
	cr_assert_eq(tu_sync_get(&st->sync, &v), 0, "stranger failed:\n%s", (tu_reap(&kid), kid.output));
	/* Its offer is first in the queue; the victim's own comes behind it. */
	cr_assert_eq(scilan_connect(c, (struct sockaddr *)&dst, tu_loopback(AF_INET, port, &dst)), 0, "connect: %s",
		     strerror(errno));
	s = tu_accept(l);
	cr_assert_geq(s, 0);
	cr_assert_eq(tu_accelerated(s), 1, "the victim's own offer was not found behind the forged one");
	cr_assert_eq(tu_accelerated(c), 1);
	cr_assert_eq(scilan_send(c, "victim's bytes", 14, 0), 14);
	cr_assert_eq(tu_recv_all(s, buf, 14), 14);
	cr_assert_str_eq(buf, "victim's bytes");
	cr_assert_eq(tu_sync_put(&st->sync, 1), 0);
	tu_reap(&kid);
	cr_assert(tu_exited_with(&kid, 0), "stranger:\n%s", kid.output);
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
}

/* A stranger that binds the rendezvous name before the real listener gets
 * a connection but never a segment: the connector checks the name's owner
 * against the owner of the TCP listener (sock_diag).  The connection then
 * has only the offer file in our runtime directory, which our own listener
 * may take (same user): either way both ends agree and the bytes arrive. */
Test(rdv_trust, squatter_gets_no_segment, .timeout = 60)
{
	struct rdv_stranger *st = tu_shared_alloc(sizeof(*st));
	struct sockaddr_in any = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct tu_child kid;
	int l, c, s;
	uint64_t v;
	char buf[8] = { 0 };

	if (geteuid() != 0)
		cr_skip_test("needs root to switch to uid %d", NOBODY);
	tu_watchdog(50, "squatter");
	l = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(scilan_bind(l, (struct sockaddr *)&any, sizeof(any)), 0);
	st->dst = rdv_loopback(tu_local_port(l));
	cr_assert_eq(tu_sync_init(&st->sync), 0);
	cr_assert_eq(tu_spawn(&kid, rdv_squat, st), 0);
	cr_assert_eq(tu_sync_get(&st->sync, &v), 0, "squatter failed:\n%s", (tu_reap(&kid), kid.output));
	cr_assert_eq(scilan_listen(l, 8), 0);
	c = tu_connect(AF_INET, st->dst.port);
	cr_assert_geq(c, 0);
	s = tu_accept(l);
	cr_assert_geq(s, 0);
	cr_assert_eq(tu_accelerated(c), tu_accelerated(s), "ends disagree: client %d, server %d", tu_accelerated(c),
		     tu_accelerated(s));
	cr_assert_eq(scilan_send(c, "tcp", 3, 0), 3);
	cr_assert_eq(tu_recv_all(s, buf, 3), 3);
	cr_assert_str_eq(buf, "tcp");
	cr_assert_eq(tu_sync_put(&st->sync, 1), 0);
	tu_reap(&kid);
	cr_assert(tu_exited_with(&kid, 0), "squatter:\n%s", kid.output);
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
}

/* ---- a socket root bound, listened on by a worker that gave root up ---------- */

static uid_t owner_of(int fd)
{
	struct stat st;

	cr_assert_eq(fstat(fd, &st), 0);
	return st.st_uid;
}

/* What the hook does as root gives itself up for good (setuid, before the
 * call): the kernel's owner of each TCP socket root made and nothing listens
 * or connects on yet becomes the new user, as if that user had made it. */
Test(rdv_trust, unlistened_sockets_of_root_go_to_the_user_it_becomes, .timeout = 60)
{
	struct sockaddr_in lo = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1, bound, fresh, reuse, other, l, c, s;
	uint16_t port;

	if (geteuid() != 0)
		cr_skip_test("needs root to hand sockets over");
	bound = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(scilan_bind(bound, (struct sockaddr *)&lo, sizeof(lo)), 0);
	fresh = scilan_socket(AF_INET, SOCK_STREAM, 0);
	reuse = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(setsockopt(reuse, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)), 0);
	cr_assert_eq(scilan_bind(reuse, (struct sockaddr *)&lo, sizeof(lo)), 0);
	other = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(fchown(other, NOBODY - 1, (gid_t)-1), 0);
	cr_assert_eq(scilan_bind(other, (struct sockaddr *)&lo, sizeof(lo)), 0);
	l = tu_listen(AF_INET, 4, &port);
	c = tu_connect(AF_INET, port);
	s = tu_accept(l);
	cr_assert(bound >= 0 && fresh >= 0 && reuse >= 0 && other >= 0 && l >= 0 && c >= 0 && s >= 0);

	sl_user_leaving_root(NOBODY);
	cr_assert_eq(owner_of(bound), NOBODY, "a bound socket root made stayed root's");
	cr_assert_eq(owner_of(fresh), NOBODY, "an unbound socket root made stayed root's");
	/* Listening already: its rendezvous was made as root, who stands in. */
	cr_assert_eq(owner_of(l), 0, "a listener changed hands");
	cr_assert_eq(owner_of(c), 0, "a connection changed hands");
	cr_assert_eq(owner_of(s), 0, "an accepted connection changed hands");
	/* The owner decides who may join an SO_REUSEPORT group: nobody's other
	 * processes would share root's port. */
	cr_assert_eq(owner_of(reuse), 0, "an SO_REUSEPORT socket changed hands");
	cr_assert_eq(owner_of(other), NOBODY - 1, "another user's socket changed hands");
	scilan_close(bound);
	scilan_close(fresh);
	scilan_close(reuse);
	scilan_close(other);
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
}

struct worker {
	struct tu_sync sync;
	int l;
	int accelerated; /* the worker's end, as it saw it */
};

/* varnish's worker: handed root's socket, it becomes nobody, listens,
 * answers one client. */
static int listen_as_nobody(void *p)
{
	struct worker *w = p;
	char buf[8] = { 0 };
	uint64_t v;
	int s;

	sl_user_leaving_root(NOBODY);
	rdv_become_nobody();
	TU_CHECK(scilan_listen(w->l, 8) == 0, "listen as uid %d", NOBODY);
	TU_CHECK(tu_sync_put_child(&w->sync, 1) == 0, "report");
	s = tu_accept(w->l);
	TU_CHECK(s >= 0, "accept");
	TU_CHECK(tu_recv_all(s, buf, 5) == 5 && memcmp(buf, "hello", 5) == 0, "the client's bytes: '%s'", buf);
	TU_CHECK(scilan_send(s, "world", 5, 0) == 5, "answer");
	w->accelerated = tu_accelerated(s);
	TU_CHECK(tu_sync_get_child(&w->sync, &v) == 0, "wait for the client");
	scilan_close(s);
	return 0;
}

/* Root binds, the worker is nobody when it listens: a root client is
 * accelerated, and bytes go both ways. */
static void connect_to_worker(struct worker *w, uint16_t port, int *accelerated)
{
	char buf[8] = { 0 };
	int c = tu_connect(AF_INET, port);

	cr_assert_geq(c, 0);
	cr_assert_eq(scilan_send(c, "hello", 5, 0), 5);
	cr_assert_eq(tu_recv_all(c, buf, 5), 5);
	cr_assert_str_eq(buf, "world");
	*accelerated = tu_accelerated(c);
	cr_assert_eq(tu_sync_put(&w->sync, 1), 0);
	scilan_close(c);
}

static int bound_by_root(uint16_t *port)
{
	struct sockaddr_in lo = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int l = scilan_socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_eq(scilan_bind(l, (struct sockaddr *)&lo, sizeof(lo)), 0);
	*port = tu_local_port(l);
	return l;
}

Test(rdv_trust, listen_after_leaving_root_is_accelerated, .timeout = 60)
{
	struct worker *w = tu_shared_alloc(sizeof(*w));
	struct tu_child kid;
	uint16_t port;
	int client_accelerated;
	uint64_t v;

	if (geteuid() != 0)
		cr_skip_test("needs root to switch to uid %d", NOBODY);
	tu_watchdog(50, "worker");
	w->l = bound_by_root(&port);
	cr_assert_eq(tu_sync_init(&w->sync), 0);
	cr_assert_eq(tu_spawn(&kid, listen_as_nobody, w), 0);
	cr_assert_eq(tu_sync_get(&w->sync, &v), 0, "worker failed:\n%s", (tu_reap(&kid), kid.output));
	connect_to_worker(w, port, &client_accelerated);
	tu_reap(&kid);
	cr_assert(tu_exited_with(&kid, 0), "worker:\n%s", kid.output);
	cr_assert_eq(client_accelerated, 1, "the client used kernel TCP");
	cr_assert_eq(w->accelerated, 1, "the worker used kernel TCP");
	scilan_close(w->l);
}

/* The same worker, but another user (uid 65533) bound the rendezvous name
 * first: the socket is nobody's now, not the squatter's, so the squatter
 * gets no segment and the connection is kernel TCP, every byte in order. */
Test(rdv_trust, squatter_of_a_socket_root_bound_gets_no_segment, .timeout = 60)
{
	struct rdv_stranger *st = tu_shared_alloc(sizeof(*st));
	struct worker *w = tu_shared_alloc(sizeof(*w));
	struct tu_child squatter, worker;
	uint16_t port;
	int client_accelerated;
	uint64_t v;

	if (geteuid() != 0)
		cr_skip_test("needs root to switch users");
	tu_watchdog(50, "squatter");
	w->l = bound_by_root(&port);
	st->dst = rdv_loopback(port);
	st->uid = NOBODY - 1;
	cr_assert_eq(tu_sync_init(&st->sync), 0);
	cr_assert_eq(tu_spawn(&squatter, rdv_squat, st), 0);
	cr_assert_eq(tu_sync_get(&st->sync, &v), 0, "squatter failed:\n%s", (tu_reap(&squatter), squatter.output));
	cr_assert_eq(tu_sync_init(&w->sync), 0);
	cr_assert_eq(tu_spawn(&worker, listen_as_nobody, w), 0);
	cr_assert_eq(tu_sync_get(&w->sync, &v), 0, "worker failed:\n%s", (tu_reap(&worker), worker.output));
	connect_to_worker(w, port, &client_accelerated);
	tu_reap(&worker);
	cr_assert(tu_exited_with(&worker, 0), "worker:\n%s", worker.output);
	cr_assert_eq(tu_sync_put(&st->sync, 1), 0);
	tu_reap(&squatter);
	cr_assert(tu_exited_with(&squatter, 0), "squatter:\n%s", squatter.output);
	cr_assert_eq(client_accelerated, w->accelerated, "ends disagree");
	cr_assert_eq(client_accelerated, 0, "accelerated through a squatted rendezvous");
	scilan_close(w->l);
}

/* A listener whose accepts bypass the hook (a raw accept4, as io_uring's)
 * never drains its rendezvous queue: the offer waits there with the
 * segment.  Once the client revoked it and closed, its pages are freed. */
Test(rdv_trust, revoked_offer_left_queued_holds_no_pages, .timeout = 60)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * SL_RDV_FDS)];
	} ctl;
	char msg[256], buf[8] = { 0 };
	struct iovec iov = { .iov_base = msg, .iov_len = sizeof(msg) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
	struct sl_sock *ls;
	struct stat st;
	uint16_t port;
	int l, c, ps, e, fds[SL_RDV_FDS];

	tu_watchdog(50, "queued offer");
	l = tu_listen(AF_INET, 8, &port);
	cr_assert_geq(l, 0);
	ls = sl_sock_get(l);
	cr_assert(ls && ls->rdv_fd[0] >= 0, "the listener has no rendezvous");
	c = tu_connect(AF_INET, port);
	cr_assert_geq(c, 0);
	ps = (int)syscall(SYS_accept4, l, NULL, NULL, 0);
	cr_assert_geq(ps, 0, "raw accept: %s", strerror(errno));
	/* Written into the ring, then moved onto the kernel socket by the close
	 * (the offer is revoked): the plain server reads it there. */
	cr_assert_eq(scilan_send(c, "hello", 5, 0), 5);
	cr_assert_eq(scilan_close(c), 0);
	cr_assert_eq(recv(ps, buf, 5, MSG_WAITALL), 5);
	cr_assert_str_eq(buf, "hello");
	/* The offer is still queued; its segment must be empty now. */
	e = accept4(ls->rdv_fd[0], NULL, NULL, SOCK_CLOEXEC);
	cr_assert_geq(e, 0, "no offer queued: %s", strerror(errno));
	cr_assert_gt(recvmsg(e, &m, 0), 0);
	cr_assert_eq(CMSG_FIRSTHDR(&m)->cmsg_len, CMSG_LEN(sizeof(int) * SL_RDV_FDS));
	memcpy(fds, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof(fds));
	cr_assert_eq(fstat(fds[0], &st), 0);
	cr_assert_eq(st.st_blocks, 0, "the revoked segment still holds %lld KiB", (long long)st.st_blocks / 2);
	for (int i = 0; i < SL_RDV_FDS; i++)
		close(fds[i]);
	close(e);
	close(ps);
	scilan_close(l);
}

/* The kernel's word on who owns a socket comes from a netlink socket the
 * process keeps between queries (sock_diag.c); a socket of another network
 * namespace would answer for that namespace's sockets, where the same
 * 4-tuple may be someone else's, or no one's.  After the process moves to
 * a new namespace, its checks must ask that one: a connection there is
 * accelerated (a query of the old namespace finds no such listener). */
Test(rdv_trust, owner_query_follows_the_network_namespace, .timeout = 60)
{
	uint16_t port;
	int l, c, s;

	cr_assert_not_null(tu_isolated_rundir());
	l = tu_listen(AF_INET, 4, &port);
	cr_assert_geq(l, 0);
	c = tu_connect(AF_INET, port);
	s = tu_accept(l);
	cr_assert(c >= 0 && s >= 0);
	cr_assert_eq(tu_accelerated(s), 1, "first connection, first namespace: not accelerated");
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
	if (unshare(CLONE_NEWNET) < 0)
		cr_skip_test("unshare(CLONE_NEWNET): %s", strerror(errno));
	cr_assert_eq(tu_loopback_up(), 0, "lo up: %s", strerror(errno));
	l = tu_listen(AF_INET, 4, &port);
	cr_assert_geq(l, 0, "listen in the new namespace: %s", strerror(errno));
	c = tu_connect(AF_INET, port);
	s = tu_accept(l);
	cr_assert(c >= 0 && s >= 0);
	cr_assert_eq(tu_accelerated(s), 1, "a connection of the new namespace was checked in the old one");
	cr_assert_eq(tu_accelerated(c), 1);
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
}

/* Inode of the NETLINK_SOCK_DIAG socket this process holds (0: none). */
static unsigned long diag_socket_held(void)
{
	unsigned long found = 0;
	char line[256];
	FILE *f = fopen("/proc/net/netlink", "r");

	cr_assert_not_null(f);
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long ino;
		int proto;

		if (sscanf(line, "%*s %d %*s %*s %*s %*s %*s %*s %*s %lu", &proto, &ino) != 2 || proto != 4)
			continue;
		/* Every number: the library's own live above the soft limit. */
		DIR *d = opendir("/proc/self/fd");
		struct dirent *e;

		while (d && !found && (e = readdir(d))) {
			char path[300], target[64];
			ssize_t n;

			snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
			n = readlink(path, target, sizeof(target) - 1);
			if (n <= 0)
				continue;
			target[n] = '\0';
			snprintf(path, sizeof(path), "socket:[%lu]", ino);
			if (!strcmp(target, path))
				found = ino;
		}
		if (d)
			closedir(d);
	}
	fclose(f);
	return found;
}

/* A fork child inherits the kept query socket, and must not share it with
 * its parent (answers to two processes' queries in one socket could be
 * read by the wrong one): the child's first query drops its copy and asks
 * through its own. */
Test(rdv_trust, fork_child_asks_through_its_own_query_socket, .timeout = 60)
{
	unsigned long parents;
	uint16_t port;
	int l, c, s, status;
	pid_t kid;

	cr_assert_not_null(tu_isolated_rundir());
	l = tu_listen(AF_INET, 4, &port);
	cr_assert_geq(l, 0);
	c = tu_connect(AF_INET, port);
	s = tu_accept(l);
	cr_assert(c >= 0 && s >= 0 && tu_accelerated(s) == 1);
	parents = diag_socket_held();
	cr_assert_neq(parents, 0, "no query socket kept after a connection");
	kid = fork();
	cr_assert_geq(kid, 0);
	if (kid == 0) {
		int c2 = tu_connect(AF_INET, port), s2 = c2 < 0 ? -1 : scilan_accept(l, NULL, NULL);
		unsigned long mine;

		if (s2 < 0 || tu_accelerated(s2) != 1 || tu_accelerated(c2) != 1)
			_exit(2);
		mine = diag_socket_held();
		_exit(mine == parents ? 3 : mine == 0 ? 4 : 0);
	}
	waitpid(kid, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "child: %d (2: not accelerated, 3: asked through its parent's socket, 4: kept none)",
		  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	cr_assert_eq(diag_socket_held(), parents, "the parent lost its query socket");
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
}
