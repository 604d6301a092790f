/* sock_state.h — the per-socket state libscilan keeps beside each kernel fd, the
 * fd -> state table, and the small locks that serialize each ring's users.
 */
#ifndef SCILAN_SOCK_STATE_H
#define SCILAN_SOCK_STATE_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "conn/seam.h"
#include "runtime/fallback.h"
#include "sync/ring_lock.h"
#include "ring/ring.h"
#include "fabric/shm/offer_names.h"

enum sl_state {
	SL_UNUSED = 0,    /* table slot free */
	SL_PLAIN,         /* a kernel socket scilan does not accelerate: calls go to libc */
	SL_FRESH,         /* created, not connected or listening (may be bound) */
	SL_LISTENING,
	SL_CONNECTING,    /* non-blocking connect in progress with an offer out */
	SL_CONNECTED,     /* rings attached */
};

/* A network endpoint as the registry keys it (v4-mapped v6 addresses folded to v4). */
struct sl_key {
	int family;             /* AF_INET or AF_INET6 */
	unsigned char addr[16]; /* 4 or 16 bytes used */
	uint16_t port;          /* host order */
	/* An IPv6 link-local address's interface (its sin6_scope_id), else 0:
	 * fe80::1 on two interfaces is two addresses. */
	uint32_t scope;
};

/* Directions a thread can sleep for (bit masks), and the wake-up tokens a
 * bell carries: which direction woke, or a local shutdown/close. */
#define SL_DIR_DATA 1
#define SL_DIR_SPACE 2
#define SL_TOKEN_DATA 1
#define SL_TOKEN_SPACE 2
#define SL_TOKEN_LOCAL 4

#define SL_MAX_REG 8
#define SL_REG_PATH_SIZE 256

/* The receiver's view of TCP urgent data (urgent.c), under rx_lock. */
enum { SL_URG_NONE, SL_URG_VALID, SL_URG_READ }; /* VALID until recv(MSG_OOB) takes the byte */
struct sl_urg {
	uint64_t count_seen;        /* urgent marks of our area taken so far (its urg_count) */
	uint64_t seq;               /* stream index of the urgent byte (state != NONE) */
	int state;
	unsigned char byte;
	_Atomic bool oobinline;     /* SO_OOBINLINE as last set or asked of the kernel */
	_Atomic uint64_t carriers;  /* the peer's SIGURG carrier bytes consumed from the kernel socket */
	_Atomic bool carriers_busy; /* a thread is consuming them */
};

/* A connection's counters: in the process's stats file while it has a slot
 * there (scilan_ctl stat reads them live), else in the socket itself. */
struct sl_counters {
	_Atomic uint64_t tx_bytes, rx_bytes, sleeps, wakeups;
};

struct sl_lease_lock;
struct sl_fabric_ops;
struct sl_strip;

/* A listener's endpoints on the device links (fabric_dev.c), one per link
 * that took its registration: as many as the node has links (a node of an
 * 8-port fabric has 7, a guest running the 8-port mock 56). */
struct sl_dev_listen {
	int count, cap;
	struct {
		int fd;   /* the endpoint (SCILAN_IOC_LISTEN), one of our own descriptors */
		int link; /* N of its /dev/scilanN */
	} at[];
};

struct sl_sock {
	int fd;                 /* the kernel fd our own calls use (one of the aliases) */
	_Atomic int fd_refs;    /* table slots naming this socket: dup() adds aliases */
	_Atomic int state;      /* enum sl_state */
	pid_t owner;            /* process that created it (fork copies the table) */
	int domain;
	pthread_mutex_t ctl_lock; /* connect/accept/shutdown/close transitions */
	pthread_mutex_t sleep_lock[2]; /* [0] data, [1] space: held by the one thread of ours that sleeps for it */
	_Atomic int sleepers[2];       /* threads holding sleep_lock[i] */
	unsigned sends_since_check;    /* under tx_lock: sends since we last asked whether the peer lives */
	_Atomic bool peer_waited;      /* the peer slept or waited in a set for our data (conn.c) */
	_Atomic bool peer_waited_lately; /* ... since the last fence review (conn.c) */
	bool fence_owner;              /* we published our mode (SL_PEER_UNFENCED) and may switch it */
	/* under tx_lock (conn.c): quiet fence reviews in a row, how many it
	 * takes to publish unfenced again (doubling when that did not last),
	 * and whether a review made us unfenced */
	unsigned fence_quiet, fence_quiet_needed;
	uint32_t data_arms_seen;       /* the peer's data_arms at the last review */
	_Atomic uint32_t data_arms;    /* our arms for data, which we store in the peer's area (wait.c) */
	bool unfenced_by_review;
	struct sl_lock tx_lock, rx_lock;

