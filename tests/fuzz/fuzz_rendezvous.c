/* fuzz_rendezvous.c — the rendezvous messages with the descriptors they carry
 * (rendezvous.c; fabric_shm.c's attach): each input is messages and a recipe
 * per SCM_RIGHTS slot, built for real and queued on the listener's real
 * rendezvous socket, then the acceptor's real attach and bells run under a
 * hang watch, the sender playing hostile with its copies; no descriptor stays. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "conn/conn.h"
#include "fabric/fabric.h"
#include "fabric/shm/bells.h"
#include "fabric/shm/rendezvous.h"
#include "fuzz.h"
#include "ring/layout.h"
#include "ring/segment.h"
#include "runtime/log.h"
#include "runtime/sock_diag.h"
#include "socket/sock_state.h"

/* The wire format as rendezvous.c sends it (its struct rdv_msg). */
#define RDV_MAGIC 0x32564452204c53ull
#define RDV_OFFER 1u
#define RDV_CARRIER 2u
#define RDV_NAMED 0x80000000u
struct rdv_wire {
	uint64_t magic;
	uint32_t kind;
	uint32_t hops;
	struct sl_key dst, src;
	uint64_t cookie;
};

#define MAX_SLOTS 5 /* per message: the right count is 3 (an offer) or 1 (a carrier) */
#define MAX_MSGS 4
#define MAX_HELD 128

enum recipe { R_NONE, R_MEMFD, R_PIPE, R_DEV_ZERO, R_DEV_NULL, R_FILE, R_UNIX, R_OPATH, R_EVENTFD, R_COUNT };

static struct sl_key local, peer; /* the accepted TCP connection, as the acceptor sees it */
static int tcp_acc = -1, rdv = -1;
static uint64_t conn_cookie; /* the connector's TCP socket (an offer made before its port was known names it) */
static struct sl_sock *listener;
static char tmpdir[] = "/tmp/fuzz_rendezvous.XXXXXX";
/* What the hostile sender keeps: its copy of each passed descriptor (the
 * same open file description as the acceptor's) and the other end of its
 * pipes and sockets. */
static int held[MAX_HELD], nheld;

static void hold(int fd)
{
	if (fd < 0)
		return;
	if (nheld == MAX_HELD) {
		close(fd);
		return;
	}
	held[nheld++] = fd;
}

static struct sl_key key_of(int fd, bool own)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	struct sl_key k = { .family = AF_INET };

	if ((own ? getsockname(fd, (struct sockaddr *)&a, &len) : getpeername(fd, (struct sockaddr *)&a, &len)) < 0)
		abort();
	memcpy(k.addr, &a.sin_addr, 4);
	k.port = ntohs(a.sin_port);
	return k;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sockaddr_in any = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(any), clen = sizeof(conn_cookie);
	uint64_t other;
	uid_t uid;
	int l, c;

	(void)argc;
	(void)argv;
	if (!mkdtemp(tmpdir))
		abort();
	setenv("SCILAN_FABRIC", "shm", 1);
	setenv("SCILAN_RUNDIR", tmpdir, 1);
	sl_log_set_level(SL_LOG_ERROR); /* refusals are expected: no warning per input */
	/* A real loopback connection: the acceptor asks the kernel (sock_diag)
	 * who holds its other end, and the answer must be us. */
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || c < 0 || bind(l, (struct sockaddr *)&any, len) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (struct sockaddr *)&any, &len) < 0 || connect(c, (struct sockaddr *)&any, len) < 0 ||
	    (tcp_acc = accept4(l, NULL, NULL, SOCK_CLOEXEC)) < 0 ||
	    getsockopt(c, SOL_SOCKET, SO_COOKIE, &conn_cookie, &clen) < 0)
		abort();
	local = key_of(tcp_acc, true);
	peer = key_of(tcp_acc, false);
	/* Also the library's one kept netlink socket, open before the first
	 * input counts descriptors. */
	if (sl_diag_tcp_identity(tcp_acc, &peer, &local, &uid, &other) < 0 || other != conn_cookie)
		abort();
	rdv = sl_rdv_listen(&local);
	listener = sl_sock_new(l, AF_INET, SL_LISTENING);
	if (rdv < 0 || !listener)
		abort();
	listener->rdv_fd[0] = rdv;
	fuzz_watch_init();
	return 0;
}

