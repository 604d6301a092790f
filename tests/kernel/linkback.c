/* linkback.c — the device link cut and restored under a plain POSIX program
 * under the preload hook (tests/kernel/init, "linkcut" group): one
 * connection exchanging checked requests and replies fails over to kernel
 * TCP at the cut, and once the link is back the same connection (the same
 * descriptors) is on the rings again at both ends, every byte of both
 * streams intact.  `linkback once`, or `linkback cycles N`: N cuts and
 * returns in a row; `linkback stream`: one cut and return under both
 * streams at once, every call non-blocking (the return of a full-duplex
 * stream: the connector must still have room for its marker when the
 * acceptor, on its ring already, waits to be read); `linkback downtime N`:
 * N connections wait out a cut, whose tries to come back must not open the
 * device once per connection.  `linkback remote ADDR
 * PORT CUT N [LOAD]` (tests/kernel/sl2test_moves.c, two guests over
 * ivshmem): the same N cycles against an echo server on the other guest
 * (tests/hook/progs/peer), the cable pulled and put back through the switch
 * file CUT; `linkback bulk ADDR PORT BYTES [LOAD]`, the load beside it:
 * BYTES (with LOAD, until its stop) through that echo server at full speed
 * both ways, checked, in constant memory.  With LOAD (a file), the load says there whether it is
 * on the rings at both ends, each cut waits until it is (so that every cut
 * falls on a loaded connection that came back, not inside its move), and
 * LOAD.stop ends the load after the
 * last cycle.  Each return is bounded in exchanges or rounds, never in
 * time; the time it took is printed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "guest.h"
#include "scilan.h"

#define MOCK_LINK "/sys/kernel/debug/ntb_mock/link"
#define PORT 7410
#define MAX_EXCHANGES 5000 /* per move; one every millisecond or so */

static uint64_t off; /* bytes of each stream so far */

/* remote mode: the far end is an echo server, and the cable is cut_file;
 * load_file, the bulk load's word on its transport (bulk mode writes it). */
static const char *cut_file, *load_file;
static int remote;

static unsigned char stream_byte(int which, uint64_t i)
{
	return (unsigned char)((i * (which == 1 ? 131 : 197) + (i >> 9)) % 251);
}

/* A request of n bytes from c to a and its reply, both checked; in remote
 * mode (a is -1) the reply is the request echoed. */
static int exchange(int c, int a, size_t n)
{
	unsigned char out[8192], in[8192];

	if (a < 0) {
		for (size_t i = 0; i < n; i++)
			out[i] = stream_byte(1, off + i);
		if (full_io(c, out, n, 1) < 0 || full_io(c, in, n, 0) < 0)
			return -1;
		if (memcmp(out, in, n) != 0) {
			errno = EILSEQ;
			return -1;
		}
		off += n;
		return 0;
	}
	for (int dir = 1; dir <= 2; dir++) {
		for (size_t i = 0; i < n; i++)
			out[i] = stream_byte(dir, off + i);
		if (full_io(dir == 1 ? c : a, out, n, 1) < 0 || full_io(dir == 1 ? a : c, in, n, 0) < 0 ||
		    memcmp(out, in, n) != 0)
			return -1;
	}
	off += n;
	return 0;
}

static int accelerated(int fd)
{
	int acc = -1;
	socklen_t len = sizeof(acc);

	if (fd < 0)
		return -2; /* the far end of remote mode: not ours to ask */
	return getsockopt(fd, SOL_SCILAN, SCILAN_SO_ACCELERATED, &acc, &len) == 0 ? acc : -1;
}

/* The cable in or out: the mock's link switch, or ivshmem's cut. */
static void set_cable(int in)
{
	if (remote)
		write_file(cut_file, in ? "0" : "1");
	else
		write_file(MOCK_LINK, in ? "1" : "0");
}

/* The link of this guest up: both mock links, or the ivshmem link. */
static int link_is_up(void)
{
	return first_links_up(remote ? 1 : 2);
}

/* Exchanges until both ends are (want 1) or are not (want 0) accelerated:
 * how many it took, or -1 (a broken exchange, or MAX_EXCHANGES). */
