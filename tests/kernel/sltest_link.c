/* sltest_link.c — sltest's link cut under connections: a blocked read
 * reset, every device inode's mappings zapped, each endpoint's sink page
 * its own, and the link flapping under echoes.
 */
#include "sltest.h"

/* The cable is cut under a receiver blocked in read(): ECONNRESET; its
 * mappings were zapped, and touching them again faults in our own slice and
 * a sink for the peer's, never SIGBUS; a new connection works once the link
 * is back. */
void test_linkdown(void)
{
	struct conn s, c;
	int lfd = listen_on(NODE_B, 10), status, first, ok, again;
	pid_t pid;

	if (lfd < 0) {
		result("link_down_reset", 0, "listen: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		uint32_t tok;
		ssize_t n;

		if (conn_accept(&s, NODE_B, lfd, 0) < 0)
			_exit(2);
		n = read(s.fd, &tok, sizeof(tok)); /* blocks: nobody stimulates */
		if (n >= 0 || errno != ECONNRESET)
			_exit(3);
		/* The mappings were zapped; touching them again is harmless:
		 * our slice is still ours, the peer's a sink (no SIGBUS). */
		signal(SIGBUS, sigbus_handler);
		if (sigsetjmp(sigbus_jmp, 1) == 0) {
			*(volatile uint8_t *)s.peer = 1;
			(void)*(volatile uint8_t *)s.peer;
		} else {
			_exit(4);
		}
		if (sigsetjmp(sigbus_jmp, 1) == 0) {
			*(volatile uint8_t *)s.local = 1;
			if (*(volatile uint8_t *)s.local != 1)
				_exit(6);
		} else {
			_exit(5);
		}
		_exit(0);
	}
	ok = conn_connect(&c, NODE_A, 10, 0) == 0;
	usleep(200000);
	ok = ok && write_file(MOCK_LINK, "0") == 0;
	waitpid(pid, &first, 0);
	ok = ok && WIFEXITED(first) && WEXITSTATUS(first) == 0;
	conn_close(&c);
	write_file(MOCK_LINK, "1");
	again = wait_link(NODE_A, 5000) && wait_link(NODE_B, 5000);
	if (again) {
		pid = fork();
		if (pid == 0)
			_exit(conn_accept(&s, NODE_B, lfd, 0) < 0 || conn_send(&s, "x", 1) < 0 ? 1 : 0);
		char x = 0;

		again = conn_connect(&c, NODE_A, 10, 0) == 0 && conn_recv(&c, &x, 1) == 0 && x == 'x';
		waitpid(pid, &status, 0);
		again = again && WIFEXITED(status) && WEXITSTATUS(status) == 0;
		conn_close(&c);
	}
	listen_close(lfd);
	result("link_down_reset", ok && again,
	       "blocked read got ECONNRESET and both mappings usable without SIGBUS %d (child exit %d), reconnect after link up %d",
	       ok, WIFEXITED(first) ? WEXITSTATUS(first) : -1, again);
}

/* Six device nodes of one link (six inodes, like containers with their
 * own /dev), each with a mapped connection: link down must zap them all
 * and the link come back. */
void test_zap_inodes(void)
{
	struct conn c[6];
	struct stat st;
	char path[6][32];
	int lfd = listen_on(NODE_B, 17), made = 0, resets = 0, again;

	if (lfd < 0 || stat(NODE_A, &st) < 0) {
		result("zap_many_inodes", 0, "setup: %s", strerror(errno));
		return;
	}
	for (int k = 0; k < 6; k++) {
		snprintf(path[k], sizeof(path[k]), "/tmp/scilan-node-%d", k);
		unlink(path[k]);
		if (mknod(path[k], S_IFCHR | 0600, st.st_rdev) == 0 && conn_connect(&c[made], path[k], 17, 0) == 0)
			made++;
	}
	write_file(MOCK_LINK, "0");
	for (int k = 0; k < made; k++) {
		uint32_t tok;
		struct pollfd p = { .fd = c[k].fd, .events = POLLIN };

		resets += poll(&p, 1, 5000) == 1 && read(c[k].fd, &tok, sizeof(tok)) < 0 && errno == ECONNRESET;
	}
	write_file(MOCK_LINK, "1");
	again = wait_link(NODE_A, 5000) && wait_link(NODE_B, 5000);
	for (int k = 0; k < made; k++)
		conn_close(&c[k]);
	for (int k = 0; k < 6; k++)
		unlink(path[k]);
	listen_close(lfd);
	result("zap_many_inodes", made == 6 && resets == 6 && again,
	       "%d connections through 6 nodes, %d reset at link down, link up again %d", made, resets, again);
}

/* Does the page at p hold the 8-byte marker anywhere? */
static int page_holds(const volatile uint8_t *p, uint64_t marker)
{
	for (size_t i = 0; i + sizeof(marker) <= SCILAN_SET_PAGE; i += sizeof(marker))
		if (*(const volatile uint64_t *)(p + i) == marker)
			return 1;
	return 0;
}

/* After link down the peer's pages of a mapping refault to a sink, which
 * must be the endpoint's own: two connections of node A, root's and uid
 * 65534's, map the peer's slice and marks pages; the link is cut and the
 * zap done; root stores a marker through both of its peer mappings (a ring
 * copy in flight at the cut) and 65534 through its own, and neither reads
 * the other's. */
void test_sink_private(void)
{
	const uint64_t root_marker = 0x5eed0000a11ce001ull, nobody_marker = 0x5eed0000b0b00002ull;
	const size_t pg = SCILAN_SET_PAGE;
	int lfd = listen_on(NODE_B, 24), to_child[2] = { -1, -1 }, to_parent[2] = { -1, -1 }, cut = 0, zapped = 0;
	int st = -1, saw_nobody = -1, own = 0;
	uint8_t *pmarks = MAP_FAILED;
	struct conn v = { .fd = -1 };
	long zaps0 = dbg_value(0, "zaps");
	pid_t pid = -1;
	char step = 0;

	if (lfd < 0 || pipe(to_child) < 0 || pipe(to_parent) < 0 || conn_connect(&v, NODE_A, 24, 0) < 0 ||
	    (pmarks = mmap(NULL, SCILAN_SETS * pg, PROT_READ | PROT_WRITE, MAP_SHARED, v.fd,
			   SCILAN_MMAP_PEER_MARKS(v.slice))) == MAP_FAILED) {
		result("sink_private", 0, "setup: %s", strerror(errno));
		goto out;
	}
	pid = fork();
	if (pid == 0) {
		struct conn a;
		uint8_t *am;
		int saw;

		if (become_uid(65534) < 0 || conn_connect(&a, NODE_A, 24, 0) < 0)
			_exit(100);
		am = mmap(NULL, SCILAN_SETS * pg, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd,
			  SCILAN_MMAP_PEER_MARKS(a.slice));
		if (am == MAP_FAILED || write(to_parent[1], "r", 1) != 1 || read(to_child[0], &step, 1) != 1)
			_exit(101);
		/* Cut, zapped, and root's markers stored: none may show here. */
		saw = page_holds(a.peer, root_marker) || page_holds(a.peer + a.slice - pg, root_marker) ||
		      page_holds(am, root_marker);
		*(volatile uint64_t *)(a.peer + 512) = nobody_marker;
		*(volatile uint64_t *)(am + 1024) = nobody_marker;
		if (write(to_parent[1], "w", 1) != 1 || read(to_child[0], &step, 1) != 1)
			_exit(102);
		_exit(saw);
	}
	if (pid < 0 || read(to_parent[0], &step, 1) != 1) {
		result("sink_private", 0, "the second uid's connection: setup failed");
		goto out;
	}
	cut = write_file(MOCK_LINK, "0") == 0;
	/* The mappings are zapped by the link's work item after the reset. */
	for (int i = 0; i < 500 && cut && !zapped; i++) {
		zapped = dbg_value(0, "zaps") > zaps0;
		if (!zapped)
			usleep(10000);
	}
	if (zapped) {
		*(volatile uint64_t *)(v.peer + 256) = root_marker;
		*(volatile uint64_t *)(v.peer + v.slice - pg + 256) = root_marker;
		*(volatile uint64_t *)(pmarks + 2048) = root_marker;
	}
	/* Root's own stores stay visible to root: the sink is really mapped. */
	own = zapped && page_holds(v.peer, root_marker) && page_holds(pmarks, root_marker);
	if (write(to_child[1], "c", 1) == 1 && read(to_parent[0], &step, 1) == 1)
		saw_nobody = page_holds(v.peer, nobody_marker) || page_holds(pmarks, nobody_marker);
	if (write(to_child[1], "x", 1) != 1)
		saw_nobody = -1;
	if (waitpid(pid, &st, 0) == pid && WIFEXITED(st))
		st = WEXITSTATUS(st);
	else
		st = -1;
	pid = -1;
	result("sink_private", cut && zapped && own && st == 0 && saw_nobody == 0,
	       "link cut %d and zapped %d, root reads its own stores %d; uid 65534 read root's: exit %d (0 no, 1 yes, "
	       "100+ setup); root read 65534's %d",
	       cut, zapped, own, st, saw_nobody);
out:
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	if (pmarks != MAP_FAILED)
		munmap(pmarks, SCILAN_SETS * pg);
	conn_close(&v);
	listen_close(lfd);
	for (int k = 0; k < 2; k++) {
		if (to_child[k] >= 0)
			close(to_child[k]);
		if (to_parent[k] >= 0)
			close(to_parent[k]);
	}
	write_file(MOCK_LINK, "1");
	wait_link(NODE_A, 5000);
	wait_link(NODE_B, 5000);
}

/* A 64-byte message carrying its number; the echo must match exactly. */
static void flap_msg(char *m, uint32_t n)
{
	for (int i = 0; i < 64; i++)
		m[i] = (char)(n * 31 + (uint32_t)i);
}

/* The link goes down and up `flaps` times while a client connects again
 * and again and exchanges numbered 64-byte echoes with an acceptor: every
 * echo that completes is exact (an interrupted one fails with a reset,
 * never returns other bytes), nothing hangs, and afterwards no endpoint and
 * no busy slice is left. */
void test_flap(int flaps)
{
	int lfd = listen_on(NODE_B, 19), stop[2], st = -1, ups = 0, clean;
	pid_t acc, cli;

	if (lfd < 0 || pipe(stop) < 0) {
		result("link_flapping", 0, "listen: %s", strerror(errno));
		return;
	}
	acc = fork();
	if (acc == 0) {
		for (;;) {
			struct conn s;
			char m[64];

			if (conn_accept(&s, NODE_B, lfd, 0) == 0)
				while (conn_recv(&s, m, sizeof(m)) == 0 && conn_send(&s, m, sizeof(m)) == 0)
					;
			conn_close(&s);
		}
	}
	cli = fork();
	if (cli == 0) {
		uint32_t n = 0, good = 0;
		char m[64], back[64], b;

		fcntl(stop[0], F_SETFL, O_NONBLOCK);
		while (read(stop[0], &b, 1) != 1) {
			struct conn c;

			if (conn_connect(&c, NODE_A, 19, 0) == 0) {
				for (int i = 0; i < 50; i++, n++) {
					flap_msg(m, n);
					if (conn_send(&c, m, sizeof(m)) < 0 || conn_recv(&c, back, sizeof(back)) < 0)
						break;
					if (memcmp(m, back, sizeof(m)))
						_exit(3);
					good++;
				}
			}
			conn_close(&c);
		}
		printf("  flapping: %u exact echoes\n", good);
		_exit(good ? 0 : 4);
	}
	for (int i = 0; i < flaps; i++) {
		usleep(5000 + (i % 5) * 5000);
		write_file(MOCK_LINK, "0");
		usleep(10000);
		write_file(MOCK_LINK, "1");
		ups += wait_link(NODE_A, 5000) && wait_link(NODE_B, 5000);
	}
	usleep(200000); /* some echoes on the last session */
	if (write(stop[1], "s", 1) != 1)
		perror("stop");
	alarm(30);
	if (waitpid(cli, &st, 0) == cli && WIFEXITED(st))
		st = WEXITSTATUS(st);
	alarm(0);
	kill(acc, SIGKILL);
	waitpid(acc, NULL, 0);
	listen_close(lfd);
	close(stop[0]);
	close(stop[1]);
	clean = settle(0, "endpoints", 0) && settle(1, "endpoints", 0) && settle(0, "slices_busy", 0) &&
		settle(1, "slices_busy", 0);
	result("link_flapping", st == 0 && ups == flaps && clean,
	       "%d flaps, link up again %d times, client exit %d (3: an echo differed), endpoints %ld/%ld, busy slices %ld/%ld",
	       flaps, ups, st, dbg_value(0, "endpoints"), dbg_value(1, "endpoints"), dbg_value(0, "slices_busy"),
	       dbg_value(1, "slices_busy"));
}
