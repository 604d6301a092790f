/* test_rendezvous.c — the connect offer must match exactly the connection the
 * listener accepts: connecting to the unspecified address (Linux: loopback),
 * and two clients with the same port on different source addresses; offers
 * are named (files) only for listeners that some holder serves without the
 * rendezvous.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fabric/shm/rendezvous.h"
#include "sync/clock.h"
#include "sync/lease_lock.h"
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

/* Entries in <rundir>/offer: names an offer left there. */
static int offer_names(const char *rundir)
{
	char path[256];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "%s/offer", rundir);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Every holder of the listener has its rendezvous: the offer travels there
 * alone, with no file or FIFO made (and removed) for it in the runtime
 * directory. */
Test(rendezvous, offer_through_rendezvous_has_no_names, .timeout = 30)
{
	const char *rundir = tu_isolated_rundir();
	uint16_t port;
	int l, c, s;

	cr_assert_not_null(rundir);
	l = tu_listen(AF_INET, 4, &port);
	cr_assert_geq(l, 0);
	c = tu_connect(AF_INET, port);
	cr_assert_geq(c, 0);
	cr_assert_eq(offer_names(rundir), 0, "the offer left names in %s/offer", rundir);
	s = tu_accept(l);
	cr_assert_geq(s, 0);
	cr_assert_eq(tu_accelerated(c), 1, "client end not accelerated");
	cr_assert_eq(tu_accelerated(s), 1, "server end not accelerated");
	expect_echo(c, s, "no names");
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
}

static int reuseport_listener(uint16_t port)
{
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1, l = scilan_socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(l, 0);
	cr_assert_eq(scilan_setsockopt(l, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)), 0);
	cr_assert_eq(scilan_bind(l, (struct sockaddr *)&me, sizeof(me)), 0, "bind: %s", strerror(errno));
	cr_assert_eq(scilan_listen(l, 64), 0, "listen: %s", strerror(errno));
	return l;
}

/* An SO_REUSEPORT group: the second listener finds the rendezvous name
 * taken by the first, and the kernel gives it about half the connections;
 * their offers reach it only as files, which the registry tells connectors
 * to make (SL_REG_NAMED).  Every connection, whichever listener the kernel
 * picks, is accelerated on both ends. */
Test(rendezvous, reuseport_sibling_without_rendezvous_is_accelerated, .timeout = 60)
{
	int ls[2], got[2] = { 0, 0 };
	uint16_t port;

	cr_assert_not_null(tu_isolated_rundir());
	tu_offer_always(); /* 24 one-way connections to one destination */
	ls[0] = reuseport_listener(0);
	port = tu_local_port(ls[0]);
	ls[1] = reuseport_listener(port);
	for (int i = 0; i < 24; i++) {
		struct pollfd p[2] = { { .fd = ls[0], .events = POLLIN }, { .fd = ls[1], .events = POLLIN } };
		int c = tu_connect(AF_INET, port), s, which;

		cr_assert_geq(c, 0, "connect %d: %s", i, strerror(errno));
		cr_assert_geq(poll(p, 2, 10000), 1, "connection %d never queued", i);
		which = (p[0].revents & POLLIN) ? 0 : 1;
		s = scilan_accept(ls[which], NULL, NULL);
		cr_assert_geq(s, 0, "accept: %s", strerror(errno));
		got[which]++;
		cr_assert_eq(tu_accelerated(s), 1, "connection %d accepted by listener %d not accelerated", i, which);
		cr_assert_eq(tu_accelerated(c), 1, "connection %d (listener %d): client end not accelerated", i, which);
		expect_echo(c, s, "reuseport");
		scilan_close(c);
		scilan_close(s);
	}
	cr_assert(got[0] > 0 && got[1] > 0, "the kernel gave all 24 connections to one listener (%d, %d)", got[0],
		  got[1]);
	scilan_close(ls[0]);
	scilan_close(ls[1]);
}