	/* settings */
	_Atomic int poll_us;    /* forced spin, or SL_POLL_ADAPTIVE (spin_policy.h) */
	_Atomic uint64_t spin_learn[2]; /* [0] data, [1] space: the learnt spin (spin_policy.c) */
	_Atomic bool nonblock_hint; /* O_NONBLOCK as last seen */
	/* sl_forks + 1 when the hint became exact (this process set it: socket,
	 * accept4, a hooked fcntl or FIONBIO; or read it from the kernel, with
	 * no other holder), 0 when it is not; exact while sl_forks stays and the
	 * socket goes to no other process (sl_io_nonblocking, conn_spin.c). */
	_Atomic unsigned nonblock_exact_at;
	/* SO_RCVTIMEO [0] and SO_SNDTIMEO [1] in ms (-1: none) as the kernel
	 * last said, trusted by a sleep under the same rule as the O_NONBLOCK
	 * hint (timeo_exact_at[i]: the fork count + 1 when asked; a setsockopt
	 * of either, or a coming holder, forgets both). */
	_Atomic int timeo_ms[2];
	_Atomic unsigned timeo_exact_at[2];
	uint64_t ring_bytes;    /* receive ring capacity requested (SO_RCVBUF) */
	int sndbuf;             /* SO_SNDBUF as the application set it */
	_Atomic int rcvlowat;   /* SO_RCVLOWAT as the kernel socket holds it; 0: not known
				 * here (a socket from another process), asked at first need */
	_Atomic int tcp_inq;    /* TCP_INQ on (1) or off (0); -1: not known here, asked at
				 * the first recvmsg */
	bool nodelay;
	_Atomic signed char evq_reach; /* can the peer mark our epoll sets (evq.c)? 0 not known yet, 1 yes, -1 no */
	_Atomic bool evq_refused;      /* a registration in this connection's areas named what is not an
					* epoll set's queue: we mark none of them any more (evq.c) */

	/* listener */
	int reg_fd[SL_MAX_REG]; /* registry entries held (OFD read lock), -1 if none: */
	/* [0] as bound, [1] the IPv4 alias of a dual-stack IPv6 listener, then
	 * the cluster-map addresses of a wildcard one.  Allocated at this
	 * state's first listen and kept with it: inline, its 2 KiB set every
	 * connection's hot fields two pages apart (lifecycle.c). */
	char (*reg_path)[SL_REG_PATH_SIZE];
	/* shm fabric: each entry's flags word mapped (registry.c), read at every
	 * accept without a system call; NULL if not mapped. */
	const _Atomic uint32_t *reg_flags[SL_MAX_REG];
	int rdv_fd[SL_MAX_REG];  /* the rendezvous sockets for the same addresses (rendezvous.c), -1 if none */
	/* each one's gate (sync/lease_lock.c): made with it, shared by fork;
	 * NULL when it came another way (rendezvous.h, sl_rdv_take) */
	struct sl_lease_lock *rdv_gate[SL_MAX_REG];
	/* The device links' registrations, separate from the shm fabric's
	 * (NULL: none yet): made at the first listen, grown by a later one
	 * that finds more links, and kept with the state as reg_path is. */
	struct sl_dev_listen *dev_listen;
	int defer_accept;        /* TCP_DEFER_ACCEPT as the program set it (the kernel's rounding), which a
				  * published listener keeps off its kernel socket (sockopt.c); 0 if none */
	bool fastopen_connect;   /* the program set TCP_FASTOPEN_CONNECT: an offered connect takes it off its
				  * kernel socket (lifecycle.c), and it reads back as set (sockopt.c) */

