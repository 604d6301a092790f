/* fuzz_ring.c — the shared words a hostile peer writes while a connection
 * runs (ring indices, peer_state, holder and user words) against the real
 * data path: recv/send/poll (io.c, conn.c), the fork claims (sl_claim_rx,
 * sl_claim_tx) and the exec hand-over's index recovery (segment.c). */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn/conn.h"
#include "fuzz.h"
#include "ring/layout.h"
#include "runtime/log.h"
#include "ring/segment.h"
#include "socket/sock_state.h"
#include "runtime/testing.h"

enum op {
	OP_PEER_WRITE_IDX,  /* our rx_write, near our read index */
	OP_PEER_READ_IDX,   /* our peer_read, near our write index */
	OP_PEER_REMOTE_WR,  /* the peer's rx_write (our published write index) */
	OP_PEER_REMOTE_RD,  /* the peer's peer_read (our published read index) */
	OP_PEER_STATE,      /* SL_PEER_* bits */
	OP_PEER_WAKE_WORDS, /* the arm words in both areas */
	OP_HOLDERS,         /* our side's holder count */
	OP_FORKED_USER,     /* another process of ours used a direction last */
	OP_PEER_SENDS,      /* a well-behaved peer: k bytes into our ring */
	OP_PEER_READS,      /* a well-behaved peer: reads what we sent */
	OP_RECV,
	OP_SEND,
	OP_POLL,
	OP_CONTRACT,        /* the ring calls' own promises, taken directly */
	OP_ADOPT,           /* the exec hand-over's recovery of the indices */
	OP_COUNT
};

static int kfd = -1, kpeer = -1;
static unsigned char buf[1u << 17];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int sv[2];

	(void)argc;
	(void)argv;
	setenv("SCILAN_FABRIC", "shm", 1);
	/* The companion socket: never readable, so the peer never looks gone. */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	kfd = sv[0];
	kpeer = sv[1];
	sl_log_set_level(SL_LOG_ERROR); /* resets are expected: no warning per input */
	/* A hostile move owes bytes nobody sends: do not wait 5 s for each. */
	sl_bypass_wait_ms = 0;
	return 0;
}

static uint64_t near(struct fuzz_in *in, uint64_t base)
{
	uint8_t how = fuzz_u8(in);

	if (how & 0x80)
		return fuzz_u64(in);
	return base + (uint64_t)(int64_t)(int32_t)fuzz_u32(in);
}

static void check_contracts(struct sl_sock *s, uint64_t want)
{
	int64_t v;

	sl_lock(&s->rx_lock);
	v = sl_rx_waiting(s);
	FUZZ_CHECK(v >= -1 && v <= (int64_t)s->rx.cap, "sl_rx_waiting %lld of %llu", (long long)v,
		   (unsigned long long)s->rx.cap);
	sl_claim_rx(s);
	v = sl_ring_rx_avail(&s->rx);
	FUZZ_CHECK(v >= -1 && v <= (int64_t)s->rx.cap, "sl_ring_rx_avail %lld of %llu", (long long)v,
		   (unsigned long long)s->rx.cap);
	sl_unlock(&s->rx_lock);
	sl_lock(&s->tx_lock);
	v = sl_tx_room(s, want);
	FUZZ_CHECK(v >= -1 && v <= (int64_t)s->tx.cap, "sl_tx_room %lld of %llu", (long long)v,
		   (unsigned long long)s->tx.cap);
	sl_claim_tx(s);
	v = sl_ring_tx_space(&s->tx, want);
	FUZZ_CHECK(v >= -1 && v <= (int64_t)s->tx.cap, "sl_ring_tx_space %lld of %llu", (long long)v,
		   (unsigned long long)s->tx.cap);
	sl_unlock(&s->tx_lock);
}

