/* sl2test_moves.c — sl2test's tests of connections whose transport is not
 * simply the link's: acceptors past the hook on the peer node (the device
 * fabric's agreement), the cable cut under live connections and put back
 * (fail-over, the return), and the peer guest powered off.
 */
#include "sl2test.h"

/* One case of plainacc (tests/kernel/plainacc.c) across the two guests: b
 * serves (plainacc server ADDR server_mode), a runs the client (with
 * client_mode if any); each says it intact, and its stderr (the library's
 * exit line) must say what server_must and every client_must say. */
static void plainacc_pair(const char *name, const char *server_mode, const char *client_mode,
			  const char *server_must, const char *const client_must[], const char *what)
{
	char sync[64];
	int port = 0, ok;
	pid_t pid;

	snprintf(sync, sizeof(sync), "%s_done", name);
	if (!is_a) {
		char *argv[] = { "/bin/plainacc", "server", ADDR_B, (char *)server_mode, NULL };

		/* Not the previous case's port: the child truncates the file
		 * only once it runs. */
		unlink("/tmp/pa-srv.out");
		port = serve_hooked(argv, "/tmp/pa-srv.out", "/tmp/pa-srv.err", NULL, name, &pid);
		ok = port && wait_ok(pid) && file_has("/tmp/pa-srv.out", "server intact 1") &&
		     (!server_must || file_has("/tmp/pa-srv.err", server_must));
		int64_t theirs = sync_peer(sync, ok);

		result(name, ok && theirs == 1, "server: %s %d, client ok %lld", what, ok, (long long)theirs);
		if (!ok) {
			show_file("/tmp/pa-srv.out");
			show_file("/tmp/pa-srv.err");
		}
		return;
	}
	port = (int)sync_peer(name, 0);
	ok = 0;
	if (port > 0) {
		char pbuf[16];
		char *argv[] = { "/bin/plainacc", "client", ADDR_B, pbuf, (char *)client_mode, NULL };

		snprintf(pbuf, sizeof(pbuf), "%d", port);
		pid = run_hooked(argv, "/tmp/pa-cli.out", "/tmp/pa-cli.err", NULL);
		ok = wait_ok(pid) && file_has("/tmp/pa-cli.out", "intact 1\n");
		for (int i = 0; ok && client_must[i]; i++)
			ok = file_has("/tmp/pa-cli.err", client_must[i]);
	}
	int64_t theirs = sync_peer(sync, ok);

	result(name, ok && theirs == 1, "client: %s %d, server ok %lld", what, ok, (long long)theirs);
	if (!ok) {
		show_file("/tmp/pa-cli.out");
		show_file("/tmp/pa-cli.err");
	}
}

/* The device fabric's agreement: the listener is the hook's, so the client's
 * driver pairs a ring for it, but the acceptor takes the connection outside
 * the hook (a raw accept4 system call, an io_uring accept).  The client's
 * bytes written into the ring must reach the acceptor on kernel TCP, every
 * one in order, and the answer must come back; before the agreement they
 * sat in a ring nobody read and the client waited forever.  Both of the
 * client's connections were offered over the device and revoked by the
 * agreement (not moved later by the stall watch, which used to rescue a raw
 * acceptor after 3 s): nothing of them stayed on the rings.
 */
void test_plain_acceptor(const char *mode)
{
	static const char *const client_must[] = { "accelerated 0, fallback 2,", "fallback reasons: unconfirmed 2",
						   NULL };
	char name[48];

	snprintf(name, sizeof(name), "plain_acceptor_%s", mode);
	plainacc_pair(name, mode, NULL, NULL, client_must, "every byte on kernel TCP, nothing left on the rings");
}

/* io_uring after the agreement (the part 1): a client whose sends
 * all go past the hook (io_uring writes) on an agreed device connection
 * is moved to kernel TCP by the server's hook with every byte, both ways
 * (bypass.c, unambiguous: nothing was written into the ring; the reasons
 * say so, not an offer the client gave up before the agreement); one that
 * wrote into the ring first and then past it is reset at both ends, loud,
 * with what the server delivered in order.
 */