	/* connection */
	void *seg;
	size_t seg_len;
	int own_area;           /* 0 = connecting side, 1 = accepting side */
	_Atomic int32_t *holders; /* processes of our side holding the connection */
	_Atomic int32_t *users;   /* [SL_USE_RX/TX]: which process of our side used it last */
	struct sl_seg_holders *htab; /* the holder table (holders.c); NULL without a segment */
	int holder_slot;          /* our entry in it, or SL_HOLDER_NONE / SL_HOLDER_UNNAMED */
	unsigned fork_mark;       /* the fork this socket was last counted for (holders.c) */
	struct sl_area_ctl *own_ctl, *peer_ctl;
	struct sl_ring_tx tx;
	struct sl_ring_rx rx;
	uint32_t state_to_peer; /* our SL_PEER_* bits, as last written into the peer's area */
	int memfd;              /* the segment: connecting side until the peer attached, and kept
				 * by either side that cannot reopen it (sl_segment_reopenable); else -1 */
	int rdv_conn;           /* connecting side, between lookup and offer: the listener's rendezvous */
	bool rdv_only;          /* with rdv_conn: no acceptor of our user needs the offer as files */
	bool listener_here;     /* after lookup: the listener is in our network namespace */
	bool port_confined;     /* an offer confined our connect's port (offer_port.h) until it returns */
	bool own_port_range;    /* the program set IP_LOCAL_PORT_RANGE: its ports are its to confine */
	/* Another process may hold this socket (sl_sock_maybe_shared): then a
	 * listener's registry entry asks connectors for offer files. */
	bool maybe_shared;      /* received, adopted or passed on */
	unsigned born_fork;     /* sl_forks when the state was made */
	/* agreement (agree.c): the connecting side's offer until it is decided */
	_Atomic uint32_t *offer_word; /* in the segment's header page; NULL: nothing to agree on */
	_Atomic uint32_t agree;       /* SL_AGREE_* bits (agree.h): zero while nothing but the peer's
				       * words can take the connection off the rings, so that the data
				       * path guards the agreement with one load of private memory */
	_Atomic int64_t agree_deadline_ns; /* CLOCK_MONOTONIC: undecided by then, we revoke */
	char offer_path[SL_OFFER_PATH_SIZE];
	/* stall.c: since when the peer took nothing of ours (0: not stalled), and its read index then;
	 * a promotion's kernel stream's progress at the last restart (stall_kernel_seen: one was taken) */
	_Atomic int64_t stall_since_ns;
	_Atomic uint64_t stall_read;
	_Atomic uint64_t stall_kernel;
	_Atomic bool stall_kernel_seen;

	_Atomic bool shut_rd, shut_wr;
	_Atomic bool peer_gone;  /* companion socket reached EOF or error */
	_Atomic int pending_error; /* the kernel's sk_err: ECONNRESET until a recv, send or SO_ERROR takes it */
	_Atomic bool error_noted;  /* pending_error was set for this connection's end (never twice) */
	_Atomic bool reset;      /* connection is dead, ring included; only EOF/EPIPE from here */
	_Atomic bool sent_after_close; /* a send found the peer closed: its kernel would have answered
				        * with RST, so the connection is now reset (EPIPE, data kept) */
	/* The fabric this connection rides (fabric.h): set by connect's choice,
	 * the attach that took it, or the hand-over that brought it (a device
	 * connection has dev_map); shm until then.  Copied by fork. */
	const struct sl_fabric_ops *fabric;
	int bell_rx;             /* bell (pipe) we sleep on: the peer's stimulus, or a local shutdown/close
				  * (device fabric: the /dev/scilanN endpoint) */
	int bell_tx;             /* the peer's bell_rx: writing it is the stimulus (device fabric: -1) */

