/* layout.h — the shared-memory layout of one scilan connection: the segment
 * header and the two per-side areas (control words plus receive ring).
 * Everything here may be written by an untrusted peer; readers validate.
 */
#ifndef SCILAN_LAYOUT_H
#define SCILAN_LAYOUT_H

#include <stdatomic.h>
#include <stdint.h>

#define SL_CACHELINE 64
#define SL_PAGE 4096u
#define SL_SEG_MAGIC 0x3147455320434c53ull /* "SLC SEG1" little-endian */
#define SL_SEG_VERSION 1u

/* Ring capacity limits (bytes, powers of two). */
#define SL_RING_MIN (4u << 10)
#define SL_RING_MAX (256u << 20)
/* What the creator of a memfd segment reserves of each ring (and all of the
 * header and control pages); each sender reserves the rest of its ring as it
 * first reaches it (ring.c, sl_ring_tx_extend). */
#define SL_RING_RESERVE_FIRST (16u << 10)

/* peer_state bits, written by the peer into the area it does not own. */
#define SL_PEER_ATTACHED 0x1u /* server side mapped the segment (client may drop its fd) */
#define SL_PEER_SHUT_WR 0x2u  /* peer sends nothing after rx_write: EOF once drained */
#define SL_PEER_CLOSED 0x4u   /* peer closed: it reads nothing more (our sends get EPIPE) */
#define SL_PEER_RESET 0x8u    /* peer found the connection corrupt: ECONNRESET */
#define SL_PEER_UNFENCED 0x10u /* peer publishes data unfenced: sleep for data only after membarrier */
#define SL_PEER_RESET_AFTER_FIN 0x20u /* with RESET: the peer had sent its FIN (SHUT_WR) first, so the
				       * error is EPIPE, as TCP's RST in CLOSE_WAIT, and recv ends in 0 */

/* Urgent marks the receiver can still take one by one (TCP handles each
 * urgent pointer as its segment arrives); older ones count as coalesced. */
#define SL_URG_MARKS 8
#define SL_PEER_PLAIN 0x40u    /* peer moved the connection to kernel TCP: read and write nothing here */
#define SL_PEER_PLAIN_AT_CLOSE 0x100u /* with PLAIN: the peer moved only the tail nobody had read, at
				       * its close (stall.c): not a fallback, both ends stay counted
				       * as accelerated */
#define SL_PEER_EVQ 0x80u      /* peer marks our epoll sets' event queues (evq_want, evq[]): a peer
				* without it (an older library) has its connections scanned */

/* marker_flags (evq.c): marker_uid and marker_gid are set; the peer has
 * CAP_SYS_PTRACE; a mark of the peer's could not take one of the owner's
 * sets (the peer's process changed user since, ran out of descriptors, or
 * found a registration naming what is not a set's queue), or the peer can
 * take no process's descriptors at all (Yama, a kernel without
 * pidfd_getfd); the peer takes the sets' descriptors with pidfd_getfd, so
 * marker_uid and marker_gid are its real ids (an older library: effective
 * ids, and it opens them through /proc/PID/fd). */
#define SL_MARKER_CRED 0x1u
#define SL_MARKER_ANY 0x2u
#define SL_MARKER_LOST 0x4u
#define SL_MARKER_GETFD 0x8u
/* marker_pidns is set: the peer's pid namespace, whose pids its marks can
 * name (pidfd_open takes a pid of the caller's namespace). */
#define SL_MARKER_PIDNS 0x10u

/* One epoll set of the peer's holding the connection (evq.c): where its
 * ready bitmap and bell are (process pid's descriptors memfd and bell) and
 * the connection's bit in it.  The peer's word only: the owner takes those
 * descriptors with pidfd_getfd, never opens a path, and uses them only
 * once they prove to be a set's sealed queue and its pipe.  claim is taken by compare-and-swap; pub is
 * stored last (nonzero: valid), so the owner reads the words between two
 * equal loads of pub. */
