/* epoll_set.h — an emulated epoll set as hook/epoll.c keeps it, and the
 * wake-up protocol (epoll_wake.c) that lets a change made by one thread
 * reach another thread already asleep on the set.
 */
#ifndef SCILAN_HOOK_EPOLL_SET_H
#define SCILAN_HOOK_EPOLL_SET_H

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

#include "preload_api.h"

/* data of the wake-up descriptor's kernel entry: a non-canonical address,
 * which no member's pointer and no small number can be. */
#define WAKE_TAG 0xfffe5c11a4e0d0feull
/* The event queue's kernel entries (epoll_queue.c): its bell, and a queued
 * connection's kernel socket (readable only when the peer is gone or speaks
 * TCP), tagged with its bit. */
#define EVQ_TAG_MASK 0xffffffff00000000ull
#define EVQ_TAG 0xfffe5c1200000000ull
#define EVQ_BELL_TAG (EVQ_TAG | 0xffffffffull)
/* The process's promotion bell (epoll.c): a connection moved between kernel
 * TCP and its rings. */
#define PROMO_TAG 0xfffe5c13b0110000ull

struct member {
	int fd;
	uint32_t events; /* as the application registered them, flags included */
	epoll_data_t data;
	bool in_kernel;  /* registered in the kernel set */
	bool disarmed;   /* EPOLLONESHOT fired: silent until EPOLL_CTL_MOD */
	/* EPOLLET: what was reported, and the words whose change is the next edge. */
	uint32_t et_reported;
	uint64_t et_rx_mark;
	uint32_t et_tx_mark;
	uint32_t et_state_mark;
	uint64_t et_kernel_mark; /* its seam pending: the kernel bytes arrived by then (promotion) */
	/* In the set's event queue (epoll_queue.c): its bit, or -1 (kernel or
	 * scanned member); the registration in the connection's peer area. */
	int q;
	int q_k;
	uint64_t q_pub;
	struct sl_sock *q_sock;
	bool q_stale;    /* no longer fit for the queue: reconcile takes it out */
	bool on_list;    /* in the ready list */
	bool on_drop;    /* in the set's drop list (epoll_stall.c) */
	bool on_stall;   /* in the set's stall list */
	bool on_fence;   /* in the set's fence list (epoll_queue.c) */
};

/* The queue place of a member the program deleted, kept for its return
 * (epoll_queue.c, "parked"). */
struct parked {
	int fd, q, k;
	uint64_t pub;
	struct sl_sock *sock;
};

struct epset {
	pthread_mutex_t lock;
	bool open;
	struct member *m;
	int n, cap;
	unsigned rotate; /* first emulated member reported, so none starves */
	/* Waiters that read the member list and may sleep on it: a change to
	 * the emulated members signals wake_fd (created on first need) while
	 * any sleeps, and the last waiter that saw the older list drains it. */
	int wake_fd;          /* -1: none yet */
	int sleeping;         /* waiters between reading the list and waking */
	int stale;            /* of those, how many read it before the last change */
	unsigned epoch;       /* bumped by a change made while waiters sleep */
	unsigned incarnation; /* bumped when the set closes: its old waiters leave it alone */
	bool signaled;        /* wake_fd holds a count */
	int private_fd;       /* a poll queue's own set (poll_queue.c): its epoll fd, followed through moves; else -1 */
	/* The event queue (epoll_queue.c).  Members whose readiness is in
	 * rings are queued when they can be; a forked child's copy of a set
	 * (forked) scans them all, as a set without a queue does. */
	struct sl_evq evq;    /* evq.sh NULL: not made yet (or could not be) */
	bool bell_in_kernel;  /* its bell is in the current kernel set */
	bool forked;
	bool settled;         /* no member can change mode before an epoll_ctl: reconcile skips */
	bool unseen_connect;  /* a kernel member may connect onto the rings unseen (or is moving onto
			       * them: promotion): sleeps are short */
	unsigned promote_epoch; /* sl_promote_epoch at the last reconcile */
	bool promo_bell_in;     /* the promotion bell is in the kernel set */
	int npromoting;         /* kernel members whose connection's late offer is out, at the last reconcile */
	unsigned unsettled;   /* bumped by every change that unsettles the set after a reconcile */
	int nscan;            /* scanned emulated members, at the last reconcile */
	int *slot_member;     /* [bit]: index into m, or -1 */
	int slot_cap, slot_hi;
	int *free_slots, nfree;
	uint32_t *rl;         /* the ready list: bits of members reported or marked since */
	int rl_n, rl_cap;
	uint32_t *rl_tmp;
	/* Bits of queued members, each at most once (sized as slot_member):
	 * those that left the ready list since the last sleep (the stall
	 * watch's candidates), and those it watches (epoll_stall.c). */
	uint32_t *drop, *stall;
	int ndrop, nstall;
	/* Members whose data want was newly set on an unfenced peer since the
	 * set last slept: one barrier before the next sleep, then a second
	 * look at each (sl_evq_want). */
	uint32_t *fence;
	int nfence;
	bool fence_barrier;   /* one of them asks for the barrier (not a device peer's) */
	int nqueued;
	struct parked *parked; /* deleted members' places, until the next wait */
	int nparked, parked_cap;
	int poll_us;          /* the spin of the queued members (SL_POLL_ADAPTIVE: learnt) */
	_Atomic uint64_t spin_learn;
	/* A learnt spin that did not pay (or was skipped): when the wait
	 * began and its budget, for hk_evq_after_sleep. */
	_Atomic int64_t spin_missed_at;
	_Atomic uint32_t spin_missed_budget;
	int64_t next_sweep_ms;
};