static int exchange_until(int c, int a, int want)
{
	for (int i = 0; i < MAX_EXCHANGES; i++) {
		if (accelerated(c) == want && (a < 0 || accelerated(a) == want))
			return i;
		if (exchange(c, a, 1 + (size_t)(i * 977 % (a < 0 ? 8000 : 4000))) < 0)
			return -1;
		usleep(1000);
	}
	return -1;
}

/* Both streams at once, non-blocking: each end sends what its socket takes
 * and reads what came, checked byte for byte.  The acceptor reads only
 * while its own sends go (an echo server's coupling), and slowly: the
 * connector's kernel queue is full when the acceptor claims, and once the
 * acceptor's ring is full it leaves the connector's kernel bytes unread,
 * the case where the connector's marker would find no room. */
static uint64_t sent[2], got[2];
static bool acceptor_held;
static bool acceptor_paused; /* reads nothing: the connector's queue fills */
static unsigned slow_reads; /* the acceptor reads one round in 8 */

static int pump_one(int from, int to, int dir)
{
	unsigned char buf[16384];
	ssize_t k;
	size_t n = sizeof(buf);

	for (size_t i = 0; i < n; i++)
		buf[i] = stream_byte(dir, sent[dir - 1] + i);
	k = send(from, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (k > 0)
		sent[dir - 1] += (uint64_t)k;
	else if (errno != EAGAIN)
		return -1;
	if (dir == 2)
		acceptor_held = k < 0;
	if (dir == 1 && (acceptor_paused || acceptor_held || ++slow_reads % 8))
		return 0;
	/* Half the connector's pace when it reads (four reads one round in
	 * eight): its queue fills, and each read leaves room for an offer. */
	for (int r = 0; r < (dir == 1 ? 4 : 1); r++) {
		k = recv(to, buf, sizeof(buf), MSG_DONTWAIT);
		if (k == 0)
			errno = EPIPE; /* the end of a stream that was never ended */
		if (k == 0 || (k < 0 && errno != EAGAIN))
			return -1;
		for (ssize_t i = 0; i < k; i++)
			if (buf[i] != stream_byte(dir, got[dir - 1] + (uint64_t)i)) {
				errno = EILSEQ;
				return -1;
			}
		if (k <= 0)
			break;
		got[dir - 1] += (uint64_t)k;
	}
	return 0;
}

static bool queue_half_full(int fd);
static bool seen_full; /* the connector's queue, before the link came back */

/* Rounds until both ends are (want 1) or are not (want 0) accelerated, or
 * for `rounds` when want is -1: how many it took, or -1. */
static int pump_until(int c, int a, int want, int rounds)
{
	for (int i = 0; i < rounds; i++) {
		if (want >= 0 && accelerated(c) == want && accelerated(a) == want)
			return i;
		if (pump_one(c, a, 1) < 0 || pump_one(a, c, 2) < 0)
			return -1;
	}
	return want >= 0 ? -1 : rounds;
}

/* The connector's send memory at least half full (SO_MEMINFO): the case
 * this mode is for. */
static bool queue_half_full(int fd)
{
	uint32_t mi[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mi);

	return getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mi, &len) == 0 &&
	       2ull * mi[SK_MEMINFO_WMEM_QUEUED] >= mi[SK_MEMINFO_SNDBUF];
}

static int stream_cycle(int c, int a, char *why, size_t size)
{
	int moved, back, after;
	double t_up;

	if (pump_until(c, a, -1, 200) < 0) {
		snprintf(why, size, "before the cut: %s", strerror(errno));
		return -1;
	}
	set_cable(0);
	moved = pump_until(c, a, 0, 200000);
	/* The connector's queue half full before the link is back, whatever
	 * the host's speed: the acceptor reads nothing until then. */
	acceptor_paused = true;
	for (int i = 0; moved >= 0 && i < 200000 && !(seen_full = queue_half_full(c)); i++)
		if (pump_one(c, a, 1) < 0 || pump_one(a, c, 2) < 0)
			moved = -1;
	acceptor_paused = false;
	set_cable(1);
	for (int i = 0; i < 300 && !links_up(); i++)
		usleep(20000);
	t_up = now_us();
	errno = 0;
	back = moved >= 0 && links_up() ? pump_until(c, a, 1, 200000) : -1;
	after = back >= 0 ? pump_until(c, a, -1, 500) : -1;
	if (after < 0 || !seen_full) {
		int err = errno;

		snprintf(why, size, "moved after %d rounds, back after %d, links up %d, accelerated %d/%d, %s; the connector's queue seen half full before the return %d",
			 moved, back, links_up(), accelerated(c), accelerated(a), err ? strerror(err) : "no error", seen_full);
		return -1;
	}
	printf("linkback: stream failed over after %d rounds, back on the rings %.0f ms after the link (%d rounds)\n",
	       moved, (now_us() - t_up) / 1000, back);
	return 0;
}

