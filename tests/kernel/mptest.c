/* mptest.c — the multi-port NTB in one guest (tests/kernel/init, after the
 * pair's tests): scilan.ko over ntb_mock ports=8, an IDT-like switch.  Every
 * port's link to every other comes up (56 links), a connection per ordered
 * pair of ports streams checksummed data both ways, and one port's cable is
 * pulled mid-stream: its connections reset, every other pair finishes
 * intact, and the port comes back.
 */
#define SLRING_WAIT_MS 120000 /* 112 processes on a TCG guest: only a hang guard */
#include "slring.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>

#define NPORTS 8
#define CUT 3                 /* the slot whose cable is pulled */
#define TCP_BASE 21000
#define CHUNK 12345           /* uneven: the ring wraps anywhere */
#define MIN_ROUNDS 24         /* every pair streams at least this much ... */
#define AFTER_CUT 24          /* ... and this much after the cut */
#define EXIT_RESET 10

/* /dev/scilan<n> of each (local slot, peer slot), and its fabric ports. */
static int link_of[NPORTS][NPORTS];
static int port_no[NPORTS];

/* What the children tell the parent, in a shared page. */
struct shared {
	_Atomic int started;  /* clients past their first round */
	_Atomic int cut;      /* the cable is pulled */
	uint64_t sent[NPORTS][NPORTS][2];  /* FNV-1a of the bytes sent by the client [0] and server [1] */
	uint64_t got[NPORTS][NPORTS][2];   /* ... and received */
	long rounds[NPORTS][NPORTS];
};
static struct shared *sh;

static char *node(int a, int b)
{
	static char buf[NPORTS * NPORTS][32];
	char *p = buf[a * NPORTS + b];

	snprintf(p, 32, "/dev/scilan%d", link_of[a][b]);
	return p;
}

/* Does the link's debugfs state hold this line? */
static int dbg_has(int link, const char *line)
{
	char path[128], l[256];
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "/sys/kernel/debug/scilan/scilan%d/state", link);
	f = fopen(path, "r");
	while (f && !found && fgets(l, sizeof(l), f))
		found = !strncmp(l, line, strlen(line)) && l[strlen(line)] == '\n';
	if (f)
		fclose(f);
	return found;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Every /dev/scilanN, placed by its two ports; the slots are the ports in
 * ascending order (the mock's debugfs port<slot>). */
static int find_links(char *why, size_t n)
{
	int ports[64], nports = 0, nlinks = 0;
	struct { int dev, local, peer; } l[128];
	DIR *d = opendir("/dev");
	struct dirent *e;

	memset(link_of, -1, sizeof(link_of));
	while (d && (e = readdir(d)) && nlinks < 128) {
		struct scilan_info in;
		char path[300];
		int dev, fd;

		if (sscanf(e->d_name, "scilan%d", &dev) != 1)
			continue;
		snprintf(path, sizeof(path), "/dev/%s", e->d_name);
		fd = open(path, O_RDWR);
		if (fd < 0)
			continue;
		if (info(fd, &in) == 0) {
			l[nlinks].dev = dev;
			l[nlinks].local = in.local_port;
			l[nlinks].peer = in.peer_port;
			nlinks++;
		}
		close(fd);
	}
	if (d)
		closedir(d);
	for (int i = 0; i < nlinks; i++) {
		int seen = 0;

		for (int k = 0; k < nports; k++)
			seen |= ports[k] == l[i].local;
		if (!seen && nports < 64)
			ports[nports++] = l[i].local;
	}
	if (nlinks != NPORTS * (NPORTS - 1) || nports != NPORTS) {
		snprintf(why, n, "%d links on %d ports, want %d on %d", nlinks, nports, NPORTS * (NPORTS - 1),
			 NPORTS);
		return -1;
	}
	qsort(ports, NPORTS, sizeof(int), cmp_int);
	memcpy(port_no, ports, sizeof(port_no));
	for (int i = 0; i < nlinks; i++) {
		int a = -1, b = -1;

		for (int k = 0; k < NPORTS; k++) {
			if (port_no[k] == l[i].local)
				a = k;
			if (port_no[k] == l[i].peer)
				b = k;
		}
		if (a < 0 || b < 0 || a == b || link_of[a][b] >= 0) {
			snprintf(why, n, "/dev/scilan%d: ports %d -> %d: unknown, itself or twice", l[i].dev,
				 l[i].local, l[i].peer);
			return -1;
		}
		link_of[a][b] = l[i].dev;
	}
	return 0;
}

static int all_up(int ms, int skip)
{
	for (int a = 0; a < NPORTS; a++)
		for (int b = 0; b < NPORTS; b++)
			if (a != b && a != skip && b != skip && !wait_link(node(a, b), ms))
				return 0;
	return 1;
}

static void pattern(uint8_t *buf, size_t n, uint64_t *seed, uint64_t *h)
{
	for (size_t i = 0; i < n; i++) {
		buf[i] = (uint8_t)xorshift(seed);
		*h = (*h ^ buf[i]) * 0x100000001b3ull;
	}
}

static int check(const uint8_t *buf, size_t n, uint64_t *seed, uint64_t *h)
{
	for (size_t i = 0; i < n; i++) {
		if (buf[i] != (uint8_t)xorshift(seed))
			return -1;
		*h = (*h ^ buf[i]) * 0x100000001b3ull;
	}
	return 0;
}

/* Why a connection's send or receive failed: the link's reset, or not. */
static int failed(struct conn *c)
{
	struct scilan_info in;

	if (errno == ECONNRESET || (info(c->fd, &in) == 0 && in.ep_state == SCILAN_EP_RESET))
		return EXIT_RESET;
	return 3;
}

/* One end of the connection of ordered pair (a, b): the client on a's link
 * to b, the server on b's link to a.  Rounds in lock step: the client sends
 * a "more" word and a chunk, the server checks it and answers a chunk of
 * its own; the client stops after MIN_ROUNDS and AFTER_CUT rounds past the
 * cut, and a connection of the cut port never stops by itself. */
static int run_end(int a, int b, int server, int lfd)
{
	static uint8_t buf[CHUNK];
	uint64_t tx_seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)(a * 131 + b * 7 + server + 1);
	uint64_t rx_seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)(a * 131 + b * 7 + !server + 1);
	uint64_t tx_h = 0xcbf29ce484222325ull, rx_h = tx_h;
	int endless = a == CUT || b == CUT;
	long round = 0, cut_at = -1;
	struct conn c;
	uint32_t more;

	if (server ? conn_accept(&c, node(b, a), lfd, 0) : conn_connect(&c, node(a, b), TCP_BASE + a * NPORTS + b, 0))
		return 2;
	for (;; round++) {
		if (!server) {
			if (cut_at < 0 && atomic_load(&sh->cut))
				cut_at = round;
			more = endless || round < MIN_ROUNDS || cut_at < 0 || round < cut_at + AFTER_CUT;
			if (round > 100000)
				more = 0; /* the parent never cut: it fails the test */
			if (conn_send(&c, &more, sizeof(more)) < 0)
				return failed(&c);
			if (!more)
				break;
			pattern(buf, CHUNK, &tx_seed, &tx_h);
			if (conn_send(&c, buf, CHUNK) < 0 || conn_recv(&c, buf, CHUNK) < 0)
				return failed(&c);
			if (check(buf, CHUNK, &rx_seed, &rx_h) < 0)
				return 4;
			if (round == 0)
				atomic_fetch_add(&sh->started, 1);
		} else {
			if (conn_recv(&c, &more, sizeof(more)) < 0)
				return failed(&c);
			if (!more)
				break;
			if (conn_recv(&c, buf, CHUNK) < 0)
				return failed(&c);
			if (check(buf, CHUNK, &rx_seed, &rx_h) < 0)
				return 4;
			pattern(buf, CHUNK, &tx_seed, &tx_h);
			if (conn_send(&c, buf, CHUNK) < 0)
				return failed(&c);
		}
	}
	sh->sent[a][b][server] = tx_h;
	sh->got[a][b][server] = rx_h;
	if (!server)
		sh->rounds[a][b] = round;
	conn_close(&c);
	return 0;
}