static void run_op(struct sl_sock *s, struct sl_seg_holders *h, struct fuzz_in *in)
{
	uint8_t op = fuzz_u8(in) % OP_COUNT;
	size_t n = fuzz_u32(in) % sizeof(buf);
	struct iovec iov = { buf, n };
	ssize_t r;

	switch (op) {
	case OP_PEER_WRITE_IDX:
		atomic_store(&s->own_ctl->rx_write, near(in, s->rx.read));
		break;
	case OP_PEER_READ_IDX:
		atomic_store(&s->own_ctl->peer_read, near(in, s->tx.write));
		break;
	case OP_PEER_REMOTE_WR:
		atomic_store(&s->peer_ctl->rx_write, near(in, s->tx.write));
		break;
	case OP_PEER_REMOTE_RD:
		atomic_store(&s->peer_ctl->peer_read, near(in, s->rx.read));
		break;
	case OP_PEER_STATE:
		atomic_store(&s->own_ctl->peer_state, fuzz_u32(in));
		break;
	case OP_PEER_WAKE_WORDS:
		atomic_store(&s->own_ctl->wake_on_data, fuzz_u32(in));
		atomic_store(&s->own_ctl->wake_on_space, fuzz_u32(in));
		atomic_store(&s->peer_ctl->wake_on_data, fuzz_u32(in));
		break;
	case OP_HOLDERS:
		atomic_store(&h->count[s->own_area], (int32_t)fuzz_u32(in));
		break;
	case OP_FORKED_USER:
		atomic_store(&s->users[fuzz_u8(in) & 1], (int32_t)fuzz_u32(in));
		break;
	case OP_PEER_SENDS:
		atomic_fetch_add(&s->own_ctl->rx_write, n % (s->rx.cap + 1));
		break;
	case OP_PEER_READS:
		atomic_store(&s->own_ctl->peer_read, atomic_load(&s->peer_ctl->rx_write));
		break;
	case OP_RECV:
		r = sl_recvv(s, &iov, 1, MSG_DONTWAIT | (fuzz_u8(in) & 1 ? MSG_PEEK : 0));
		FUZZ_CHECK(r >= -1 && r <= (ssize_t)n, "recv of %zu returned %zd", n, r);
		/* EPIPE: a peer that wrote RESET_AFTER_FIN without its FIN (only a hostile
		 * one can) leaves the error of a reset after FIN pending. */
		FUZZ_CHECK(r >= 0 || errno == EAGAIN || errno == ECONNRESET || errno == EPIPE, "recv: errno %d", errno);
		break;
	case OP_SEND:
		r = sl_sendv(s, &iov, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
		FUZZ_CHECK(r >= -1 && r <= (ssize_t)n, "send of %zu returned %zd", n, r);
		FUZZ_CHECK(r >= 0 || errno == EAGAIN || errno == ECONNRESET || errno == EPIPE, "send: errno %d",
			   errno);
		break;
	case OP_POLL:
		sl_conn_ready(s, POLLIN | POLLOUT | POLLRDHUP);
		break;
	case OP_CONTRACT:
		check_contracts(s, n ? n : 1);
		break;
	case OP_ADOPT:
		if (!sl_segment_recover_indices(s))
			sl_conn_reset(s, "fuzz: impossible indices handed over");
		break;
	}
}

/* What a move to kernel TCP re-sent on the companion socket (bypass.c) is
 * the peer's stream, which nobody reads here: drained before each input, or
 * the socket fills over many inputs and a later move waits for room forever. */
static void drain_peer(void)
{
	char buf[4096];

	while (recv(kpeer, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t geo = fuzz_u8(&in);
	struct sl_seg_header hdr;
	struct sl_sock *s;
	void *base;
	int steps = 0;

	drain_peer();
	sl_segment_layout(&hdr, SL_RING_MIN << (geo & 3), SL_RING_MIN << ((geo >> 2) & 3));
	/* Exactly the mapping's bytes: an access outside is an ASan report. */
	base = aligned_alloc(SL_PAGE, hdr.total_size);
	FUZZ_CHECK(base != NULL, "aligned_alloc");
	memset(base, 0, hdr.total_size);
	memcpy(base, &hdr, sizeof(hdr));
	s = sl_sock_new(kfd, AF_INET, SL_FRESH);
	FUZZ_CHECK(s != NULL, "sl_sock_new");
	sl_segment_bind(s, base, hdr.total_size, (geo >> 4) & 1, &hdr);
	atomic_store(&s->state, SL_CONNECTED);
	while (in.left && steps++ < 64)
		run_op(s, (struct sl_seg_holders *)((unsigned char *)base + SL_SEG_HOLDERS_OFF), &in);
	sl_segment_unbind(s);
	atomic_store(&s->state, SL_FRESH);
	free(base);
	return 0;
}
