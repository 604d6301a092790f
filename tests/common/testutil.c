/* testutil.c — the helpers behind testutil.h: sockets and pairs, forked peers,
 * sync channels, watchdogs, the seeded stream and checksum, stderr capture and
 * temporary runtime directories. */
#include "testutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- scaling ----------------------------------------------------------------- */

uint64_t tu_env_u64(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long x;

	if (!v || !*v)
		return dflt;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || *end || v[0] == '-')
		return dflt;
	return (uint64_t)x;
}

uint64_t tu_scaled(uint64_t native, uint64_t sanitized)
{
	uint64_t base = TU_SANITIZED ? sanitized : native;
	const char *v = getenv("SCILAN_TEST_SCALE");
	double scale, r;
	char *end;

	if (v && *v) {
		scale = strtod(v, &end);
		if (!*end && scale > 0) {
			r = (double)base * scale;
			base = r < 1 ? 1 : (uint64_t)r;
		}
	}
	return base ? base : 1;
}

/* ---- sockets ----------------------------------------------------------------- */

socklen_t tu_loopback(int family, uint16_t port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		a->sin6_port = htons(port);
		return sizeof(*a);
	}
	struct sockaddr_in *a = (struct sockaddr_in *)ss;

	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a->sin_port = htons(port);
	return sizeof(*a);
}

uint16_t tu_local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return 0;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return 0;
}

bool tu_have_ipv6(void)
{
	struct sockaddr_storage ss;
	socklen_t len = tu_loopback(AF_INET6, 0, &ss);
	int fd = socket(AF_INET6, SOCK_STREAM, 0);
	bool ok;

	if (fd < 0)
		return false;
	ok = bind(fd, (struct sockaddr *)&ss, len) == 0;
	close(fd);
	return ok;
}

static int listen_common(bool plain, int family, int backlog, int rcvbuf, uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t len = tu_loopback(family, 0, &ss);
	int fd = plain ? socket(family, SOCK_STREAM, 0) : scilan_socket(family, SOCK_STREAM, 0);
	int err;

	if (fd < 0)
		return -1;
	if (rcvbuf > 0 && (plain ? setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf))
				 : scilan_setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf))) < 0)
		goto fail;
	if ((plain ? bind(fd, (struct sockaddr *)&ss, len) : scilan_bind(fd, (struct sockaddr *)&ss, len)) < 0)
		goto fail;
	if ((plain ? listen(fd, backlog) : scilan_listen(fd, backlog)) < 0)
		goto fail;
	*port = tu_local_port(fd);
	if (!*port) {
		errno = EADDRNOTAVAIL;
		goto fail;
	}
	return fd;
fail:
	err = errno;
	if (plain)
		close(fd);
	else
		scilan_close(fd);
	errno = err;
	return -1;
}

int tu_listen(int family, int backlog, uint16_t *port)
{
	return listen_common(false, family, backlog, 0, port);
}

int tu_listen_rcvbuf(int family, int backlog, int rcvbuf, uint16_t *port)
{
	return listen_common(false, family, backlog, rcvbuf, port);
}

int tu_plain_listen(int family, int backlog, uint16_t *port)
{
	return listen_common(true, family, backlog, 0, port);
}

int tu_connect_rcvbuf(int family, uint16_t port, int rcvbuf)
{
	struct sockaddr_storage ss;
	socklen_t len = tu_loopback(family, port, &ss);
	int fd = scilan_socket(family, SOCK_STREAM, 0), err;

	if (fd < 0)
		return -1;
	if (rcvbuf > 0 && scilan_setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) < 0)
		goto fail;
	while (scilan_connect(fd, (struct sockaddr *)&ss, len) < 0) {
		if (errno != EINTR)
			goto fail;
	}
	return fd;
fail:
	err = errno;
	scilan_close(fd);
	errno = err;
	return -1;
}

int tu_connect(int family, uint16_t port)
{
	return tu_connect_rcvbuf(family, port, 0);
}

