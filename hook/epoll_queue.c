/* epoll_queue.c — the event queue of an emulated epoll set: which queued
 * member is behind each bit, the ready list that keeps level-triggered
 * members until a look finds them not ready, the kernel entries of the
 * queue (bell, the members' kernel sockets), and the set-level sleep.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "preload_api.h"
#include "epoll_set.h"

/* Every queued member is looked at now and then whatever its bit says: a
 * hostile peer that maps the set can clear bits or the armed word, and a
 * peer that cannot take our descriptors (out of them) never marks.  A look
 * at an idle connection costs some 0.5 us (its lines are cold), so the
 * period grows with the set: at least SWEEP_MS, SWEEP_US_PER_MEMBER per
 * member (4,096 members: every 10 s, 0.2 ms of CPU per second). */
#define SWEEP_MS 1000
#define SWEEP_US_PER_MEMBER 2500

static struct member *member_at(struct epset *set, uint32_t q)
{
	int i;

	if ((int)q >= set->slot_hi || (i = set->slot_member[q]) < 0 || i >= set->n)
		return NULL;
	return &set->m[i];
}

static void fence_forget(struct epset *set, struct member *m)
{
	if (!m->on_fence)
		return;
	m->on_fence = false;
	for (int i = 0; i < set->nfence; i++)
		if (set->fence[i] == (uint32_t)m->q) {
			set->fence[i] = set->fence[--set->nfence];
			return;
		}
}

static void fence_reset(struct epset *set)
{
	for (int i = 0; i < set->n; i++)
		set->m[i].on_fence = false;
	set->nfence = 0;
	set->fence_barrier = false;
}

static int list_add(struct epset *set, struct member *m)
{
	if (m->on_list || m->q < 0)
		return 0;
	if (set->rl_n == set->rl_cap) {
		int cap = set->rl_cap ? set->rl_cap * 2 : 64;
		uint32_t *rl = realloc(set->rl, (size_t)cap * sizeof(*rl)), *tmp;

		if (!rl)
			return -1;
		set->rl = rl;
		tmp = realloc(set->rl_tmp, (size_t)cap * sizeof(*tmp));
		if (!tmp)
			return -1;
		set->rl_tmp = tmp;
		set->rl_cap = cap;
	}
	set->rl[set->rl_n++] = (uint32_t)m->q;
	m->on_list = true;
	return 0;
}

static void list_del(struct epset *set, struct member *m)
{
	if (!m->on_list)
		return;
	for (int i = 0; i < set->rl_n; i++)
		if (set->rl[i] == (uint32_t)m->q) {
			set->rl[i] = set->rl[--set->rl_n];
			break;
		}
	m->on_list = false;
}

/* The queue outlives the set: a set's structure is kept for its descriptor
 * number, and a thread may still spin on the queue when another closes the
 * set.  Each kernel set gets the bell once. */
static int make_queue(int epfd, struct epset *set)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = EVQ_BELL_TAG };

	/* Peers take our descriptors with pidfd_getfd: not when we are not
	 * dumpable (setuid, PR_SET_DUMPABLE 0). */
	if (!set->evq.sh && (prctl(PR_GET_DUMPABLE) != 1 || sl_evq_open(&set->evq) < 0))
		return -1;
	if (!set->bell_in_kernel && sl_sys.epoll_ctl(epfd, EPOLL_CTL_ADD, set->evq.bell_r, &ev) < 0)
		return -1;
	set->bell_in_kernel = true;
	return 0;
}

/* A device link's set endpoint made by the registration joins the kernel
 * set as the bell does (a failure leaves its marks to the sweep). */
static void add_bells(int epfd, struct epset *set)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = EVQ_BELL_TAG };
	int fds[SL_EVQ_DEV_LINKS], n = sl_evq_new_bells(&set->evq, fds, SL_EVQ_DEV_LINKS);

	for (int i = 0; i < n; i++)
		if (sl_sys.epoll_ctl(epfd, EPOLL_CTL_ADD, fds[i], &ev) < 0 && errno != EEXIST)
			sl_debug("epoll fd %d: the device set's bell: %s", epfd, strerror(errno));
}