/* One waiter's place among a set's sleepers. */
struct ticket {
	bool on;
	unsigned epoch, incarnation;
};

/* All with set->lock held. */
void hk_epoll_sleep_begin(struct epset *set, struct ticket *t);
/* true if the emulated members changed since sleep_begin. */
bool hk_epoll_sleep_end(struct epset *set, struct ticket *t);
/* After a change to the emulated members of set (epoll fd epfd). */
void hk_epoll_wake_sleepers(int epfd, struct epset *set);

/* The set changed after this wait's reconcile: it must run again before a
 * sleep (set->lock held). */
static inline void hk_ep_unsettle(struct epset *set)
{
	set->settled = false;
	set->unsettled++;
}

/* A set of the library's own (poll_queue.c): its epoll fd is one of ours,
 * and it is known like the program's sets (closes, fork, exec reach it).
 * NULL if none can be made. */
struct epset *hk_epoll_private_open(int *epfd);
/* Forget it and close its descriptor. */
void hk_epoll_private_close(int epfd);
/* Remove member m (set->lock held). */
void hk_ep_remove_member(int epfd, struct epset *set, struct member *m);

/* poll/select over many ring connections through this thread's own set
 * (poll_queue.c).  *used false: not for this call (too few connections, one
 * the queue cannot hold), the caller takes wait.c's path; else the call's
 * result. */
int hk_pollq(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask, bool *used);

/* Shared by epoll.c and epoll_queue.c. */
struct sl_sock *hk_ep_ring_socket(int fd);
/* The open emulated set on fd, or NULL (epoll.c). */
struct epset *hk_ep_set_of(int fd);
/* Members moved to where their state now belongs; the scanned members
 * armed (epoll.c). */
int hk_ep_reconcile(int epfd, struct epset *set);
/* After a kernel wait that began at promotion epoch `since`: the members
 * whose late offer is out are decided first (a claim followed, an offer
 * past its time revoked: the acceptor's marker on a kernel socket is not
 * data), then the kernel's events for members that moved meanwhile (their
 * readiness is emulated now) are dropped (*dropped set); the events kept
 * (set->lock held). */
int hk_ep_drop_moved(struct epset *set, struct epoll_event *evs, int n, unsigned since, bool *dropped);
short hk_ep_wanted(struct member *m, struct sl_sock *s);
void hk_ep_mark_reported(struct member *m, struct sl_sock *s, uint32_t revents);
#define HK_EP_EVENT_BITS (EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLRDHUP)

