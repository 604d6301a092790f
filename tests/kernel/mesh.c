/* mesh.c — one node of the N-guest suite (tests/kernel/run-n.sh), a plain
 * POSIX program run under the preload hook: a server and a client in one
 * one-thread epoll loop, pseudo-random streams both ways on every connection,
 * each byte checked against the sender's generator; optionally a peer that
 * powers off mid-run (only its connections may end) and connections past the
 * driver's slices (kernel TCP expected).  Prints "TEST <round>_<name> PASS|FAIL".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guest.h"
#include "scilan.h"

#define MAX_NODES 16
#define MAGIC 0x5c1a4e55u
#define WAIT_MS 60000 /* no event for this long: a lost wake-up or a hang */
#define CHUNK 65536
#define MAX_EVENTS 2048

/* Sent first on every outgoing connection. */
struct hello {
	uint32_t magic, from, idx, flags;
};

#define HELLO_EXTRA 1 /* past the slices: kernel TCP expected */
#define HELLO_ACK 2   /* answer 'A' at once (the client's connect window) */

enum phase { HELLO, READY, STREAM, DONE, ENDED };

struct conn {
	int fd, peer, idx, out, extra, accel;
	enum phase phase;
	uint64_t tx_seed, rx_seed, tx, rx;
	int r_sent, r_got, shut, eof, why; /* why: errno (or -1 = early EOF) that ended it */
	uint32_t events;
	size_t hello_got;
	struct hello hello;
};

static struct {
	int me, nodes, port, per_peer, extra_out, extra_in, expect_in, victim, window;
	uint64_t bytes, die_at, tail;
	int to[MAX_NODES], nto;
	const char *round, *ready_file, *go_file, *die_file;
} opt = { .victim = -1, .expect_in = -1 };

static struct conn *conns;
static int nconns, cap, ep, ready, death_seen, died_flagged;
static uint64_t bytes_after_death;

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Byte pos.. of the stream with this seed: any piece computes alone. */
static void gen(uint64_t seed, uint64_t pos, uint8_t *p, size_t n)
{
	while (n) {
		uint64_t w = mix(seed ^ mix(pos >> 3));

		for (unsigned o = pos & 7; o < 8 && n; o++, pos++, n--)
			*p++ = (uint8_t)(w >> (8 * o));
	}
}

static uint64_t seed_of(int from, int to, int idx)
{
	return mix((uint64_t)from << 48 | (uint64_t)to << 32 | (uint64_t)idx << 16 | (uint64_t)opt.port);
}

static const char *addr_of(int node, char *buf)
{
	sprintf(buf, "10.79.0.%d", node + 1);
	return buf;
}

/* The value of key in the state of the link to peer (-1 if none). */
static long link_value(int peer, const char *key)
{
	return dbg_value(peer - (peer > opt.me), key);
}

/* A counter summed over every link of this node. */
static long links_sum(const char *key)
{
	long sum = 0;

	for (int k = 0; k < opt.nodes - 1; k++)
		sum += dbg_value(k, key) > 0 ? dbg_value(k, key) : 0;
	return sum;
}

static int link_up(int peer)
{
	char path[80], line[128];
	int up = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/scilan/scilan%d/state", peer - (peer > opt.me));
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		up |= !strcmp(line, "link up\n");
	if (f)
		fclose(f);
	return up;
}

static struct conn *add_conn(int fd, int peer, int idx, int out, int extra)
{
	if (nconns == cap) {
		cap = cap ? 2 * cap : 64;
		conns = realloc(conns, (size_t)cap * sizeof(*conns));
		if (!conns)
			exit(2);
	}
	struct conn *c = &conns[nconns++];
	int acc = 0;
	socklen_t len = sizeof(acc);

	*c = (struct conn){ .fd = fd, .peer = peer, .idx = idx, .out = out, .extra = extra };
	c->phase = out ? READY : HELLO;
	if (getsockopt(fd, SOL_SCILAN, SCILAN_SO_ACCELERATED, &acc, &len) == 0)
		c->accel = acc;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return c;
}

