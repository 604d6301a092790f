/* test_rdv_userns.c — the rendezvous's checks from inside a user namespace
 * that does not map every uid (rendezvous.c, runtime/peer_uid.c): there every
 * unmapped user reads as the overflow uid, so a forger or a squatter of one
 * looks like the client or the listener of another; neither end may take
 * the other's word then.  Needs root (maps with other users' host uids).
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rdv_stranger.h"
#include "runtime/fallback.h"
#include "socket/sock_state.h"
#include "testutil.h"

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
	struct rdv_stranger *st = tu_shared_alloc(sizeof(*st));
	struct in_userns *a = tu_shared_alloc(sizeof(*a));
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
	cr_assert_eq(tu_bind_offer_port(c), 0, "bind: %s", strerror(errno)); /* where its acceptor looks */
	cr_assert_eq(tu_sync_init(&a->sync), 0);
	cr_assert_eq(tu_spawn(&acceptor, accept_in_userns, a), 0);
	map_child_userns(&a->sync, &acceptor);
	cr_assert_eq(tu_sync_get(&a->sync, &v), 0, "acceptor failed:\n%s", (tu_reap(&acceptor), acceptor.output));

	st->dst = rdv_loopback(a->port);
	st->src = rdv_loopback(tu_local_port(c));
	st->refused_ok = true;
	cr_assert_eq(tu_sync_init(&st->sync), 0);
	cr_assert_eq(tu_spawn(&forger, rdv_forge_offer, st), 0);
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
	struct rdv_stranger *st = tu_shared_alloc(sizeof(*st));
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
	st->dst = rdv_loopback(tu_local_port(l));
	cr_assert_eq(tu_sync_init(&st->sync), 0);
	cr_assert_eq(tu_spawn(&squatter, rdv_squat, st), 0);
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

	rdv_become(VICTIM_UID);
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* In the offers' range: the acceptor looks, and must see through the forgery. */
	TU_CHECK(c >= 0 && tu_bind_offer_port(c) == 0, "bind");
	a->victim_port = tu_local_port(c);
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
	struct rdv_stranger *st = tu_shared_alloc(sizeof(*st));
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
	st->dst = rdv_loopback(a->port);
	st->src = rdv_loopback(vic->victim_port);
	st->uid = USERNS_HOST_UID;
	st->refused_ok = true;
	cr_assert_eq(tu_sync_init(&st->sync), 0);
	cr_assert_eq(tu_spawn(&forger, rdv_forge_offer, st), 0);
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