static double t_link_up; /* when the link last came back */

/* The load's word: "1 N" on the rings for the Nth time, "0 N" on kernel
 * TCP since, "end".  1 if it is on the rings for at least the back-th time,
 * -1 if it ended, else 0 (none yet included). */
static int load_says(int back)
{
	char w[32] = "";
	FILE *f = fopen(load_file, "r");
	int on = 0, times = 0;

	if (f) {
		if (!fgets(w, sizeof(w), f))
			w[0] = 0;
		fclose(f);
	}
	if (w[0] == 'e')
		return -1;
	return sscanf(w, "%d %d", &on, &times) == 2 && on == 1 && times >= back ? 1 : 0;
}

/* The load's word set (bulk mode), replaced whole (rename): the reader never
 * sees half of it. */
static void load_say(const char *w)
{
	char tmp[256];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", load_file);
	f = fopen(tmp, "w");
	if (f && fputs(w, f) >= 0 && fclose(f) == 0)
		rename(tmp, load_file);
	else if (f)
		fclose(f);
}

/* One cut and return: 0, or -1 after a FAIL line's detail in why. */
static int cycle(int c, int a, int k, char *why, size_t size)
{
	double t_up;
	int moved, back, load_back = 0;

	/* The loaded connection back on the rings too, since the last cut (the
	 * k-th time there: a word from before the last cut is not enough):
	 * this cut falls on it there. */
	while (load_file && load_says(k) != 1 && load_back < MAX_EXCHANGES) {
		if (load_says(k) < 0) {
			snprintf(why, size, "cycle %d: the load ended or failed before this cut", k);
			return -1;
		}
		if (exchange(c, a, 100) < 0) {
			snprintf(why, size, "cycle %d: an exchange while the load came back failed: %s", k,
				 strerror(errno));
			return -1;
		}
		usleep(1000);
		load_back++;
	}
	if (load_file && load_says(k) != 1) {
		snprintf(why, size, "cycle %d: the loaded connection did not come back onto the rings in %d exchanges", k,
			 load_back);
		return -1;
	}
	if (load_file && k > 1)
		printf("linkback: cycle %d: the loaded connection on the rings again by %.0f ms after the link\n", k,
		       (now_us() - t_link_up) / 1000);
	set_cable(0);
	moved = exchange_until(c, a, 0);
	set_cable(1);
	for (int i = 0; i < 1500 && !link_is_up(); i++)
		usleep(20000);
	t_up = t_link_up = now_us();
	back = moved >= 0 && link_is_up() ? exchange_until(c, a, 1) : -1;
	if (back < 0) {
		snprintf(why, size, "cycle %d: left the rings after %d exchanges, links up %d, accelerated %d/%d, %s", k,
			 moved, link_is_up(), accelerated(c), accelerated(a), strerror(errno));
		return -1;
	}
	printf("linkback: cycle %d: failed over after %d exchanges, back on the rings %.0f ms after the link (%d exchanges)\n",
	       k, moved, (now_us() - t_up) / 1000, back);
	for (int i = 0; i < 50; i++)
		if (exchange(c, a, 3000) < 0) {
			snprintf(why, size, "cycle %d: an exchange on the rings again failed: %s", k, strerror(errno));
			return -1;
		}
	return 0;
}

/* The two ends in this process, over loopback (the mock pair's two links):
 * the connector in *c, the acceptor in *a, their listener left open; 0, or
 * -1 with errno. */
/* A listener on loopback port `port`, or -1 with errno. */
static int loopback_listener(int port)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(l, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(l, 8) < 0)
		return -1;
	return l;
}

/* A connection to listener l (at loopback `port`): connector *c, acceptor *a. */
static int loopback_pair(int l, int port, int *c, int *a)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((*c = socket(AF_INET, SOCK_STREAM, 0)) < 0 || connect(*c, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    (*a = accept(l, NULL, NULL)) < 0)
		return -1;
	return 0;
}