/* What this end may send: all of it, but a survivor holds back the tail of
 * its streams to other survivors until the victim's connections ended, so
 * that they are open and mid-stream when it dies; the victim sends a little
 * past die_at, so that none of its connections completes before it dies. */
static uint64_t tx_limit(const struct conn *c)
{
	if (opt.victim < 0)
		return opt.bytes;
	if (opt.me == opt.victim)
		return opt.bytes < 2 * opt.die_at ? opt.bytes : 2 * opt.die_at;
	if (c->peer != opt.victim && !death_seen)
		return opt.bytes - opt.tail;
	return opt.bytes;
}

static void watch(int i)
{
	struct conn *c = &conns[i];
	uint32_t want = c->phase >= DONE ? 0 : EPOLLIN;
	struct epoll_event ev;

	if (c->phase == STREAM && c->tx < tx_limit(c))
		want |= EPOLLOUT;
	if (want == c->events || c->phase >= DONE)
		return;
	ev = (struct epoll_event){ .events = want, .data.u32 = (uint32_t)i };
	if (epoll_ctl(ep, c->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &ev) < 0) {
		printf("mesh: epoll_ctl: %s\n", strerror(errno));
		exit(2);
	}
	c->events = want;
}

static void finish(struct conn *c, enum phase how, int why)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->phase = how;
	c->why = why;
	c->events = 0;
}

/* A connection's end: complete, or cut short (which only the victim's may). */
static void end_short(struct conn *c, int why)
{
	if (c->peer != opt.victim)
		printf("mesh: %s connection %d %s node %d: %s after %llu bytes in, %llu out\n",
		       c->out ? "outgoing" : "incoming", c->idx, c->out ? "to" : "from", c->peer,
		       why < 0 ? "early EOF" : strerror(why), (unsigned long long)c->rx,
		       (unsigned long long)c->tx);
	finish(c, ENDED, why);
}

/* A stream starts once both ends said 'R' (each once it has all its
 * connections): the byte before the stream. */
static void send_ready(struct conn *c)
{
	if (write(c->fd, "R", 1) != 1) {
		end_short(c, errno);
		return;
	}
	c->r_sent = 1;
	if (c->r_got)
		c->phase = STREAM;
}

static int expected_total(void)
{
	return opt.nto * opt.per_peer + opt.extra_out + opt.expect_in + opt.extra_in;
}

static int count(enum phase at_least)
{
	int n = 0;

	for (int i = 0; i < nconns; i++)
		n += conns[i].phase >= at_least;
	return n;
}

/* All non-extra connections established here (the peers' hellos read). */
static int all_established(void)
{
	int in = 0;

	for (int i = 0; i < nconns; i++)
		in += !conns[i].out && !conns[i].extra && conns[i].phase != HELLO;
	return in >= opt.expect_in;
}