/* A socket bound, then inherited by a fork child, then made to listen by
 * the parent: the rendezvous is the parent's, and the child, which accepts,
 * finds the offer only as a file.  The fork told the parent's listen that
 * another process may accept (SL_REG_NAMED), so even the first connection
 * is offered with names. */
static void child_accepts_after(unsigned delay_s)
{
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int l, go[2], c, status;
	char buf[8] = { 0 };
	uint16_t port;
	pid_t child;

	cr_assert_not_null(tu_isolated_rundir());
	l = scilan_socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(l, 0);
	cr_assert_eq(scilan_bind(l, (struct sockaddr *)&me, sizeof(me)), 0, "bind: %s", strerror(errno));
	port = tu_local_port(l);
	cr_assert_eq(pipe(go), 0);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		char req[4], r;
		int s;

		if (read(go[0], &r, 1) != 1)
			_exit(2);
		sleep(delay_s);
		s = scilan_accept(l, NULL, NULL);
		if (s < 0)
			_exit(3);
		if (tu_accelerated(s) != 1)
			_exit(4);
		if (tu_recv_all(s, req, 4) != 4 || scilan_send(s, "pong", 4, 0) != 4)
			_exit(5);
		scilan_close(s);
		_exit(0);
	}
	cr_assert_eq(scilan_listen(l, 4), 0, "listen: %s", strerror(errno));
	cr_assert_eq(write(go[1], "r", 1), 1);
	c = tu_connect(AF_INET, port);
	cr_assert_geq(c, 0);
	cr_assert_eq(scilan_send(c, "ping", 4, 0), 4);
	cr_assert_eq(tu_recv_all(c, buf, 4), 4);
	cr_assert_str_eq(buf, "pong");
	cr_assert_eq(tu_accelerated(c), 1, "client end not accelerated");
	waitpid(child, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: exit status %d (4: not accelerated)",
		  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	scilan_close(c);
	scilan_close(l);
}

Test(rendezvous, fork_before_listen_child_accepts_first_connection, .timeout = 60)
{
	child_accepts_after(0);
}

/* The same, accepted 7 s after the offer was named (a busy acceptor; the
 * connector waits for it while its connection is queued): the acceptor
 * looks for offer files only while a connector named one lately
 * (registry.c), and a window of 5 s let this one go to kernel TCP. */
Test(rendezvous, named_offer_found_by_a_late_accept, .timeout = 60)
{
	child_accepts_after(7);
}

/* A connector is connected to the rendezvous before it sends its offer
 * (it fixes its end of the 4-tuple and makes its segment in between): an
 * acceptor scanning the queue then finds a connection with nothing in it
 * yet.  That entry is for a connection not yet made (offers go before the
 * TCP connect), so it goes back to the queue for its acceptor; closing it
 * lost that offer (the connector's send failed with EPIPE and, through the
 * rendezvous alone, its connection went plain). */
Test(rendezvous, connector_still_sending_keeps_its_place, .timeout = 30)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	uint16_t port;
	int l, raw, c, s, n;

	cr_assert_not_null(tu_isolated_rundir());
	l = tu_listen(AF_INET, 4, &port);
	cr_assert_geq(l, 0);
	n = 1 + snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1, SL_RDV_NAME_PREFIX "4-7f000001-%u", (unsigned)port);
	raw = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(raw, 0);
	cr_assert_eq(connect(raw, (struct sockaddr *)&sun, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n)),
		     0, "rendezvous of port %u: %s", (unsigned)port, strerror(errno));
	c = tu_connect(AF_INET, port);
	s = tu_accept(l);
	cr_assert(c >= 0 && s >= 0);
	cr_assert_eq(tu_accelerated(s), 1, "the connection behind a connector still sending is not accelerated");
	cr_assert_eq(send(raw, "x", 1, MSG_NOSIGNAL), 1, "the connector still sending lost its place: %s",
		     strerror(errno));
	expect_echo(c, s, "behind");
	close(raw);
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
}

