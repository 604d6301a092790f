/* SPDX-License-Identifier: GPL-2.0 */
/* scilan.h — the driver's internal state: one sl_link per peer (an NTB
 * device or an ivshmem-doorbell function, reached through struct
 * sl_link_ops), its windows, slices, sets, control channel and endpoints.  See
 * ARCHITECTURE.md "The driver" for the window layout and the protocol.
 */
#ifndef SCILAN_DRV_H
#define SCILAN_DRV_H

#include <linux/kref.h>
#include <linux/uidgid.h>
#include <linux/in6.h>
#include <linux/list.h>
#include <linux/miscdevice.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "uapi/scilan.h"

/* 3: CONNECT carries the 4-tuple; 4: set pages in the window; 5: VERIFY,
 * VERIFIED and CLOSE's confirmation (the client proves its connection);
 * 6: up to 2048 slices (four stimulus pages), doorbell words in page 0;
 * 7: late connects (CONNECT's and VERIFY's SL_MSG_F_LATE, VERIFY's point,
 * POINT and POINT_ACK)
 */
#define SL_PROTO_VERSION 7u
#define SL_MAX_SLICES SCILAN_MAX_SLICES
/* Slices a window is sized for when mw_size is left at its default. */
#define SL_DEFAULT_SLICES 1024u

/* Scratchpads written into the peer at handshake. */
enum { SL_SPAD_MAGIC, SL_SPAD_MW_KB, SL_SPAD_SLICE, SL_SPAD_NONCE, SL_SPAD_COUNT };
#define SL_SPAD_MAGIC_VAL (0x53430000u | SL_PROTO_VERSION) /* "SC" + version */

/* Layout of each inbound window: page 0 the control channel the peer writes
 * into, then the slices' stimulus words (two per slice), then SCILAN_SETS
 * marks pages (of our sets: the driver's stimulus word at offset 0, the
 * peer's marks from SCILAN_SET_MARKS_OFF), SCILAN_SETS armed pages (word 0:
 * the armed count of the peer's set), then the slices.
 */
#define SL_WIN_CTL_OFF 0
#define SL_WIN_STIM_OFF PAGE_SIZE
#define SL_WIN_STIM_PAGES DIV_ROUND_UP(SL_MAX_SLICES * 8, PAGE_SIZE)
#define SL_WIN_MARKS_OFF(set) ((1 + SL_WIN_STIM_PAGES + (size_t)(set)) * PAGE_SIZE)
#define SL_WIN_ARMED_OFF(set) ((1 + SL_WIN_STIM_PAGES + SCILAN_SETS + (size_t)(set)) * PAGE_SIZE)
#define SL_WIN_SLICE_OFF ((1 + SL_WIN_STIM_PAGES + 2 * SCILAN_SETS) * PAGE_SIZE)

#define SL_CTL_PROD_OFF 0    /* peer's producer index of messages to us */
#define SL_CTL_ACK_OFF 64    /* peer's consumer index of OUR messages */
/* One doorbell per peer (sl_link.db_words): the peer stores 1 into word b
 * for doorbell bit b before it rings; we exchange them to 0.
 */
#define SL_CTL_DB_OFF 128
#define SL_CTL_DB_WORDS 32
#define SL_CTL_MSG_OFF 256
#define SL_CTL_SLOTS 32u     /* power of two */

enum sl_msg_type {
	SL_MSG_CONNECT = 1, SL_MSG_ACCEPT, SL_MSG_REFUSE, SL_MSG_CLOSE,
	SL_MSG_VERIFY,    /* listener side: does the client's socket hold the 4-tuple? */
	SL_MSG_VERIFIED,  /* client side: the answer (status SL_VERIFY_OK or 0) */
	SL_MSG_POINT,     /* a late connect's client: its switch point (SCILAN_IOC_SEAM_POINT) */
	SL_MSG_POINT_ACK, /* its acceptor: stored (status SL_VERIFY_OK) or not (0) */
};

/* sl_msg.flags: a late connect (SCILAN_CONNECT_LATE), in its CONNECT and in
 * the VERIFY of its ACCEPT_LATE, which carries the acceptor's point.
 */
#define SL_MSG_F_LATE 1u

/* CLOSE's status bits.  ABORTED: the connect gave up before the ACCEPT came,
 * the listener's side drops the queued connection (nobody will claim it).
 * CONFIRMED: the client's socket held the 4-tuple when its endpoint closed;
 * cookie carries the client's initial sequence number of that connection.
 */