static void on_readable(int i)
{
	static uint8_t buf[CHUNK], want[CHUNK];
	struct conn *c = &conns[i];

	if (c->phase == HELLO) {
		ssize_t n = read(c->fd, (char *)&c->hello + c->hello_got, sizeof(c->hello) - c->hello_got);

		if (n <= 0) {
			if (n < 0 && errno == EAGAIN)
				return;
			end_short(c, n < 0 ? errno : -1);
			return;
		}
		c->hello_got += (size_t)n;
		if (c->hello_got < sizeof(c->hello))
			return;
		if (c->hello.magic != MAGIC || c->hello.from >= (uint32_t)opt.nodes) {
			printf("mesh: a bad hello\n");
			end_short(c, EPROTO);
			return;
		}
		c->peer = (int)c->hello.from;
		c->idx = (int)c->hello.idx;
		c->extra = (c->hello.flags & HELLO_EXTRA) != 0;
		if ((c->hello.flags & HELLO_ACK) && write(c->fd, "A", 1) != 1) {
			end_short(c, errno);
			return;
		}
		c->tx_seed = seed_of(opt.me, c->peer, c->idx);
		c->rx_seed = seed_of(c->peer, opt.me, c->idx);
		c->phase = READY;
		if (ready)
			send_ready(c);
		return;
	}
	if (c->phase == READY && !c->r_got) {
		char r;
		ssize_t n = read(c->fd, &r, 1);

		if (n < 0 && errno == EAGAIN)
			return;
		if (n != 1 || r != 'R') {
			end_short(c, n < 0 ? errno : n == 0 ? -1 : EPROTO);
			return;
		}
		c->r_got = 1;
		if (c->r_sent)
			c->phase = STREAM;
		return;
	}
	if (c->phase == READY)
		return; /* the stream's bytes wait for our 'R' */
	ssize_t n = read(c->fd, buf, sizeof(buf));

	if (n < 0 && errno == EAGAIN)
		return;
	if (n < 0) {
		end_short(c, errno);
		return;
	}
	if (n == 0) {
		if (c->rx != opt.bytes) {
			end_short(c, -1);
			return;
		}
		c->eof = 1;
		if (c->shut)
			finish(c, DONE, 0);
		return;
	}
	if (c->rx + (uint64_t)n > opt.bytes) {
		printf("mesh: node %d sent %llu bytes, more than %llu\n", c->peer,
		       (unsigned long long)(c->rx + (uint64_t)n), (unsigned long long)opt.bytes);
		end_short(c, EPROTO);
		return;
	}
	gen(c->rx_seed, c->rx, want, (size_t)n);
	if (memcmp(buf, want, (size_t)n)) {
		printf("mesh: wrong bytes from node %d (connection %d) at %llu\n", c->peer, c->idx,
		       (unsigned long long)c->rx);
		end_short(c, EILSEQ);
		return;
	}
	c->rx += (uint64_t)n;
	if (death_seen && c->peer != opt.victim)
		bytes_after_death += (uint64_t)n;
}

static void on_writable(int i)
{
	static uint8_t buf[CHUNK];
	struct conn *c = &conns[i];
	uint64_t limit = tx_limit(c);

	while (c->phase == STREAM && c->tx < limit) {
		size_t k = limit - c->tx < sizeof(buf) ? (size_t)(limit - c->tx) : sizeof(buf);
		ssize_t n;

		gen(c->tx_seed, c->tx, buf, k);
		n = send(c->fd, buf, k, MSG_NOSIGNAL);
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			end_short(c, n < 0 ? errno : EIO);
			return;
		}
		c->tx += (uint64_t)n;
		if (death_seen && c->peer != opt.victim)
			bytes_after_death += (uint64_t)n;
	}
	if (c->phase == STREAM && c->tx == opt.bytes && !c->shut) {
		if (shutdown(c->fd, SHUT_WR) < 0) {
			end_short(c, errno);
			return;
		}
		c->shut = 1;
		if (c->eof)
			finish(c, DONE, 0);
	}
}

static int connect_to(int peer, int idx, int extra)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)opt.port) };
	struct hello h = { MAGIC, (uint32_t)opt.me, (uint32_t)idx,
			   (extra ? HELLO_EXTRA : 0) | (opt.window ? HELLO_ACK : 0) };
	char text[32];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	inet_pton(AF_INET, addr_of(peer, text), &a.sin_addr);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    write(fd, &h, sizeof(h)) != (ssize_t)sizeof(h)) {
		printf("mesh: connection %d to node %d: %s\n", idx, peer, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	struct conn *c = add_conn(fd, peer, idx, 1, extra);

	c->tx_seed = seed_of(opt.me, peer, idx);
	c->rx_seed = seed_of(peer, opt.me, idx);
	if (ready)
		send_ready(c);
	watch(nconns - 1);
	return 0;
}

/* The server's 'A' for connection i (a window of connects in flight). */
static int wait_ack(int i)
{
	struct pollfd p = { .fd = conns[i].fd, .events = POLLIN };
	char a = 0;

	if (poll(&p, 1, WAIT_MS) != 1 || read(conns[i].fd, &a, 1) != 1 || a != 'A') {
		printf("mesh: no acknowledgement on connection %d to node %d: %s\n", conns[i].idx, conns[i].peer,
		       strerror(errno));
		return -1;
	}
	return 0;
}

static void accept_all(int l)
{
	for (;;) {
		int fd = accept4(l, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR)
				printf("mesh: accept: %s\n", strerror(errno));
			return;
		}
		add_conn(fd, -1, -1, 0, 0);
		watch(nconns - 1);
	}
}