static int local_pair(int *c, int *a)
{
	int l = loopback_listener(PORT);

	return l < 0 ? -1 : loopback_pair(l, PORT, c, a);
}

/* downtime N: what a cut costs while it lasts.  N connections on the
 * rings (one listener), the link cut; every connection fails over, and
 * while the link stays down each is exchanged on again and again, and each
 * of its calls may try to bring it back.  The tries must not cost an open
 * of the device each, per connection (N connections, two ends, a try
 * every half second: thousands of opens a second on a busy server): the
 * device's opens in the spell, counted with inotify, stay within a few per
 * link per tenth of a second of it, whatever N.  Then the link comes back
 * and every connection returns to the rings. */
#define DOWNTIME_ROUNDS 40
#define DOWNTIME_MAX 64
#define DOWNTIME_LOOK_MS 100 /* the library's recheck of a link seen down */

/* The opens among the events (watched with the closes: the kernel merges an
 * event into an identical one still unread at the queue's tail, so opens
 * alone would count a run of opens as one); -1 if the queue overflowed. */
static int count_opens(int in)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	int opens = 0;
	ssize_t n;

	while ((n = read(in, buf, sizeof(buf))) > 0)
		for (char *p = buf; p < buf + n; p += sizeof(struct inotify_event) + ((struct inotify_event *)p)->len) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			if (ev->mask & IN_Q_OVERFLOW)
				return -1;
			opens += !!(ev->mask & IN_OPEN);
		}
	return opens;
}

static int downtime(int n, char *why, size_t size)
{
	int c[DOWNTIME_MAX], a[DOWNTIME_MAX], l, in, links = 0, opens, bound;
	double t0, spell_ms;
	char dev[32];

	if (n < 1 || n > DOWNTIME_MAX || (l = loopback_listener(PORT + 1)) < 0) {
		snprintf(why, size, "set-up: %s", n < 1 || n > DOWNTIME_MAX ? "bad count" : strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++)
		if (loopback_pair(l, PORT + 1, &c[i], &a[i]) < 0 || exchange(c[i], a[i], 100) < 0 ||
		    accelerated(c[i]) != 1 || accelerated(a[i]) != 1) {
			snprintf(why, size, "connection %d not on the rings at the start (%d/%d, %s)", i,
				 accelerated(c[i]), accelerated(a[i]), strerror(errno));
			return -1;
		}
	set_cable(0);
	for (int i = 0; i < n; i++)
		if (exchange_until(c[i], a[i], 0) < 0) {
			snprintf(why, size, "connection %d did not fail over: %s", i, strerror(errno));
			return -1;
		}
	/* Counted from here: the moves themselves are not the spell's. */
	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	for (int k = 0; in >= 0 && k < 8; k++) {
		snprintf(dev, sizeof(dev), "/dev/scilan%d", k);
		links += inotify_add_watch(in, dev, IN_OPEN | IN_CLOSE) >= 0;
	}
	if (!links) {
		snprintf(why, size, "inotify on /dev/scilanN: %s", strerror(errno));
		return -1;
	}
	t0 = now_us();
	for (int r = 0; r < DOWNTIME_ROUNDS; r++) {
		for (int i = 0; i < n; i++)
			if (exchange(c[i], a[i], 64) < 0) {
				snprintf(why, size, "round %d, connection %d, on kernel TCP: %s", r, i, strerror(errno));
				return -1;
			}
		usleep(50000);
	}
	spell_ms = (now_us() - t0) / 1000;
	opens = count_opens(in);
	close(in);
	if (opens < 0) {
		snprintf(why, size, "the inotify queue overflowed: the opens were not counted");
		return -1;
	}
	set_cable(1);
	for (int i = 0; i < 1500 && !link_is_up(); i++)
		usleep(20000);
	for (int i = 0; i < n; i++)
		if (exchange_until(c[i], a[i], 1) < 0) {
			snprintf(why, size, "connection %d did not come back: %s", i, strerror(errno));
			return -1;
		}
	/* A recheck per link and tenth of a second, twice over for the
	 * lookups of a recheck that race (an acceptor's rechecks open
	 * nothing).  An open per connection and try, as before link_seen.c:
	 * 480 for 32 connections in 2.3 s here, where this bound was 96. */
	bound = 2 * links * ((int)(spell_ms / DOWNTIME_LOOK_MS) + 1);
	printf("linkback: %d connections, link down %.0f ms: %d opens of %d links' devices (bound %d)\n", n, spell_ms,
	       opens, links, bound);
	if (opens > bound) {
		snprintf(why, size, "%d opens of the device in %.0f ms of link down for %d connections, over %d", opens,
			 spell_ms, n, bound);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		close(c[i]);
		close(a[i]);
	}
	close(l);
	return 0;
}

/* The connector to an echo server at addr:port on the other guest. */
static int remote_end(const char *addr, const char *port, int *c)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)) };

	if (inet_pton(AF_INET, addr, &to.sin_addr) != 1) {
		errno = EINVAL;
		return -1;
	}
	*c = socket(AF_INET, SOCK_STREAM, 0);
	return *c < 0 ? -1 : connect(*c, (struct sockaddr *)&to, sizeof(to));
}