/* The event queue (epoll_queue.c), all with set->lock held. */
/* Queue member i of set (a connected ring socket): false if it cannot be. */
bool hk_evq_queue(int epfd, struct epset *set, int i);
void hk_evq_unqueue(int epfd, struct epset *set, struct member *m);
/* The member's readiness may have changed (epoll_ctl): look at it next wait. */
void hk_evq_touch(struct epset *set, struct member *m);
/* Reports of queued members, up to max; now_ms for the periodic sweep. */
int hk_evq_collect(struct epset *set, struct epoll_event *evs, int max, int64_t now_ms);
/* Drop the wake-up and queue entries from a kernel answer (acting on them). */
int hk_evq_strip(struct epset *set, struct epoll_event *evs, int n, bool *woken);
/* Before a sleep: arm the set.  -1 not armed (nothing queued), 0 armed but
 * something is marked already, 1 armed and quiet.  Disarm only if armed. */
int hk_evq_arm(struct epset *set);
void hk_evq_disarm(struct epset *set);
/* Spin (unlocked) for the queued members as their poll time says, asking
 * the kernel now and then about kfds (the kernel set, and a poll's kernel
 * descriptors); true if something is ready. */
bool hk_evq_spin(struct epset *set, struct pollfd *kfds, nfds_t nk, int left);
/* After a set's sleep: the stall watch's look, and the whole wait teaches
 * the learnt spin when the spin before it did not pay (or was skipped). */
void hk_evq_after_sleep(struct epset *set);
/* How long the sleep may last (ms, -1 none): until the next sweep. */
int hk_evq_cap(struct epset *set, int left, int64_t now_ms);
/* Arm the set for a sleep of *sleep_ms (ms, -1 none) and shorten it: to 0
 * when something is marked already, to the next sweep, to the stall
 * watch's cap.  hk_evq_arm's answer (disarm only if >= 0). */
int hk_evq_sleep_arm(struct epset *set, int *sleep_ms);
/* The set closes: members leave the queue (which stays for the next set
 * on this descriptor number). */
void hk_evq_release(struct epset *set);
/* A member moves from index from to index to (remove_at). */
void hk_evq_moved(struct epset *set, int to);
/* One of the queue's descriptors was moved (a dup2 onto its number). */
void hk_evq_fd_moved(struct epset *set, int from, int to);
/* The program deletes queued member m: keep its queue place (registration,
 * bit, kernel entry) for a re-add before the next wait, and take it out of
 * the queue as unqueue does; false if it is not kept (unqueue it). */
bool hk_evq_park(struct epset *set, struct member *m);
/* Member i is being added: it takes its fd's parked place back if the
 * connection is the one that left it and still fit for the queue (true);
 * a place that is not is released. */
bool hk_evq_unpark(int epfd, struct epset *set, int i);
/* The parked places are released: all of them (fd -1), or fd's. */
void hk_evq_release_parked(int epfd, struct epset *set, int fd);
/* Any set holds a parked place (a hint for the close path). */
bool hk_evq_any_parked(void);
/* In a forked child: its copy of the set scans; the queue is the parent's. */
void hk_evq_after_fork_child(struct epset *set);
/* Before an exec: the queued members leave the queue (their registrations
 * would outlive this image, their tagged kernel entries would reach the new
 * image's waits on an inherited set); a failed exec queues them again at
 * the next wait. */
void hk_evq_before_exec(int epfd, struct epset *set);

/* The stall watch of queued members (epoll_stall.c), all with set->lock
 * held.  Member m leaves the ready list: a candidate for the next sleep.
 * Only bytes we wrote since a member's last report or look can wait unread
 * (a sweep looks at every member), so these are the candidates: one store
 * per member between sleeps, on the path that returns events. */
static inline void hk_evq_stall_dropped(struct epset *set, struct member *m)
{
	if (m->on_drop || m->q < 0)
		return;
	m->on_drop = true;
	set->drop[set->ndrop++] = (uint32_t)m->q;
}
/* m leaves the queue; the set's queue is released or left to the parent. */
void hk_evq_stall_forget(struct epset *set, struct member *m);
void hk_evq_stall_reset(struct epset *set);
/* About to sleep up to sleep_ms (-1 none): the candidates with our bytes
 * unread in the peer's ring join the watch; the sleep it may last. */
int hk_evq_stall_cap(struct epset *set, int sleep_ms);
/* Woken after a sleep: a watched peer that took nothing of ours for
 * SL_STALL_MS moves the connection to kernel TCP (the member then leaves
 * the queue at the next reconcile). */
void hk_evq_stall_after_sleep(struct epset *set);

#endif