#define SL_CLOSE_ABORTED 1u
#define SL_CLOSE_CONFIRMED 2u
#define SL_VERIFY_OK 1u

/* One control message; every field is validated on receipt (the peer is
 * not trusted).
 */
struct sl_msg {
	__le32 type;
	__le32 port;
	__le32 src_slice;   /* sender's slice */
	__le32 dst_slice;   /* receiver's slice (ACCEPT, REFUSE, CLOSE) */
	__le32 cookie;      /* connect attempt, echoed in ACCEPT/REFUSE */
	__le32 status;      /* REFUSE: errno */
	__le16 sport;       /* CONNECT: the client socket's port ... */
	__le16 flags;       /* SL_MSG_F_* */
	u8 saddr[16];       /* ... and address (IPv6 or IPv4-mapped) */
	u8 daddr[16];       /* CONNECT: the destination address (port: above) */
	__le32 pad;
	__le64 point;       /* late VERIFY, POINT: the sender's switch point */
};

/* A connection's 4-tuple as its client sees it (IPv4 as IPv4-mapped). */
struct sl_tuple {
	struct in6_addr saddr, daddr;
	u16 sport, dport;
};

struct sl_ep;
struct sl_link;
struct seq_file;
struct sock;
struct net;
struct vm_area_struct;
struct file;

/* The link backend: the few hardware operations the client uses, so the
 * handshake, control channel and endpoints are shared by the NTB client
 * (scilan_ntb.c) and the ivshmem-doorbell driver (scilan_ivshmem.c).
 * Scratchpads and doorbells have NTB semantics: peer_spad_write() lands in
 * the peer's spad_read(), peer_db_set() raises bits the peer's interrupt
 * hands to sl_db_event().
 */
struct sl_link_ops {
	const char *name;                                   /* debugfs "backend" */
	bool (*link_is_up)(struct sl_link *link);           /* the peer is there */
	u32 (*spad_read)(struct sl_link *link, int idx);
	void (*peer_spad_write)(struct sl_link *link, int idx, u32 val);
	void (*peer_db_set)(struct sl_link *link, u64 bits); /* any context */
	void (*db_enable)(struct sl_link *link);            /* optional, at link up */
	/* Sets lwin, lwin_phys (what user mappings insert) and lwin_size, at
	 * most max bytes; kept until the backend's remove.
	 */
	int (*setup_window)(struct sl_link *link, size_t max);
	/* Sets pwin, pwin_phys, pwin_is_ram for size bytes of the peer's window. */
	int (*map_peer)(struct sl_link *link, u64 size);
	void (*unmap_peer)(struct sl_link *link);
	void (*dbg_show)(struct sl_link *link, struct seq_file *m); /* optional */
};

struct sl_link {
	const struct sl_link_ops *ops;
	void *hw;                 /* the backend's own state (ntb_dev, ivshmem) */
	struct device *dev;       /* for messages */
	struct module *hw_owner;
	struct kref ref;          /* endpoints hold the link; the last put frees it */
	int index;                /* /dev/scilan<index> */
	/* The fabric ids of the two ends (NTB port numbers, ivshmem
	 * IVPositions; -1 unknown), set by the backend before registering.
	 */
	int local_port, peer_port;
	struct miscdevice misc;
	char name[16];
	bool misc_registered;
	bool removing;

	/* Local inbound window (the peer writes here). */
	void *lwin;
	phys_addr_t lwin_phys;    /* user mappings of our slices insert from here */
	size_t lwin_size;
	dma_addr_t lwin_dma;      /* NTB backend: the buffer the window translates to */
	struct device *dma_dev;

	/* The peer's window, mapped once the peer announced its translation. */
	void __iomem *pwin;
	phys_addr_t pwin_phys;
	size_t pwin_size;
	bool pwin_is_ram;         /* the mock, ivshmem: host RAM, mapped cached, not WC */

	u32 slice_size;
	u32 nslices;
	u32 peer_nslices;
	int db_bits;              /* doorbell bits usable; bit 0 = control channel */
	/* One doorbell per peer (a shared doorbell register, or ivshmem): the
	 * bits travel as words in page 0 of the peer's window (SL_CTL_DB_OFF)
	 * and peer_db_set() only rings; the backend calls sl_db_rung().
	 */
	bool db_words;
	u32 nonce;                /* ours, announced to the peer */
	u32 peer_nonce;

