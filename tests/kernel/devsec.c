/* devsec.c — who may take a port's device connections, in the test guest
 * (static, linked with libscilan; run by tests/kernel/init after devtest): a
 * second uid squatting a port, hijacking a connection by its 4-tuple, asking
 * for a port below 1024, listening in a user+network namespace of its own on
 * an address root's server also has (each refused), and listeners the driver
 * must tell apart: IPv4 and IPv6 on one port, a SO_REUSEPORT group, the same
 * port in a second network namespace, an unprivileged namespace's own
 * address (each accelerated and correct); a 4-tuple taken first by a second
 * uid's device connect (the server serves the real client) and short clients
 * gone before the accept (still accelerated, nothing lost).
 */
#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include "devutil.h"
#include "uapi/scilan.h"

#define NOBODY 65534
#define CLIENT_NODE "/dev/scilan0"
#define SERVER_NODE "/dev/scilan1"

static socklen_t sockaddr_of(const char *addr, uint16_t port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, addr, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(port);
		return sizeof(*a4);
	}
	inet_pton(AF_INET6, addr, &a6->sin6_addr);
	a6->sin6_family = AF_INET6;
	a6->sin6_port = htons(port);
	return sizeof(*a6);
}

enum { REUSEPORT = 1, V6ONLY = 2 };

/* A scilan listener on addr:port. */
static int listen_at(const char *addr, uint16_t port, int opts)
{
	struct sockaddr_storage ss;
	socklen_t len = sockaddr_of(addr, port, &ss);
	int one = 1, fd = scilan_socket(ss.ss_family, SOCK_STREAM, 0);

	if (fd < 0 || scilan_setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    ((opts & REUSEPORT) && scilan_setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0) ||
	    ((opts & V6ONLY) && scilan_setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) ||
	    scilan_bind(fd, (struct sockaddr *)&ss, len) < 0 || scilan_listen(fd, 64) < 0)
		return -1;
	return fd;
}

/* Serves nconn connections over the listeners ls[0..n-1] in a child: each
 * client sends a u32 id, and gets id+1 and who = (listener index + 1), plus
 * 0x100 when the accepted connection is accelerated. */
static pid_t serve(const int *ls, int n, int nconn)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	for (int done = 0; done < nconn;) {
		struct pollfd p[4];

		for (int i = 0; i < n; i++)
			p[i] = (struct pollfd){ .fd = ls[i], .events = POLLIN };
		if (poll(p, (nfds_t)n, 20000) <= 0)
			_exit(2);
		for (int i = 0; i < n; i++) {
			uint32_t id, reply[2];
			int s;

			if (!(p[i].revents & POLLIN))
				continue;
			s = scilan_accept(ls[i], NULL, NULL);
			if (s < 0 || recv_all(s, &id, sizeof(id)) < 0)
				_exit(3);
			reply[0] = id + 1;
			reply[1] = (uint32_t)(i + 1) | (accelerated(s) == 1 ? 0x100u : 0);
			if (send_all(s, reply, sizeof(reply)) < 0)
				_exit(4);
			scilan_close(s);
			done++;
		}
	}
	_exit(0);
}

/* One request to addr:port: 0 and *who (see serve) when answered right;
 * -1 otherwise.  *acc: the client's view of acceleration. */
static int ask(const char *addr, uint16_t port, uint32_t id, uint32_t *who, int *acc)
{
	struct sockaddr_storage ss;
	socklen_t len = sockaddr_of(addr, port, &ss);
	uint32_t reply[2];
	int c = scilan_socket(ss.ss_family, SOCK_STREAM, 0), ok;

	ok = c >= 0 && scilan_connect(c, (struct sockaddr *)&ss, len) == 0 && send_all(c, &id, sizeof(id)) == 0 &&
	     recv_all(c, reply, sizeof(reply)) == 0 && reply[0] == id + 1;
	*acc = c >= 0 ? accelerated(c) : -1;
	*who = ok ? reply[1] : 0;
	scilan_close(c);
	return ok ? 0 : -1;
}

static int become_nobody(void)
{
	return setgroups(0, NULL) == 0 && setgid(NOBODY) == 0 && setuid(NOBODY) == 0 ? 0 : -1;
}