	/* device fabric (fabric_dev.c) */
	void *dev_map[2];        /* our slice and the peer's slice; NULL: not a device connection */
	size_t dev_slice;        /* bytes of each mapping */
	_Atomic bool dev_lost;   /* the link went down and sl_dev_link_lost decided (fail-over, or a reset behind
				  * private memory in place of the mappings) */
	pthread_mutex_t lost_lock; /* sl_dev_link_lost's decision: a second thread waits for the first's */
	int dev_link;            /* N of the /dev/scilanN it rides; -1: not known */
	void *dev_mirror;        /* tx.mirror's mapping (the holder memfd past its page), for release */
	/* Fail-over to kernel TCP (failover.c): sl_dev_link_lost found the companion
	 * connection worth continuing on; the next guard moves it. */
	_Atomic bool fail_over_due;
	/* After the move, the peer's header still to be read from the kernel
	 * stream: this process's hint (set: look at the record), and the
	 * record, shared with the processes a fork made (failover.c). */
	_Atomic bool strip_pending;
	struct sl_strip *strip;
	uint32_t dev_own_slice, dev_peer_slice; /* our slice and the peer's on that link */
	/* Our epoll sets on the device fabric (evq_dev.c): the peer's sets'
	 * marks pages (we write) and our window's armed pages (we read),
	 * mapped at the first mark; the registration slots our sets took
	 * (bit k: evq[k] in the peer's area), and which set holds each. */
	void *dev_set_map[2];
	_Atomic uint32_t dev_claims;
	_Atomic bool dev_set_member; /* was ever in one of our epoll sets over the device */
	struct sl_evq_dev *_Atomic dev_reg[4];
	/* What we last stored into want byte k of the peer's evq_want while the
	 * peer has not consumed it (0: store it again at the next look). */
	_Atomic uint8_t dev_wanted[4];

	/* Promotion (conn/promotion.c): a live plain connection moving onto
	 * the rings.  late_offer: our (the connector's) late offer is out in
	 * offer_word while the connection stays on kernel TCP; seam_pending:
	 * our receive side reads the kernel stream up to the peer's switch
	 * point (seam_rx, under rx_lock, against seam_point) before the ring. */
	_Atomic bool late_offer;
	_Atomic bool seam_pending;
	struct sl_seam_rx seam_rx;
	struct sl_seam_point seam_point;
	/* When a plain connection tries (promotion_trigger.c): promote_role
	 * says which end it is (SL_PROMOTE_*, 0: it never tries), promote_at_ns
	 * when its next offer or look is due, promote_gap_ms the back-off after
	 * that.  kcalls: threads of ours inside a kernel call that reads or
	 * writes the socket (kept across a reuse of the slot: a thread may
	 * still be in a call on the descriptor that lived here);
	 * promote_gate: an offer or look is being made, and calls wait for it
	 * to end rather than enter the kernel.  The acceptor's listener, and
	 * its listen_gen then (a listener's close or reuse changes it). */
	_Atomic uint8_t promote_role;
	_Atomic int64_t promote_at_ns;
	_Atomic uint32_t promote_gap_ms;
	_Atomic int kcalls;
	_Atomic uintptr_t promote_gate; /* 0, or which thread holds it (promotion_trigger.c) */
	_Atomic bool promote_no_room;   /* acceptor: its last take found no room for its marker */
	_Atomic uint8_t promote_refusals; /* connector: its late offers refused so far */
	_Atomic uint32_t promote_busy_ms; /* the wait after a try that met calls in flight */
	_Atomic bool was_promoted;        /* began on kernel TCP, moved onto the rings (scilan_ctl stat) */
	_Atomic bool promote_return;      /* armed by a link-down move: tries soon, its link may come back */
	_Atomic uint8_t promote_untaken;  /* its late offers nobody took since (a return gives up soon) */
	struct sl_sock *promote_listener;
	uint32_t promote_listener_gen;
	_Atomic uint32_t listen_gen;

	_Atomic uint32_t tx_blocked; /* sends that found the ring full (edge-triggered EPOLLOUT re-arms on it) */
	struct sl_urg urg;          /* urgent data we received */

	/* The connection's ends as set-up learnt them, for the statistics
	 * file (family 0: not known, it asks the kernel). */
	struct sl_key known_local, known_peer;
	/* what the connection carried, for the offer policy (offer_policy.c) */
	_Atomic bool counting_turns;  /* connecting side, offered by us: until the connection paid */
	_Atomic bool sent_unanswered; /* a send of ours since our last receive of data */
	_Atomic uint32_t turns;   /* written under rx_lock: receives of data that followed a send */
	/* connecting side, in the process that connected, offered or kept
	 * plain as short: the destination that learns from it, and when */
	struct sl_key policy_dst;
	int64_t policy_since_ns; /* CLOCK_MONOTONIC */