int tu_plain_connect(int family, uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t len = tu_loopback(family, port, &ss);
	int fd = socket(family, SOCK_STREAM, 0), err;

	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&ss, len) < 0) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

int tu_accept(int lfd)
{
	int fd;

	do
		fd = scilan_accept(lfd, NULL, NULL);
	while (fd < 0 && errno == EINTR);
	return fd;
}

int tu_pair_rcvbuf(int family, int crcv, int srcv, int *cfd, int *sfd)
{
	uint16_t port;
	int l = tu_listen_rcvbuf(family, 4, srcv, &port), c, s, err;

	if (l < 0)
		return -1;
	c = tu_connect_rcvbuf(family, port, crcv);
	if (c < 0)
		goto fail_l;
	s = tu_accept(l);
	if (s < 0)
		goto fail_c;
	scilan_close(l);
	*cfd = c;
	*sfd = s;
	return 0;
fail_c:
	err = errno;
	scilan_close(c);
	errno = err;
fail_l:
	err = errno;
	scilan_close(l);
	errno = err;
	return -1;
}

int tu_pair(int family, int *cfd, int *sfd)
{
	return tu_pair_rcvbuf(family, 0, 0, cfd, sfd);
}

int tu_accelerated(int fd)
{
	int v = -1;
	socklen_t len = sizeof(v);

	if (scilan_getsockopt(fd, SOL_SCILAN, SCILAN_SO_ACCELERATED, &v, &len) < 0)
		return -1;
	return v;
}

int tu_set_poll_us(int fd, int us)
{
	return scilan_setsockopt(fd, SOL_SCILAN, SCILAN_SO_POLL_US, &us, sizeof(us));
}

int tu_set_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -1;
	return fcntl(fd, F_SETFL, on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK));
}

ssize_t tu_send_all(int fd, const void *buf, size_t len, int flags)
{
	const unsigned char *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = scilan_send(fd, p + done, len - done, flags);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		done += (size_t)n;
	}
	return (ssize_t)done;
}

