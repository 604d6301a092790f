/* test_rdv_trust.c — the rendezvous treats what reaches the listener's
 * abstract socket as untrusted (rendezvous.c): a process of another user
 * cannot slip its ring into someone else's connection, nor collect segments
 * by binding the rendezvous name first (needs root: uid 65534 strangers);
 * and an offer queued where no hooked accept takes it holds no memory once
 * its client went plain. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdatomic.h>
#include <string.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
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
#include "socket/sock_state.h"
#include "testutil.h"

#define NOBODY 65534

struct stranger {
	struct tu_sync sync;
	struct sl_key dst, src;
	uid_t uid; /* the squatter's or the forger's, 0: NOBODY */
	bool refused_ok; /* the forger's ring may come back refused */
};

static void become(uid_t uid)
{
	TU_CHECK(setgroups(0, NULL) == 0 && setgid(uid) == 0 && setuid(uid) == 0, "become uid %d", (int)uid);
}

static void become_nobody(void)
{
	become(NOBODY);
}

static struct sl_key loopback(uint16_t port)
{
	struct sl_key k = { .family = AF_INET, .addr = { 127, 0, 0, 1 }, .port = port };

	return k;
}

static uint16_t local_port(int fd)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	return ntohs(a.sin_port);
}

/* A well-formed segment of the stranger's own, offered for the victim's
 * 4-tuple before the victim connects; it reports whether anyone attached. */
static int forge_offer(void *p)
{
	struct stranger *st = p;
	struct sl_seg_header hdr;
	int fds[SL_RDV_FDS], conn, tcp, seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	_Atomic uint32_t *word;
	uint64_t v;
	void *base;

	become(st->uid ? st->uid : NOBODY);
	sl_segment_layout(&hdr, 65536, 65536);
	fds[0] = memfd_create("forged", MFD_ALLOW_SEALING);
	TU_CHECK(fds[0] >= 0 && ftruncate(fds[0], (off_t)hdr.total_size) == 0, "memfd");
	base = mmap(NULL, hdr.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	TU_CHECK(base != MAP_FAILED, "mmap");
	memcpy(base, &hdr, sizeof(hdr));
	word = (_Atomic uint32_t *)((char *)base + SL_SEG_OFFER_OFF);
	atomic_store(word, SL_OFFER_OFFERED);
	TU_CHECK(fcntl(fds[0], F_ADD_SEALS, seals) == 0, "seal");
	{
		int p1[2], p2[2];

		TU_CHECK(pipe2(p1, O_NONBLOCK) == 0 && pipe2(p2, O_NONBLOCK) == 0, "pipes");
		/* As the library's own bells are: any acceptor may reopen them. */
		TU_CHECK(fchmod(p1[1], 0666) == 0 && fchmod(p2[1], 0666) == 0, "bells open to all");
		fds[1] = p1[1];
		fds[2] = p2[1];
	}
	conn = sl_rdv_connect(&st->dst);
	TU_CHECK(conn >= 0, "reach the listener's rendezvous");
	tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0); /* the offer names a socket of its maker */
	TU_CHECK(tcp >= 0, "socket");
	TU_CHECK(sl_rdv_send_unchecked(conn, tcp, &st->dst, &st->src, fds, false) == 0, "offer sent");
	TU_CHECK(tu_sync_put_child(&st->sync, 1) == 0, "report");
	TU_CHECK(tu_sync_get_child(&st->sync, &v) == 0, "wait for the accept");
	/* Refused is what an acceptor that cannot tell us from the client
	 * says to both (a user namespace leaving uids unmapped). */
	TU_CHECK(atomic_load(word) == SL_OFFER_OFFERED || (st->refused_ok && atomic_load(word) == SL_OFFER_REFUSED),
		 "the forged ring was attached (word %u)", (unsigned)atomic_load(word));
	return 0;
}

