/* evq_dev.h — epoll sets' event queues on the device fabric (evq_dev.c): a
 * set endpoint per link whose marks page the peers' senders write, and the
 * set's armed word mirrored into the peer's window.  For evq.c and
 * fabric_dev.c; the hook sees only evq.h.
 */
#ifndef SCILAN_EVQ_DEV_H
#define SCILAN_EVQ_DEV_H

#include "evq/evq.h"
#include "ring/layout.h"

#define SL_EVQ_DEV_SLICES 2048 /* slices of one link a set can queue: SCILAN_MAX_SLICES, the driver's most */
#define SL_EVQ_DEV_PID (-1)   /* sl_evq_reg.pid of a device registration; .bell is the set */

struct sl_evq_dev {
	_Atomic int fd;          /* the set endpoint (SCILAN_EP_SET); -1: closed */
	int link;                /* N of /dev/scilanN */
	uint32_t set, nslices;   /* the set's index on the link; our window's slices */
	/* Our window's marks page of the set (SCILAN_SET_MARKS_OFF + slice) and
	 * its armed word in the peer's window.  A closed record keeps private
	 * memory at both addresses, and its next set maps over them. */
	_Atomic uint8_t *marks;
	_Atomic uint32_t *armed;
	_Atomic int *armed_count; /* the owning queue's dev_armed (a local wake-up reads it) */
	bool in_kernel;          /* the owner's kernel set holds fd */
	_Atomic bool dead;       /* the link went down under it: no more members */
	_Atomic bool report_all; /* dead: the next take lists every member (their ends) */
	int nmembers;            /* registrations naming it: the record is reused only at 0 */
	/* By our slice: the member's index, -1 none; its socket and
	 * registration slot (a taken mark means the peer consumed that want). */
	int32_t idx[SL_EVQ_DEV_SLICES];
	struct sl_sock *sock[SL_EVQ_DEV_SLICES];
	int8_t slot[SL_EVQ_DEV_SLICES];
	struct sl_evq_dev *next_free;
};

/* Waiter side, for evq.c's functions of the same names. */
bool sl_evq_dev_eligible(struct sl_sock *s);
int sl_evq_dev_register(struct sl_evq *q, struct sl_sock *s, uint32_t index, uint64_t tag, uint64_t set_id);
void sl_evq_dev_unregister(struct sl_sock *s, int k, uint64_t pub);
int sl_evq_dev_want(struct sl_sock *s, int k, int dirs);
int sl_evq_dev_take(struct sl_evq *q, void (*fn)(void *arg, uint32_t index), void *arg);
bool sl_evq_dev_pending(const struct sl_evq *q);
/* Store whether any thread is armed into every link's mirror; with
 * read_back (an arm), read each back: the stores (and every earlier want)
 * have landed.  A disarm needs no read-back: a sender that still sees the
 * set armed only rings it once more. */
void sl_evq_dev_mirror(struct sl_evq *q, bool read_back);
void sl_evq_dev_drain(struct sl_evq *q);
void sl_evq_dev_close(struct sl_evq *q);
/* The sweep: every member's want is stored again at its next look (a want
 * the peer consumed without a mark we took would leave it to sweeps). */
void sl_evq_dev_forget_wants(struct sl_evq *q);
/* In a forked child: the locks a parent thread may have held. */
void sl_evq_dev_after_fork_child(void);

/* Sender side: registration r (in our own area) of a peer's set asked for
 * what we just published: mark our slice there, and ring the set if armed. */
void sl_evq_dev_mark_peer(struct sl_sock *s, struct sl_evq_reg *r);
/* A local change of s: mark our own sets that hold it. */
void sl_evq_dev_notify_local(struct sl_sock *s);
/* The connection's set mappings go: unmapped at release, replaced by
 * private memory when the link went down (a racing mark stores there). */
void sl_evq_dev_unmap(struct sl_sock *s, bool replace);

#endif