ssize_t tu_recv_all(int fd, void *buf, size_t len)
{
	unsigned char *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = scilan_recv(fd, p + done, len - done, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* ---- checksums and streams ---------------------------------------------------- */

uint64_t tu_fnv1a(uint64_t h, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

#define P1 11400714785074694791ull
#define P2 14029467366897019727ull
#define P3 1609587929392839161ull
#define P4 9650029242287828579ull
#define P5 2870177450012600261ull

static inline uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t rd64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline uint32_t rd32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t xround(uint64_t acc, uint64_t in)
{
	acc += in * P2;
	acc = rotl64(acc, 31);
	return acc * P1;
}

static inline uint64_t xmerge(uint64_t acc, uint64_t v)
{
	acc ^= xround(0, v);
	return acc * P1 + P4;
}

void tu_hash_init(struct tu_hash *h, uint64_t seed)
{
	memset(h, 0, sizeof(*h));
	h->seed = seed;
	h->v[0] = seed + P1 + P2;
	h->v[1] = seed + P2;
	h->v[2] = seed;
	h->v[3] = seed - P1;
}

static inline void stripe(uint64_t v[4], const unsigned char *p)
{
	v[0] = xround(v[0], rd64(p));
	v[1] = xround(v[1], rd64(p + 8));
	v[2] = xround(v[2], rd64(p + 16));
	v[3] = xround(v[3], rd64(p + 24));
}

void tu_hash_update(struct tu_hash *h, const void *data, size_t len)
{
	const unsigned char *p = data;

	h->total += len;
	if (h->buflen) {
		size_t take = 32 - h->buflen < len ? 32 - h->buflen : len;

		memcpy(h->buf + h->buflen, p, take);
		h->buflen += take;
		p += take;
		len -= take;
		if (h->buflen < 32)
			return;
		stripe(h->v, h->buf);
		h->buflen = 0;
	}
	while (len >= 32) {
		stripe(h->v, p);
		p += 32;
		len -= 32;
	}
	memcpy(h->buf, p, len);
	h->buflen = len;
}

uint64_t tu_hash_final(const struct tu_hash *h)
{
	uint64_t r;
	const unsigned char *p = h->buf;
	size_t len = h->buflen;

	if (h->total >= 32) {
		r = rotl64(h->v[0], 1) + rotl64(h->v[1], 7) + rotl64(h->v[2], 12) + rotl64(h->v[3], 18);
		for (int i = 0; i < 4; i++)
			r = xmerge(r, h->v[i]);
	} else {
		r = h->seed + P5;
	}
	r += h->total;
	while (len >= 8) {
		r ^= xround(0, rd64(p));
		r = rotl64(r, 27) * P1 + P4;
		p += 8;
		len -= 8;
	}
	if (len >= 4) {
		r ^= (uint64_t)rd32(p) * P1;
		r = rotl64(r, 23) * P2 + P3;
		p += 4;
		len -= 4;
	}
	while (len--) {
		r ^= (*p++) * P5;
		r = rotl64(r, 11) * P1;
	}
	r ^= r >> 33;
	r *= P2;
	r ^= r >> 29;
	r *= P3;
	r ^= r >> 32;
	return r;
}

uint64_t tu_hash_buf(const void *data, size_t len)
{
	struct tu_hash h;

	tu_hash_init(&h, 0);
	tu_hash_update(&h, data, len);
	return tu_hash_final(&h);
}

static inline uint64_t stream_word(uint64_t seed, uint64_t w)
{
	uint64_t z = seed + (w + 1) * 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline unsigned char stream_byte(uint64_t seed, uint64_t o)
{
	return (unsigned char)(stream_word(seed, o >> 3) >> (8 * (o & 7)));
}

void tu_stream_fill(uint64_t seed, uint64_t offset, void *buf, size_t len)
{
	unsigned char *p = buf;
	uint64_t o = offset;

	while (len && (o & 7)) {
		*p++ = stream_byte(seed, o++);
		len--;
	}
	while (len >= 8) {
		uint64_t v = stream_word(seed, o >> 3);

		memcpy(p, &v, 8);
		p += 8;
		o += 8;
		len -= 8;
	}
	while (len) {
		*p++ = stream_byte(seed, o++);
		len--;
	}
}

int64_t tu_stream_check(uint64_t seed, uint64_t offset, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	unsigned char tmp[4096];
	size_t done = 0;

	while (done < len) {
		size_t n = len - done < sizeof(tmp) ? len - done : sizeof(tmp);

		tu_stream_fill(seed, offset + done, tmp, n);
		if (memcmp(tmp, p + done, n) != 0) {
			for (size_t i = 0; i < n; i++)
				if (tmp[i] != p[done + i])
					return (int64_t)(done + i);
		}
		done += n;
	}
	return -1;
}

uint64_t tu_rng_next(struct tu_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t tu_rng_range(struct tu_rng *r, uint64_t lo, uint64_t hi)
{
	if (hi <= lo)
		return lo;
	return lo + tu_rng_next(r) % (hi - lo + 1);
}

size_t tu_rng_size(struct tu_rng *r, size_t max)
{
	unsigned bits = 0;
	uint64_t lim;

	if (max <= 1)
		return 1;
	while (bits < 63 && (1ull << bits) < max)
		bits++;
	lim = 1ull << tu_rng_range(r, 0, bits);
	if (lim > max)
		lim = max;
	return (size_t)tu_rng_range(r, 1, lim);
}

/* ---- children ---------------------------------------------------------------- */

#define MAX_CHILDREN 64
static volatile pid_t children[MAX_CHILDREN];
static volatile int children_out[MAX_CHILDREN];

static void child_register(pid_t pid, int out_fd)
{
	for (int i = 0; i < MAX_CHILDREN; i++) {
		if (children[i] == 0) {
			children_out[i] = out_fd;
			children[i] = pid;
			return;
		}
	}
}

static void child_unregister(pid_t pid)
{
	for (int i = 0; i < MAX_CHILDREN; i++)
		if (children[i] == pid)
			children[i] = 0;
}

static void put_str(const char *s);
static void put_uint(unsigned long long v);
static void syncs_split(bool in_child);

/* Async-signal-safe: copy what each live child printed to our stderr. */
static void dump_children_output(void)
{
	static char buf[8192];

	for (int i = 0; i < MAX_CHILDREN; i++) {
		ssize_t n;

		if (children[i] <= 0)
			continue;
		put_str("---- output of child ");
		put_uint((unsigned long long)children[i]);
		put_str(":\n");
		n = pread(children_out[i], buf, sizeof(buf), 0);
		if (n > 0 && write(STDERR_FILENO, buf, (size_t)n) < 0) {
			/* nothing to do */
		}
		put_str("---- end\n");
	}
}

static void kill_all_children(void)
{
	for (int i = 0; i < MAX_CHILDREN; i++)
		if (children[i] > 0)
			kill(children[i], SIGKILL);
}

void tu_log(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDOUT_FILENO, line, (size_t)n) < 0) {
		/* nothing to do */
	}
}

void tu_child_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
	int err = errno;
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	tu_log("[child %d] %s:%d: CHECK(%s) failed: %s [errno %d: %s]", (int)getpid(), file, line, cond, msg, err,
	       strerror(err));
	_exit(1);
}

int tu_spawn(struct tu_child *c, int (*fn)(void *), void *arg)
{
	pid_t parent = getpid();

	memset(c, 0, sizeof(*c));
	c->out_fd = memfd_create("tu-child-output", MFD_CLOEXEC);
	if (c->out_fd < 0)
		return -1;
	fflush(NULL);
	c->pid = fork();
	if (c->pid < 0) {
		close(c->out_fd);
		return -1;
	}
	if (c->pid == 0) {
		int rc;

		/* Die with the test process (a failed assertion ends it at once). */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(99);
		syncs_split(true);
		for (int i = 0; i < MAX_CHILDREN; i++)
			children[i] = 0;
		alarm(0);
		signal(SIGALRM, SIG_DFL);
		dup2(c->out_fd, STDOUT_FILENO);
		dup2(c->out_fd, STDERR_FILENO);
		rc = fn(arg);
		_exit(rc);
	}
	syncs_split(false);
	child_register(c->pid, c->out_fd);
	return 0;
}

int tu_reap(struct tu_child *c)
{
	ssize_t n;

	if (c->reaped)
		return c->status;
	while (waitpid(c->pid, &c->status, 0) < 0) {
		if (errno != EINTR) {
			c->status = -1;
			break;
		}
	}
	c->reaped = true;
	child_unregister(c->pid);
	n = pread(c->out_fd, c->output, sizeof(c->output) - 1, 0);
	c->output[n > 0 ? n : 0] = '\0';
	close(c->out_fd);
	c->out_fd = -1;
	return c->status;
}

void tu_kill(struct tu_child *c)
{
	if (!c->reaped && c->pid > 0)
		kill(c->pid, SIGKILL);
}

bool tu_exited_with(const struct tu_child *c, int code)
{
	return c->reaped && c->status != -1 && WIFEXITED(c->status) && WEXITSTATUS(c->status) == code;
}

const char *tu_status_str(const struct tu_child *c, char *buf, size_t size)
{
	if (!c->reaped)
		snprintf(buf, size, "not reaped");
	else if (c->status == -1)
		snprintf(buf, size, "waitpid failed");
	else if (WIFEXITED(c->status))
		snprintf(buf, size, "exited with %d", WEXITSTATUS(c->status));
	else if (WIFSIGNALED(c->status))
		snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(c->status), strsignal(WTERMSIG(c->status)));
	else
		snprintf(buf, size, "status 0x%x", c->status);
	return buf;
}

/* Sync channels made in this process and not yet split between a parent and
 * its child: after the next tu_spawn each side closes the other side's end,
 * so that a side that exits shows up as EOF instead of a hang. */
#define MAX_SYNCS 16
static struct {
	int parent_fd, child_fd;
	bool used;
} syncs[MAX_SYNCS];

static void syncs_split(bool in_child)
{
	for (int i = 0; i < MAX_SYNCS; i++) {
		if (!syncs[i].used)
			continue;
		close(in_child ? syncs[i].parent_fd : syncs[i].child_fd);
		syncs[i].used = false;
	}
}

int tu_sync_init(struct tu_sync *s)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	s->parent_fd = sv[0];
	s->child_fd = sv[1];
	for (int i = 0; i < MAX_SYNCS; i++) {
		if (!syncs[i].used) {
			syncs[i].parent_fd = sv[0];
			syncs[i].child_fd = sv[1];
			syncs[i].used = true;
			break;
		}
	}
	return 0;
}