	/* counters */
	/* &own_ctr, or a slot of the stats file: switched by whichever thread
	 * makes the file (stats_file.c), read through sl_ctr(). */
	struct sl_counters *_Atomic ctr;
	struct sl_counters own_ctr;
	_Atomic int stats_slot;   /* -1: none; written under the stats file's lock */
	_Atomic bool stats_wanted; /* accelerated, its slot when the file is made (set under its lock) */
	/* why kernel TCP carries it (fallback.c); SL_FB_NONE while accelerated */
	enum sl_fb fb_reason;
	enum sl_fb_side fb_side;
};

/* The data path on a connected accelerated socket (io.c): errno as TCP's. */
ssize_t sl_sendv(struct sl_sock *s, const struct iovec *iov, int cnt, int flags);
ssize_t sl_recvv(struct sl_sock *s, const struct iovec *iov, int cnt, int flags);
/* The same for one buffer (send, recv, read, write). */
ssize_t sl_send(struct sl_sock *s, const void *buf, size_t len, int flags);
ssize_t sl_recv(struct sl_sock *s, void *buf, size_t len, int flags);
/* A send of up to len bytes whose source writes them straight into the
 * ring: fill(tx, n, arg) places n bytes at the ring's write index (see
 * sl_ring_tx_copy: offset 0, wrapping at tx->cap), under tx_lock, and returns
 * how many it placed; fewer than n ends the send there (sendfile: end of
 * file, or a read error the source keeps in arg).  -1 with EXDEV: the
 * connection moved to kernel TCP before anything was sent (send there). */
ssize_t sl_send_fill(struct sl_sock *s, size_t len, int flags,
		     size_t (*fill)(const struct sl_ring_tx *tx, size_t n, void *arg), void *arg);
/* The state of fd if its data goes through rings, else NULL. */
struct sl_sock *sl_sock_connected(int fd);
/* The same for a call that reads or writes fd, which goes to the kernel when
 * this is NULL: then *kernel, if not NULL, is the socket that call was
 * counted on (a plain connection that may yet move onto the rings), for
 * sl_promote_kernel_leave after the kernel's call (promotion_trigger.h). */
struct sl_sock *sl_sock_route(int fd, struct sl_sock **kernel);
/* A non-blocking connect with an offer out: move to SL_CONNECTED once the
 * kernel connection is up, or back to SL_FRESH if it failed (lifecycle.c). */
void sl_connect_progress(struct sl_sock *s);

/* This process's pid, kept current across fork (one load on the data path). */
extern pid_t sl_self_pid;
/* Forks this process (and its parents, for a child) made since the library
 * was loaded: a socket older than the last one is held by another process
 * too. */
extern _Atomic unsigned sl_forks;

/* Whether another process holds s's connection now (a fork child, an
 * SCM_RIGHTS receiver, one in flight): it may change what the open file
 * description holds, O_NONBLOCK included, without us seeing it. */
static inline bool sl_sock_held_elsewhere(const struct sl_sock *s)
{
	return atomic_load_explicit(s->holders, memory_order_relaxed) > 1;
}

/* Set by the preload hook, which interposes fcntl, ioctl and syscall:
 * every O_NONBLOCK change this process makes reaches sl_sock_note_nonblock.
 * A program on the native API changes it unseen (conn_spin.c). */
extern _Atomic bool sl_nonblock_changes_seen;

/* What this process knows of a setting the kernel keeps for the socket
 * (O_NONBLOCK, SO_RCVTIMEO) is exact while every change this process makes
 * is seen, it has not forked since, and no other process holds the socket.
 * The stamp to keep with such a value: sl_forks + 1, or 0 when it cannot be
 * exact; sl_sock_still_exact tells whether a kept stamp still holds. */
static inline unsigned sl_sock_exact_stamp(const struct sl_sock *s)
{
	return atomic_load_explicit(&sl_nonblock_changes_seen, memory_order_relaxed) && !sl_sock_held_elsewhere(s)
		       ? atomic_load_explicit(&sl_forks, memory_order_relaxed) + 1
		       : 0;
}

static inline bool sl_sock_still_exact(const struct sl_sock *s, unsigned stamp)
{
	return stamp == atomic_load_explicit(&sl_forks, memory_order_relaxed) + 1 && !sl_sock_held_elsewhere(s);
}

