/* fuzz_ctl_area.c — a connection's shared control pages (layout.h: wake and
 * marker words, peer_state, evq registrations) as a hostile peer writes them,
 * against the victim's readiness, sleep (scilan_poll) and epoll-set paths
 * (evq.c: registration, mark_reg/map_set): no crash, no hang, no file opened. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "conn/conn.h"
#include "evq/evq.h"
#include "fuzz.h"
#include "ring/layout.h"
#include "ring/segment.h"
#include "runtime/log.h"
#include "runtime/stats_file.h"
#include "runtime/testing.h"
#include "scilan.h"
#include "socket/sock_state.h"

enum op {
	OP_WORD,      /* any 32-bit word of either control page */
	OP_REG,       /* a set registration, as the peer's own or over ours */
	OP_STATE,     /* peer_state and the arm words */
	OP_MARKER,    /* who marks our sets (marker_*) */
	OP_SET_BITS,  /* our set's shared bitmap, which every peer maps */
	OP_PEER_SENDS,
	OP_SEND,      /* the sender's mark path (sl_evq_notify) */
	OP_RECV,
	OP_READY,     /* poll readiness (sl_conn_ready) */
	OP_SLEEP,     /* a bounded sleep (scilan_poll) */
	OP_SET,       /* our epoll set: register, want, arm, take, disarm */
	OP_LOCAL,     /* a local change marks our own sets (sl_evq_notify_local) */
	OP_COUNT
};

static const char *const op_name[OP_COUNT] = {
	"WORD", "REG", "STATE", "MARKER", "SET_BITS", "PEER_SENDS", "SEND", "RECV", "READY", "SLEEP", "SET", "LOCAL",
};

static int kfd = -1, kpeer = -1;
static int bell_rx[2], bell_tx[2]; /* the victim reads bell_rx[0], rings bell_tx[1] */
static struct sl_evq set;          /* the victim's epoll set */
/* A file of the victim's that no peer may make it open: an O_PATH and a
 * read-only descriptor of it, and an inotify watch that sees any open. */
static int canary_path = -1, canary_ro = -1, watch = -1;
static char tmpdir[] = "/tmp/fuzz_ctl_area.XXXXXX";
static unsigned char buf[1u << 16];

static void make_canary(void)
{
	char path[sizeof(tmpdir) + 16];
	int fd;

	if (!mkdtemp(tmpdir))
		abort();
	snprintf(path, sizeof(path), "%s/canary", tmpdir);
	/* Large enough to be mapped as a set (map_set's size check). */
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, 1 << 20) < 0)
		abort();
	close(fd);
	canary_path = open(path, O_PATH | O_CLOEXEC);
	canary_ro = open(path, O_RDONLY | O_CLOEXEC);
	watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (canary_path < 0 || canary_ro < 0 || watch < 0 ||
	    inotify_add_watch(watch, path, IN_OPEN | IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE) < 0)
		abort();
}

static void *base;

static void discard(void *arg, uint32_t index);

/* A connection on rings in a fresh segment, as a peer of this library
 * leaves it at set-up (it marks our sets). */
static struct sl_sock *connect_fresh(uint8_t geo)
{
	struct sl_seg_header hdr;
	struct sl_sock *s;

	sl_segment_layout(&hdr, SL_RING_MIN << (geo & 1), SL_RING_MIN << ((geo >> 1) & 1));
	/* Exactly the mapping's bytes: an access outside is an ASan report. */
	base = aligned_alloc(SL_PAGE, hdr.total_size);
	FUZZ_CHECK(base != NULL, "aligned_alloc");
	memset(base, 0, hdr.total_size);
	memcpy(base, &hdr, sizeof(hdr));
	s = sl_sock_new(kfd, AF_INET, SL_FRESH);
	FUZZ_CHECK(s != NULL, "sl_sock_new");
	sl_segment_bind(s, base, hdr.total_size, (geo >> 2) & 1, &hdr);
	s->bell_rx = bell_rx[0];
	s->bell_tx = bell_tx[1];
	sl_evq_publish_marker(s->own_ctl);
	atomic_store(&s->own_ctl->peer_state, SL_PEER_EVQ | SL_PEER_ATTACHED);
	atomic_store(&s->state, SL_CONNECTED);
	return s;
}

static void disconnect(struct sl_sock *s)
{
	s->bell_rx = s->bell_tx = -1;
	sl_segment_unbind(s);
	atomic_store(&s->state, SL_FRESH);
	free(base);
	base = NULL;
}

/* A mark of our own set by a registration that names it rightly: the one
 * mapping (and bell descriptor) the library then keeps for good, made
 * before the first input counts descriptors. */