/* The acceptors of a shared listener scan its rendezvous queue one at a
 * time (rendezvous.c: an acceptor holds the entries it takes until its scan
 * ends, and another one scanning meanwhile missed the offer it held), under
 * the queue's gate, shared by fork, and once the queue was passed on
 * (marked) under a record lock on the rendezvous socket as well.  A holder
 * of either that never lets go (a worker stopped mid-scan) holds nobody's
 * accept for good: past the bounded wait the scan goes on and still finds
 * the offer.
 * And one preempted past the term in the middle of its scan, on a loaded
 * host, holds the offer for our connection out of the queue (set aside
 * until its scan ends) when our wait for its lock runs out: our scan past
 * the lock finds nothing.  Or it is the one whose wait ran out, and it
 * scans beside our locked scan.  Before, the connection stayed plain
 * (`no-offer`) and its client fell to kernel TCP after its 1 s bound (the
 * bursts hook tests on a loaded machine).  Now the scan that found nothing
 * waits for the other to let go (it gives the gate back, its record lock,
 * or the mark of a scan without the lock), and looks again.
 * With two take-overs in a row (then_one_more), the one holding the offer
 * loses its lease to a second acceptor, slow too, which loses it to us: our
 * scan finds nothing and waits for every holder taken over to give back,
 * the second and the first, which a record of the last take-over alone
 * forgot (our second look came after the second's give-back and before the
 * first's). */
enum other_acceptor { HOLDS_GATE, HOLDS_RECORD_LOCK, SCANS_UNLOCKED };

static void beside_another_acceptor(enum other_acceptor other, bool it_takes_the_offer, bool then_one_more)
{
	struct flock lock = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 1 };
	struct flock unlocked_scan = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 1, .l_len = 1 };
	struct flock *mine = other == HOLDS_RECORD_LOCK ? &lock : &unlocked_scan;
	struct sl_lease_lock *gate;
	int l, rdv, c, s, go[2], back[2], status;
	uint16_t port;
	pid_t child, second = -1;
	char took;

	cr_assert_not_null(tu_isolated_rundir());
	l = tu_listen(AF_INET, 4, &port);
	cr_assert_geq(l, 0);
	rdv = sl_sock_get(l)->rdv_fd[0];
	gate = sl_sock_get(l)->rdv_gate[0];
	cr_assert(rdv >= 0 && gate, "the listener has no rendezvous, or no gate");
	cr_assert(pipe(go) == 0 && pipe(back) == 0);
	child = fork(); /* from now on the listener may be shared */
	cr_assert_geq(child, 0);
	if (child == 0) {
		int e = -1;

		/* Gone with the test, also when it times out. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (other == HOLDS_GATE) {
			took = sl_lease_lock_take(gate, sl_mono_ns() + 1000000000) ? 'y' : 'n';
		} else {
			sl_lease_lock_mark(gate);
			took = fcntl(rdv, F_SETLK, mine) == 0 ? 'y' : 'n';
		}
		if (write(back[1], &took, 1) != 1)
			_exit(1);
		if (!it_takes_the_offer)
			pause();
		/* Its scan takes the offer, then it is preempted. */
		if (read(go[0], &took, 1) != 1)
			_exit(1);
		for (int i = 0; i < 1000 && (e = accept4(rdv, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) < 0; i++)
			usleep(1000);
		took = e >= 0 ? 'h' : 'n';
		if (write(back[1], &took, 1) != 1)
			_exit(1);
		usleep(then_one_more ? 420000 : 250000);
		sl_rdv_send_back(rdv, e);
		if (other == HOLDS_GATE) {
			sl_lease_lock_give(gate);
		} else {
			mine->l_type = F_UNLCK;
			fcntl(rdv, F_SETLK, mine);
		}
		_exit(0);
	}
	cr_assert_eq(read(back[0], &took, 1), 1);
	cr_assert_eq(took, 'y', "the other acceptor could not take the queue's lock, or its mark");
	c = tu_connect(AF_INET, port); /* its offer in the queue first */
	cr_assert_geq(c, 0);
	if (it_takes_the_offer) {
		cr_assert_eq(write(go[1], "g", 1), 1);
		cr_assert_eq(read(back[0], &took, 1), 1);
		cr_assert_eq(took, 'h', "the other acceptor found no offer to hold");
	}
	if (then_one_more && (second = fork()) == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		took = sl_lease_lock_take(gate, sl_mono_ns() + 100000000) ? 'n' : 'b';
		if (write(back[1], &took, 1) != 1)
			_exit(1);
		usleep(250000);
		sl_lease_lock_give(gate);
		_exit(0);
	}
	if (then_one_more) {
		cr_assert_geq(second, 0);
		cr_assert_eq(read(back[0], &took, 1), 1);
		cr_assert_eq(took, 'b', "the second acceptor did not take the first one's lease over");
	}
	s = tu_accept(l);
	cr_assert_geq(s, 0);
	if (!it_takes_the_offer)
		kill(child, SIGKILL);
	waitpid(child, &status, 0);
	if (then_one_more)
		waitpid(second, &status, 0);
	cr_assert_eq(tu_accelerated(s), 1, "the offer was not found beside another acceptor (%d, %s)", (int)other,
		     it_takes_the_offer ? "holding it" : "holding a lock");
	expect_echo(c, s, "beside another");
	close(go[0]);
	close(go[1]);
	close(back[0]);
	close(back[1]);
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
}