Test(rdv_trust, stranger_cannot_inject_a_ring, .timeout = 60)
{
	struct stranger *st = tu_shared_alloc(sizeof(*st));
	struct sockaddr_in src = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
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
	/* The victim's own end is fixed first, so the stranger can name it. */
	c = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(scilan_bind(c, (struct sockaddr *)&src, sizeof(src)), 0);
	st->dst = loopback(port);
	st->src = loopback(local_port(c));
	cr_assert_eq(tu_sync_init(&st->sync), 0);
	cr_assert_eq(tu_spawn(&kid, forge_offer, st), 0);
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
static int squat(void *p)
{
	struct stranger *st = p;
	char b;
	int sq, e, n;
	uint64_t v;

	become(st->uid ? st->uid : NOBODY);
	sq = sl_rdv_listen(&st->dst);
	TU_CHECK(sq >= 0, "bind the rendezvous name");
	TU_CHECK(tu_sync_put_child(&st->sync, 1) == 0, "report");
	TU_CHECK(tu_sync_get_child(&st->sync, &v) == 0, "wait for the connect");
	n = 0;
	while ((e = accept(sq, NULL, NULL)) >= 0) {
		TU_CHECK(recv(e, &b, 1, MSG_DONTWAIT) <= 0, "the squatter received an offer");
		close(e);
		n++;
	}
	tu_log("squatter saw %d connections", n);
	return 0;
}

Test(rdv_trust, squatter_gets_no_segment, .timeout = 60)
{
	struct stranger *st = tu_shared_alloc(sizeof(*st));
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
	st->dst = loopback(local_port(l));
	cr_assert_eq(tu_sync_init(&st->sync), 0);
	cr_assert_eq(tu_spawn(&kid, squat, st), 0);
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

/* ---- ends inside a user namespace that does not map every uid ----------------- */

/* Inside a user namespace, every uid it does not map reads as the overflow
 * uid (65534), in SO_PEERCRED and in sock_diag alike: two strangers look
 * like one user there.  The host uid a namespace's root is, in these tests:
 * nobody else's uid is mapped in it. */
#define USERNS_HOST_UID 64000

struct in_userns {
	struct tu_sync sync;
	uint16_t port;
	int accelerated;
	char got[16];
	char reason[24]; /* its end's fallback reason */
};

/* In a child: into a new user namespace whose only uid, 0, is host uid
 * USERNS_HOST_UID (the parent writes the maps: map_child_userns), and be it. */
static void enter_userns(struct tu_sync *sync)
{
	uint64_t v;

	TU_CHECK(unshare(CLONE_NEWUSER) == 0, "unshare(CLONE_NEWUSER)");
	TU_CHECK(tu_sync_put_child(sync, 1) == 0 && tu_sync_get_child(sync, &v) == 0, "maps written");
	TU_CHECK(setresgid(0, 0, 0) == 0 && setresuid(0, 0, 0) == 0, "become the namespace's root");
}

static void map_child_userns(struct tu_sync *sync, struct tu_child *kid)
{
	const char *files[] = { "uid_map", "gid_map" };
	char path[64], map[32];
	uint64_t v;

	cr_assert_eq(tu_sync_get(sync, &v), 0, "child did not enter a user namespace:\n%s",
		     (tu_reap(kid), kid->output));
	snprintf(map, sizeof(map), "0 %d 1\n", USERNS_HOST_UID);
	for (int i = 0; i < 2; i++) {
		int fd;

		snprintf(path, sizeof(path), "/proc/%d/%s", (int)kid->pid, files[i]);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
		cr_assert_eq(write(fd, map, strlen(map)), (ssize_t)strlen(map), "%s: %s", path, strerror(errno));
		close(fd);
	}
	cr_assert_eq(tu_sync_put(sync, 1), 0);
}

/* What the end fd of the child's connection is carried by, and why. */
static void note_end(struct in_userns *a, int fd)
{
	a->accelerated = tu_accelerated(fd);
	snprintf(a->reason, sizeof(a->reason), "%s", sl_fb_name(sl_sock_get(fd)->fb_reason));
}

/* The acceptor, in its user namespace: listens, reports its port, accepts
 * one connection and reads 14 bytes from it. */
static int accept_in_userns(void *p)
{
	struct in_userns *a = p;
	int l, s;

	enter_userns(&a->sync);
	l = tu_listen(AF_INET, 8, &a->port);
	TU_CHECK(l >= 0, "listen");
	TU_CHECK(tu_sync_put_child(&a->sync, 2) == 0, "report the port");
	s = tu_accept(l);
	TU_CHECK(s >= 0, "accept");
	TU_CHECK(tu_recv_all(s, a->got, 14) == 14, "the client's bytes");
	note_end(a, s);
	TU_CHECK(scilan_send(s, "ok", 2, 0) == 2, "reply");
	scilan_close(s);
	scilan_close(l);
	return 0;
}

/* Root (unmapped in the acceptor's namespace: uid 65534 there) connects; a
 * stranger (nobody: 65534 as well) offered its own ring for that 4-tuple
 * first.  The acceptor cannot tell the two apart, so it must take neither:
 * kernel TCP, the client's bytes in order, the forged ring never attached. */
Test(rdv_trust, stranger_looking_like_the_client_in_a_user_namespace_cannot_inject, .timeout = 60)
{
	struct stranger *st = tu_shared_alloc(sizeof(*st));
	struct in_userns *a = tu_shared_alloc(sizeof(*a));
	struct sockaddr_in src = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_storage dst;
	struct tu_child acceptor, forger;
	char buf[4] = "";
	uint64_t v;
	int c;

	if (geteuid() != 0)
		cr_skip_test("needs root for a user namespace with another user's uid");
	tu_watchdog(50, "userns acceptor");
	cr_assert_not_null(tu_isolated_rundir());
	/* Made first: the acceptor inherits a library already set up. */
	c = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(scilan_bind(c, (struct sockaddr *)&src, sizeof(src)), 0);
	cr_assert_eq(tu_sync_init(&a->sync), 0);
	cr_assert_eq(tu_spawn(&acceptor, accept_in_userns, a), 0);
	map_child_userns(&a->sync, &acceptor);
	cr_assert_eq(tu_sync_get(&a->sync, &v), 0, "acceptor failed:\n%s", (tu_reap(&acceptor), acceptor.output));

	st->dst = loopback(a->port);
	st->src = loopback(local_port(c));
	st->refused_ok = true;
	cr_assert_eq(tu_sync_init(&st->sync), 0);
	cr_assert_eq(tu_spawn(&forger, forge_offer, st), 0);
	if (tu_sync_get(&st->sync, &v) != 0) {
		tu_kill(&acceptor);
		tu_reap(&acceptor);
		tu_reap(&forger);
		cr_assert_fail("stranger failed:\n%s\nacceptor:\n%s", forger.output, acceptor.output);
	}
	cr_assert_eq(scilan_connect(c, (struct sockaddr *)&dst, tu_loopback(AF_INET, a->port, &dst)), 0,
		     "connect: %s", strerror(errno));
	cr_assert_eq(scilan_send(c, "victim's bytes", 14, 0), 14);
	cr_assert_eq(tu_recv_all(c, buf, 2), 2, "the acceptor's reply");
	/* Told at once, not left to wait out its agreement's second. */
	cr_assert_str_eq(sl_fb_name(sl_sock_get(c)->fb_reason), "refused");
	tu_reap(&acceptor);
	cr_assert(tu_exited_with(&acceptor, 0), "acceptor:\n%s", acceptor.output);
	cr_assert_str_eq(a->got, "victim's bytes");
	cr_assert_eq(a->accelerated, 0, "the acceptor took a ring it could not tell was the client's");
	cr_assert_str_eq(a->reason, "unmapped-user");
	cr_assert_eq(tu_sync_put(&st->sync, 1), 0);
	tu_reap(&forger);
	cr_assert(tu_exited_with(&forger, 0), "stranger:\n%s", forger.output);
	scilan_close(c);
}

/* The connector, in its user namespace, connects to the port and sends 14
 * bytes. */
static int connect_in_userns(void *p)
{
	struct in_userns *a = p;
	int c;

	enter_userns(&a->sync);
	c = tu_connect(AF_INET, a->port);
	TU_CHECK(c >= 0, "connect");
	TU_CHECK(scilan_send(c, "client's bytes", 14, 0) == 14, "send");
	note_end(a, c);
	TU_CHECK(tu_sync_put_child(&a->sync, 2) == 0, "report");
	scilan_close(c);
	return 0;
}

/* A stranger (nobody) holds the rendezvous name of root's listener.  From
 * a user namespace where both are uid 65534, the connector cannot tell the
 * squatter from the listener's owner: no segment goes to it. */
Test(rdv_trust, squatter_looking_like_the_listener_in_a_user_namespace_gets_no_segment, .timeout = 60)
{
	struct stranger *st = tu_shared_alloc(sizeof(*st));
	struct in_userns *a = tu_shared_alloc(sizeof(*a));
	struct sockaddr_in any = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct tu_child squatter, connector;
	char buf[16] = "";
	uint64_t v;
	int l, s;

	if (geteuid() != 0)
		cr_skip_test("needs root for a user namespace with another user's uid");
	tu_watchdog(50, "userns connector");
	cr_assert_not_null(tu_isolated_rundir());
	l = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(scilan_bind(l, (struct sockaddr *)&any, sizeof(any)), 0);
	st->dst = loopback(local_port(l));
	cr_assert_eq(tu_sync_init(&st->sync), 0);
	cr_assert_eq(tu_spawn(&squatter, squat, st), 0);
	cr_assert_eq(tu_sync_get(&st->sync, &v), 0, "squatter failed:\n%s", (tu_reap(&squatter), squatter.output));
	cr_assert_eq(scilan_listen(l, 8), 0);

	a->port = st->dst.port;
	cr_assert_eq(tu_sync_init(&a->sync), 0);
	cr_assert_eq(tu_spawn(&connector, connect_in_userns, a), 0);
	map_child_userns(&a->sync, &connector);
	s = tu_accept(l);
	cr_assert_geq(s, 0);
	cr_assert_eq(tu_recv_all(s, buf, 14), 14);
	cr_assert_str_eq(buf, "client's bytes");
	cr_assert_eq(tu_sync_get(&a->sync, &v), 0, "connector failed:\n%s", (tu_reap(&connector), connector.output));
	tu_reap(&connector);
	cr_assert(tu_exited_with(&connector, 0), "connector:\n%s", connector.output);
	cr_assert_eq(a->accelerated, 0, "the connector rode rings to a listener it could not tell");
	cr_assert_str_eq(a->reason, "unmapped-user");
	cr_assert_eq(tu_accelerated(s), 0);
	cr_assert_eq(tu_sync_put(&st->sync, 1), 0);
	tu_reap(&squatter);
	cr_assert(tu_exited_with(&squatter, 0), "squatter:\n%s", squatter.output);
	scilan_close(s);
	scilan_close(l);
}

/* The kernel reports a socket's owner in the user namespace of whoever
 * opened the query socket.  An acceptor that kept one from before it
 * entered a user namespace mapping its own root alone would read the
 * client's owner in the old namespace's terms (uid 1001) while the forger
 * (the new namespace's root, host uid USERNS_HOST_UID) reads as 0 there,
 * and root speaks for anyone: the forged ring would be attached. */
#define VICTIM_UID 1001

struct late_userns {
	struct tu_sync sync;
	uint16_t port, victim_port;
	int accelerated;
	char got[16], reason[24];
};

static int accept_then_enter_userns(void *p)
{
	struct late_userns *a = p;
	uint64_t v;
	char b;
	int l, s;

	l = tu_listen(AF_INET, 8, &a->port);
	TU_CHECK(l >= 0, "listen");
	TU_CHECK(tu_sync_put_child(&a->sync, 1) == 0, "report the port");
	s = tu_accept(l); /* root's connection: a query, its socket kept */
	TU_CHECK(s >= 0 && tu_recv_all(s, &b, 1) == 1 && tu_accelerated(s) == 1, "the first connection");
	scilan_close(s);
	TU_CHECK(unshare(CLONE_NEWUSER) == 0, "unshare(CLONE_NEWUSER)");
	TU_CHECK(tu_sync_put_child(&a->sync, 2) == 0 && tu_sync_get_child(&a->sync, &v) == 0, "maps written");
	s = tu_accept(l);
	TU_CHECK(s >= 0 && tu_recv_all(s, a->got, 14) == 14, "the victim's bytes");
	a->accelerated = tu_accelerated(s);
	snprintf(a->reason, sizeof(a->reason), "%s", sl_fb_name(sl_sock_get(s)->fb_reason));
	TU_CHECK(scilan_send(s, "ok", 2, 0) == 2, "reply");
	scilan_close(s);
	scilan_close(l);
	return 0;
}

/* A plain client of uid VICTIM_UID: binds first (the forger names its
 * port), connects when told, sends, reads the reply. */
static int plain_victim(void *p)
{
	struct late_userns *a = p;
	struct sockaddr_in at = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	uint64_t v;
	char buf[4];
	int c;

	become(VICTIM_UID);
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	TU_CHECK(c >= 0 && bind(c, (struct sockaddr *)&at, sizeof(at)) == 0, "bind");
	a->victim_port = local_port(c);
	TU_CHECK(tu_sync_put_child(&a->sync, 1) == 0 && tu_sync_get_child(&a->sync, &v) == 0, "wait for the forger");
	at.sin_port = htons(a->port);
	TU_CHECK(connect(c, (struct sockaddr *)&at, sizeof(at)) == 0, "connect");
	TU_CHECK(tu_send_all(c, "victim's bytes", 14, 0) == 14 && tu_recv_all(c, buf, 2) == 2, "exchange");
	close(c);
	return 0;
}

Test(rdv_trust, query_socket_follows_the_user_namespace, .timeout = 60)
{
	struct late_userns *a = tu_shared_alloc(sizeof(*a)), *vic = tu_shared_alloc(sizeof(*vic));
	struct stranger *st = tu_shared_alloc(sizeof(*st));
	struct tu_child acceptor, victim, forger;
	uint64_t v;
	int c;

	if (geteuid() != 0)
		cr_skip_test("needs root for a user namespace with another user's uid");
	tu_watchdog(50, "late userns acceptor");
	cr_assert_not_null(tu_isolated_rundir());
	c = scilan_socket(AF_INET, SOCK_STREAM, 0); /* the library set up before the fork */
	scilan_close(c);
	cr_assert_eq(tu_sync_init(&a->sync), 0);
	cr_assert_eq(tu_spawn(&acceptor, accept_then_enter_userns, a), 0);
	cr_assert_eq(tu_sync_get(&a->sync, &v), 0, "acceptor failed:\n%s", (tu_reap(&acceptor), acceptor.output));
	c = tu_connect(AF_INET, a->port);
	cr_assert(c >= 0 && scilan_send(c, "x", 1, 0) == 1, "the first connection");
	map_child_userns(&a->sync, &acceptor);
	scilan_close(c);

	vic->port = a->port;
	cr_assert_eq(tu_sync_init(&vic->sync), 0);
	cr_assert_eq(tu_spawn(&victim, plain_victim, vic), 0);
	cr_assert_eq(tu_sync_get(&vic->sync, &v), 0, "victim failed:\n%s", (tu_reap(&victim), victim.output));
	st->dst = loopback(a->port);
	st->src = loopback(vic->victim_port);
	st->uid = USERNS_HOST_UID;
	st->refused_ok = true;
	cr_assert_eq(tu_sync_init(&st->sync), 0);
	cr_assert_eq(tu_spawn(&forger, forge_offer, st), 0);
	cr_assert_eq(tu_sync_get(&st->sync, &v), 0, "forger failed:\n%s", (tu_reap(&forger), forger.output));
	cr_assert_eq(tu_sync_put(&vic->sync, 1), 0);
	tu_reap(&victim);
	cr_assert(tu_exited_with(&victim, 0), "victim:\n%s", victim.output);
	tu_reap(&acceptor);
	cr_assert(tu_exited_with(&acceptor, 0), "acceptor:\n%s", acceptor.output);
	cr_assert_str_eq(a->got, "victim's bytes");
	cr_assert_eq(a->accelerated, 0, "the acceptor took the forger's ring");
	cr_assert_str_eq(a->reason, "unmapped-user");
	cr_assert_eq(tu_sync_put(&st->sync, 1), 0);
	tu_reap(&forger);
	cr_assert(tu_exited_with(&forger, 0), "forger:\n%s", forger.output);
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
	become_nobody();
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
	*port = local_port(l);
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
	struct stranger *st = tu_shared_alloc(sizeof(*st));
	struct worker *w = tu_shared_alloc(sizeof(*w));
	struct tu_child squatter, worker;
	uint16_t port;
	int client_accelerated;
	uint64_t v;

	if (geteuid() != 0)
		cr_skip_test("needs root to switch users");
	tu_watchdog(50, "squatter");
	w->l = bound_by_root(&port);
	st->dst = loopback(port);
	st->uid = NOBODY - 1;
	cr_assert_eq(tu_sync_init(&st->sync), 0);
	cr_assert_eq(tu_spawn(&squatter, squat, st), 0);
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