/* O_NONBLOCK as this process just set or read it (socket, accept4, a
 * hooked fcntl or FIONBIO, the kernel's F_GETFL): exact while no other
 * process holds the socket and this one does not fork (sl_io_nonblocking). */
static inline void sl_sock_note_nonblock(struct sl_sock *s, bool on)
{
	atomic_store_explicit(&s->nonblock_hint, on, memory_order_relaxed);
	atomic_store_explicit(&s->nonblock_exact_at, sl_sock_exact_stamp(s), memory_order_release);
}

static inline void sl_sock_forget_timeouts(struct sl_sock *s)
{
	atomic_store_explicit(&s->timeo_exact_at[0], 0, memory_order_relaxed);
	atomic_store_explicit(&s->timeo_exact_at[1], 0, memory_order_relaxed);
}

static inline bool sl_sock_maybe_shared(const struct sl_sock *s)
{
	return s->maybe_shared || s->born_fork != atomic_load_explicit(&sl_forks, memory_order_relaxed);
}
/* Set while an exec hands our connections over (handover.c). */
extern _Atomic bool sl_publish_at_once;
static inline bool sl_side_shared(const struct sl_sock *s)
{
	return atomic_load_explicit(s->holders, memory_order_relaxed) > 1 ||
	       atomic_load_explicit(&sl_publish_at_once, memory_order_relaxed);
}

/* A zeroed, reset state for fd (reusing the slot the fd had). */
struct sl_sock *sl_sock_new(int fd, int domain, enum sl_state state);
/* Forget fd (the slot stays allocated for the next socket on that number). */
void sl_sock_forget(struct sl_sock *s);
/* dup: newfd names the same socket as s (newfd's own slot is set aside). */
int sl_sock_alias(int newfd, struct sl_sock *s);
/* close of one alias while others remain: true if fd was an alias that is
 * now forgotten (the socket lives on under another fd); false if fd is the
 * socket's last name and the caller must close the connection. */
bool sl_sock_unalias(int fd, struct sl_sock *s);

/* pthread_atfork: the parent counts the child as a holder of every
 * connection and publishes its exact read indices, and holds the library's
 * global locks across the fork; the child names itself a holder and starts
 * with no lock held by, or biased to, a thread of the parent (those threads
 * do not exist in it). */
void sl_sock_count_fork(void);
void sl_sock_after_fork_parent(void);
void sl_sock_after_fork_child(void);

/* The process is about to change its user id: withdraw its listeners. */
void sl_user_changing(void);
/* Root is about to give itself up for good and become uid: the TCP sockets
 * root made that nothing listens or connects on yet become uid's, so that
 * the kernel names as their owner the user that will listen on them
 * (root_handover.c). */
void sl_user_leaving_root(uid_t uid);
/* A call of the program's failed with EMFILE: give back the descriptors
 * that agreed offers this process has not settled yet still hold (their
 * segments' memfds; lifecycle.c).  How many (0: retrying cannot help). */
int sl_reclaim_descriptors(void);
/* fork child: the reclaim's lock may have been held by a parent thread. */
void sl_reclaim_after_fork_child(void);

/* A listening socket inherited across exec: publish it as a scilan listener. */
int sl_listener_adopt(int fd, int domain);
/* A listener just published (reached through its rendezvous or registry):
 * takes TCP_DEFER_ACCEPT off its kernel socket, kept in s->defer_accept for
 * getsockopt.  Deferred, the kernel would wake the accept only when bytes
 * arrive on the kernel socket, and an accelerated client's go into the ring. */
void sl_listener_undefer(struct sl_sock *s);

/* Everything close() does for fd except closing the kernel descriptor. */
void sl_sock_release(int fd);
/* fd was closed where no hook saw it (the syscall instruction, io_uring) and
 * the kernel has given the number out again: released as that close was,
 * but never touching the number, which names someone else's file now. */
void sl_sock_release_stale(int fd);

/* Call fn for every socket scilan knows; stops early when fn returns true.
 * A socket with dup aliases is seen once per alias. */
bool sl_sock_any(bool (*fn)(struct sl_sock *s));
/* The same, with the descriptor number of each table slot. */
bool sl_sock_any_fd(bool (*fn)(int fd, struct sl_sock *s));