	spinlock_t lock;          /* up, slice tables, endpoint list, listeners */
	bool up;
	u64 generation;           /* bumped at every link up */
	struct sl_ep **slice_ep;  /* [SL_MAX_SLICES] */
	unsigned long slice_local[BITS_TO_LONGS(SL_MAX_SLICES)]; /* held by a local ep */
	unsigned long slice_peer[BITS_TO_LONGS(SL_MAX_SLICES)];  /* peer may still write */
	u32 *slice_cookie;        /* [SL_MAX_SLICES] the last connect from each slice: a late REFUSE frees it */
	u64 zap_gen;              /* sl_zap_mappings passes */
	struct sl_ep *set_ep[SCILAN_SETS]; /* set endpoints by index, once created */
	unsigned long set_busy[BITS_TO_LONGS(SCILAN_SETS)]; /* indices held by an endpoint */
	kuid_t set_uid[SCILAN_SETS]; /* who took each busy index (sets_per_uid) */
	struct list_head eps;
	struct list_head listeners;
	u32 next_cookie;

	/* Control channel. */
	struct mutex tx_mutex;
	bool tx_stalled;          /* a send timed out: fail fast until the peer drains */
	u64 tx_prod;
	u64 rx_cons;
	struct work_struct ctl_work;
	struct delayed_work link_work;
	struct work_struct down_work;

	/* Faults of user mappings against teardown: a fault inserts under the
	 * read side, link down/remove flips state under the write side and then
	 * zaps every mapping, so no PTE survives into freed or dead memory.
	 */
	struct rw_semaphore map_sem;

	struct dentry *dbg;
	u64 stat_db_irqs, stat_wakeups, stat_stimuli, stat_ctl_rx, stat_ctl_tx;
	u64 stat_set_stimuli, stat_set_wakeups;
	u64 stat_zaps;            /* link downs whose mappings were all zapped */
};

struct sl_ep {
	struct sl_link *link;
	struct list_head node;      /* link->eps */
	struct list_head lnode;     /* listener: link->listeners; queued: listener backlog */
	wait_queue_head_t wq;
	u32 id;
	int state;                  /* SCILAN_EP_* */
	bool connecting;
	int connect_err;
	u32 cookie;
	u32 port;                   /* listener: the port of lsk */
	struct sock *lsk;           /* listener: the caller's TCP listener (held) */
	kuid_t owner;               /* listener: who listens (debugfs) */
	struct sl_tuple tuple;      /* connecting and queued: the companion connection */
	struct net *net;            /* connecting: the client socket's namespace (held) */
	struct sock *sk;            /* client: the socket it connected with (held), its proof */
	bool confirmed;             /* queued: the client proved the 4-tuple when it closed ... */
	u32 isn;                    /* ... for the connection with this client ISN */
	u32 verify_cookie;          /* queued, being verified by an ACCEPT_SOCK: the VERIFY ... */
	int verdict;                /* ... and its answer: 0 none yet, 1 proven, -1 not */
	u32 backlog_max, backlog_len; /* backlog_max 0: the socket's (sl_backlog_max) */
	struct list_head backlog;
	/* Listener: its late connects (SCILAN_CONNECT_LATE), apart from the
	 * backlog: only an ACCEPT_LATE takes one.
	 */
	struct list_head late_q;
	u32 late_len;
	bool late;                  /* a late connect's endpoint (client, queued, accepted) */
	bool point_sent;            /* client: its SEAM_POINT went out ... */
	u32 point_cookie;           /* ... with this cookie, and ... */
	int point_ack;              /* ... the answer: 0 none yet, 1 stored, -1 refused */
	bool point_got;             /* acceptor: the client's point is stored */
	bool accepted;              /* took over a queued connection (never a client) */
	int slice, peer_slice;      /* -1 when none */
	int set;                    /* set endpoint: its index (held until release), else -1 */
	u64 generation;             /* link generation the connection (or set) belongs to */
	u32 tokens;                 /* pending SCILAN_TOKEN_* */
	bool queued;                /* on a listener's backlog, not yet accepted */
	u64 zapped;                 /* the sl_zap_mappings pass that covered its mapping */
	bool mapped;
	struct page *sink;          /* stands in for the peer's pages after link down (sl_fault) */
	bool abandoned;             /* SCILAN_IOC_ABANDON: its CLOSE says aborted */
	bool agreed;                /* client: the acceptor's driver paired it (VERIFY) ... */
	bool answered;              /* ... and our answer went out, which a late client's point must follow */
	struct address_space *mapping;  /* of the file it was opened as */
};