static int take_slot(struct epset *set)
{
	if (set->nfree)
		return set->free_slots[--set->nfree];
	if (set->slot_hi == (int)SL_EVQ_SLOTS)
		return -1;
	if (set->slot_hi == set->slot_cap) {
		int cap = set->slot_cap ? set->slot_cap * 2 : 64;
		int *sm = realloc(set->slot_member, (size_t)cap * sizeof(*sm)), *fs;
		uint32_t *dl, *st, *fl;

		if (!sm)
			return -1;
		set->slot_member = sm;
		fs = realloc(set->free_slots, (size_t)cap * sizeof(*fs));
		if (!fs)
			return -1;
		set->free_slots = fs;
		dl = realloc(set->drop, (size_t)cap * sizeof(*dl));
		if (!dl)
			return -1;
		set->drop = dl;
		st = realloc(set->stall, (size_t)cap * sizeof(*st));
		if (!st)
			return -1;
		set->stall = st;
		fl = realloc(set->fence, (size_t)cap * sizeof(*fl));
		if (!fl)
			return -1;
		set->fence = fl;
		set->slot_cap = cap;
	}
	return set->slot_hi++;
}

/* Member i takes queue place q (registration k, published as pub) of s. */
static void seat(struct epset *set, int i, struct sl_sock *s, int q, int k, uint64_t pub)
{
	struct member *m = &set->m[i];

	set->slot_member[q] = i;
	m->q = q;
	m->q_k = k;
	m->q_pub = pub;
	m->q_sock = s;
	m->q_stale = false;
	m->on_list = false;
	m->in_kernel = false;
	set->nqueued++;
	set->poll_us = atomic_load(&s->poll_us);
	/* Its first look decides what it asks the peer for, and reports what
	 * is ready, as a fresh add's (an edge). */
	list_add(set, m);
}

bool hk_evq_queue(int epfd, struct epset *set, int i)
{
	struct member *m = &set->m[i];
	struct sl_sock *s = hk_ep_ring_socket(m->fd);
	struct epoll_event kev;
	int q, k;

	if (set->forked || !s || !sl_evq_eligible(s))
		return false;
	if (make_queue(epfd, set) < 0)
		return false;
	if ((q = take_slot(set)) < 0)
		return false;
	k = sl_evq_register(&set->evq, s, (uint32_t)q, &m->q_pub);
	if (k < 0) {
		set->free_slots[set->nfree++] = q;
		return false;
	}
	/* The kernel socket speaks only at the end (or when the peer moves to
	 * TCP): one edge is enough to look at the connection. */
	kev = (struct epoll_event){ .events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.u64 = EVQ_TAG | (uint32_t)q };
	if (sl_sys.epoll_ctl(epfd, EPOLL_CTL_ADD, m->fd, &kev) < 0 &&
	    (errno != EEXIST || sl_sys.epoll_ctl(epfd, EPOLL_CTL_MOD, m->fd, &kev) < 0)) {
		sl_evq_unregister(s, k, m->q_pub);
		set->free_slots[set->nfree++] = q;
		return false;
	}
	add_bells(epfd, set);
	seat(set, i, s, q, k, m->q_pub);
	return true;
}

void hk_evq_unqueue(int epfd, struct epset *set, struct member *m)
{
	if (m->q < 0)
		return;
	list_del(set, m);
	hk_evq_stall_forget(set, m);
	fence_forget(set, m);
	/* A forked child's copy: the registration and the kernel entry (the
	 * kernel set is shared) are the parent's. */
	if (!set->forked) {
		sl_evq_unregister(m->q_sock, m->q_k, m->q_pub);
		sl_sys.epoll_ctl(epfd, EPOLL_CTL_DEL, m->fd, NULL);
	}
	set->slot_member[m->q] = -1;
	set->free_slots[set->nfree++] = m->q;
	set->nqueued--;
	m->q = -1;
}