static void wait_file(const char *path)
{
	struct stat st;

	while (path && stat(path, &st) < 0)
		usleep(20000);
}

static void touch(const char *path)
{
	int fd = path ? open(path, O_WRONLY | O_CREAT, 0644) : -1;

	if (fd >= 0)
		close(fd);
}

static void parse_to(const char *s)
{
	opt.nto = 0;
	if (!strcmp(s, "none"))
		return;
	for (char *end; *s; s = *end ? end + 1 : end) {
		opt.to[opt.nto++] = (int)strtol(s, &end, 10);
		if (opt.nto == MAX_NODES)
			break;
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: mesh -R ROUND -i ME -n NODES -p PORT -k PER_PEER -b BYTES [-t IDS|none] [-e IN]\n"
			"            [-x EXTRA_OUT] [-X EXTRA_IN] [-r READY_FILE] [-g GO_FILE]\n"
			"            [-v VICTIM -d DIE_AT -D DIE_FILE] [-w CONNECT_WINDOW]\n");
	exit(2);
}

/* The per-round verdicts; wakes0: the links' set wake-ups at the start. */
static void report(long wakes0)
{
	int plain_ok = 1, done = 0, ended_victim = 0, bad = 0, victim_conns = 0;
	int resets = 0, eofs = 0;

	for (int i = 0; i < nconns; i++) {
		struct conn *c = &conns[i];

		if (c->extra)
			plain_ok &= !c->accel;
		if (c->peer == opt.victim && opt.me != opt.victim) {
			victim_conns++;
			ended_victim += c->phase == ENDED || c->phase == DONE;
			resets += c->phase == ENDED && (c->why == ECONNRESET || c->why == EPIPE || c->why == ETIMEDOUT);
			eofs += c->phase == ENDED && c->why == -1;
			continue;
		}
		done += c->phase == DONE;
		bad += c->phase != DONE;
	}
	char name[64];

	snprintf(name, sizeof(name), "%s_streams", opt.round);
	result(name, bad == 0 && nconns == expected_total(),
	       "%d of %d connections complete, %llu bytes each way each, every byte checked; %d cut short", done,
	       expected_total() - victim_conns, (unsigned long long)opt.bytes, bad);
	long wakes = links_sum("set_wakeups") - wakes0;

	printf("mesh: %ld epoll set wake-ups through the links' doorbells\n", wakes);
	if (opt.extra_out || opt.extra_in) {
		snprintf(name, sizeof(name), "%s_past_resources_plain", opt.round);
		result(name, plain_ok && nconns == expected_total(),
		       "%d connection(s) past the slices on kernel TCP, streamed and checked like the others",
		       opt.extra_out + opt.extra_in);
	}
	if (opt.victim >= 0 && opt.me != opt.victim) {
		int downs = 0, others_up = 1;

		for (int t = 0; t < 300 && !downs; t++) {
			downs = !link_up(opt.victim);
			if (!downs)
				usleep(10000);
		}
		for (int p = 0; p < opt.nodes; p++)
			if (p != opt.me && p != opt.victim)
				others_up &= link_up(p);
		snprintf(name, sizeof(name), "%s_victim_conns_ended", opt.round);
		result(name, victim_conns > 0 && ended_victim == victim_conns && resets + eofs == victim_conns,
		       "%d connections with node %d (powered off) ended: %d ECONNRESET or ETIMEDOUT, %d EOF", victim_conns,
		       opt.victim, resets, eofs);
		snprintf(name, sizeof(name), "%s_survivors_carried_on", opt.round);
		result(name, bad == 0 && bytes_after_death > 0,
		       "the other connections streamed %llu bytes after the victim's were gone, none failed",
		       (unsigned long long)bytes_after_death);
		snprintf(name, sizeof(name), "%s_links", opt.round);
		result(name, downs && others_up, "link to node %d down %d, links to the others up %d", opt.victim,
		       downs, others_up);
	}
}

/* Once every connection is established: each accelerated (the hook's word)
 * and each link holds at least a slice per connection with its peer (the
 * driver's word). */