void test_uring_bypass(void)
{
	static const char *const client_must[] = { "fallback reasons: peer-moved 2", NULL };

	plainacc_pair("uring_after_agreement", "hooked", "uring", "fallback reasons: bypass 2", client_must,
		      "io_uring requests whole, the mixed one reset");
}

/* Fail-over across the two guests: an unmodified program echoing a 64 MiB
 * stream under the hook (both directions in flight; poll_us "0": in
 * interrupt mode, every wait asleep), and guest a pulls its ivshmem cable
 * in the middle (its links go
 * down at once, b's when a's heartbeat has been silent 1 s, or earlier when
 * a's fail-over header arrives on the kernel connection).  Both ends carry
 * on over virtio-net with every byte, and say link-down; a's cable goes back,
 * the link comes up, and a new connection rides the rings again.
 */
void test_cut(const char *name, const char *poll_us)
{
	int port = 0, ok, up = 0, again = 0;
	char sync[64];
	pid_t pid;

	if (!is_a) {
		char *argv[] = { "/bin/peer", "server", ADDR_B, NULL };

		unlink("/tmp/cut-srv.out");
		port = serve_hooked(argv, "/tmp/cut-srv.out", "/tmp/cut-srv.err", poll_us,
				    strcat(strcpy(sync, name), "_go"), &pid);
		ok = port && wait_ok(pid) && file_has("/tmp/cut-srv.err", "fallback reasons: link-down 1");
		sync_peer(strcat(strcpy(sync, name), "_done"), ok);
		/* The link back: a new connection on the rings. */
		unlink("/tmp/cut-srv.out");
		port = serve_hooked(argv, "/tmp/cut-srv.out", "/tmp/cut-srv2.err", poll_us,
				    strcat(strcpy(sync, name), "_again"), &pid);
		again = port && wait_ok(pid) && file_has("/tmp/cut-srv2.err", "accelerated 1, fallback 0,");
		int64_t theirs = sync_peer(strcat(strcpy(sync, name), "_again_done"), again);

		result(name, ok && again && theirs == 1,
		       "peer server: every byte across the cut on kernel TCP %d, a new connection on the rings after it "
		       "%d, client ok %lld",
		       ok, again, (long long)theirs);
		if (!ok || !again || theirs != 1) {
			show_file("/tmp/cut-srv.out");
			show_file("/tmp/cut-srv.err");
			show_file("/tmp/cut-srv2.err");
		}
		return;
	}
	port = (int)sync_peer(strcat(strcpy(sync, name), "_go"), 0);
	ok = 0;
	if (port > 0) {
		char pbuf[16];
		char *argv[] = { "/bin/peer", "client", ADDR_B, pbuf, "67108864", NULL };

		snprintf(pbuf, sizeof(pbuf), "%d", port);
		pid = run_hooked(argv, "/tmp/cut-cli.out", "/tmp/cut-cli.err", poll_us);
		usleep(300000); /* mid-stream */
		write_file(IVSHMEM_CUT, "1");
		usleep(1500000); /* past b's heartbeat timeout */
		write_file(IVSHMEM_CUT, "0");
		ok = wait_ok(pid) && file_has("/tmp/cut-cli.out", "intact 1") &&
		     file_has("/tmp/cut-cli.err", "fallback reasons: link-down 1");
		up = wait_link(NODE, 30000);
	}
	sync_peer(strcat(strcpy(sync, name), "_done"), ok);
	port = (int)sync_peer(strcat(strcpy(sync, name), "_again"), 0);
	if (port > 0 && up) {
		char pbuf[16];
		char *argv[] = { "/bin/peer", "client", ADDR_B, pbuf, "1048576", NULL };

		snprintf(pbuf, sizeof(pbuf), "%d", port);
		pid = run_hooked(argv, "/tmp/cut-cli.out", "/tmp/cut-cli2.err", poll_us);
		again = wait_ok(pid) && file_has("/tmp/cut-cli.out", "intact 1") &&
			file_has("/tmp/cut-cli2.err", "accelerated 1, fallback 0,");
	}
	int64_t theirs = sync_peer(strcat(strcpy(sync, name), "_again_done"), ok && again);

	result(name, ok && again && theirs == 1,
	       "peer client: 64 MiB echoed intact across the cut, failed over %d; link up again %d, a new connection "
	       "on the rings %d; server ok %lld",
	       ok, up, again, (long long)theirs);
	if (!ok || !again || theirs != 1) {
		show_file("/tmp/cut-cli.out");
		show_file("/tmp/cut-cli.err");
		show_file("/tmp/cut-cli2.err");
	}
}

