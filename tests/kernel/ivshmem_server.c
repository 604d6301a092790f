/* ivshmem_server.c — an ivshmem server for QEMU's ivshmem-doorbell device,
 * written from QEMU's docs/specs/ivshmem-spec.rst: owns the shared memory
 * (a memfd), the per-client interrupt eventfds and the client/server protocol
 * on a Unix socket.  Used by tests/kernel/run-two.sh (Debian ships no server).
 *
 * Protocol (server -> client only; each message one 8-byte little-endian
 * signed number, optionally with one fd by SCM_RIGHTS): version 0; the
 * client's id; -1 with the shared memory fd; for every other client its id
 * N times with its N eventfds; the client's own id N times with its own
 * eventfds.  Later: a peer id with an fd = one of its vectors (connect),
 * without = it disconnected.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_CLIENTS 64
#define MAX_VECTORS 64

struct client {
	int sock;           /* -1: slot free */
	int64_t id;
	int efd[MAX_VECTORS];
};

static struct client clients[MAX_CLIENTS];
static unsigned int nvectors = 2;
static int verbose;
static volatile sig_atomic_t stop;

static void logmsg(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	va_start(ap, fmt);
	fputs("ivshmem_server: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("ivshmem_server: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* One protocol message: the number, and an fd when fd >= 0. */
static int send_msg(int sock, int64_t value, int fd)
{
	uint64_t le = htole64((uint64_t)value);
	struct iovec iov = { .iov_base = &le, .iov_len = sizeof(le) };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(le) ? 0 : -1;
}

/* All N vectors of client `who`, announced to `to`. */
static int send_vectors(const struct client *to, const struct client *who)
{
	for (unsigned int v = 0; v < nvectors; v++)
		if (send_msg(to->sock, who->id, who->efd[v]) < 0)
			return -1;
	return 0;
}

static void drop_client(struct client *c, const char *why)
{
	int64_t id = c->id;

	logmsg("client %lld gone (%s)", (long long)id, why);
	close(c->sock);
	c->sock = -1;
	for (unsigned int v = 0; v < nvectors; v++)
		close(c->efd[v]);
	/* Others learn of it; one that cannot be told is dropped in turn. */
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (clients[i].sock >= 0 && send_msg(clients[i].sock, id, -1) < 0)
			drop_client(&clients[i], "send failed");
}

static int64_t free_id(void)
{
	for (int64_t id = 0; id < 65536; id++) {
		bool used = false;

		for (int i = 0; i < MAX_CLIENTS && !used; i++)
			used = clients[i].sock >= 0 && clients[i].id == id;
		if (!used)
			return id;
	}
	return -1;
}

static void add_client(int sock, int shm_fd)
{
	struct client *c = NULL;
	unsigned int v;

	for (int i = 0; i < MAX_CLIENTS && !c; i++)
		if (clients[i].sock < 0)
			c = &clients[i];
	if (!c) {
		fprintf(stderr, "ivshmem_server: too many clients (%d), refusing one\n", MAX_CLIENTS);
		close(sock);
		return;
	}
	c->id = free_id();
	for (v = 0; v < nvectors; v++) {
		c->efd[v] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (c->efd[v] < 0) {
			fprintf(stderr, "ivshmem_server: eventfd: %s\n", strerror(errno));
			while (v--)
				close(c->efd[v]);
			close(sock);
			return;
		}
	}
	c->sock = sock;
	if (send_msg(sock, 0, -1) < 0 || send_msg(sock, c->id, -1) < 0 || send_msg(sock, -1, shm_fd) < 0) {
		drop_client(c, "initial messages failed");
		return;
	}
	for (int i = 0; i < MAX_CLIENTS; i++) {
		struct client *o = &clients[i];

		if (o == c || o->sock < 0)
			continue;
		if (send_vectors(c, o) < 0) {
			drop_client(c, "peer announcement failed");
			return;
		}
		if (send_vectors(o, c) < 0)
			drop_client(o, "send failed");
	}
	if (send_vectors(c, c) < 0) {
		drop_client(c, "interrupt setup failed");
		return;
	}
	logmsg("client %lld connected", (long long)c->id);
}

static unsigned long long parse_size(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		die("bad size '%s'", s);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end)
		die("bad size '%s'", s);
	return v;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ivshmem_server -S PATH [options]\n"
		"  -S, --socket PATH     Unix socket QEMU's chardev connects to (required)\n"
		"  -l, --shm-size SIZE   shared memory bytes, a power of two (K/M/G suffix; default 16M)\n"
		"  -n, --vectors N       interrupt vectors per client (1..%d, default 2)\n"
		"  -v, --verbose         log connects and disconnects on stderr\n"
		"  -h, --help            this text\n"
		"Runs in the foreground until SIGTERM/SIGINT; removes the socket on exit.\n",
		MAX_VECTORS);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 'S' },
		{ "shm-size", required_argument, NULL, 'l' },
		{ "vectors", required_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long shm_size = 16ULL << 20;
	const char *path = NULL;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct sigaction act = { .sa_handler = on_signal };
	struct pollfd pfd[MAX_CLIENTS + 1];
	int opt, lsock, shm_fd;

	while ((opt = getopt_long(argc, argv, "S:l:n:vh", opts, NULL)) != -1) {
		switch (opt) {
		case 'S':
			path = optarg;
			break;
		case 'l':
			shm_size = parse_size(optarg);
			break;
		case 'n': {
			char *end;
			long n = strtol(optarg, &end, 10);

			if (*end || n < 1 || n > MAX_VECTORS)
				die("--vectors wants 1..%d, not '%s'", MAX_VECTORS, optarg);
			nvectors = (unsigned int)n;
			break;
		}
		case 'v':
			verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!path || optind != argc) {
		usage(stderr);
		return 2;
	}
	/* QEMU exposes the memory as a PCI BAR: a power of two. */
	if (shm_size < 4096 || (shm_size & (shm_size - 1)))
		die("--shm-size %llu is not a power of two >= 4096", shm_size);
	if (strlen(path) >= sizeof(sa.sun_path))
		die("socket path too long: %s", path);
	strcpy(sa.sun_path, path);

	shm_fd = memfd_create("ivshmem", MFD_CLOEXEC);
	if (shm_fd < 0)
		die("memfd_create: %s", strerror(errno));
	if (ftruncate(shm_fd, (off_t)shm_size) < 0)
		die("ftruncate to %llu bytes: %s", shm_size, strerror(errno));

	lsock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lsock < 0)
		die("socket: %s", strerror(errno));
	if (unlink(path) < 0 && errno != ENOENT)
		die("cannot remove old %s: %s", path, strerror(errno));
	if (bind(lsock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("bind %s: %s", path, strerror(errno));
	if (listen(lsock, 8) < 0)
		die("listen: %s", strerror(errno));

	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);
	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < MAX_CLIENTS; i++)
		clients[i].sock = -1;
	logmsg("listening on %s, %llu bytes of shared memory, %u vectors", path, shm_size, nvectors);

	while (!stop) {
		int n = 0, r;

		pfd[n++] = (struct pollfd){ .fd = lsock, .events = POLLIN };
		for (int i = 0; i < MAX_CLIENTS; i++)
			pfd[n++] = (struct pollfd){ .fd = clients[i].sock, .events = POLLIN };
		r = poll(pfd, (nfds_t)n, -1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			die("poll: %s", strerror(errno));
		}
		/* Clients never send: readable means closed (or garbage). */
		for (int i = 0; i < MAX_CLIENTS; i++) {
			char b[64];

			if (clients[i].sock < 0 || !pfd[i + 1].revents)
				continue;
			if (read(clients[i].sock, b, sizeof(b)) <= 0 || (pfd[i + 1].revents & (POLLHUP | POLLERR)))
				drop_client(&clients[i], "disconnected");
		}
		if (pfd[0].revents & POLLIN) {
			int s = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);

			if (s >= 0)
				add_client(s, shm_fd);
			else if (errno != EINTR && errno != EAGAIN)
				fprintf(stderr, "ivshmem_server: accept: %s\n", strerror(errno));
		}
	}
	logmsg("exiting");
	unlink(path);
	return 0;
}