static void check_accelerated(void)
{
	int per[MAX_NODES] = { 0 }, accel = 0, want = 0, peers = 0, slices_ok = 1;
	char detail[256] = "", name[64];
	size_t off = 0;

	for (int i = 0; i < nconns; i++) {
		if (conns[i].extra || conns[i].peer < 0)
			continue;
		per[conns[i].peer]++;
		want++;
		accel += conns[i].accel;
	}
	for (int p = 0; p < opt.nodes; p++) {
		if (!per[p])
			continue;
		long busy = link_value(p, "slices_busy");

		peers++;
		slices_ok &= busy >= per[p];
		if (off < sizeof(detail) - 40)
			off += (size_t)snprintf(detail + off, sizeof(detail) - off, " node %d: %d conns, %ld slices busy;",
						p, per[p], busy);
	}
	snprintf(name, sizeof(name), "%s_accelerated", opt.round);
	result(name, want == opt.nto * opt.per_peer + opt.expect_in && accel == want && slices_ok,
	       "%d of %d connections accelerated, in one epoll set with %d peers;%s", accel, want, peers, detail);
}

int main(int argc, char **argv)
{
	struct rlimit rl = { 65536, 65536 };
	struct sockaddr_in a = { .sin_family = AF_INET };
	static struct epoll_event evs[MAX_EVENTS];
	int ch, l, one = 1, connected_ok = 1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	setrlimit(RLIMIT_NOFILE, &rl);
	opt.round = "mesh";
	while ((ch = getopt(argc, argv, "R:i:n:p:k:b:t:e:x:X:r:g:v:d:D:w:")) != -1) {
		switch (ch) {
		case 'R': opt.round = optarg; break;
		case 'i': opt.me = atoi(optarg); break;
		case 'n': opt.nodes = atoi(optarg); break;
		case 'p': opt.port = atoi(optarg); break;
		case 'k': opt.per_peer = atoi(optarg); break;
		case 'b': opt.bytes = strtoull(optarg, NULL, 0); break;
		case 't': parse_to(optarg); opt.nto = opt.nto ? opt.nto : -1; break;
		case 'e': opt.expect_in = atoi(optarg); break;
		case 'x': opt.extra_out = atoi(optarg); break;
		case 'X': opt.extra_in = atoi(optarg); break;
		case 'r': opt.ready_file = optarg; break;
		case 'g': opt.go_file = optarg; break;
		case 'v': opt.victim = atoi(optarg); break;
		case 'd': opt.die_at = strtoull(optarg, NULL, 0); break;
		case 'D': opt.die_file = optarg; break;
		case 'w': opt.window = atoi(optarg); break;
		default: usage();
		}
	}
	if (opt.nodes < 2 || opt.nodes > MAX_NODES || opt.me < 0 || opt.me >= opt.nodes || !opt.port ||
	    opt.bytes < 1024)
		usage();
	if (opt.nto == 0) /* all the others */
		for (int p = 0; p < opt.nodes; p++)
			if (p != opt.me)
				opt.to[opt.nto++] = p;
	if (opt.nto < 0)
		opt.nto = 0;
	if (opt.expect_in < 0)
		opt.expect_in = (opt.nodes - 1) * opt.per_peer;
	opt.tail = opt.bytes / 4 < 65536 ? opt.bytes / 4 : 65536;

	ep = epoll_create1(EPOLL_CLOEXEC);
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	char text[32];

	a.sin_port = htons((uint16_t)opt.port);
	inet_pton(AF_INET, addr_of(opt.me, text), &a.sin_addr);
	if (ep < 0 || l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 1024) < 0) {
		printf("mesh: listen on port %d: %s\n", opt.port, strerror(errno));
		return 2;
	}
	struct epoll_event lev = { .events = EPOLLIN, .data.u32 = UINT32_MAX };

	epoll_ctl(ep, EPOLL_CTL_ADD, l, &lev);
	long wakes0 = links_sum("set_wakeups");

	touch(opt.ready_file);
	wait_file(opt.go_file);

	/* Every listener is up (run-n.sh's barrier): connect to all at once,
	 * blocking; the peers' connects meanwhile wait in our backlogs. */
	for (int t = 0; t < opt.nto && connected_ok; t++)
		for (int k = 0; k < opt.per_peer && connected_ok; k++) {
			connected_ok = connect_to(opt.to[t], k, 0) == 0;
			if (connected_ok && opt.window && nconns > opt.window)
				connected_ok = wait_ack(nconns - 1 - opt.window) == 0;
		}
	for (int i = nconns > opt.window ? nconns - opt.window : 0; opt.window && connected_ok && i < nconns; i++)
		connected_ok = wait_ack(i) == 0;
	/* Past the slices: while every other connection still holds its own
	 * (none can end before the peer's 'R', sent once it has them all). */
	for (int k = 0; k < opt.extra_out && connected_ok; k++) {
		connected_ok = connect_to(opt.to[0], opt.per_peer + k, 1) == 0;
		if (connected_ok && opt.window)
			connected_ok = wait_ack(nconns - 1) == 0;
	}

	double last = now_us();

	while (connected_ok) {
		if (!ready && all_established()) {
			/* No stream can end before our 'R': the snapshot sees every
			 * connection open. */
			check_accelerated();
			ready = 1;
			for (int i = 0; i < nconns; i++) {
				if (conns[i].phase == READY)
					send_ready(&conns[i]);
				if (conns[i].phase == STREAM)
					on_writable(i);
				watch(i);
			}
		}
		if (opt.victim >= 0 && opt.me == opt.victim && !died_flagged && nconns == expected_total()) {
			int below = 0;

			for (int i = 0; i < nconns; i++)
				below += conns[i].phase != STREAM || conns[i].rx < opt.die_at;
			if (!below) {
				died_flagged = 1;
				printf("mesh: every connection %llu bytes in: asking for the power-off\n",
				       (unsigned long long)opt.die_at);
				touch(opt.die_file);
			}
		}
		if (opt.victim >= 0 && opt.me != opt.victim && !death_seen) {
			int alive = 0, seen = 0;

			for (int i = 0; i < nconns; i++)
				if (conns[i].peer == opt.victim) {
					seen++;
					alive += conns[i].phase < DONE;
				}
			death_seen = seen == opt.per_peer * 2 && !alive; /* 2 once acted on */
		}
		if (nconns == expected_total() && count(DONE) == nconns)
			break;
		/* Only what changed: a loop over 1,025 connections per wake-up
		 * is seconds under TCG, long enough for the peer's library to
		 * take a slow reader for one that bypasses the hook (stall.c). */
		if (death_seen == 1) {
			death_seen = 2;
			for (int i = 0; i < nconns; i++)
				watch(i);
		}

		int n = epoll_wait(ep, evs, MAX_EVENTS, 1000);

		if (n < 0 && errno != EINTR) {
			printf("mesh: epoll_wait: %s\n", strerror(errno));
			break;
		}
		if (n > 0)
			last = now_us();
		else if (now_us() - last > WAIT_MS * 1000.0) {
			printf("mesh: nothing happened for %d s: %d connections of %d, %d done\n", WAIT_MS / 1000,
			       nconns, expected_total(), count(DONE));
			for (int i = 0; i < nconns; i++)
				if (conns[i].phase < DONE)
					printf("mesh:   %s node %d #%d phase %d rx %llu tx %llu shut %d eof %d\n",
					       conns[i].out ? "to" : "from", conns[i].peer, conns[i].idx,
					       conns[i].phase, (unsigned long long)conns[i].rx,
					       (unsigned long long)conns[i].tx, conns[i].shut, conns[i].eof);
			break;
		}
		for (int e = 0; e < n; e++) {
			uint32_t i = evs[e].data.u32;

			if (i == UINT32_MAX) {
				accept_all(l);
				continue;
			}
			if (conns[i].phase >= DONE)
				continue;
			if (evs[e].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
				on_readable((int)i);
			if (conns[i].phase == STREAM)
				on_writable((int)i);
			watch((int)i);
		}
	}
	if (!connected_ok) {
		char name[64];

		snprintf(name, sizeof(name), "%s_accelerated", opt.round);
		result(name, 0, "the connections could not all be made");
	}
	report(wakes0);
	close(l);
	return failures ? 1 : 0;
}