Test(rendezvous, scan_gate_held_elsewhere_holds_no_accept, .timeout = 30)
{
	beside_another_acceptor(HOLDS_GATE, false, false);
}

Test(rendezvous, scan_lock_held_elsewhere_holds_no_accept, .timeout = 30)
{
	beside_another_acceptor(HOLDS_RECORD_LOCK, false, false);
}

Test(rendezvous, offer_held_past_the_gate_term_is_found, .timeout = 30)
{
	beside_another_acceptor(HOLDS_GATE, true, false);
}

Test(rendezvous, offer_held_past_the_record_lock_term_is_found, .timeout = 30)
{
	beside_another_acceptor(HOLDS_RECORD_LOCK, true, false);
}

Test(rendezvous, offer_held_by_a_scan_without_the_lock_is_found, .timeout = 30)
{
	beside_another_acceptor(SCANS_UNLOCKED, true, false);
}

Test(rendezvous, offer_held_across_two_take_overs_is_found, .timeout = 30)
{
	beside_another_acceptor(HOLDS_GATE, true, true);
}

/* A process that accepts alone finds its offer however many offers for
 * other connections wait ahead of it: a burst whose accepts come in another
 * order than its offers (a backlog that overflowed completes handshakes out
 * of order).  Such offers used to be sent back, one accept looking at 128
 * at most: the 129th offer's connection went to kernel TCP. */
Test(rendezvous, offers_queued_ahead_do_not_hide_ours, .timeout = 60)
{
	struct sl_key dst = { .family = AF_INET, .addr = { 127, 0, 0, 1 } };
	int l, c, s, tcp, fds[SL_RDV_FDS];
	uint16_t port;

	cr_assert_not_null(tu_isolated_rundir());
	l = tu_listen(AF_INET, 4, &port);
	cr_assert_geq(l, 0);
	dst.port = port;
	tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(tcp, 0);
	for (int i = 0; i < SL_RDV_FDS; i++)
		cr_assert_geq(fds[i] = memfd_create("not-a-segment", MFD_CLOEXEC), 0);
	/* 300 offers for connections from ports nobody connects from. */
	for (int i = 0; i < 300; i++) {
		struct sl_key src = { .family = AF_INET, .addr = { 127, 0, 0, 1 }, .port = (uint16_t)(20000 + i) };
		int conn = sl_rdv_connect(&dst);

		cr_assert_geq(conn, 0, "rendezvous connect %d: %s", i, strerror(errno));
		cr_assert_eq(sl_rdv_send(conn, tcp, &dst, &src, fds, false), 0, "offer %d: %s", i, strerror(errno));
		close(conn);
	}
	c = tu_connect(AF_INET, port);
	s = tu_accept(l);
	cr_assert(c >= 0 && s >= 0);
	cr_assert_eq(tu_accelerated(s), 1, "our offer behind 300 others was not found");
	expect_echo(c, s, "behind the burst");
	for (int i = 0; i < SL_RDV_FDS; i++)
		close(fds[i]);
	close(tcp);
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
}