/* What a bulk load that moved nothing for a while looks like: our counts,
 * the library's readable bytes, and the kernel's queues (/proc/net/tcp,
 * read here: a fork would make the socket shared, which forbids its
 * return).  The run goes on: a stall the library resolves (by a move) is
 * not a failure of this program's. */
static void bulk_show_stall(int c)
{
	int readable = -1;
	char line[256];
	FILE *f;

	if (ioctl(c, FIONREAD, &readable) < 0)
		readable = -1;
	printf("linkback: bulk: nothing moved for 10 s: sent %llu, got %llu, accelerated %d, readable %d; kernel:\n",
	       (unsigned long long)sent[0], (unsigned long long)got[0], accelerated(c), readable);
	f = fopen("/proc/net/tcp", "r");
	while (f && fgets(line, sizeof(line), f))
		printf("linkback:   %s", line);
	if (f)
		fclose(f);
}

/* bulk: bytes through the echo server on c, sending and reading at once,
 * every byte checked, until `bytes` or (with a load file) its stop; 0, or
 * -1 with errno. */
static int bulk_echo(int c, uint64_t bytes)
{
	unsigned char buf[65536];
	int said = -1, times = 0;
	uint64_t back_from = UINT64_MAX; /* sent[0] when this end saw itself back */
	char stop[256], word[32];

	snprintf(stop, sizeof(stop), "%s.stop", load_file ? load_file : "");
	if (load_file)
		bytes = UINT64_MAX; /* the stop ends it, after the last cut however fast the link */
	for (unsigned round = 0; got[0] < bytes; round++) {
		struct pollfd p = { .fd = c, .events = POLLIN | (sent[0] < bytes ? POLLOUT : 0) };
		ssize_t k;
		int polled;

		if (load_file) {
			if (accelerated(c) != 1) {
				back_from = UINT64_MAX;
				if (said != 0) {
					snprintf(word, sizeof(word), "0 %d\n", times);
					load_say(word);
				}
				said = 0;
			} else if (said != 1) {
				/* On the rings at both ends only once a byte sent
				 * after this end's switch has come back: the echo
				 * server read it from its ring, so its move is
				 * done too.  A cut before that falls inside the
				 * move (ARCHITECTURE.md: it resets). */
				if (back_from == UINT64_MAX)
					back_from = sent[0];
				if (got[0] > back_from) {
					snprintf(word, sizeof(word), "1 %d\n", ++times);
					load_say(word);
					said = 1;
				}
			}
			if (round % 64 == 0 && sent[0] < bytes && access(stop, F_OK) == 0)
				bytes = sent[0]; /* what is out comes back, then the end */
		}
		polled = poll(&p, 1, 10000);
		if (polled < 0 && errno != EINTR)
			return -1;
		if (polled == 0)
			bulk_show_stall(c);
		if ((p.revents & POLLOUT) && sent[0] < bytes) {
			size_t n = bytes - sent[0] < sizeof(buf) ? (size_t)(bytes - sent[0]) : sizeof(buf);

			for (size_t i = 0; i < n; i++)
				buf[i] = stream_byte(1, sent[0] + i);
			k = send(c, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (k > 0)
				sent[0] += (uint64_t)k;
			else if (errno != EAGAIN)
				return -1;
		}
		if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		k = recv(c, buf, sizeof(buf), MSG_DONTWAIT);
		if (k == 0)
			errno = EPIPE; /* the echo ended before our bytes came back */
		if (k == 0 || (k < 0 && errno != EAGAIN))
			return -1;
		for (ssize_t i = 0; i < k; i++)
			if (buf[i] != stream_byte(1, got[0] + (uint64_t)i)) {
				errno = EILSEQ;
				return -1;
			}
		if (k > 0)
			got[0] += (uint64_t)k;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int cycles = 1, c = -1, a = -1, done = 0;
	bool stream = argc > 1 && !strcmp(argv[1], "stream");
	const char *name = "linkback_once";
	char why[200] = "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "bulk")) {
		char b;
		int ok;

		load_file = argc == 6 ? argv[5] : NULL;
		ok = remote_end(argv[2], argv[3], &c) == 0 && bulk_echo(c, strtoull(argv[4], NULL, 0)) == 0 &&
		     shutdown(c, SHUT_WR) == 0 && read(c, &b, 1) == 0;
		if (load_file)
			load_say("end\n");

		result("linkback_bulk", ok, "%llu bytes sent, %llu echoed and checked, accelerated at the end %d%s%s",
		       (unsigned long long)sent[0], (unsigned long long)got[0], accelerated(c), ok ? "" : ": ",
		       ok ? "" : strerror(errno));
		return ok ? 0 : 1;
	}
	if (argc == 3 && !strcmp(argv[1], "downtime")) {
		done = downtime(atoi(argv[2]), why, sizeof(why)) == 0;
		result("linkback_downtime", done,
		       "%s connections through a cut: each failed over, waited out the link at no open of the "
		       "device per try, and came back%s%s",
		       argv[2], why[0] ? "; " : "", why);
		return done ? 0 : 1;
	}
	if ((argc == 6 || argc == 7) && !strcmp(argv[1], "remote")) {
		remote = 1;
		cut_file = argv[4];
		cycles = atoi(argv[5]);
		load_file = argc == 7 ? argv[6] : NULL;
		name = "linkback_remote";
	} else if (argc > 2 && !strcmp(argv[1], "cycles")) {
		cycles = atoi(argv[2]);
		name = "linkback_cycles";
	} else if (stream) {
		name = "linkback_stream";
	}
	if (cycles < 1 || (remote ? remote_end(argv[2], argv[3], &c) : local_pair(&c, &a)) < 0) {
		result(name, 0, "set-up: %s", cycles < 1 ? "bad cycle count" : strerror(errno));
		return 1;
	}
	if (accelerated(c) != 1 || (a >= 0 && accelerated(a) != 1)) {
		result(name, 0, "not accelerated at the start (%d/%d)", accelerated(c), accelerated(a));
		return 1;
	}
	if (stream) {
		done = stream_cycle(c, a, why, sizeof(why)) == 0;
		result(name, done,
		       "both streams at once across a cut and the return: %llu and %llu bytes sent, %llu and %llu checked%s%s",
		       (unsigned long long)sent[0], (unsigned long long)sent[1], (unsigned long long)got[0],
		       (unsigned long long)got[1], why[0] ? "; " : "", why);
		return done ? 0 : 1;
	}
	for (int i = 0; i < 50 && !why[0]; i++)
		if (exchange(c, a, 3000) < 0)
			snprintf(why, sizeof(why), "before the first cut: %s", strerror(errno));
	while (!why[0] && done < cycles && cycle(c, a, done + 1, why, sizeof(why)) == 0)
		done++;
	if (load_file) {
		char stop[256];
		FILE *f;

		snprintf(stop, sizeof(stop), "%s.stop", load_file);
		if ((f = fopen(stop, "w")))
			fclose(f);
	}
	if (remote && !why[0]) {
		char b;

		/* The echo server's end of the stream, after ours. */
		if (shutdown(c, SHUT_WR) < 0 || read(c, &b, 1) != 0)
			snprintf(why, sizeof(why), "no clean end of the echo: %s", strerror(errno));
	}
	result(name, done == cycles && !why[0],
	       "%d of %d cuts: each failed over to kernel TCP and came back onto the rings, the same descriptors, %llu bytes each way checked%s%s",
	       done, cycles, (unsigned long long)off, why[0] ? "; " : "", why);
	close(c);
	if (a >= 0)
		close(a);
	return done == cycles && !why[0] ? 0 : 1;
}