#define SL_EVQ_CONN_SLOTS 4
struct sl_evq_reg {
	_Atomic uint64_t claim;
	_Atomic uint64_t pub;
	_Atomic uint64_t set_id;
	_Atomic int32_t pid, memfd, bell;
	_Atomic uint32_t index;
};

/* The control block at the start of each area.  The area lives in the memory
 * of the side that RECEIVES into it ("owner"); every word is written by the
 * other side ("peer") so that the owner only ever reads its own memory on the
 * fast path.  The wake_on_* words are also cleared by the owner (exchange).
 * Each word has its own cache line so the owner's polling of one does not
 * bounce with the peer's writes of another.
 */
struct sl_area_ctl {
	_Alignas(SL_CACHELINE) _Atomic uint64_t rx_write;       /* peer's producer index into this ring */
	_Alignas(SL_CACHELINE) _Atomic uint64_t peer_read;      /* peer's consumer index of the ring in the peer's area */
	_Alignas(SL_CACHELINE) _Atomic uint32_t wake_on_data;   /* peer sleeps until owner sends data */
	_Atomic uint32_t data_arms;    /* peer's arms of wake_on_data so far (any count): the owner's
					* fence review sees the peer about to sleep, also when the
					* peer's re-check then found data and it never slept */
	_Alignas(SL_CACHELINE) _Atomic uint32_t wake_on_space;  /* peer sleeps until owner frees ring space */
	_Alignas(SL_CACHELINE) _Atomic uint32_t peer_state;     /* SL_PEER_* bits */
	_Alignas(SL_CACHELINE) _Atomic uint64_t urg_count;      /* peer's urgent sends (MSG_OOB) so far */
	_Alignas(SL_CACHELINE) _Atomic uint64_t urg_mark[SL_URG_MARKS]; /* urgent send i's mark at [i % SL_URG_MARKS]:
								 * the stream index just past its urgent byte;
								 * stored (with urg_count) before the rx_write
								 * that covers the byte */
	_Alignas(SL_CACHELINE) _Atomic uint64_t sender_room;    /* bytes the peer keeps in flight at most
								 * (its SO_SNDBUF); 0: the whole ring */
	_Alignas(SL_CACHELINE) _Atomic uint64_t plain_from;     /* with SL_PEER_PLAIN: the index of this ring
								 * at which the peer's kernel stream resumes */
	/* The peer's epoll sets (event queues, evq.c) that hold this
	 * connection: the owner marks set k's ready bit at its next data or
	 * state change (bit 2k of evq_want) or room it frees (bit 2k+1),
	 * clearing the bits it acts on; the peer sets them again. */
	_Alignas(SL_CACHELINE) _Atomic uint32_t evq_want;
	_Alignas(SL_CACHELINE) struct sl_evq_reg evq[SL_EVQ_CONN_SLOTS];
	/* Who marks the owner's epoll sets: the peer's credentials as it set the
	 * connection up (SL_MARKER_* bits; zero from an older library).  The
	 * peer opens a set through /proc/PID/fd, which the kernel allows a
	 * process of the owner's uids and gids, or one with CAP_SYS_PTRACE. */
	_Alignas(SL_CACHELINE) _Atomic uint32_t marker_flags;
	_Atomic uint32_t marker_uid, marker_gid;
	_Atomic uint32_t marker_pidns;
};

/* The data of an area starts one page after the area's start. */
#define SL_AREA_CTL_SIZE SL_PAGE
_Static_assert(sizeof(struct sl_area_ctl) <= SL_AREA_CTL_SIZE, "control block fits its page");

/* Segment header: written once by the creator (the connecting side) before it
 * publishes the segment; the attaching side copies and validates it once. */
struct sl_seg_header {
	uint64_t magic;
	uint32_t version;
	uint32_t header_size;
	uint64_t area_off[2]; /* [0] the creator's receive area, [1] the attacher's */
	uint64_t ring_cap[2];
	uint64_t total_size;
};
#define SL_SEG_HEADER_SIZE SL_PAGE