/* Offers a lone acceptor kept for its later accepts (the stash) are back in
 * the queue when it forks: a child may accept their connections first.
 * They stayed in the parent until its own next accept, and a pre-forked
 * worker that accepted one of those connections found no offer (its client
 * waited out its second, then kernel TCP). */
Test(rendezvous, kept_offers_are_queued_again_at_fork, .timeout = 60)
{
	struct sl_key dst = { .family = AF_INET, .addr = { 127, 0, 0, 1 } };
	struct sl_key src = { .family = AF_INET, .addr = { 127, 0, 0, 1 }, .port = 20001 };
	int l, c, s, tcp, conn, rdv, fds[SL_RDV_FDS], status;
	uint16_t port;
	pid_t child;

	cr_assert_not_null(tu_isolated_rundir());
	l = tu_listen(AF_INET, 4, &port);
	cr_assert_geq(l, 0);
	rdv = sl_sock_get(l)->rdv_fd[0];
	cr_assert_geq(rdv, 0, "the listener has no rendezvous");
	dst.port = port;
	tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(tcp, 0);
	for (int i = 0; i < SL_RDV_FDS; i++)
		cr_assert_geq(fds[i] = memfd_create("not-a-segment", MFD_CLOEXEC), 0);
	/* An offer for a connection still to come, queued ahead of ours. */
	conn = sl_rdv_connect(&dst);
	cr_assert_geq(conn, 0);
	cr_assert_eq(sl_rdv_send(conn, tcp, &dst, &src, fds, false), 0);
	close(conn);
	c = tu_connect(AF_INET, port);
	s = tu_accept(l); /* alone: the offer ahead is kept */
	cr_assert(c >= 0 && s >= 0);
	cr_assert_eq(tu_accelerated(s), 1);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		int e = accept4(rdv, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		_exit(e >= 0 ? 0 : 1);
	}
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the offer kept before the fork was not in the queue for the child");
	for (int i = 0; i < SL_RDV_FDS; i++)
		close(fds[i]);
	close(tcp);
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
}

/* A listener another process may hold (here: after a fork) sends offers for
 * other connections back to its queue, for their acceptor.  An accept that
 * found no offer of its own (a plain client's connection) used to meet the
 * offer it had just sent back again in the same scan, and again, until its
 * hop limit dropped it: the scilan client queued behind plain ones fell to
 * kernel TCP after stalling 1 s unconfirmed (nginx with a mix of clients). */
Test(rendezvous, offer_survives_plain_accepts_of_a_shared_listener, .timeout = 60)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int l, c, s, plain[3], status;
	uint16_t port;
	pid_t child;

	cr_assert_not_null(tu_isolated_rundir());
	l = tu_listen(AF_INET, 16, &port);
	cr_assert_geq(l, 0);
	child = fork(); /* from now on the listener may be shared */
	cr_assert_geq(child, 0);
	if (child == 0)
		_exit(0);
	waitpid(child, &status, 0);
	to.sin_port = htons(port);
	for (int i = 0; i < 3; i++) {
		plain[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		cr_assert_geq(plain[i], 0);
		cr_assert_eq(connect(plain[i], (struct sockaddr *)&to, sizeof(to)), 0, "plain connect: %s",
			     strerror(errno));
	}
	c = tu_connect(AF_INET, port);
	cr_assert_geq(c, 0);
	for (int i = 0; i < 3; i++) {
		s = tu_accept(l);
		cr_assert_geq(s, 0);
		cr_assert_eq(tu_accelerated(s), 0, "a plain client's connection on the rings");
		scilan_close(s);
		close(plain[i]);
	}
	s = tu_accept(l);
	cr_assert_geq(s, 0);
	cr_assert_eq(tu_accelerated(s), 1, "the offer behind plain clients was lost by their accepts");
	expect_echo(c, s, "after the plain ones");
	cr_assert_eq(tu_accelerated(c), 1);
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
}
