/* evq.h — the event queue of one epoll set (ARCHITECTURE.md, "The event
 * queue"): a ready bitmap in the waiting process's shared memory that the
 * peers of its connections mark, and one armed word and one bell for the set.
 */
#ifndef SCILAN_EVQ_H
#define SCILAN_EVQ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "socket/sock_state.h"

#define SL_EVQ_SLOTS 65536u                 /* connections one set can queue */
#define SL_EVQ_WORDS (SL_EVQ_SLOTS / 64)    /* ready bits */
#define SL_EVQ_SUMMARY (SL_EVQ_WORDS / 64)  /* bit i: bits[i] may be nonzero */

/* In a memfd of the waiting process, mapped by the peers of its connections
 * (any of them may be hostile: the waiter only ever reads a bit as "look at
 * this connection", and sweeps every member now and then, evq.c). */
struct sl_evq_shared {
	uint64_t magic;
	uint64_t set_id;
	uint64_t bell_dev, bell_ino;        /* the bell pipe a peer may take */
	_Alignas(64) _Atomic int32_t armed; /* threads of the set about to sleep or asleep */
	_Alignas(64) _Atomic uint64_t summary[SL_EVQ_SUMMARY];
	_Alignas(64) _Atomic uint64_t bits[SL_EVQ_WORDS];
};

#define SL_EVQ_DEV_LINKS 4 /* device links one set queues connections of */

struct sl_evq_dev;

/* The waiting process's handle. */
struct sl_evq {
	struct sl_evq_shared *sh; /* NULL: no queue (the set scans its members) */
	int memfd, bell_r, bell_w;
	/* The set's queue on each device link it has members on (evq_dev.c):
	 * made at the first member of that link. */
	struct sl_evq_dev *dev[SL_EVQ_DEV_LINKS];
	/* Summary words that can hold a member's mark (sl_evq_cover): a mark
	 * past them is a peer's junk, never read, so it cannot keep a wait
	 * awake, and a take of a small set reads one word, not all. */
	_Atomic uint32_t summary_words; /* grown under the set's lock, read by its spinners too */
	_Atomic int dev_armed;    /* threads armed, as mirrored into the peers' windows */
	pthread_mutex_t dev_lock; /* orders the mirror's stores (arm, disarm) */
};

/* Create the queue: 0, or -1 with errno (the set then scans). */
int sl_evq_open(struct sl_evq *q);
/* Unmap and close this process's copy (the memory is left as it is). */
void sl_evq_close(struct sl_evq *q);
/* Can s be queued at all (connected, shm fabric, no offer out, a peer that
 * can take this process's descriptors to mark the set)? */
bool sl_evq_eligible(struct sl_sock *s);
/* Before any data moves: our credentials into the peer's area c, by which
 * its sets decide whether we can mark them. */
void sl_evq_publish_marker(struct sl_area_ctl *c);
/* Register s's bit index with q in s's peer area: the registration slot k,
 * or -1 if all are taken (the set scans s).  *pub names the registration. */
int sl_evq_register(struct sl_evq *q, struct sl_sock *s, uint32_t index, uint64_t *pub);
void sl_evq_unregister(struct sl_sock *s, int k, uint64_t pub);
/* Ask the peer to mark the set at its next change in dirs (SL_DIR_*;
 * SL_DIR_SPACE after SL_DIR_DATA in the same look): before the re-check of
 * s, as step 2 of the sleep protocol.  What the set owes s before it may
 * sleep: SL_EVQ_RELOOK, a second look after sl_evq_arm (whose stores make
 * the want visible to a device peer); with SL_EVQ_BARRIER, a
 * sl_barrier_remote() before that look (a data want newly set on a peer
 * that publishes unfenced).  A busy set never sleeps, so it pays nothing
 * per want. */
#define SL_EVQ_RELOOK 1
#define SL_EVQ_BARRIER 2
int sl_evq_want(struct sl_sock *s, int k, int dirs);
/* Marks are read below index `slots` from now on (sl_evq_register covers
 * the index it registers; a registration made another way must be covered
 * before a peer can learn its index). */
void sl_evq_cover(struct sl_evq *q, uint32_t slots);
/* Mark index ready (and ring the bell if a waiter is armed). */
void sl_evq_mark(struct sl_evq_shared *sh, int bell_w, uint32_t index);
/* Take every marked index: fn(arg, index) for each.  Returns how many. */
int sl_evq_take(struct sl_evq *q, void (*fn)(void *arg, uint32_t index), void *arg);
/* Anything marked (after arming: the re-check). */
bool sl_evq_pending(const struct sl_evq *q);
/* The waiter's arm and disarm of the set; the bells are drained before
 * arming.  The arm ends with the device links' read-backs: every store the
 * set made into a peer's window (wants, the armed mirror) has landed. */
void sl_evq_arm(struct sl_evq *q);
void sl_evq_disarm(struct sl_evq *q);
void sl_evq_drain(struct sl_evq *q);
/* The set's bells the kernel set does not hold yet (a device link's set
 * endpoint made since the last call): up to max into fds; how many. */
int sl_evq_new_bells(struct sl_evq *q, int *fds, int max);
/* The set closed: its device links' queues go back to the links (each
 * has only SCILAN_SETS), the rest of the queue is kept for the next set of
 * that number; the next sl_evq_new_bells returns the bells again. */
void sl_evq_set_closed(struct sl_evq *q);
/* The sweep: a device member's want is stored again at its next look. */
void sl_evq_forget_wants(struct sl_evq *q);
/* A descriptor of the queue moved (dup2 onto its number). */
void sl_evq_fd_moved(struct sl_evq *q, int from, int to);

/* Sender side: s published data or state (SL_DIR_DATA) or freed room
 * (SL_DIR_SPACE), fenced already: mark the peer's sets that asked.  Inline:
 * every send and consume asks, and almost always nobody asked. */
void sl_evq_notify_asked(struct sl_sock *s, uint32_t asked);
/* evq_want's bits of every set slot: 2k asks for data, 2k+1 for room. */
#define SL_EVQ_WANT_DATA 0x55555555u
#define SL_EVQ_WANT_SPACE 0xaaaaaaaau
static inline bool sl_evq_notify(struct sl_sock *s, int dirs)
{
	uint32_t mask = (dirs & SL_DIR_DATA ? SL_EVQ_WANT_DATA : 0) | (dirs & SL_DIR_SPACE ? SL_EVQ_WANT_SPACE : 0);
	uint32_t asked = atomic_load_explicit(&s->own_ctl->evq_want, memory_order_relaxed) & mask;

	if (asked)
		sl_evq_notify_asked(s, asked);
	return asked != 0; /* some set of the peer waited for it */
}
/* A local change (shutdown, reset, a send that found the ring full): mark
 * our own sets that hold s. */
void sl_evq_notify_local(struct sl_sock *s);

#endif