/* The counters a connection counts in now (a plain load on x86). */
static inline struct sl_counters *sl_ctr(const struct sl_sock *s)
{
	return atomic_load_explicit(&s->ctr, memory_order_acquire);
}

static inline enum sl_state sl_sock_state(const struct sl_sock *s)
{
	return (enum sl_state)atomic_load_explicit(&s->state, memory_order_acquire);
}

/* Released: what was set before it is seen by whoever acquires the state. */
static inline void sl_sock_set_state(struct sl_sock *s, enum sl_state state)
{
	atomic_store_explicit(&s->state, (int)state, memory_order_release);
}

/* The fd table (fd_table.c): chunks of slots, each allocated on first use
 * and never freed, and slots reused, never freed, so that a racing lookup
 * never touches freed memory.  Up to 1M descriptors. */
#define SL_FD_CHUNK_BITS 10
#define SL_FD_CHUNKS 1024u
extern struct sl_sock *_Atomic *_Atomic sl_fd_chunks[SL_FD_CHUNKS];

/* Table: the state for a kernel fd, or NULL if scilan does not know the fd.
 * Inline: every interposed call asks, whatever the fd is. */
static inline struct sl_sock *sl_sock_get(int fd)
{
	struct sl_sock *_Atomic *chunk;
	struct sl_sock *s;

	if (fd < 0 || (unsigned)fd >= SL_FD_CHUNKS << SL_FD_CHUNK_BITS)
		return NULL;
	chunk = atomic_load_explicit(&sl_fd_chunks[(unsigned)fd >> SL_FD_CHUNK_BITS], memory_order_acquire);
	if (!chunk)
		return NULL;
	s = atomic_load_explicit(&chunk[fd & ((1u << SL_FD_CHUNK_BITS) - 1)], memory_order_acquire);
	if (!s || sl_sock_state(s) == SL_UNUSED)
		return NULL;
	return s;
}

/* The one test of "a ring connection": its data goes through the rings now
 * (not a plain socket, a listener, or a connect still deciding). */
static inline bool sl_sock_on_rings(const struct sl_sock *s)
{
	return sl_sock_state(s) == SL_CONNECTED;
}

/* fd's state if it is a ring connection, else NULL (the kernel's fd). */
static inline struct sl_sock *sl_ring_sock(int fd)
{
	struct sl_sock *s = sl_sock_get(fd);

	return s && sl_sock_on_rings(s) ? s : NULL;
}

/* A connection that failed over and has not yet read past the peer's
 * fail-over header (failover.c): its reads and polls go through us until
 * then.  The state check keeps a slot's leftover flag from a socket that
 * no longer lives there. */
static inline bool sl_sock_strip_pending(const struct sl_sock *s)
{
	enum sl_state st = sl_sock_state(s);

	return (st == SL_PLAIN || st == SL_CONNECTED) &&
	       atomic_load_explicit(&s->strip_pending, memory_order_relaxed);
}

/* A plain connection with a late offer out (promotion): its reads go
 * through the seam and its calls look at the offer word (conn/promotion.c). */
static inline bool sl_sock_promoting(const struct sl_sock *s)
{
	return sl_sock_state(s) == SL_PLAIN && atomic_load_explicit(&s->late_offer, memory_order_relaxed);
}

/* A ring connection, one a pending connect may yet make, or one whose strip
 * is pending: readiness the kernel cannot see (it would report the peer's
 * header as the program's bytes), so poll and epoll emulate it. */
static inline bool sl_sock_rings_or_deciding(const struct sl_sock *s)
{
	enum sl_state st = sl_sock_state(s);

	return st == SL_CONNECTED || st == SL_CONNECTING || sl_sock_strip_pending(s) || sl_sock_promoting(s);
}

/* Process-wide counters for SCILAN_STATS and scilan_ctl. */
struct sl_totals {
	_Atomic uint64_t accelerated, fallback, tx_bytes, rx_bytes, sleeps, wakeups;
	_Atomic uint64_t promoted; /* connections that started on kernel TCP, counted as fallbacks, then moved
				    * onto the rings (and counted as accelerated too) */
	_Atomic uint64_t fb[SL_FB_COUNT]; /* fallbacks per reason */
};
extern struct sl_totals sl_totals;

#endif