/* Event loops (redis's ae, libevent's users) delete a connection from the
 * set and add it back in the same callback, once or twice a request.  Its
 * queue place (a registration in the peer's area, a bit, the tagged kernel
 * entry: two epoll_ctl calls) then goes and comes back each time, costing
 * more than the request; parked, the place waits for the re-add until the
 * set's next wait (hk_ep_reconcile releases it).  A parked bit is no
 * member's, so marks and kernel edges on it report nothing. */
#define PARKED_MAX 64

static _Atomic int parked_total;

bool hk_evq_any_parked(void)
{
	return atomic_load_explicit(&parked_total, memory_order_relaxed) > 0;
}

bool hk_evq_park(struct epset *set, struct member *m)
{
	if (m->q < 0 || set->forked || m->q_stale || m->q_sock != sl_sock_get(m->fd))
		return false;
	if (set->nparked == set->parked_cap) {
		int cap = set->parked_cap ? set->parked_cap * 2 : 4;
		struct parked *grown;

		if (cap > PARKED_MAX || !(grown = realloc(set->parked, (size_t)cap * sizeof(*grown))))
			return false;
		set->parked = grown;
		set->parked_cap = cap;
	}
	list_del(set, m);
	hk_evq_stall_forget(set, m);
	fence_forget(set, m);
	set->parked[set->nparked++] =
		(struct parked){ .fd = m->fd, .q = m->q, .k = m->q_k, .pub = m->q_pub, .sock = m->q_sock };
	atomic_fetch_add_explicit(&parked_total, 1, memory_order_relaxed);
	set->slot_member[m->q] = -1;
	set->nqueued--;
	m->q = -1;
	return true;
}

static struct parked take_parked(struct epset *set, int j)
{
	struct parked p = set->parked[j];

	set->parked[j] = set->parked[--set->nparked];
	atomic_fetch_sub_explicit(&parked_total, 1, memory_order_relaxed);
	return p;
}

/* Does the number still name the parked connection?  A close releases the
 * place first; one behind our back (a new file on the number), or racing
 * the delete in another thread, leaves nothing of ours to undo: the kernel
 * entry went with its file and the connection's area with the connection. */
static bool parked_live(const struct parked *p)
{
	return sl_sock_get(p->fd) == p->sock;
}

static void release_parked_at(int epfd, struct epset *set, int j)
{
	struct parked p = take_parked(set, j);

	if (parked_live(&p)) {
		sl_evq_unregister(p.sock, p.k, p.pub);
		sl_sys.epoll_ctl(epfd, EPOLL_CTL_DEL, p.fd, NULL);
	}
	set->free_slots[set->nfree++] = p.q;
}

void hk_evq_release_parked(int epfd, struct epset *set, int fd)
{
	for (int j = set->nparked - 1; j >= 0; j--)
		if (fd < 0 || set->parked[j].fd == fd)
			release_parked_at(epfd, set, j);
}

bool hk_evq_unpark(int epfd, struct epset *set, int i)
{
	struct member *m = &set->m[i];
	struct sl_sock *s;
	struct parked p;
	int j;

	for (j = 0; j < set->nparked && set->parked[j].fd != m->fd; j++)
		;
	if (j == set->nparked)
		return false;
	s = hk_ep_ring_socket(m->fd);
	if (set->forked || s != set->parked[j].sock || !sl_evq_eligible(s)) {
		release_parked_at(epfd, set, j);
		return false;
	}
	p = take_parked(set, j);
	seat(set, i, s, p.q, p.k, p.pub);
	return true;
}

/* A kernel edge on a parked place: the connection's end, as a member's. */
static void parked_kernel_woke(struct epset *set, uint32_t q)
{
	for (int j = 0; j < set->nparked; j++) {
		struct parked *p = &set->parked[j];

		if ((uint32_t)p->q == q) {
			if (parked_live(p) && hk_ep_ring_socket(p->fd) == p->sock)
				sl_conn_kernel_woke(p->sock);
			return;
		}
	}
}

void hk_evq_touch(struct epset *set, struct member *m)
{
	list_add(set, m);
}

void hk_evq_moved(struct epset *set, int to)
{
	if (set->m[to].q >= 0)
		set->slot_member[set->m[to].q] = to;
}