/* In the header page: which processes of each side hold the connection
 * (fork, exec and SCM_RIGHTS share it; see holders.c).  The last live
 * holder's close is the one the peer sees.  A holder is named by pid and
 * start time, so a process that died without running our code (_exit,
 * SIGKILL) is recognised as gone; holders not named yet (a fork child
 * before its atfork handler ran, a descriptor in flight in SCM_RIGHTS, or
 * more than SL_HOLDER_SLOTS processes) are only counted.  A hostile peer can
 * only mislead its own side's close into EOF or reset. */
#define SL_HOLDER_SLOTS 40
struct sl_holder {
	_Atomic uint64_t tag;   /* sequence << 32 | pid; pid 0: free (the sequence changes at each claim) */
	_Atomic uint64_t start; /* the holder's start time (/proc/PID/stat field 22) */
	_Atomic uint32_t pidns; /* inode of its pid namespace (0 unknown) */
	_Atomic uint32_t ready; /* = the tag's sequence once start and pidns are written */
};
struct sl_seg_holders {
	_Atomic int32_t count[2];   /* holders of each side: named plus unnamed */
	_Atomic int32_t user[2][2]; /* [side][SL_USE_RX/TX]: pid that used the direction last */
	_Atomic int32_t unnamed[2]; /* holders counted but not in slot[] */
	struct sl_holder slot[2][SL_HOLDER_SLOTS];
};
/* The offer word (header page, shm fabric): which transport carries the
 * connection, decided by compare-and-swap so that exactly one of the two
 * ends decides (ARCHITECTURE.md, "Agreement").  The creator stores OFFERED
 * before it publishes the offer; the acceptor moves OFFERED to ATTACHED
 * (rings) or REFUSED; the creator moves OFFERED or REFUSED to REVOKED while
 * it copies its ring bytes onto the kernel socket, then to PLAIN.  The
 * agreement is the header's job alone: ring words are never trusted for it. */
#define SL_OFFER_OFFERED 1u
#define SL_OFFER_ATTACHED 2u
#define SL_OFFER_REFUSED 3u
#define SL_OFFER_REVOKED 4u
#define SL_OFFER_PLAIN 5u
/* After ATTACHED, a bypass (bypass.c) moves the connection to kernel TCP:
 * LED + side names the side that saw the peer's kernel bytes and re-sent its
 * ring; FOLLOWED, that the other side's first process followed.  Every
 * process of both sides reads it, so forked holders move once, not twice. */
#define SL_OFFER_LED 6u /* 6: side 0 led, 7: side 1 led */
#define SL_OFFER_FOLLOWED 8u
/* Device fabric only: the driver stores it into an agreed connection's word
 * (in the receiver's own slice) when the link goes down (failover.c). */
#define SL_OFFER_LINK_DOWN 16u
/* Shm fabric: the connector's last process let go of an undecided offer
 * after a close no hook saw (a raw system call, io_uring), with bytes in the
 * ring that no longer had a kernel socket to move to.  The acceptor resets
 * its connection: a clean end of stream would hide the loss. */
#define SL_OFFER_LOST 32u

/* Agreed, and maybe moved since (bypass.c, failover.c): rings or their move. */
static inline int sl_offer_agreed(uint32_t w)
{
	return w == SL_OFFER_ATTACHED || (w >= SL_OFFER_LED && w != SL_OFFER_LOST);
}
#define SL_SEG_OFFER_OFF 1024

#define SL_USE_RX 0
#define SL_USE_TX 1
#define SL_SEG_HOLDERS_OFF 2048
_Static_assert(sizeof(struct sl_seg_header) <= SL_SEG_OFFER_OFF, "offer word after the header");
_Static_assert(SL_SEG_OFFER_OFF + sizeof(uint32_t) <= SL_SEG_HOLDERS_OFF, "holders after the offer word");
_Static_assert(SL_SEG_HOLDERS_OFF + sizeof(struct sl_seg_holders) <= SL_SEG_HEADER_SIZE, "holders fit the header page");

#endif