/* A plain TCP socket on 127.0.0.1:port (0: not bound), listening or not. */
static int tcp_sock(uint16_t port, int listening, int reuse)
{
	struct sockaddr_in a = loopback(port);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	if (reuse)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if ((port && bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) || (listening && listen(fd, 4) < 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

static int dev_listen(int sock)
{
	struct scilan_listen req = { .sockfd = sock };
	int fd = open(SERVER_NODE, O_RDWR);

	if (fd < 0 || ioctl(fd, SCILAN_IOC_LISTEN, &req) < 0) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

/* uid 65534 registers a listener of its own on the port first and keeps the
 * device endpoint after closing the socket, and tries a socket that does
 * not listen; root's server on the port then gets its client's bytes,
 * accelerated, and nothing reaches the squatter. */
static void test_squat(uint16_t port)
{
	int to_child[2], to_parent[2], l = -1, ok = 0, acc = -1, st;
	uint32_t who = 0;
	char step = 0;
	pid_t pid, srv = -1;

	if (pipe(to_child) < 0 || pipe(to_parent) < 0) {
		result("sec_squat", 0, "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		int s, d, t, bad = 0, fresh;

		if (become_nobody() < 0)
			_exit(100);
		s = tcp_sock(port, 1, 1);
		d = s >= 0 ? dev_listen(s) : -1;
		bad |= d < 0;       /* its own listener: allowed */
		close(s);           /* the port is free again; the endpoint stays */
		t = tcp_sock(0, 0, 0);
		bad |= (dev_listen(t) >= 0 || errno != EINVAL) << 1;
		close(t);
		if (write(to_parent[1], "r", 1) != 1 || read(to_child[0], &step, 1) != 1)
			_exit(101);
		/* Nothing was queued for the squatter. */
		fresh = open(SERVER_NODE, O_RDWR);
		fcntl(d, F_SETFL, O_NONBLOCK);
		bad |= (ioctl(fresh, SCILAN_IOC_ACCEPT, &d) == 0 || errno != EAGAIN) << 2;
		_exit(bad);
	}
	if (read(to_parent[0], &step, 1) == 1 && (l = listen_at("127.0.0.1", port, 0)) >= 0) {
		srv = serve(&l, 1, 1);
		ok = ask("127.0.0.1", port, 41, &who, &acc) == 0 && who == 0x101 && acc == 1;
	}
	ok = child_ok(srv) && ok;
	if (write(to_child[1], "d", 1) != 1)
		ok = 0;
	st = child_ok(pid);
	result("sec_squat", ok && st,
	       "root's server answered accelerated %d (client %d), squatter refused and got nothing %d", who == 0x101,
	       acc, st);
	scilan_close(l);
	close(to_child[0]);
	close(to_child[1]);
	close(to_parent[0]);
	close(to_parent[1]);
}

/* A connected client with SO_REUSEADDR: uid 65534 binds its source port
 * too and connects over the device with that 4-tuple before the server
 * accepts, which the driver refuses; the server gets the victim's bytes. */
static void test_hijack(uint16_t port)
{
	struct sockaddr_in a = loopback(port), me;
	socklen_t len = sizeof(me);
	int l = listen_at("127.0.0.1", port, 0), c = scilan_socket(AF_INET, SOCK_STREAM, 0), one = 1, s = -1;
	int ok, attacker = 0, acc_s = -1;
	char buf[5] = "";
	pid_t pid;

	ok = l >= 0 && c >= 0 && scilan_setsockopt(c, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
	     scilan_connect(c, (struct sockaddr *)&a, sizeof(a)) == 0 && accelerated(c) == 1 &&
	     getsockname(c, (struct sockaddr *)&me, &len) == 0;
	if (ok) {
		pid = fork();
		if (pid == 0) {
			struct scilan_connect req = { .dport = port };
			struct scilan_accept_sock as;
			int t, d, e, bad = 0;

			if (become_nobody() < 0)
				_exit(100);
			t = socket(AF_INET, SOCK_STREAM, 0);
			d = open(CLIENT_NODE, O_RDWR);
			e = open(SERVER_NODE, O_RDWR);
			setsockopt(t, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			me.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			if (bind(t, (struct sockaddr *)&me, sizeof(me)) == 0) {
				req.sockfd = t;
				req.daddr[10] = req.daddr[11] = 0xff;
				memcpy(req.daddr + 12, &a.sin_addr, 4);
				bad |= ioctl(d, SCILAN_IOC_CONNECT, &req) == 0 || errno != EADDRINUSE;
			}
			as = (struct scilan_accept_sock){ .sockfd = t };
			bad |= (ioctl(e, SCILAN_IOC_ACCEPT_SOCK, &as) == 0) << 1;
			_exit(bad);
		}
		attacker = child_ok(pid);
		s = scilan_accept(l, NULL, NULL);
		acc_s = s >= 0 ? accelerated(s) : -1;
		ok = s >= 0 && send_all(c, "mine", 5) == 0 && recv_all(s, buf, 5) == 0 && !strcmp(buf, "mine");
	}
	result("sec_hijack", ok && attacker && acc_s == 1,
	       "the second uid's connect with the victim's 4-tuple refused %d; server got the victim's bytes %d, accelerated %d",
	       attacker, ok, acc_s);
	scilan_close(s);
	scilan_close(c);
	scilan_close(l);
}

enum { VICTIM_HOOKED = 1, ATTACKER_GONE = 2 };

/* Does the attacker's own slice (the ring after its control page) hold any
 * byte the server wrote?  Its endpoint d is connected (or peer-closed). */
static int slice_written(int d)
{
	struct scilan_info in;
	const unsigned char *m;
	int seen = 0;

	if (ioctl(d, SCILAN_IOC_INFO, &in) < 0)
		return -1;
	m = mmap(NULL, in.slice_size, PROT_READ, MAP_SHARED, d, SCILAN_MMAP_LOCAL);
	if (m == MAP_FAILED)
		return errno == ENOTCONN ? 0 : -1; /* closed and freed: nothing was written */
	for (uint32_t i = 4096; i < in.slice_size && !seen; i++)
		seen = m[i] != 0;
	munmap((void *)m, in.slice_size);
	return seen;
}

/* "The 4-tuple taken first": uid 65534 binds the victim's source port with
 * SO_REUSEADDR and makes the device CONNECT with its bound, unconnected
 * socket before root's client connects.  Root's client (hooked: its device
 * connect is refused, EADDRINUSE, so it falls back; or plain, no scilan at
 * all) then connects over kernel TCP with that 4-tuple, and root's server
 * accepts it.  The server must not take the attacker's queued connection for
 * it: it serves the victim (over kernel TCP), and nothing it writes reaches
 * the attacker's slice.  With ATTACKER_GONE the attacker closes its endpoint
 * before the accept (a queued connection whose client left). */
static void test_taken_first(const char *name, uint16_t port, uint16_t sport, int opts)
{
	struct sockaddr_in dst = loopback(port), src = loopback(sport);
	int to_child[2], to_parent[2], l = listen_at("127.0.0.1", port, 0), c = -1, s = -1, one = 1;
	int ok = 0, acc_s = -1, connected = 0, st;
	char step = 0, got[8] = "";
	pid_t pid;

	if (l < 0 || pipe(to_child) < 0 || pipe(to_parent) < 0) {
		result(name, 0, "setup: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		struct scilan_connect req = { .dport = port };
		int t, d, bad = 0, w;

		if (become_nobody() < 0)
			_exit(100);
		t = socket(AF_INET, SOCK_STREAM, 0);
		d = open(CLIENT_NODE, O_RDWR);
		setsockopt(t, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (t < 0 || d < 0 || bind(t, (struct sockaddr *)&src, sizeof(src)) < 0)
			_exit(101);
		req.sockfd = t;
		req.daddr[10] = req.daddr[11] = 0xff;
		memcpy(req.daddr + 12, &dst.sin_addr, 4);
		/* Nobody holds the 4-tuple yet: the driver cannot refuse this. */
		if (ioctl(d, SCILAN_IOC_CONNECT, &req) < 0)
			_exit(102);
		if (opts & ATTACKER_GONE)
			close(d);
		if (write(to_parent[1], "r", 1) != 1 || read(to_child[0], &step, 1) != 1)
			_exit(103);
		if (!(opts & ATTACKER_GONE)) {
			w = slice_written(d);
			bad |= w != 0;
		}
		close(t);
		_exit(bad);
	}
	if (read(to_parent[0], &step, 1) == 1) {
		if (opts & VICTIM_HOOKED) {
			c = scilan_socket(AF_INET, SOCK_STREAM, 0);
			connected = c >= 0 && scilan_setsockopt(c, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
				    scilan_bind(c, (struct sockaddr *)&src, sizeof(src)) == 0 &&
				    scilan_connect(c, (struct sockaddr *)&dst, sizeof(dst)) == 0 && accelerated(c) == 0;
		} else {
			c = socket(AF_INET, SOCK_STREAM, 0);
			connected = c >= 0 && setsockopt(c, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
				    bind(c, (struct sockaddr *)&src, sizeof(src)) == 0 &&
				    connect(c, (struct sockaddr *)&dst, sizeof(dst)) == 0;
		}
		connected = connected && write(c, "mine", 5) == 5;
		if (connected)
			s = scilan_accept(l, NULL, NULL);
		acc_s = s >= 0 ? accelerated(s) : -2;
		/* Paired with the attacker's connection, the server would read
		 * the attacker's (empty) ring, never the victim's bytes. */
		ok = acc_s == 0 && recv_all(s, got, 5) == 0 && !strcmp(got, "mine") && send_all(s, "yours", 6) == 0 &&
		     read(c, got, 6) == 6 && !strcmp(got, "yours");
	}
	if (write(to_child[1], "d", 1) != 1)
		ok = 0;
	st = child_ok(pid);
	result(name, ok && st,
	       "victim (%s) connected %d; server's connection accelerated %d (0: kernel TCP, the attacker's refused); victim's bytes and reply intact %d; attacker's slice untouched %d",
	       opts & VICTIM_HOOKED ? "hooked" : "plain", connected, acc_s, ok, st);
	scilan_close(s);
	if (opts & VICTIM_HOOKED)
		scilan_close(c);
	else if (c >= 0)
		close(c);
	scilan_close(l);
	close(to_child[0]);
	close(to_child[1]);
	close(to_parent[0]);
	close(to_parent[1]);
}

/* A legit short connection: the client sends and is gone before the server
 * accepts.  A close() decides the agreement first: the offer is revoked and
 * its bytes go onto the kernel socket (the acceptor could be plain), so the
 * server reads every byte on kernel TCP, then the end.  A process that dies
 * without closing (_exit: the kernel closes the TCP socket before the
 * endpoint) decides nothing: its driver vouches for it in the CLOSE, and the
 * server takes it accelerated, every byte, then the reset of a peer that
 * died. */
static void test_short_client(const char *name, uint16_t port, int by_exit)
{
	char req[64], got[64], end;
	int l = listen_at("127.0.0.1", port, 0), s = -1, acc_c = -1, acc_s = -1, sent = 0, intact, ended;
	pid_t pid;

	for (size_t i = 0; i < sizeof(req); i++)
		req[i] = (char)(i * 7 + 1);
	if (by_exit) {
		pid = fork();
		if (pid == 0) {
			int c = connect_to(port);

			_exit(c >= 0 && accelerated(c) == 1 && send_all(c, req, sizeof(req)) == 0 ? 0 : 1);
		}
		sent = child_ok(pid);
		acc_c = sent;
	} else {
		int c = connect_to(port);

		acc_c = c >= 0 ? accelerated(c) : -1;
		sent = c >= 0 && send_all(c, req, sizeof(req)) == 0;
		scilan_close(c);
	}
	if (l >= 0 && sent)
		s = scilan_accept(l, NULL, NULL);
	acc_s = s >= 0 ? accelerated(s) : -1;
	intact = s >= 0 && recv_all(s, got, sizeof(got)) == 0 && !memcmp(got, req, sizeof(req));
	/* A process that died without close() reads as a reset after its
	 * bytes (ARCHITECTURE.md, "Connection set-up (device fabric)"). */
	ended = intact ? (int)scilan_recv(s, &end, 1, 0) : -2;
	result(name, acc_c == 1 && acc_s == by_exit && intact && (ended == 0 || (by_exit && ended < 0 && errno == ECONNRESET)),
	       "client (%s before the accept) accelerated %d; server accelerated %d; every byte %d, then %d",
	       by_exit ? "exited" : "closed", acc_c, acc_s, intact, ended);
	scilan_close(s);
	scilan_close(l);
}

/* A value of the listener line of debugfs naming uid and port. */
static int listener_shown(unsigned uid, unsigned port)
{
	FILE *f = fopen("/sys/kernel/debug/scilan/scilan1/state", "r");
	char line[256], want[64];
	int found = 0;

	if (!f)
		return 0;
	snprintf(want, sizeof(want), " port %u ", port);
	while (fgets(line, sizeof(line), f)) {
		unsigned u;

		if (sscanf(line, "listener %*u uid %u", &u) == 1 && u == uid && strstr(line, want))
			found = 1;
	}
	fclose(f);
	return found;
}

/* uid 65534 cannot have a listener below 1024, so the device has none of
 * its own to register: the port comes from the socket, never the caller. */
static void test_low_port(void)
{
	int to_parent[2], to_child[2], shown = 0, low = 0, st;
	uint16_t got = 0;
	char step;
	pid_t pid;

	if (pipe(to_parent) < 0 || pipe(to_child) < 0) {
		result("sec_low_port", 0, "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		struct sockaddr_in a;
		socklen_t len = sizeof(a);
		int s80, s, d, bad = 0;
		uint16_t p = 0;

		if (become_nobody() < 0)
			_exit(100);
		s80 = tcp_sock(80, 1, 0);
		bad |= s80 >= 0 || errno != EACCES;
		/* A listener without bind: the kernel picks an ephemeral port. */
		s = socket(AF_INET, SOCK_STREAM, 0);
		d = s >= 0 && listen(s, 4) == 0 ? dev_listen(s) : -1;
		if (d >= 0 && getsockname(s, (struct sockaddr *)&a, &len) == 0)
			p = ntohs(a.sin_port);
		bad |= (d < 0) << 1;
		if (write(to_parent[1], &p, sizeof(p)) != sizeof(p) || read(to_child[0], &step, 1) != 1)
			_exit(101);
		_exit(bad);
	}
	if (read(to_parent[0], &got, sizeof(got)) == sizeof(got)) {
		shown = got >= 1024 && listener_shown(NOBODY, got);
		for (unsigned p = 1; p < 1024 && !low; p++)
			low = listener_shown(NOBODY, p);
	}
	if (write(to_child[1], "d", 1) != 1)
		shown = 0;
	st = child_ok(pid);
	result("sec_low_port", st && shown && !low,
	       "bind below 1024 refused and its own listener registered %d; listed with uid %d and port %u %d, any port below 1024 %d",
	       st, NOBODY, (unsigned)got, shown, low);
	close(to_parent[0]);
	close(to_parent[1]);
	close(to_child[0]);
	close(to_child[1]);
}

/* nginx's default: "listen 80; listen [::]:80" (IPV6_V6ONLY). */
static void test_v4_v6(uint16_t port)
{
	int ls[2] = { listen_at("127.0.0.1", port, 0), listen_at("::1", port, V6ONLY) };
	int acc4 = -1, acc6 = -1, ok;
	uint32_t who4 = 0, who6 = 0;
	pid_t srv = -1;

	ok = ls[0] >= 0 && ls[1] >= 0;
	if (ok) {
		srv = serve(ls, 2, 2);
		ok = ask("127.0.0.1", port, 1, &who4, &acc4) == 0 && ask("::1", port, 2, &who6, &acc6) == 0;
	}
	ok = child_ok(srv) && ok && who4 == 0x101 && who6 == 0x102 && acc4 == 1 && acc6 == 1;
	result("addr_v4_v6_one_port", ok, "IPv4 client served by the IPv4 listener %d, IPv6 by the IPv6 one %d, accelerated %d/%d",
	       who4 == 0x101, who6 == 0x102, acc4, acc6);
	scilan_close(ls[0]);
	scilan_close(ls[1]);
}

/* Two SO_REUSEPORT listeners: the kernel spreads the connections, and each
 * one's device connection must follow it to whichever listener got it. */
static void test_reuseport(uint16_t port, int n)
{
	int ls[2] = { listen_at("127.0.0.1", port, REUSEPORT), listen_at("127.0.0.1", port, REUSEPORT) };
	int good = 0, per[3] = { 0 };
	pid_t srv = -1;

	if (ls[0] >= 0 && ls[1] >= 0) {
		srv = serve(ls, 2, n);
		for (int i = 0; i < n; i++) {
			uint32_t who = 0;
			int acc = -1;

			if (ask("127.0.0.1", port, (uint32_t)i * 10, &who, &acc) == 0 && (who & 0x100) && acc == 1) {
				good++;
				per[who & 3]++;
			}
		}
	}
	result("addr_reuseport", child_ok(srv) && good == n,
	       "%d of %d connections accelerated and answered (listener 1: %d, listener 2: %d)", good, n, per[1],
	       per[2]);
	scilan_close(ls[0]);
	scilan_close(ls[1]);
}

/* The same port in a second network namespace: its listener (wildcard)
 * owns 192.0.2.1, which only that namespace has; the first namespace's
 * listener is bound to 127.0.0.1.  Each client reaches its own server. */
static void test_netns(uint16_t port)
{
	int l = listen_at("127.0.0.1", port, 0), acc = -1, ok, st = -1;
	uint32_t who = 0;
	pid_t srv = -1, ns;

	ns = fork();
	if (ns == 0) {
		int nl, nacc = -1;
		uint32_t nwho = 0;
		pid_t nsrv;

		if (unshare(CLONE_NEWNET) < 0 || system("ip link set lo up && ip addr add 192.0.2.1/32 dev lo") != 0)
			_exit(10);
		nl = listen_at("0.0.0.0", port, 0);
		if (nl < 0)
			_exit(11);
		nsrv = serve(&nl, 1, 1);
		if (ask("192.0.2.1", port, 7, &nwho, &nacc) < 0)
			_exit(12);
		_exit(child_ok(nsrv) && nwho == 0x101 && nacc == 1 ? 0 : 13);
	}
	if (l >= 0) {
		srv = serve(&l, 1, 1);
		ok = ask("127.0.0.1", port, 3, &who, &acc) == 0;
	}
	ok = l >= 0 && child_ok(srv) && ok && who == 0x101 && acc == 1;
	if (waitpid(ns, &st, 0) != ns || !WIFEXITED(st))
		st = -1;
	else
		st = WEXITSTATUS(st);
	result("addr_second_netns", st == 0 && ok,
	       "the first namespace's client served accelerated %d; the second namespace's (same port): exit %d (0 ok)", ok,
	       st);
	scilan_close(l);
}

/* uid 65534 in a user and network namespace of its own, where it is root:
 * it may bring lo up, add any address and bind any port there.  0, or -1. */
static int own_user_and_net_ns(void)
{
	struct ifreq ifr = { .ifr_name = "lo", .ifr_flags = IFF_UP | IFF_RUNNING };
	int io, ok;

	/* Dumpable again after setuid, so that it may write its own uid_map. */
	if (become_nobody() < 0 || prctl(PR_SET_DUMPABLE, 1) < 0 || unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0)
		return -1;
	io = socket(AF_INET, SOCK_DGRAM, 0);
	ok = io >= 0 && ioctl(io, SIOCSIFFLAGS, &ifr) == 0;
	if (io >= 0)
		close(io);
	return ok ? 0 : -1;
}

/* Does the slice mapped at p (bytes) hold the 4-byte marker anywhere? */
static int holds_marker(const volatile uint8_t *p, size_t bytes, uint32_t marker)
{
	for (size_t i = 0; i + sizeof(marker) <= bytes; i++) {
		uint32_t v;

		memcpy(&v, (const uint8_t *)p + i, sizeof(v));
		if (v == marker)
			return 1;
	}
	return 0;
}

/* The attacker of the user-namespace tests (a forked child): uid 65534 in
 * its own user+network namespace listens on the device with a socket bound
 * to 127.0.0.1:port there, says "r" on ready_fd, then waits for either a
 * device connection (which it takes by listener, maps, and searches for the
 * client's marker) or the parent's "done" on done_fd (then nothing may be
 * queued).  Exit 0: nothing came; 20: it took a connection, 21: and read
 * the client's bytes; 100+: setup failed. */
static void userns_attacker(uint16_t port, uint32_t marker, int ready_fd, int done_fd)
{
	struct sockaddr_in a = loopback(port);
	struct scilan_info in;
	struct pollfd p[2];
	int one = 1, s, d, e, found = 0;
	volatile uint8_t *local;

	if (own_user_and_net_ns() < 0)
		_exit(100);
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 4) < 0)
		_exit(101);
	d = dev_listen(s);
	if (d < 0)
		_exit(102);
	if (write(ready_fd, "r", 1) != 1)
		_exit(103);
	p[0] = (struct pollfd){ .fd = d, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = done_fd, .events = POLLIN };
	if (poll(p, 2, -1) < 1)
		_exit(104);
	e = open(SERVER_NODE, O_RDWR);
	if (!(p[0].revents & POLLIN)) {
		fcntl(d, F_SETFL, O_NONBLOCK);
		_exit(ioctl(e, SCILAN_IOC_ACCEPT, &d) == 0 ? 20 : errno == EAGAIN ? 0 : 105);
	}
	if (ioctl(e, SCILAN_IOC_ACCEPT, &d) < 0 || ioctl(e, SCILAN_IOC_INFO, &in) < 0)
		_exit(106);
	local = mmap(NULL, in.slice_size, PROT_READ, MAP_SHARED, e, SCILAN_MMAP_LOCAL);
	if (local == MAP_FAILED)
		_exit(20);
	/* The client sends once its kernel connect is through: look for a
	 * while (bounded only so that a miss cannot hang the suite). */
	for (int i = 0; i < 5000 && !found; i++) {
		found = holds_marker(local, in.slice_size, marker);
		if (!found)
			usleep(1000);
	}
	_exit(20 + found);
}

/* A plain TCP server (no scilan) of one connection on listening socket l:
 * reads a u32 id, answers id+1 and 1; exit 0 when it got the id. */
static pid_t plain_serve(int l)
{
	pid_t pid = fork();
	uint32_t id, reply[2];
	int s;

	if (pid != 0)
		return pid;
	s = accept(l, NULL, NULL);
	if (s < 0 || recv(s, &id, sizeof(id), MSG_WAITALL) != sizeof(id))
		_exit(3);
	reply[0] = id + 1;
	reply[1] = 1;
	_exit(send(s, reply, sizeof(reply), MSG_NOSIGNAL) == sizeof(reply) ? 0 : 4);
}

/* The attack: uid 65534 binds 127.0.0.1:port in its own user+network
 * namespace and listens on the device; root's server listens on
 * 0.0.0.0:port, with scilan (root_scilan) or as a plain TCP program.  The
 * exact address must not outrank root's wildcard across namespaces, and a
 * namespace an unprivileged user made takes no destination root's
 * namespaces have: root's client is answered by root's server (accelerated
 * if that server is a scilan one, else kernel TCP), and the attacker gets
 * no connection. */
static void test_userns_listener(const char *name, uint16_t port, int root_scilan, uint32_t marker)
{
	int to_child[2], to_parent[2], l = -1, ok = 0, acc = -1, st = -1, one = 1;
	uint32_t who = 0, want = root_scilan ? 0x101 : 1;
	pid_t pid, srv = -1;
	char step = 0;

	if (pipe(to_child) < 0 || pipe(to_parent) < 0) {
		result(name, 0, "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(to_parent[0]);
		close(to_child[1]);
		userns_attacker(port, marker, to_parent[1], to_child[0]);
	}
	close(to_parent[1]);
	close(to_child[0]);
	if (read(to_parent[0], &step, 1) == 1) {
		if (root_scilan) {
			l = listen_at("0.0.0.0", port, 0);
			srv = l >= 0 ? serve(&l, 1, 1) : -1;
		} else {
			struct sockaddr_in any = { .sin_family = AF_INET, .sin_port = htons(port) };

			l = socket(AF_INET, SOCK_STREAM, 0);
			if (l >= 0 && setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
			    bind(l, (struct sockaddr *)&any, sizeof(any)) == 0 && listen(l, 4) == 0)
				srv = plain_serve(l);
		}
		ok = srv > 0 && ask("127.0.0.1", port, marker, &who, &acc) == 0 && who == want &&
		     acc == (root_scilan ? 1 : 0);
	}
	ok = srv > 0 && child_ok(srv) && ok;
	if (write(to_child[1], "d", 1) != 1)
		ok = 0;
	if (waitpid(pid, &st, 0) == pid && WIFEXITED(st))
		st = WEXITSTATUS(st);
	else
		st = -1;
	result(name, ok && st == 0,
	       "root's client answered by root's server (%s) %d (reply %#x, accelerated %d); attacker exit %d "
	       "(0 got nothing, 20 took the connection, 21 and read its bytes, 100+ setup)",
	       root_scilan ? "scilan" : "plain TCP", ok, who, acc, st);
	if (root_scilan)
		scilan_close(l);
	else if (l >= 0)
		close(l);
	close(to_child[1]);
	close(to_parent[0]);
}

/* test_hijack from a user+network namespace of uid 65534's own, where the
 * victim's source address and port are free to bind: its device connect
 * with the victim's 4-tuple (which the peer would pair as the newest with
 * the victim's accepted socket) is refused, EADDRNOTAVAIL: the source is an
 * address of root's namespace; the server gets the victim's bytes. */
static void test_userns_hijack(uint16_t port)
{
	struct sockaddr_in a = loopback(port), me;
	socklen_t len = sizeof(me);
	int l = listen_at("127.0.0.1", port, 0), c = scilan_socket(AF_INET, SOCK_STREAM, 0), s = -1;
	int ok, st = -1, acc_s = -1;
	char buf[5] = "";
	pid_t pid;

	ok = l >= 0 && c >= 0 && scilan_connect(c, (struct sockaddr *)&a, sizeof(a)) == 0 && accelerated(c) == 1 &&
	     getsockname(c, (struct sockaddr *)&me, &len) == 0;
	if (ok) {
		pid = fork();
		if (pid == 0) {
			struct scilan_connect req = { .dport = port };
			int t, d;

			if (own_user_and_net_ns() < 0)
				_exit(100);
			t = socket(AF_INET, SOCK_STREAM, 0);
			d = open(CLIENT_NODE, O_RDWR);
			if (t < 0 || d < 0 || bind(t, (struct sockaddr *)&me, sizeof(me)) < 0)
				_exit(101);
			req.sockfd = t;
			req.daddr[10] = req.daddr[11] = 0xff;
			memcpy(req.daddr + 12, &a.sin_addr, 4);
			_exit(ioctl(d, SCILAN_IOC_CONNECT, &req) == 0 ? 1 : errno == EADDRNOTAVAIL ? 0 : 2);
		}
		if (waitpid(pid, &st, 0) == pid && WIFEXITED(st))
			st = WEXITSTATUS(st);
		else
			st = -1;
		s = scilan_accept(l, NULL, NULL);
		acc_s = s >= 0 ? accelerated(s) : -1;
		ok = s >= 0 && send_all(c, "mine", 5) == 0 && recv_all(s, buf, 5) == 0 && !strcmp(buf, "mine");
	}
	result("sec_userns_hijack", ok && st == 0 && acc_s == 1,
	       "the namespaced connect with the victim's 4-tuple: exit %d (0 EADDRNOTAVAIL, 1 connected, 100+ setup); "
	       "server got the victim's bytes %d, accelerated %d",
	       st, ok, acc_s);
	scilan_close(s);
	scilan_close(c);
	scilan_close(l);
}

/* What an unprivileged namespace may still have: an address of its own,
 * which no namespace of root's has.  uid 65534, root in its own user+network
 * namespace, adds 192.0.2.3 and serves on 0.0.0.0:port with scilan; its own
 * client is accelerated. */
static void test_userns_own_address(uint16_t port)
{
	pid_t pid = fork();
	int st = -1;

	if (pid == 0) {
		int l, acc = -1;
		uint32_t who = 0;
		pid_t srv;
		char map[32];

		if (own_user_and_net_ns() < 0)
			_exit(100);
		/* Root of the namespace through exec too: map uid and gid 0. */
		snprintf(map, sizeof(map), "0 %d 1", NOBODY);
		if (write_file("/proc/self/setgroups", "deny") < 0 || write_file("/proc/self/uid_map", map) < 0 ||
		    write_file("/proc/self/gid_map", map) < 0 || system("ip addr add 192.0.2.3/32 dev lo") != 0)
			_exit(101);
		l = listen_at("0.0.0.0", port, 0);
		if (l < 0)
			_exit(102);
		srv = serve(&l, 1, 1);
		if (ask("192.0.2.3", port, 9, &who, &acc) < 0)
			_exit(103);
		_exit(child_ok(srv) && who == 0x101 && acc == 1 ? 0 : 104);
	}
	if (waitpid(pid, &st, 0) == pid && WIFEXITED(st))
		st = WEXITSTATUS(st);
	else
		st = -1;
	result("sec_userns_own_address", st == 0,
	       "an unprivileged namespace's server on an address only it has, accelerated: exit %d (0 ok)", st);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "all";
	int all = !strcmp(what, "all");

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (dev_setup("1 127.0.0.1 dev scilan0\n1 ::1 dev scilan0\n1 192.0.2.1 dev scilan0\n1 192.0.2.3 dev scilan0\n") < 0)
		return 1;
	if (all || !strcmp(what, "squat"))
		test_squat(7110);
	if (all || !strcmp(what, "hijack"))
		test_hijack(7111);
	if (all || !strcmp(what, "takenfirst")) {
		test_taken_first("sec_taken_first_hooked", 7115, 7215, VICTIM_HOOKED);
		test_taken_first("sec_taken_first_plain", 7116, 7216, 0);
		test_taken_first("sec_taken_first_gone", 7117, 7217, ATTACKER_GONE);
	}
	if (all || !strcmp(what, "short")) {
		test_short_client("short_client_closed", 7118, 0);
		test_short_client("short_client_exited", 7119, 1);
	}
	if (all || !strcmp(what, "lowport"))
		test_low_port();
	if (all || !strcmp(what, "v4v6"))
		test_v4_v6(7112);
	if (all || !strcmp(what, "reuseport"))
		test_reuseport(7113, 6);
	if (all || !strcmp(what, "netns"))
		test_netns(7114);
	if (all || !strcmp(what, "userns")) {
		test_userns_listener("sec_userns_listener", 7120, 1, 0x5ec0de01u);
		test_userns_listener("sec_userns_plain_server", 7121, 0, 0x5ec0de02u);
		test_userns_hijack(7122);
		test_userns_own_address(7123);
	}
	return failures ? 1 : 0;
}