/* The cut under an epoll set across the link: b's one-thread server holds
 * 40 device connections in one level-triggered set, a's client exchanges
 * on random ones (interrupt mode), and a pulls its cable mid-run.  All 40
 * fail over, every exchange is answered intact, and both ends count 40
 * moves for link-down. */
void test_epoll_cut(void)
{
	const char *name = "epoll_set_link_cut";
	int port, ok, up;
	pid_t pid;

	if (!is_a) {
		char *argv[] = { "/bin/epollset", "serve", ADDR_B, "40", NULL };

		port = serve_hooked(argv, "/tmp/epx.out", "/tmp/epx.err", "0", name, &pid);
		ok = port && wait_ok(pid) && file_has("/tmp/epx.err", "fallback reasons: link-down 40");
		up = wait_link(NODE, 30000);
		int64_t theirs = sync_peer("epoll_set_link_cut_done", ok && up);

		result(name, ok && up && theirs == 1,
		       "epollset server: 40 connections failed over, every request answered %d; link up again %d; "
		       "client ok %lld",
		       ok, up, (long long)theirs);
		if (!ok || theirs != 1)
			show_file("/tmp/epx.err");
		return;
	}
	port = (int)sync_peer(name, 0);
	ok = up = 0;
	if (port > 0) {
		char pbuf[16];
		char *argv[] = { "/bin/epollset", "client", ADDR_B, pbuf, "40", "20000", NULL };

		snprintf(pbuf, sizeof(pbuf), "%d", port);
		pid = run_hooked(argv, "/tmp/epy.out", "/tmp/epy.err", "0");
		/* Mid-run, once every connection is agreed (a cut in the
		 * middle of a connect resets that connection, by design). */
		for (int i = 0; i < 600 && !file_has("/tmp/epy.out", "connected 40"); i++)
			usleep(50000);
		usleep(500000);
		write_file(IVSHMEM_CUT, "1");
		usleep(1500000); /* past b's heartbeat timeout */
		write_file(IVSHMEM_CUT, "0");
		ok = wait_ok(pid) && file_has("/tmp/epy.out", "20000 exchanges over 40 connections, result 0") &&
		     file_has("/tmp/epy.err", "fallback reasons: link-down 40");
		up = wait_link(NODE, 30000);
	}
	int64_t theirs = sync_peer("epoll_set_link_cut_done", ok && up);

	result(name, ok && up && theirs == 1,
	       "epollset client: 20,000 exchanges on 40 connections intact across the cut, all failed over %d; link "
	       "up again %d; server ok %lld",
	       ok, up, (long long)theirs);
	if (!ok) {
		show_file("/tmp/epy.out");
		show_file("/tmp/epy.err");
	}
}

/* The cable pulled and put back CUT_CYCLES times under one live connection
 * (tests/kernel/linkback.c's remote mode in a, peer's echo server in b),
 * exchanging checked requests all along: each time it fails over to kernel
 * TCP, and once the link is back the same descriptors are on the rings
 * again; both ends count every move.  Under load: beside it, another
 * connection streams both ways at full speed through another echo server,
 * and each cut waits until that one too is back on the rings (linkback's
 * LOAD file): it fails over at every cut, comes back every time, and ends
 * intact when the cycles are done. */