/* A segment as a connector makes it (or not quite). */
static int make_memfd(struct fuzz_in *in)
{
	uint8_t sel = fuzz_u8(in), seals = SL_SEGMENT_SEALS;
	uint32_t word = SL_OFFER_OFFERED;
	struct sl_seg_header hdr;
	off_t size;
	int fd = memfd_create("fuzz-seg", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -1;
	sl_segment_layout(&hdr, SL_RING_MIN << (sel & 3), SL_RING_MIN << ((sel >> 2) & 3));
	size = (off_t)hdr.total_size;
	if (!(sel & 0x80)) { /* else exactly right */
		uint8_t at = fuzz_u8(in);

		if (sel & 0x10)
			((uint8_t *)&hdr)[at % sizeof(hdr)] ^= fuzz_u8(in);
		if (sel & 0x20)
			size = (off_t)(fuzz_u32(in) % (4u * SL_PAGE + hdr.total_size));
		if (sel & 0x40)
			word = fuzz_u32(in);
		seals = fuzz_u8(in) & (SL_SEGMENT_SEALS | F_SEAL_WRITE);
	}
	if (ftruncate(fd, size) < 0 || pwrite(fd, &hdr, sizeof(hdr), 0) < 0 ||
	    (size >= SL_SEG_OFFER_OFF + 4 && pwrite(fd, &word, sizeof(word), SL_SEG_OFFER_OFF) < 0) ||
	    ftruncate(fd, size) < 0 || (seals && fcntl(fd, F_ADD_SEALS, seals) < 0))
		abort();
	return fd;
}

static int make_pipe(struct fuzz_in *in)
{
	uint8_t f = fuzz_u8(in);
	int p[2], pass, other;
	static const char fill[4096];
	size_t n = (f >> 3) & 3;

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	pass = f & 1 ? p[1] : p[0];
	other = f & 1 ? p[0] : p[1];
	/* Bytes waiting (a full pipe: until EAGAIN). */
	for (size_t left = n == 3 ? SIZE_MAX : n == 2 ? sizeof(fill) : n; left;) {
		ssize_t w = write(p[1], fill, left < sizeof(fill) ? left : sizeof(fill));

		if (w <= 0)
			break;
		left = left == SIZE_MAX ? left : left - (size_t)w;
	}
	if (!(f & 2))
		fcntl(pass, F_SETFL, fcntl(pass, F_GETFL) & ~O_NONBLOCK);
	if (f & 4)
		close(other); /* no reader (or no writer) but the acceptor */
	else
		hold(other);
	return pass;
}

static int send_msg(struct fuzz_in *in, int conn, int depth);

/* A Unix socket, maybe with a message queued in it (what a carrier carries). */
static int make_unix(struct fuzz_in *in, int depth)
{
	uint8_t f = fuzz_u8(in);
	int sv[2];

	if (socketpair(AF_UNIX, (f & 1 ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	if ((f & 2) && depth == 0)
		send_msg(in, sv[1], depth + 1);
	if (f & 4)
		close(sv[1]);
	else
		hold(sv[1]);
	return sv[0];
}

static int make_fd(struct fuzz_in *in, int depth)
{
	uint8_t f;
	int fd;

	switch (fuzz_u8(in) % R_COUNT) {
	case R_MEMFD:
		return make_memfd(in);
	case R_PIPE:
		return make_pipe(in);
	case R_DEV_ZERO:
		return open("/dev/zero", O_RDWR | O_CLOEXEC | (fuzz_u8(in) & 1 ? O_NONBLOCK : 0));
	case R_DEV_NULL:
		return open("/dev/null", O_RDWR | O_CLOEXEC);
	case R_FILE:
		fd = open(tmpdir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		if (fd >= 0 && ftruncate(fd, (off_t)fuzz_u8(in) * SL_PAGE) < 0)
			abort();
		return fd;
	case R_UNIX:
		return make_unix(in, depth);
	case R_OPATH:
		return open(fuzz_u8(in) & 1 ? tmpdir : "/dev/zero", O_PATH | O_CLOEXEC);
	case R_EVENTFD:
		f = fuzz_u8(in);
		return eventfd(f >> 1, EFD_CLOEXEC | (f & 1 ? EFD_NONBLOCK : 0));
	}
	return -1;
}

/* One message and its descriptors onto conn; the sender keeps its copies. */
static int send_msg(struct fuzz_in *in, int conn, int depth)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * MAX_SLOTS)];
	} ctl;
	uint8_t mode = fuzz_u8(in), f = mode & 3 ? fuzz_u8(in) : 0;
	struct rdv_wire m = { .magic = RDV_MAGIC, .kind = (mode & 3) == 2 ? RDV_CARRIER : RDV_OFFER,
			      .hops = mode & 4 ? RDV_NAMED : 0, .dst = local, .src = peer };
	unsigned char raw[2 * sizeof(m)];
	size_t len = sizeof(m);
	int fds[MAX_SLOTS], n = 0, want = fuzz_u8(in) % (MAX_SLOTS + 1);
	struct iovec iov = { .iov_base = raw };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (mode & 8) { /* made before the kernel picked the connector's port */
		m.src.port = 0;
		m.cookie = conn_cookie;
	}
	if ((mode & 3) == 0) { /* any bytes */
		len = fuzz_u8(in) % sizeof(raw);
		fuzz_take(in, raw, len);
	} else {
		if (f & 1)
			m.magic = fuzz_u64(in);
		if (f & 2)
			m.kind = fuzz_u32(in);
		if (f & 4)
			m.hops = fuzz_u32(in);
		if (f & 8)
			fuzz_take(in, &m.dst, sizeof(m.dst));
		if (f & 16)
			fuzz_take(in, &m.src, sizeof(m.src));
		if (f & 32)
			m.cookie = fuzz_u64(in);
		if (f & 64) /* another connection's offer */
			m.src.port++;
		memcpy(raw, &m, sizeof(m));
		memset(raw + sizeof(m), 0, sizeof(raw) - sizeof(m));
		if (f & 128)
			len = fuzz_u8(in) % sizeof(raw);
	}
	for (int i = 0; i < want; i++) {
		int fd = make_fd(in, depth);

		if (fd >= 0)
			fds[n++] = fd;
	}
	iov.iov_len = len;
	if (n) {
		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n);
		CMSG_FIRSTHDR(&msg)->cmsg_level = SOL_SOCKET;
		CMSG_FIRSTHDR(&msg)->cmsg_type = SCM_RIGHTS;
		CMSG_FIRSTHDR(&msg)->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
		memcpy(CMSG_DATA(CMSG_FIRSTHDR(&msg)), fds, sizeof(int) * (size_t)n);
	}
	if (!(mode & 0x80)) /* else a connector that has not sent yet */
		(void)sendmsg(conn, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
	for (int i = 0; i < n; i++)
		hold(fds[i]);
	return 0;
}

/* The acceptor's side of an attached connection, with the sender meddling
 * through the descriptions it shares: the bells, as sleeps and sends use them. */
static void use_bells(struct sl_sock *s, struct fuzz_in *in)
{
	for (int step = 0; step < 8 && in->left; step++) {
		uint8_t op = fuzz_u8(in), i = fuzz_u8(in);
		int fd = nheld ? held[i % nheld] : -1;

		switch (op % 6) {
		case 0:
			sl_shm_stimulate(s, op >> 4);
			break;
		case 1:
			sl_shm_ring_self(s, op >> 4);
			break;
		case 2:
			sl_shm_drain(s);
			break;
		case 3:
			sl_conn_kernel_ended(s);
			break;
		case 4: /* a shared description's flags are the sender's too */
			if (fd >= 0)
				fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) ^ O_NONBLOCK);
			break;
		case 5: /* the other end goes */
			if (fd >= 0) {
				close(fd);
				nheld--;
				held[i % (nheld + 1)] = held[nheld];
			}
			break;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	int before = fuzz_count_fds(), conns[MAX_MSGS], nmsgs, e, r;
	struct sl_sock *s;

	fuzz_watch_set(FUZZ_HANG_SECONDS, "queueing the messages");
	nheld = 0;
	nmsgs = 1 + fuzz_u8(&in) % MAX_MSGS;
	listener->maybe_shared = fuzz_u8(&in) & 1; /* others' offers: back to the queue, else kept */
	for (int i = 0; i < nmsgs; i++) {
		conns[i] = sl_rdv_connect(&local);
		if (conns[i] >= 0)
			send_msg(&in, conns[i], 0);
	}
	s = sl_sock_new(tcp_acc, AF_INET, SL_FRESH);
	FUZZ_CHECK(s != NULL, "sl_sock_new");
	fuzz_watch_set(FUZZ_HANG_SECONDS, "the acceptor's attach (sl_rdv_take, attach_passed)");
	r = sl_fabric_shm.attach(s, listener, &local, &peer);
	if (r == 1) {
		FUZZ_CHECK(s->seg && s->bell_rx >= 0 && s->bell_tx >= 0, "attached without a segment or bells");
		fuzz_watch_set(FUZZ_HANG_SECONDS, "the attached side's bells (bells.c)");
		use_bells(s, &in);
		fuzz_watch_set(FUZZ_HANG_SECONDS, "tear-down");
		sl_fabric_shm.offer_withdraw(s);
	} else {
		FUZZ_CHECK(r == 0, "attach returned %d", r);
		FUZZ_CHECK(!s->seg && s->bell_rx < 0 && s->bell_tx < 0 && s->memfd < 0,
			   "a refused offer left descriptors (bells %d %d, memfd %d)", s->bell_rx, s->bell_tx, s->memfd);
	}
	atomic_store(&s->state, SL_FRESH);
	/* What the library sent back or left queued, and what it kept. */
	while ((e = accept4(rdv, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		close(e);
	sl_rdv_forget_listener(rdv);
	for (int i = 0; i < nmsgs; i++)
		if (conns[i] >= 0)
			close(conns[i]);
	for (int i = 0; i < nheld; i++)
		close(held[i]);
	fuzz_watch_set(0, "between inputs");
	e = fuzz_count_fds();
	FUZZ_CHECK(e == before, "%d descriptors open before the input, %d after", before, e);
	return 0;
}