static long generation(int a, int b)
{
	return dbg_value(link_of[a][b], "generation");
}

static void test_streams(void)
{
	int lfd[NPORTS][NPORTS], st[NPORTS][NPORTS][2];
	pid_t pid[NPORTS][NPORTS][2];
	long gen[NPORTS][NPORTS];
	int ok_pairs = 0, bad_pairs = 0, reset_pairs = 0, unreset = 0, setup = 1, cut_down = 1, others_kept = 1;
	char why[200] = "";

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		result("multiport_all_to_all", 0, "mmap: %s", strerror(errno));
		return;
	}
	for (int a = 0; a < NPORTS; a++)
		for (int b = 0; b < NPORTS; b++) {
			lfd[a][b] = a == b ? -1 : listen_on(node(b, a), TCP_BASE + a * NPORTS + b);
			if (a != b && lfd[a][b] < 0)
				setup = 0;
			gen[a][b] = a == b ? 0 : generation(a, b);
		}
	for (int a = 0; a < NPORTS && setup; a++)
		for (int b = 0; b < NPORTS; b++)
			for (int s = 0; s < 2 && a != b; s++) {
				pid[a][b][s] = fork();
				if (pid[a][b][s] == 0)
					_exit(run_end(a, b, s, lfd[a][b]));
			}
	if (!setup) {
		result("multiport_all_to_all", 0, "listen: %s", strerror(errno));
		return;
	}
	/* Every client past its first round: then the cable of CUT. */
	for (int i = 0; i < 2400 && atomic_load(&sh->started) < NPORTS * (NPORTS - 1); i++)
		usleep(100000);
	snprintf(why, sizeof(why), "/sys/kernel/debug/ntb_mock/port%d", CUT);
	if (write_file(why, "0") < 0)
		cut_down = 0;
	atomic_store(&sh->cut, 1);
	printf("mptest: %d clients streaming, port %d cut\n", atomic_load(&sh->started), port_no[CUT]);
	fflush(stdout);
	for (int a = 0; a < NPORTS; a++)
		for (int b = 0; b < NPORTS; b++)
			for (int s = 0; s < 2 && a != b; s++) {
				st[a][b][s] = -1;
				if (waitpid(pid[a][b][s], &st[a][b][s], 0) < 0 || !WIFEXITED(st[a][b][s]))
					st[a][b][s] = -1;
				else
					st[a][b][s] = WEXITSTATUS(st[a][b][s]);
			}
	for (int a = 0; a < NPORTS; a++)
		for (int b = 0; b < NPORTS; b++) {
			if (a == b)
				continue;
			if (a == CUT || b == CUT) {
				reset_pairs += st[a][b][0] == EXIT_RESET && st[a][b][1] == EXIT_RESET;
				unreset += st[a][b][0] != EXIT_RESET || st[a][b][1] != EXIT_RESET;
				if (st[a][b][0] != EXIT_RESET || st[a][b][1] != EXIT_RESET)
					printf("mptest: pair %d->%d of the cut port: client exit %d, server exit %d\n",
					       port_no[a], port_no[b], st[a][b][0], st[a][b][1]);
				cut_down &= !wait_link(node(a, b), 10);
				continue;
			}
			if (st[a][b][0] == 0 && st[a][b][1] == 0 && sh->sent[a][b][0] == sh->got[a][b][1] &&
			    sh->sent[a][b][1] == sh->got[a][b][0] && sh->rounds[a][b] >= MIN_ROUNDS + 1) {
				ok_pairs++;
			} else {
				bad_pairs++;
				printf("mptest: pair %d->%d: client exit %d, server exit %d, rounds %ld, checksums %s/%s\n",
				       port_no[a], port_no[b], st[a][b][0], st[a][b][1], sh->rounds[a][b],
				       sh->sent[a][b][0] == sh->got[a][b][1] ? "equal" : "DIFFER",
				       sh->sent[a][b][1] == sh->got[a][b][0] ? "equal" : "DIFFER");
			}
			if (generation(a, b) != gen[a][b] || !wait_link(node(a, b), 10))
				others_kept = 0;
		}
	result("multiport_all_to_all", bad_pairs == 0 && ok_pairs == (NPORTS - 1) * (NPORTS - 2),
	       "%d of %d pairs without port %d streamed %d-byte rounds both ways through the cut, checksums equal; %d bad",
	       ok_pairs, (NPORTS - 1) * (NPORTS - 2), port_no[CUT], CHUNK, bad_pairs);
	result("multiport_port_cut", cut_down && unreset == 0 && reset_pairs == 2 * (NPORTS - 1) && others_kept,
	       "port %d's %d connections reset at both ends (%d did not), its links down %d, the other links kept their session %d",
	       port_no[CUT], 2 * (NPORTS - 1), unreset, cut_down, others_kept);

	/* The cable back: the port's links come up again and carry data. */
	snprintf(why, sizeof(why), "/sys/kernel/debug/ntb_mock/port%d", CUT);
	write_file(why, "1");
	{
		int up = all_up(30000, -1), ok = 0;
		pid_t p;
		struct conn c, s;
		char x = 0;

		if (up) {
			p = fork();
			if (p == 0)
				_exit(conn_accept(&s, node(CUT + 1, CUT), lfd[CUT][CUT + 1], 0) < 0 ||
				      conn_send(&s, "y", 1) < 0 ? 1 : 0);
			ok = conn_connect(&c, node(CUT, CUT + 1), TCP_BASE + CUT * NPORTS + CUT + 1, 0) == 0 &&
			     conn_recv(&c, &x, 1) == 0 && x == 'y';
			waitpid(p, &st[0][0][0], 0);
			ok = ok && WIFEXITED(st[0][0][0]) && WEXITSTATUS(st[0][0][0]) == 0;
			conn_close(&c);
		}
		result("multiport_port_back", up && ok, "all %d links up again %d, a connection %d->%d carries data %d",
		       NPORTS * (NPORTS - 1), up, port_no[CUT], port_no[CUT + 1], ok);
	}
	for (int a = 0; a < NPORTS; a++)
		for (int b = 0; b < NPORTS; b++)
			listen_close(lfd[a][b]);
}

int main(void)
{
	char why[200] = "";
	int words = 0, up;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	memset(link_of, -1, sizeof(link_of));
	for (int i = 0; i < 300 && find_links(why, sizeof(why)) < 0; i++)
		usleep(100000);
	if (find_links(why, sizeof(why)) < 0) {
		result("multiport_links", 0, "%s", why);
		return 1;
	}
	up = all_up(60000, -1);
	for (int a = 0; a < NPORTS; a++)
		for (int b = 0; b < NPORTS; b++)
			words += a != b && dbg_has(link_of[a][b], "doorbell words");
	result("multiport_links", up && words == NPORTS * (NPORTS - 1),
	       "%d links between %d ports (%d..%d) up %d, %d with one doorbell per peer", NPORTS * (NPORTS - 1),
	       NPORTS, port_no[0], port_no[NPORTS - 1], up, words);
	if (!up)
		return 1;
	test_streams();
	return failures ? 1 : 0;
}