static void take_one(void *arg, uint32_t q)
{
	struct epset *set = arg;
	struct member *m = member_at(set, q);

	if (m)
		list_add(set, m);
}

/* One look at queued member m: its events to report (0: none), and whether
 * it stays in the ready list. */
static uint32_t look(struct epset *set, struct member *m, bool *keep)
{
	struct sl_sock *s = hk_ep_ring_socket(m->fd);
	uint32_t mask = (m->events & HK_EP_EVENT_BITS) | EPOLLHUP | EPOLLERR, all, rev;
	short ev;
	int owed;

	*keep = false;
	if (s != m->q_sock || !s || !sl_evq_eligible(s)) {
		/* Moved to kernel TCP, or another socket took the number:
		 * reconcile gives it its new place before the next sleep. */
		m->q_stale = true;
		hk_ep_unsettle(set);
		return 0;
	}
	if (m->disarmed)
		return 0;
	/* Step 2 of the sleep protocol, per connection: ask the peer to mark
	 * us at its next change, then look. */
	owed = sl_evq_want(s, m->q_k, SL_DIR_DATA);
	if (owed && !m->on_fence) {
		m->on_fence = true;
		set->fence[set->nfence++] = (uint32_t)m->q;
	}
	set->fence_barrier |= (owed & SL_EVQ_BARRIER) != 0;
	all = (uint32_t)sl_conn_ready(s, (short)(m->events & HK_EP_EVENT_BITS));
	if ((m->events & EPOLLOUT) && !(all & (EPOLLOUT | EPOLLHUP | EPOLLERR))) {
		/* Room comes from the peer's reads: it publishes them now. */
		sl_evq_want(s, m->q_k, SL_DIR_SPACE);
		all = (uint32_t)sl_conn_ready(s, (short)(m->events & HK_EP_EVENT_BITS));
	}
	ev = hk_ep_wanted(m, s);
	if (ev < 0)
		return 0;
	rev = all & ((uint32_t)ev | EPOLLHUP | EPOLLERR) & mask;
	if (!rev)
		return 0;
	/* An edge reports every event that is ready then, as the kernel's. */
	if (m->events & EPOLLET)
		rev |= all & mask;
	hk_ep_mark_reported(m, s, rev);
	*keep = !(m->events & (EPOLLET | EPOLLONESHOT));
	return rev;
}

int hk_evq_collect(struct epset *set, struct epoll_event *evs, int max, int64_t now_ms)
{
	int got = 0, i, kept = 0;

	if (!set->evq.sh || set->forked)
		return 0;
	sl_evq_take(&set->evq, take_one, set);
	if (now_ms >= set->next_sweep_ms) {
		int64_t period = (int64_t)set->nqueued * SWEEP_US_PER_MEMBER / 1000;

		for (int j = 0; j < set->n; j++)
			list_add(set, &set->m[j]);
		sl_evq_forget_wants(&set->evq);
		set->next_sweep_ms = now_ms + (period > SWEEP_MS ? period : SWEEP_MS);
	}
	/* In list order; members kept go behind the ones not looked at, so a
	 * full evs does not starve the tail. */
	for (i = 0; i < set->rl_n && got < max; i++) {
		struct member *m = member_at(set, set->rl[i]);
		uint32_t rev;
		bool keep;

		if (!m)
			continue;
		rev = look(set, m, &keep);
		if (rev) {
			evs[got].events = rev;
			evs[got].data = m->data;
			got++;
		}
		if (keep) {
			set->rl_tmp[kept++] = set->rl[i];
		} else {
			m->on_list = false;
			hk_evq_stall_dropped(set, m);
		}
	}
	memmove(set->rl, set->rl + i, (size_t)(set->rl_n - i) * sizeof(*set->rl));
	memcpy(set->rl + (set->rl_n - i), set->rl_tmp, (size_t)kept * sizeof(*set->rl));
	set->rl_n = set->rl_n - i + kept;
	return got;
}