static void warm_up(void)
{
	struct sl_sock *s = connect_fresh(0);
	struct sl_evq_reg *r = &s->own_ctl->evq[0];

	atomic_store(&r->set_id, set.sh->set_id);
	atomic_store(&r->pid, (int32_t)getpid());
	atomic_store(&r->memfd, set.memfd);
	atomic_store(&r->bell, set.bell_w);
	atomic_store(&r->pub, 1);
	atomic_store(&s->own_ctl->evq_want, 1);
	sl_evq_notify_asked(s, 1);
	if (!sl_evq_pending(&set))
		abort(); /* the mark path does not reach our own set: the target tests nothing */
	sl_evq_take(&set, discard, NULL);
	/* And the process's statistics file, made at its first wait after
	 * its first connection and kept (a move to kernel TCP counts there):
	 * made now, at the first input. */
	sl_stats_conn_open(s);
	sl_stats_publish_idle();
	sl_stats_conn_close(s);
	disconnect(s);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int sv[2];

	(void)argc;
	(void)argv;
	setenv("SCILAN_FABRIC", "shm", 1);
	/* The companion socket: never readable, so the peer never looks gone. */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
	    pipe2(bell_rx, O_NONBLOCK | O_CLOEXEC) < 0 || pipe2(bell_tx, O_NONBLOCK | O_CLOEXEC) < 0)
		abort();
	kfd = sv[0];
	kpeer = sv[1];
	sl_log_set_level(SL_LOG_ERROR); /* resets are expected: no warning per input */
	sl_bypass_wait_ms = 0;
	make_canary();
	setenv("SCILAN_RUNDIR", tmpdir, 1);
	if (sl_evq_open(&set) < 0)
		abort();
	sl_evq_cover(&set, SL_EVQ_SLOTS); /* a registration may name any index */
	fuzz_watch_init();
	warm_up();
	return 0;
}

static int32_t pick_pid(struct fuzz_in *in)
{
	/* Only ourselves or no process: a peer naming a third process is the
	 * same call, and this machine's other processes are not ours to open. */
	static const int32_t other[] = { 0, -1, 0x7fffffff, 1 << 22 };
	uint8_t c = fuzz_u8(in);

	return c & 4 ? other[c & 3] : (int32_t)getpid();
}

static int32_t pick_fd(struct fuzz_in *in)
{
	uint8_t c = fuzz_u8(in);
	const int32_t known[] = { set.memfd, set.bell_w, set.bell_r, canary_path, canary_ro, kfd, watch, -1 };

	return c & 8 ? (int32_t)(c >> 4) * 3 : known[c & 7];
}

/* A registration (evq.c's sl_evq_reg) as the peer writes it: into the area
 * we own (a set of the peer's that our sends mark) or over one of ours. */
static void write_reg(struct sl_sock *s, struct fuzz_in *in)
{
	uint8_t how = fuzz_u8(in);
	struct sl_area_ctl *c = how & 1 ? s->peer_ctl : s->own_ctl;
	struct sl_evq_reg *r = &c->evq[(how >> 1) & 3];
	uint64_t tag = fuzz_u8(in) | 1;

	atomic_store(&r->pub, 0);
	atomic_store(&r->claim, how & 8 ? 0 : tag);
	atomic_store(&r->set_id, how & 16 ? fuzz_u64(in) : set.sh->set_id);
	atomic_store(&r->pid, pick_pid(in));
	atomic_store(&r->memfd, pick_fd(in));
	atomic_store(&r->bell, pick_fd(in));
	atomic_store(&r->index, how & 32 ? fuzz_u32(in) : fuzz_u8(in));
	atomic_store(&r->pub, how & 64 ? 0 : tag);
	atomic_fetch_or(&c->evq_want, fuzz_u32(in));
}

static void discard(void *arg, uint32_t index)
{
	(void)arg;
	FUZZ_CHECK(index < SL_EVQ_SLOTS, "the set took index %u", index);
}

static void use_set(struct sl_sock *s, struct fuzz_in *in)
{
	uint64_t pub = 0;
	uint8_t how = fuzz_u8(in);
	int k;

	(void)sl_evq_eligible(s);
	k = sl_evq_register(&set, s, fuzz_u32(in) % (SL_EVQ_SLOTS + 2), &pub);
	FUZZ_CHECK(k >= -1 && k < SL_EVQ_CONN_SLOTS, "registration slot %d", k);
	if (k >= 0)
		sl_evq_want(s, k, how & 3);
	sl_evq_drain(&set);
	sl_evq_arm(&set);
	(void)sl_evq_pending(&set);
	sl_evq_disarm(&set);
	sl_evq_take(&set, discard, NULL);
	if (k >= 0 && !(how & 4))
		sl_evq_unregister(s, k, pub);
}