static int put_u64(int fd, uint64_t v)
{
	ssize_t n;

	do
		n = send(fd, &v, sizeof(v), MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(v) ? 0 : -1;
}

static int get_u64(int fd, uint64_t *v)
{
	unsigned char *p = (unsigned char *)v;
	size_t got = 0;

	while (got < sizeof(*v)) {
		ssize_t n = recv(fd, p + got, sizeof(*v) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

int tu_sync_put(struct tu_sync *s, uint64_t v)
{
	return put_u64(s->parent_fd, v);
}

int tu_sync_get(struct tu_sync *s, uint64_t *v)
{
	return get_u64(s->parent_fd, v);
}

int tu_sync_put_child(struct tu_sync *s, uint64_t v)
{
	return put_u64(s->child_fd, v);
}

int tu_sync_get_child(struct tu_sync *s, uint64_t *v)
{
	return get_u64(s->child_fd, v);
}

void *tu_shared_alloc(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* ---- watchdogs --------------------------------------------------------------- */

static char watchdog_what[256];
static unsigned watchdog_secs;

static void put_str(const char *s)
{
	if (write(STDERR_FILENO, s, strlen(s)) < 0) {
		/* nothing to do */
	}
}

static void put_uint(unsigned long long v)
{
	char buf[24];
	int i = (int)sizeof(buf);

	buf[--i] = '\0';
	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v && i > 0);
	put_str(buf + i);
}

static void on_alarm(int sig)
{
	(void)sig;
	put_str("watchdog: ");
	put_str(watchdog_what);
	put_str(": still blocked after ");
	put_uint(watchdog_secs);
	put_str(" s — failing the test (hang)\n");
	kill_all_children();
	dump_children_output();
	_exit(1);
}

void tu_watchdog(unsigned secs, const char *what)
{
	struct sigaction sa;

	snprintf(watchdog_what, sizeof(watchdog_what), "%s", what ? what : "test");
	watchdog_secs = secs;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	alarm(secs);
}

void tu_watchdog_cancel(void)
{
	alarm(0);
}

static struct {
	pthread_t thread;
	bool running;
	const _Atomic uint64_t *counter;
	unsigned stall_secs;
	char what[256];
	_Atomic bool stop, fired;
	_Atomic uint64_t stalled_at;
} prog;

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
	}
}

static void *progress_main(void *arg)
{
	uint64_t last = atomic_load(prog.counter);
	unsigned still = 0; /* tenths of a second without change */

	(void)arg;
	while (!atomic_load(&prog.stop)) {
		uint64_t now;

		sleep_ms(100);
		now = atomic_load(prog.counter);
		if (now != last) {
			last = now;
			still = 0;
			continue;
		}
		if (++still < prog.stall_secs * 10)
			continue;
		atomic_store(&prog.stalled_at, now);
		atomic_store(&prog.fired, true);
		fprintf(stderr, "watchdog: %s: no progress for %u s after %llu — killing the peer\n", prog.what,
			prog.stall_secs, (unsigned long long)now);
		kill_all_children();
		dump_children_output();
		for (int i = 0; i < 150 && !atomic_load(&prog.stop); i++)
			sleep_ms(100);
		if (!atomic_load(&prog.stop)) {
			fprintf(stderr, "watchdog: %s: test still blocked 15 s after the peer was killed; failing\n",
				prog.what);
			_exit(1);
		}
		break;
	}
	return NULL;
}

void tu_progress_start(const _Atomic uint64_t *counter, unsigned stall_secs, const char *what)
{
	prog.counter = counter;
	prog.stall_secs = stall_secs ? stall_secs : 10;
	snprintf(prog.what, sizeof(prog.what), "%s", what ? what : "test");
	atomic_store(&prog.stop, false);
	atomic_store(&prog.fired, false);
	atomic_store(&prog.stalled_at, 0);
	prog.running = pthread_create(&prog.thread, NULL, progress_main, NULL) == 0;
}

bool tu_progress_stop(uint64_t *stalled_at)
{
	if (prog.running) {
		atomic_store(&prog.stop, true);
		pthread_join(prog.thread, NULL);
		prog.running = false;
	}
	if (stalled_at)
		*stalled_at = atomic_load(&prog.stalled_at);
	return atomic_load(&prog.fired);
}

bool tu_progress_fired(void)
{
	return atomic_load(&prog.fired);
}

/* ---- signals, capture, directories -------------------------------------------- */

static volatile sig_atomic_t sigpipes;

static void on_sigpipe(int sig)
{
	(void)sig;
	sigpipes++;
}

void tu_count_sigpipe(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigpipe;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPIPE, &sa, NULL);
	sigpipes = 0;
}

int tu_sigpipe_count(void)
{
	return (int)sigpipes;
}

static int capture_fd = -1;

int tu_capture_begin(void)
{
	int saved;

	fflush(stderr);
	capture_fd = memfd_create("tu-stderr", MFD_CLOEXEC);
	if (capture_fd < 0)
		return -1;
	saved = dup(STDERR_FILENO);
	dup2(capture_fd, STDERR_FILENO);
	return saved;
}

char *tu_capture_end(int token)
{
	off_t size;
	char *out;
	ssize_t n;

	fflush(stderr);
	if (token >= 0) {
		dup2(token, STDERR_FILENO);
		close(token);
	}
	if (capture_fd < 0)
		return strdup("");
	size = lseek(capture_fd, 0, SEEK_END);
	out = malloc((size_t)(size > 0 ? size : 0) + 1);
	if (!out)
		return NULL;
	n = size > 0 ? pread(capture_fd, out, (size_t)size, 0) : 0;
	out[n > 0 ? n : 0] = '\0';
	close(capture_fd);
	capture_fd = -1;
	return out;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void tu_rmtree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

#define MAX_TMPDIRS 8
static char tmpdirs[MAX_TMPDIRS][64];
static pid_t tmpdir_owner;
static int ntmpdirs;

static void tmpdir_cleanup(void)
{
	if (getpid() != tmpdir_owner)
		return;
	for (int i = 0; i < ntmpdirs; i++)
		tu_rmtree(tmpdirs[i]);
}

const char *tu_tmpdir(void)
{
	char *d;

	if (ntmpdirs >= MAX_TMPDIRS)
		return NULL;
	d = tmpdirs[ntmpdirs];
	snprintf(d, sizeof(tmpdirs[0]), "/dev/shm/scilan-test-XXXXXX");
	if (!mkdtemp(d))
		return NULL;
	if (ntmpdirs++ == 0) {
		tmpdir_owner = getpid();
		atexit(tmpdir_cleanup);
	}
	return d;
}

const char *tu_isolated_rundir(void)
{
	static char path[128];
	const char *d = tu_tmpdir();

	if (!d)
		return NULL;
	snprintf(path, sizeof(path), "%s/run", d);
	setenv("SCILAN_RUNDIR", path, 1);
	return path;
}