int hk_evq_strip(struct epset *set, struct epoll_event *evs, int n, bool *woken)
{
	int kept = 0;

	for (int i = 0; i < n; i++) {
		uint64_t tag = evs[i].data.u64;

		if (tag == WAKE_TAG || tag == PROMO_TAG) {
			*woken = true;
			continue;
		}
		if (tag == EVQ_BELL_TAG) {
			if (set->evq.sh)
				sl_evq_drain(&set->evq);
			continue;
		}
		if ((tag & EVQ_TAG_MASK) == EVQ_TAG) {
			struct member *m = member_at(set, (uint32_t)tag);
			struct sl_sock *s = m ? hk_ep_ring_socket(m->fd) : NULL;

			/* As a scan's kernel poll learns it (wait.c): the peer's
			 * end gone, or our offer's acceptor spoke or the kernel
			 * reset it; never a peek at a kernel TCP connection. */
			if (s && s == m->q_sock)
				sl_conn_kernel_woke(s);
			if (m)
				list_add(set, m);
			else if (set->nparked)
				parked_kernel_woke(set, (uint32_t)tag);
			continue;
		}
		evs[kept++] = evs[i];
	}
	return kept;
}

int hk_evq_arm(struct epset *set)
{
	if (!set->evq.sh || set->forked || !set->nqueued)
		return -1;
	/* Drain first: a ring that lands after the drain stays for the sleep. */
	sl_evq_drain(&set->evq);
	sl_evq_arm(&set->evq);
	if (set->nfence) {
		/* The wants' owed barrier, once for the sleep (sl_evq_want):
		 * after it, an unfenced peer's data is seen by a second look,
		 * or its next publish sees the want and marks the armed set.
		 * A device peer's wants landed in sl_evq_arm's read-back. */
		if (set->fence_barrier)
			(void)sl_barrier_remote();
		set->fence_barrier = false;
		for (int i = 0; i < set->nfence; i++) {
			struct member *m = member_at(set, set->fence[i]);

			if (m && m->q == (int)set->fence[i]) {
				m->on_fence = false;
				list_add(set, m);
			}
		}
		set->nfence = 0;
	}
	return !sl_evq_pending(&set->evq) && set->rl_n == 0;
}

void hk_evq_disarm(struct epset *set)
{
	sl_evq_disarm(&set->evq);
}

int hk_evq_sleep_arm(struct epset *set, int *sleep_ms)
{
	int armed = hk_evq_arm(set);

	if (armed == 0)
		*sleep_ms = 0;
	*sleep_ms = hk_evq_cap(set, *sleep_ms, sl_mono_ms());
	if (*sleep_ms != 0)
		*sleep_ms = hk_evq_stall_cap(set, *sleep_ms);
	return armed;
}

int hk_evq_cap(struct epset *set, int left, int64_t now_ms)
{
	int64_t until;

	if (!set->evq.sh || set->forked || !set->nqueued)
		return left;
	until = set->next_sweep_ms - now_ms;
	if (until < 0)
		until = 0;
	return left < 0 || left > until ? (int)until : left;
}

/* How often a spin asks the kernel set (one poll(2)): a listener, a pipe or
 * another thread's epoll_ctl must not wait out a long forced spin. */
#define SPIN_KERNEL_NS 20000