#define CUT_CYCLES 20
#define CYCLES_BULK "0" /* linkback's LOAD mode streams until its stop */
#define CYCLES_LOAD "/tmp/cyb-load"
void test_cut_cycles(void)
{
	const char *name = "link_cut_cycles";
	char must[64], bulk_must[64];
	int port, bulk_port, ok, bulk_ok, up;
	pid_t pid, bulk_pid;

	snprintf(must, sizeof(must), "promoted %d;", CUT_CYCLES);
	/* The load failed over at every cut, and for no other reason. */
	snprintf(bulk_must, sizeof(bulk_must), "fallback reasons: link-down %d\n", CUT_CYCLES);
	if (!is_a) {
		char *argv[] = { "/bin/peer", "server", ADDR_B, NULL };

		unlink("/tmp/cyc-srv.out");
		unlink("/tmp/cyb-srv.out");
		setenv("SCEN_LIMIT", "280", 1); /* the echo servers' watchdog: beyond the cycles under TCG */
		port = serve_hooked(argv, "/tmp/cyc-srv.out", "/tmp/cyc-srv.err", NULL, name, &pid);
		setenv("SCILAN_LOG", "debug", 1);
		bulk_port = serve_hooked(argv, "/tmp/cyb-srv.out", "/tmp/cyb-srv.err", NULL, "link_cut_cycles_bulk",
					 &bulk_pid);
		unsetenv("SCILAN_LOG");
		unsetenv("SCEN_LIMIT");
		ok = port && wait_ok_within(pid, 300) && file_has("/tmp/cyc-srv.err", must);
		bulk_ok = bulk_port && wait_ok_within(bulk_pid, 300) && file_has("/tmp/cyb-srv.err", bulk_must);
		up = wait_link(NODE, 30000);
		int64_t theirs = sync_peer("link_cut_cycles_done", ok && bulk_ok && up);

		result(name, ok && bulk_ok && up && theirs == 1,
		       "echo servers: failed over and back %d times, every byte echoed %d; the bulk one's end %d; link "
		       "up %d; client ok %lld",
		       CUT_CYCLES, ok, bulk_ok, up, (long long)theirs);
		show_file("/tmp/cyc-srv.err");
		if (system("grep -h 'scilan: pid.*accelerated' /tmp/cyb-srv.err") != 0)
			printf("  the bulk echo server said nothing of its connection\n");
		if (!ok || !bulk_ok || theirs != 1) {
			show_file("/tmp/cyc-srv.out");
			show_file("/tmp/cyb-srv.out");
			if (system("tail -n 60 /tmp/cyb-srv.err") != 0)
				printf("no tail\n");
		}
		return;
	}
	port = (int)sync_peer(name, 0);
	bulk_port = (int)sync_peer("link_cut_cycles_bulk", 0);
	ok = bulk_ok = up = 0;
	if (port > 0 && bulk_port > 0) {
		char pbuf[16], bbuf[16], nbuf[16];
		char *argv[] = { "/bin/linkback", "remote", ADDR_B, pbuf, IVSHMEM_CUT, nbuf, CYCLES_LOAD, NULL };
		char *bulk_argv[] = { "/bin/linkback", "bulk", ADDR_B, bbuf, CYCLES_BULK, CYCLES_LOAD, NULL };

		snprintf(pbuf, sizeof(pbuf), "%d", port);
		snprintf(bbuf, sizeof(bbuf), "%d", bulk_port);
		snprintf(nbuf, sizeof(nbuf), "%d", CUT_CYCLES);
		/* A word or a stop of an earlier run would end or mislead this one. */
		unlink(CYCLES_LOAD);
		unlink(CYCLES_LOAD ".stop");
		unlink(CYCLES_LOAD ".tmp");
		setenv("SCILAN_LOG", "debug", 1);
		bulk_pid = run_hooked(bulk_argv, "/tmp/cyb-cli.out", "/tmp/cyb-cli.err", NULL);
		unsetenv("SCILAN_LOG");
		usleep(300000); /* streaming before the first cut */
		pid = run_hooked(argv, "/tmp/cyc-cli.out", "/tmp/cyc-cli.err", NULL);
		ok = wait_ok_within(pid, 300) && file_has("/tmp/cyc-cli.out", "TEST linkback_remote PASS") &&
		     file_has("/tmp/cyc-cli.err", must);
		/* Under load: the bulk connection was cut too (a fast host's
		 * bulk could end before the first cut). */
		bulk_ok = wait_ok_within(bulk_pid, 300) && file_has("/tmp/cyb-cli.out", "TEST linkback_bulk PASS") &&
			  file_has("/tmp/cyb-cli.err", bulk_must);
		up = wait_link(NODE, 30000);
	}
	int64_t theirs = sync_peer("link_cut_cycles_done", ok && bulk_ok && up);

	result(name, ok && bulk_ok && up && theirs == 1,
	       "linkback client: %d cuts, each failed over and came back on the same descriptors, every byte checked "
	       "%d; beside it a stream echoed intact until the last cut %d; link up %d; server ok %lld",
	       CUT_CYCLES, ok, bulk_ok, up, (long long)theirs);
	show_file("/tmp/cyc-cli.out");
	show_file("/tmp/cyc-cli.err");
	show_file("/tmp/cyb-cli.out");
	if (!bulk_ok) {
		if (system("tail -n 60 /tmp/cyb-cli.err") != 0)
			printf("no tail\n");
	}
}