/* Nothing done with it yet: it may listen, connect, accept or become a set. */
static inline bool sl_ep_fresh(const struct sl_ep *ep)
{
	return ep->state == SCILAN_EP_IDLE && !ep->connecting && ep->slice < 0 && !ep->lsk &&
	       ep->set < 0;
}

/* scilan_main.c: the backend-independent link */
extern unsigned int sl_connect_timeout_ms;
extern unsigned int sl_sets_per_uid;
extern unsigned int sl_late_max;
extern unsigned int sl_verify_answer_delay_ms;
void sl_link_put(struct sl_link *link);
void sl_link_get(struct sl_link *link);
void sl_link_reset_locked(struct sl_link *link);
void sl_slice_agree_store(struct sl_link *link, int slice, u32 value);
void sl_slice_point_store(struct sl_link *link, int slice, u64 value);
struct sl_link *sl_link_alloc(struct device *dev, const struct sl_link_ops *ops, void *hw,
			      int db_bits);
int sl_link_register(struct sl_link *link);
void sl_link_unregister(struct sl_link *link);
void sl_link_event(struct sl_link *link);
void sl_db_event(struct sl_link *link, u64 bits);
void sl_db_rung(struct sl_link *link);
void sl_ring_peer(struct sl_link *link, u64 bits);

/* scilan_ntb.c, scilan_ivshmem.c: the backends */
int sl_ntb_init(void);
void sl_ntb_exit(void);
int sl_ivshmem_init(void);
void sl_ivshmem_exit(void);

/* scilan_ctl.c */
int sl_ctl_send(struct sl_link *link, const struct sl_msg *msg);
void sl_ctl_work(struct work_struct *work);
int sl_slice_alloc_locked(struct sl_link *link, struct sl_ep *ep);
void sl_slice_release_locked(struct sl_link *link, int slice, bool local, bool peer);
void sl_stimulate(struct sl_link *link, int peer_slice, u32 tokens);
void sl_db_scan(struct sl_link *link, u64 bits);
int sl_slice_db_bit(const struct sl_link *link, int slice);

/* scilan_sock.c */
int sl_sock_listener(int fd, struct sock **skp);
int sl_sock_connecting(int fd, const struct scilan_connect *req, struct sl_tuple *t,
		       struct net **netp, struct sock **skp);
int sl_sock_accepted(int fd, struct sl_tuple *t, struct net **netp, u32 *isn);
bool sl_sock_holds_tuple(struct sock *sk, const struct sl_tuple *t);
u32 sl_sock_client_isn(struct sock *sk, bool server);
bool sl_userns_may_take(struct sl_link *link, const struct sl_tuple *t);
int sl_listener_match(struct sock *lsk, const struct sl_tuple *t, bool userns_ok);
bool sl_tuple_equal(const struct sl_tuple *a, const struct sl_tuple *b);
u32 sl_backlog_max(const struct sl_ep *lst);
void sl_listener_show(struct seq_file *m, struct sl_ep *ep);

/* scilan_ep.c */
extern const struct file_operations sl_fops;
void sl_ep_wake_locked(struct sl_ep *ep, int state);
void sl_zap_mappings(struct sl_link *link);
int sl_mmap(struct file *file, struct vm_area_struct *vma); /* scilan_mmap.c */
void sl_close_queued(struct sl_link *link, struct list_head *queued);

/* scilan_accept.c */
long sl_ioc_accept(struct sl_ep *ep, int __user *arg);
long sl_ioc_accept_sock(struct sl_ep *ep, void __user *arg);
long sl_ioc_accept_late(struct sl_ep *ep, void __user *arg);
long sl_ioc_seam_point(struct sl_ep *ep, u64 __user *arg);

/* scilan_set.c */
long sl_ioc_set_create(struct sl_ep *ep, u32 __user *arg);
long sl_ioc_stimulate_set(struct sl_ep *ep, u32 __user *arg);
void sl_set_release_locked(struct sl_link *link, struct sl_ep *ep);
void sl_set_scan_locked(struct sl_link *link, u64 bits);

#endif