bool hk_evq_spin(struct epset *set, struct pollfd *kfds, nfds_t nk, int left)
{
	int64_t start = sl_mono_ns(), end, next_kernel = start + SPIN_KERNEL_NS;
	uint32_t learnt = 0;
	bool yield = false, found = false;
	int us = set->poll_us;

	atomic_store_explicit(&set->spin_missed_at, 0, memory_order_relaxed);
	if (!set->evq.sh || set->forked || !set->nqueued || left == 0)
		return false;
	if (us == SL_POLL_ADAPTIVE)
		learnt = sl_spin_budget(&set->spin_learn, start, &yield);
	end = start + (us == SL_POLL_ADAPTIVE ? (int64_t)learnt : (int64_t)us * 1000);
	if (left > 0 && end > start + (int64_t)left * 1000000)
		end = start + (int64_t)left * 1000000;
	for (unsigned iter = 1; end > start; iter++) {
		if (sl_evq_pending(&set->evq)) {
			found = true;
			break;
		}
		if (sl_spin_turn(iter, yield)) {
			int64_t now = sl_mono_ns();

			if (now >= end)
				break;
			if (now >= next_kernel) {
				next_kernel = now + SPIN_KERNEL_NS;
				if (sl_sys.poll(kfds, nk, 0) > 0) {
					found = true;
					break;
				}
			}
		}
	}
	if (us != SL_POLL_ADAPTIVE)
		return found;
	if (found) {
		sl_spin_note(&set->spin_learn, learnt, true, sl_mono_ns() - start);
	} else {
		/* Not paid, or not even tried: the whole wait, sleep included,
		 * teaches the policy, as a connection's does (conn_spin.c).  A
		 * skipped wait taught nothing before, so after an idle gap only
		 * the full-spin probe every 32 waits could bring the spin back,
		 * and a probe that missed (the woken peer queued behind our
		 * spin?) kept it off: epoll_scale N=1, 5,000 round trips after
		 * 500 ms idle, p50 5.6 us against 0.45 us spinning. */
		atomic_store_explicit(&set->spin_missed_budget, learnt, memory_order_relaxed);
		atomic_store_explicit(&set->spin_missed_at, start, memory_order_relaxed);
	}
	return found;
}

static void spin_slept(struct epset *set)
{
	int64_t at = atomic_exchange_explicit(&set->spin_missed_at, 0, memory_order_relaxed);

	if (at)
		sl_spin_note(&set->spin_learn, atomic_load_explicit(&set->spin_missed_budget, memory_order_relaxed),
			     false, sl_mono_ns() - at);
}

void hk_evq_after_sleep(struct epset *set)
{
	hk_evq_stall_after_sleep(set);
	spin_slept(set);
}

static void discard(void *arg, uint32_t q)
{
	(void)arg;
	(void)q;
}

void hk_evq_release(struct epset *set)
{
	for (int i = 0; i < set->n; i++) {
		struct member *m = &set->m[i];

		if (m->q >= 0 && !set->forked)
			sl_evq_unregister(m->q_sock, m->q_k, m->q_pub);
		m->q = -1;
		m->on_list = false;
	}
	/* Their kernel entries go with the kernel set. */
	while (set->nparked) {
		struct parked p = take_parked(set, set->nparked - 1);

		if (!set->forked && parked_live(&p))
			sl_evq_unregister(p.sock, p.k, p.pub);
	}
	hk_evq_stall_reset(set);
	fence_reset(set);
	if (set->evq.sh && !set->forked)
		sl_evq_take(&set->evq, discard, NULL);
	set->nqueued = set->rl_n = set->nfree = set->slot_hi = 0;
	set->bell_in_kernel = false;
	sl_evq_set_closed(&set->evq);
	hk_ep_unsettle(set);
}

void hk_evq_fd_moved(struct epset *set, int from, int to)
{
	/* Registrations made before name the old number: their peers cannot
	 * reach the set until the member is queued again (the sweep finds
	 * their changes meanwhile). */
	sl_evq_fd_moved(&set->evq, from, to);
}

void hk_evq_after_fork_child(struct epset *set)
{
	/* The queue is the parent's, which goes on using it: the child scans
	 * this set (taking nothing from the queue, removing nothing from the
	 * shared kernel set), and makes its own queue for its next set on
	 * this number. */
	set->forked = true;
	while (set->nparked)
		take_parked(set, set->nparked - 1); /* the parent's, as the queue */
	hk_ep_unsettle(set);
	hk_evq_stall_reset(set);
	fence_reset(set);
	set->bell_in_kernel = false;
	sl_evq_close(&set->evq);
}

void hk_evq_before_exec(int epfd, struct epset *set)
{
	if (set->forked)
		return; /* a forked child's copy: the queue is the parent's */
	for (int i = 0; i < set->n; i++)
		hk_evq_unqueue(epfd, set, &set->m[i]);
	hk_evq_release_parked(epfd, set, -1);
	hk_ep_unsettle(set);
}