static sigjmp_buf sigbus_jmp;

static void sigbus_handler(int sig)
{
	(void)sig;
	siglongjmp(sigbus_jmp, 1);
}

/* b powers off (poweroff -f: no goodbye) under a's reader blocked in read():
 * ECONNRESET once the heartbeat times out, then no SIGBUS on either mapping and
 * the link down.  Returns with b gone.
 */
void test_poweroff(void)
{
	struct conn c;
	int lfd, ok, status;
	double t0;
	pid_t pid;

	if (!is_a) {
		lfd = listen_on(NODE, 10);
		sync_peer("poweroff", lfd >= 0);
		ok = lfd >= 0 && conn_accept(&c, NODE, lfd, 0) == 0;
		sync_peer("poweroff_now", ok);
		printf("scilan-guest: powering off under the peer's blocked read\n");
		printf("scilan-guest: done\n");
		fflush(stdout);
		sync();
		reboot(RB_POWER_OFF);
		_exit(1);
	}
	sync_peer("poweroff", 0);
	ok = conn_connect(&c, NODE, 10, 0) == 0;
	pid = fork();
	if (pid == 0) {
		uint32_t tok;
		ssize_t n;

		alarm(60); /* a read that never returns fails the test, not the run */
		n = read(c.fd, &tok, sizeof(tok)); /* blocks: nobody stimulates */

		if (n >= 0 || errno != ECONNRESET)
			_exit(3);
		/* Harmless afterwards: our slice, and a sink for the peer's. */
		signal(SIGBUS, sigbus_handler);
		if (sigsetjmp(sigbus_jmp, 1) == 0) {
			*(volatile uint8_t *)c.peer = 1;
			(void)*(volatile uint8_t *)c.peer;
		} else {
			_exit(4);
		}
		if (sigsetjmp(sigbus_jmp, 1) == 0)
			*(volatile uint8_t *)c.local = 1;
		else
			_exit(5);
		_exit(0);
	}
	usleep(200000);
	t0 = now_us();
	sync_peer("poweroff_now", ok);
	waitpid(pid, &status, 0);
	t0 = now_us() - t0;
	ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	int down = 0;

	for (int i = 0; i < 500 && !down; i++, usleep(10000))
		down = dbg_has("link down");

	result("peer_poweroff_reset", ok && down,
	       "blocked read got ECONNRESET after %.0f ms, both mappings usable without SIGBUS (child exit %d), link down %d",
	       t0 / 1000, WIFEXITED(status) ? WEXITSTATUS(status) : -1, down);
	conn_close(&c);
}