static int run_op(struct sl_sock *s, struct fuzz_in *in)
{
	uint8_t op = fuzz_u8(in) % OP_COUNT, a = fuzz_u8(in);
	size_t n = a * 97u % sizeof(buf);
	struct iovec iov = { buf, n };
	struct pollfd p = { .fd = kfd };
	struct sl_area_ctl *c = a & 1 ? s->peer_ctl : s->own_ctl;
	ssize_t r;

	switch (op) {
	case OP_WORD:
		atomic_store((_Atomic uint32_t *)c + fuzz_u16(in) % (sizeof(*c) / 4), fuzz_u32(in));
		break;
	case OP_REG:
		write_reg(s, in);
		break;
	case OP_STATE:
		atomic_store(&c->peer_state, fuzz_u32(in));
		atomic_store(&c->wake_on_data, fuzz_u32(in));
		atomic_store(&c->wake_on_space, fuzz_u32(in));
		break;
	case OP_MARKER:
		atomic_store(&c->marker_flags, fuzz_u32(in));
		atomic_store(&c->marker_uid, fuzz_u32(in));
		atomic_store(&c->marker_gid, fuzz_u32(in));
		atomic_store(&c->marker_pidns, fuzz_u32(in));
		atomic_store(&s->evq_reach, 0);
		break;
	case OP_SET_BITS:
		atomic_store(&set.sh->bits[fuzz_u16(in) % SL_EVQ_WORDS], fuzz_u64(in));
		atomic_store(&set.sh->summary[a % SL_EVQ_SUMMARY], fuzz_u64(in));
		break;
	case OP_PEER_SENDS:
		atomic_fetch_add(&s->own_ctl->rx_write, n % (s->rx.cap + 1));
		break;
	case OP_SEND:
		r = sl_sendv(s, &iov, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
		FUZZ_CHECK(r >= -1 && r <= (ssize_t)n, "send of %zu returned %zd", n, r);
		break;
	case OP_RECV:
		r = sl_recvv(s, &iov, 1, MSG_DONTWAIT);
		FUZZ_CHECK(r >= -1 && r <= (ssize_t)n, "recv of %zu returned %zd", n, r);
		break;
	case OP_READY:
		sl_conn_ready(s, POLLIN | POLLOUT | POLLRDHUP);
		break;
	case OP_SLEEP:
		p.events = (short)(a & 2 ? POLLIN : POLLOUT);
		r = scilan_poll(&p, 1, a >> 6);
		FUZZ_CHECK(r >= -1 && r <= 1, "poll returned %zd", r);
		break;
	case OP_SET:
		use_set(s, in);
		break;
	case OP_LOCAL:
		sl_evq_notify_local(s);
		break;
	}
	return op;
}

/* What the victim wrote towards the peer: drained before each input, or the
 * pipe and the socket fill over many inputs. */
static void drain_peer(void)
{
	while (recv(kpeer, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
	while (read(bell_tx[0], buf, sizeof(buf)) > 0)
		;
}

/* Any access to the canary since the last look (after each operation: the
 * report names the one that opened it). */
static void check_canary(int op)
{
	struct inotify_event ev[8];
	ssize_t got = read(watch, ev, sizeof(ev));

	FUZZ_CHECK(got < 0 && errno == EAGAIN,
		   "operation %s opened or changed a file the peer named (the canary): inotify mask 0x%x", op_name[op],
		   got > 0 ? ev[0].mask : 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct sl_sock *s;
	int steps = 0, before = fuzz_count_fds(), after;

	fuzz_watch_set(FUZZ_HANG_SECONDS, "set-up");
	drain_peer();
	s = connect_fresh(fuzz_u8(&in));
	while (in.left && steps++ < 48) {
		fuzz_watch_set(FUZZ_HANG_SECONDS, "an operation on the hostile control pages");
		check_canary(run_op(s, &in));
	}
	fuzz_watch_set(FUZZ_HANG_SECONDS, "tear-down");
	sl_evq_take(&set, discard, NULL);
	/* And the process's statistics file, made at its first wait after
	 * its first connection and kept (a move to kernel TCP counts there):
	 * made now, at the first input. */
	sl_stats_conn_open(s);
	sl_stats_publish_idle();
	sl_stats_conn_close(s);
	disconnect(s);
	fuzz_watch_set(0, "between inputs");
	after = fuzz_count_fds();
	FUZZ_CHECK(after == before, "%d descriptors open before the input, %d after", before, after);
	return 0;
}
