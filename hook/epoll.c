/* epoll.c — epoll for programs whose sets mix kernel fds and scilan
 * connections.  A connection's readiness lives in its rings, which the kernel
 * cannot see: such members stay out of the kernel set and each wait polls
 * them (spin, then the sleep protocol) together with the kernel set itself.
 * Everything else (files, pipes, listeners, plain sockets) is a real kernel
 * member with the kernel's own semantics.  A change another thread makes to
 * the emulated members reaches a waiter already asleep through the set's
 * wake-up descriptor, an eventfd in the kernel set.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "conn.h"
#include "epoll_set.h"
#include "hook.h"
#include "log.h"
#include "own_fd.h"
#include "scilan.h"
#include "sock.h"

#define MAX_SET_FD 65536 /* epoll fds above this number are left to the kernel alone */
#define EVENT_BITS (EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLRDHUP)
/* What the kernel accepts beside EPOLLEXCLUSIVE. */
#define EXCLUSIVE_OK (EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLWAKEUP | EPOLLET | EPOLLEXCLUSIVE)
/* The longest sleep of a set with a kernel member that may yet connect. */
#define UNSEEN_CONNECT_MS 10

static struct epset *_Atomic sets[MAX_SET_FD];
static _Atomic int open_sets;
static _Atomic int highest_set_fd; /* bounds the scan at close */

static struct epset *set_of(int fd)
{
	struct epset *set;

	if (fd < 0 || fd >= MAX_SET_FD)
		return NULL;
	set = atomic_load_explicit(&sets[fd], memory_order_acquire);
	return set && set->open ? set : NULL;
}

bool hk_epoll_known(int fd)
{
	return atomic_load_explicit(&open_sets, memory_order_relaxed) && set_of(fd);
}

static int left_ms(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - sl_mono_ms();
	return left > 0 ? (int)left : 0;
}

/* A connection whose readiness the kernel cannot see. */
struct sl_sock *hk_ep_ring_socket(int fd)
{
	struct sl_sock *s = sl_sock_get(fd);
	enum sl_state st;

	if (!s)
		return NULL;
	st = sl_sock_state(s);
	return st == SL_CONNECTED || st == SL_CONNECTING ? s : NULL;
}

static bool wants_emulation(int fd)
{
	return hk_ep_ring_socket(fd) || set_of(fd);
}

/* Should the hook remember fd as a member at all?  Sockets libscilan knows
 * can change state (a fresh socket connects), epoll sets can be nested;
 * anything else is a plain kernel member the hook never looks at again. */
static bool tracked(int fd)
{
	return sl_sock_get(fd) || set_of(fd);
}

static struct member *find(struct epset *set, int fd)
{
	for (int i = 0; i < set->n; i++)
		if (set->m[i].fd == fd)
			return &set->m[i];
	return NULL;
}

static void to_kernel_mode(int epfd, struct member *m, bool want_kernel)
{
	struct epoll_event ev = { .events = m->events, .data = m->data };

	if (m->in_kernel == want_kernel)
		return;
	if (want_kernel) {
		if (sl_sys.epoll_ctl(epfd, EPOLL_CTL_ADD, m->fd, &ev) == 0 ||
		    (errno == EEXIST && sl_sys.epoll_ctl(epfd, EPOLL_CTL_MOD, m->fd, &ev) == 0))
			m->in_kernel = true;
	} else {
		sl_sys.epoll_ctl(epfd, EPOLL_CTL_DEL, m->fd, NULL);
		m->in_kernel = false;
	}
}

/* Members move between the kernel set, the event queue and the scan as their
 * sockets change state (connect completes, an offer is decided, a
 * connection falls back to plain TCP).  Returns the scanned members armed.
 * A set whose members can only change through epoll_ctl is settled: the
 * walk is skipped, so a wait costs O(ready), not O(members). */
static int reconcile(int epfd, struct epset *set)
{
	int scanned = 0;
	bool settled = !set->forked, unseen = false;

	if (set->settled)
		return set->nscan;
	for (int i = 0; i < set->n; i++) {
		struct member *m = &set->m[i];
		struct sl_sock *s;
		bool emulate = wants_emulation(m->fd);

		if (m->q >= 0 && set->forked) {
			scanned += !m->disarmed; /* its other process's queue: scan it */
			continue;
		}
		if (m->q >= 0 && emulate && !m->q_stale)
			continue;
		hk_evq_unqueue(epfd, set, m);
		if (emulate && !set_of(m->fd) && hk_evq_queue(epfd, set, i))
			continue;
		to_kernel_mode(epfd, m, !emulate);
		if (!m->in_kernel) {
			scanned += !m->disarmed;
			settled = false;
		} else if ((s = sl_sock_get(m->fd)) &&
			   (sl_sock_state(s) == SL_FRESH || sl_sock_state(s) == SL_CONNECTING)) {
			settled = false; /* may connect and move to the rings */
			unseen = true;
		}
	}
	set->nscan = scanned;
	set->settled = settled;
	set->unseen_connect = unseen;
	return scanned;
}

/* Our wake-up descriptor moved: the program dup2'ed onto its number. */
static void wake_fd_moved(int from, int to)
{
	for (int e = 0, hi = atomic_load(&highest_set_fd); e <= hi; e++) {
		struct epset *set = atomic_load_explicit(&sets[e], memory_order_acquire);

		if (!set)
			continue;
		pthread_mutex_lock(&set->lock);
		if (set->wake_fd == from)
			set->wake_fd = to;
		if (set->private_fd == from)
			set->private_fd = to;
		hk_evq_fd_moved(set, from, to);
		pthread_mutex_unlock(&set->lock);
	}
}

/* A forked child has one thread: the parent's sleepers are not its own.  The
 * kernel set is shared with the parent, so the child leaves the parent's
 * wake-up descriptor in it (closing only its copy; it leaves the kernel set
 * with the parent's) and makes its own when it needs one: until the parent
 * drains a count of its own, the child's waiters merely wake and wait again. */
static void child_after_fork(void)
{
	for (int e = 0, hi = atomic_load(&highest_set_fd); e <= hi; e++) {
		struct epset *set = atomic_load_explicit(&sets[e], memory_order_acquire);

		if (!set)
			continue;
		pthread_mutex_init(&set->lock, NULL); /* a parent thread may have held it */
		if (set->wake_fd >= 0)
			sl_own_fd_close(set->wake_fd);
		set->wake_fd = -1;
		set->sleeping = set->stale = 0;
		set->signaled = false;
		set->incarnation++;
		hk_evq_after_fork_child(set);
	}
}

static void install_handlers(void)
{
	sl_own_fd_on_move(wake_fd_moved);
	pthread_atfork(NULL, NULL, child_after_fork);
}

static pthread_once_t handlers_once = PTHREAD_ONCE_INIT;

static struct epset *open_set(int fd);

HK_EXPORT int epoll_create1(int flags)
{
	int fd;

	hk_enter();
	pthread_once(&handlers_once, install_handlers);
	fd = sl_sys.epoll_create1(flags);
	hk_fd_reused(fd); /* a set closed behind our back would keep its members */
	if (fd < 0 || fd >= MAX_SET_FD)
		return fd;
	open_set(fd);
	return fd;
}

/* The set of epoll fd fd, opened empty (NULL: a kernel-only set, scilan
 * members will not be seen). */
static struct epset *open_set(int fd)
{
	struct epset *set, *fresh = NULL;

	set = atomic_load(&sets[fd]);
	if (!set) {
		fresh = calloc(1, sizeof(*fresh));
		if (!fresh)
			return NULL;
		pthread_mutex_init(&fresh->lock, NULL);
		fresh->wake_fd = -1;
		if (!atomic_compare_exchange_strong(&sets[fd], &set, fresh)) {
			free(fresh);
		} else {
			set = fresh;
		}
	}
	pthread_mutex_lock(&set->lock);
	set->n = 0;
	set->sleeping = set->stale = 0;
	set->signaled = false;
	set->forked = set->settled = set->bell_in_kernel = set->unseen_connect = false;
	set->nscan = 0;
	set->private_fd = -1;
	set->open = true;
	pthread_mutex_unlock(&set->lock);
	atomic_fetch_add(&open_sets, 1);
	for (int hi = atomic_load(&highest_set_fd); hi < fd && !atomic_compare_exchange_weak(&highest_set_fd, &hi, fd);)
		;
	return set;
}

struct epset *hk_epoll_private_open(int *epfd)
{
	struct epset *set;
	int fd;

	pthread_once(&handlers_once, install_handlers);
	fd = sl_own_fd(sl_sys.epoll_create1(EPOLL_CLOEXEC));
	if (fd < 0)
		return NULL;
	if (fd >= MAX_SET_FD || !(set = open_set(fd))) {
		sl_own_fd_close(fd);
		return NULL;
	}
	pthread_mutex_lock(&set->lock);
	set->private_fd = fd;
	pthread_mutex_unlock(&set->lock);
	*epfd = fd;
	return set;
}

void hk_epoll_private_close(int epfd)
{
	hk_epoll_forget_fd(epfd);
	sl_own_fd_close(epfd);
}

HK_EXPORT int epoll_create(int size)
{
	if (size <= 0) {
		errno = EINVAL;
		return -1;
	}
	return epoll_create1(0);
}

static void remove_at(int epfd, struct epset *set, struct member *m)
{
	hk_evq_unqueue(epfd, set, m);
	*m = set->m[--set->n];
	if (m != &set->m[set->n])
		hk_evq_moved(set, (int)(m - set->m));
	hk_ep_unsettle(set);
}

void hk_ep_remove_member(int epfd, struct epset *set, struct member *m)
{
	remove_at(epfd, set, m);
}

static int add_member(int epfd, struct epset *set, int fd, const struct epoll_event *ev)
{
	struct member *m;
	struct epset *inner;

	if (find(set, fd)) {
		errno = EEXIST;
		return -1;
	}
	if ((inner = set_of(fd))) {
		/* The kernel cannot see a loop through emulated members. */
		pthread_mutex_lock(&inner->lock);
		bool loop = find(inner, epfd) != NULL;
		pthread_mutex_unlock(&inner->lock);
		if (loop) {
			errno = ELOOP;
			return -1;
		}
	}
	if (set->n == set->cap) {
		int cap = set->cap ? set->cap * 2 : 16;
		struct member *grown = realloc(set->m, (size_t)cap * sizeof(*grown));

		if (!grown) {
			errno = ENOMEM;
			return -1;
		}
		set->m = grown;
		set->cap = cap;
	}
	m = &set->m[set->n];
	*m = (struct member){ .fd = fd, .events = ev->events, .data = ev->data, .q = -1 };
	if (!wants_emulation(fd)) {
		struct epoll_event kev = *ev;

		if (sl_sys.epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &kev) < 0)
			return -1;
		m->in_kernel = true;
	}
	set->n++;
	hk_ep_unsettle(set);
	return 0;
}

HK_EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct epset *set;
	struct member *m;
	int r = 0;

	hk_enter();
	set = set_of(epfd);
	if (!set || epfd == fd)
		return sl_sys.epoll_ctl(epfd, op, fd, ev);
	pthread_mutex_lock(&set->lock);
	m = find(set, fd);
	if (!m && !tracked(fd)) {
		pthread_mutex_unlock(&set->lock);
		return sl_sys.epoll_ctl(epfd, op, fd, ev);
	}
	if (op != EPOLL_CTL_DEL && !ev) {
		errno = EFAULT;
		r = -1;
	} else if (op != EPOLL_CTL_DEL && (ev->events & EPOLLEXCLUSIVE) &&
		   (op == EPOLL_CTL_MOD || set_of(fd) || (ev->events & ~(uint32_t)EXCLUSIVE_OK))) {
		errno = EINVAL; /* as the kernel: only added, only with these, never to a set */
		r = -1;
	} else if (op == EPOLL_CTL_ADD) {
		r = add_member(epfd, set, fd, ev);
		if (r == 0 && !(m = find(set, fd))->in_kernel)
			hk_epoll_wake_sleepers(epfd, set);
	} else if (op == EPOLL_CTL_MOD || op == EPOLL_CTL_DEL) {
		bool emulated = m && !m->in_kernel;

		if (!m) {
			errno = ENOENT;
			r = -1;
		} else if (op == EPOLL_CTL_MOD && (m->events & EPOLLEXCLUSIVE)) {
			errno = EINVAL;
			r = -1;
		} else if (m->in_kernel && sl_sys.epoll_ctl(epfd, op, fd, ev) < 0) {
			r = -1;
		} else if (op == EPOLL_CTL_DEL) {
			remove_at(epfd, set, m);
		} else {
			m->events = ev->events;
			m->data = ev->data;
			m->disarmed = false;
			m->et_reported = 0;
			hk_ep_unsettle(set); /* a scanned member re-armed counts again */
			hk_evq_touch(set, m);
		}
		if (r == 0 && emulated)
			hk_epoll_wake_sleepers(epfd, set);
	} else {
		errno = EINVAL;
		r = -1;
	}
	pthread_mutex_unlock(&set->lock);
	return r;
}

/* Poll events to ask for member m: under EPOLLET, an event already reported
 * is asked again only after its edge (new data, a send that found the ring
 * full, a state change).  0 means nothing to wait for. */
short hk_ep_wanted(struct member *m, struct sl_sock *s)
{
	uint32_t ev = m->events & EVENT_BITS;
	uint32_t state;
	uint64_t written;

	if (!(m->events & EPOLLET) || !m->et_reported || !s || sl_sock_state(s) != SL_CONNECTED)
		return (short)ev;
	state = atomic_load(&s->own_ctl->peer_state) | (uint32_t)atomic_load(&s->reset) << 31;
	if (state != m->et_state_mark)
		return (short)ev;
	if (m->et_reported & (EPOLLHUP | EPOLLERR))
		return -1; /* nothing more can happen on this connection */
	/* Data left unread since the report is no new edge; an empty ring is
	 * asked for, as the next arrival is one. */
	written = atomic_load(s->rx.write_idx);
	if ((m->et_reported & EPOLLIN) && written == m->et_rx_mark && written != s->rx.read)
		ev &= ~(uint32_t)(EPOLLIN | EPOLLRDHUP);
	/* A pending urgent byte is an edge again only when more data arrives. */
	if ((m->et_reported & EPOLLPRI) && written == m->et_rx_mark)
		ev &= ~(uint32_t)EPOLLPRI;
	/* Writable again only after a send found the ring full, as TCP's
	 * write-space wake-up needs a send that ran out of room. */
	if ((m->et_reported & EPOLLOUT) && atomic_load(&s->tx_blocked) == m->et_tx_mark)
		ev &= ~(uint32_t)EPOLLOUT;
	return ev ? (short)ev : -1;
}

void hk_ep_mark_reported(struct member *m, struct sl_sock *s, uint32_t revents)
{
	if (m->events & EPOLLONESHOT)
		m->disarmed = true;
	if (!(m->events & EPOLLET) || !s || sl_sock_state(s) != SL_CONNECTED)
		return;
	m->et_reported = revents;
	m->et_rx_mark = atomic_load(s->rx.write_idx);
	m->et_tx_mark = atomic_load(&s->tx_blocked);
	m->et_state_mark = atomic_load(&s->own_ctl->peer_state) | (uint32_t)atomic_load(&s->reset) << 31;
}

/* What one wait polls: the set's own kernel fd first, then per emulated
 * member one entry, or for a nested emulated set its kernel fd and its
 * connections (one level deep). */
struct plan {
	struct pollfd *pfds;
	int *owner; /* pfds[i] belongs to member fd owner[i] (-1: the set itself) */
	int n, cap;
	/* Nested sets whose lists the plan read, as their sleeper (sleeping). */
	bool sleeping;
	struct watch {
		struct epset *set;
		struct ticket t;
		int at; /* the set's own entry in pfds */
	} *watch;
	int nwatch, capwatch;
};

static int plan_add(struct plan *p, int fd, short events, int owner)
{
	if (p->n == p->cap) {
		int cap = p->cap ? p->cap * 2 : 32;
		struct pollfd *pf = realloc(p->pfds, (size_t)cap * sizeof(*pf));
		int *ow;

		if (!pf)
			return -1;
		p->pfds = pf;
		ow = realloc(p->owner, (size_t)cap * sizeof(*ow));
		if (!ow)
			return -1;
		p->owner = ow;
		p->cap = cap;
	}
	p->pfds[p->n] = (struct pollfd){ .fd = fd, .events = events };
	p->owner[p->n++] = owner;
	return 0;
}

/* Sleeping on an inner set's list too: a change to it signals its wake-up
 * descriptor, which makes the inner set's entry in the plan readable. */
static int watch_nested(struct plan *p, struct epset *inner)
{
	if (!p->sleeping)
		return 0;
	if (p->nwatch == p->capwatch) {
		int cap = p->capwatch ? p->capwatch * 2 : 4;
		struct watch *grown = realloc(p->watch, (size_t)cap * sizeof(*grown));

		if (!grown)
			return -1;
		p->watch = grown;
		p->capwatch = cap;
	}
	p->watch[p->nwatch].set = inner;
	p->watch[p->nwatch].at = p->n - 1;
	hk_epoll_sleep_begin(inner, &p->watch[p->nwatch++].t);
	return 0;
}

/* Leave the nested sets' sleepers.  A set whose list changed may have shown
 * readable only for its wake-up: look at it again, so that it is not
 * reported (one more system call, only then). */
static void plan_awake(struct plan *p)
{
	for (int i = 0; i < p->nwatch; i++) {
		struct watch *w = &p->watch[i];
		struct pollfd *pf = &p->pfds[w->at];
		bool changed;

		pthread_mutex_lock(&w->set->lock);
		changed = hk_epoll_sleep_end(w->set, &w->t);
		pthread_mutex_unlock(&w->set->lock);
		if (changed && (pf->revents & POLLIN) && sl_sys.poll(pf, 1, 0) < 0)
			pf->revents = 0;
	}
	p->nwatch = 0;
}

static void plan_free(struct plan *p)
{
	plan_awake(p);
	free(p->pfds);
	free(p->owner);
	free(p->watch);
}

/* The inner set's connections, level-triggered: the kernel calls a nested
 * set ready when its ready list is not empty. */
static int plan_nested(struct plan *p, struct epset *inner, int inner_fd)
{
	int r = plan_add(p, inner_fd, POLLIN, inner_fd);

	pthread_mutex_lock(&inner->lock);
	if (r == 0)
		r = watch_nested(p, inner);
	reconcile(inner_fd, inner);
	for (int i = 0; i < inner->n && r == 0; i++) {
		struct member *im = &inner->m[i];

		if (!im->in_kernel && !im->disarmed && hk_ep_ring_socket(im->fd))
			r = plan_add(p, im->fd, (short)(im->events & EVENT_BITS), inner_fd);
	}
	pthread_mutex_unlock(&inner->lock);
	return r;
}

static int plan_set(struct plan *p, int epfd, struct epset *set)
{
	if (plan_add(p, epfd, POLLIN, -1) < 0)
		return -1;
	for (int i = 0; i < set->n; i++) {
		struct member *m = &set->m[i];
		struct epset *inner;
		short ev;

		if (m->in_kernel || m->disarmed || (m->q >= 0 && !set->forked))
			continue;
		if ((inner = set_of(m->fd))) {
			if (plan_nested(p, inner, m->fd) < 0)
				return -1;
			continue;
		}
		ev = hk_ep_wanted(m, hk_ep_ring_socket(m->fd));
		if (ev >= 0 && plan_add(p, m->fd, ev, m->fd) < 0)
			return -1;
	}
	return 0;
}

/* The events the plan found for member fd. */
static uint32_t revents_of(const struct plan *p, int fd)
{
	uint32_t rev = 0;

	for (int i = 1; i < p->n; i++)
		if (p->owner[i] == fd)
			rev |= (uint32_t)p->pfds[i].revents;
	return rev;
}

static int collect(struct epset *set, const struct plan *p, struct epoll_event *evs, int max)
{
	int got = 0;

	for (int k = 0; k < set->n && got < max; k++) {
		int i = (int)((set->rotate + (unsigned)k) % (unsigned)set->n);
		struct member *m = &set->m[i];
		struct sl_sock *rs;
		uint32_t rev;

		if (m->in_kernel || m->disarmed || (m->q >= 0 && !set->forked))
			continue;
		rev = revents_of(p, m->fd);
		if (set_of(m->fd))
			rev = rev ? EPOLLIN : 0; /* a nested set is readable */
		rev &= (m->events & EVENT_BITS) | EPOLLHUP | EPOLLERR;
		if (!rev)
			continue;
		/* An edge reports every event that is ready then, as the
		 * kernel's does (new data also shows a still-writable socket). */
		/* One look: another thread may move the socket to kernel TCP. */
		rs = hk_ep_ring_socket(m->fd);
		if ((m->events & EPOLLET) && rs)
			rev |= (uint32_t)sl_conn_ready(rs, (short)(m->events & EVENT_BITS)) &
			       ((m->events & EVENT_BITS) | EPOLLHUP | EPOLLERR);
		evs[got].events = rev;
		evs[got].data = m->data;
		got++;
		hk_ep_mark_reported(m, rs, rev);
	}
	if (set->n)
		set->rotate = (set->rotate + 1) % (unsigned)set->n;
	return got;
}

/* Every round reads the member list and registers as sleeping in one
 * critical section, then sleeps: on the kernel set alone while no member is
 * scanned (queued members are in the event queue, whose bell is in the
 * kernel set), else in scilan_poll over the scanned ones and the kernel set.
 * A change by another thread wakes either through the wake-up descriptor. */
static int wait_set(int epfd, struct epset *set, struct epoll_event *evs, int max, int timeout,
		    const sigset_t *mask)
{
	int64_t deadline = timeout < 0 ? -1 : sl_mono_ms() + timeout;
	struct plan p = { 0 };
	struct ticket t = { 0 };
	bool retried = false;
	int r;

	for (;;) {
		int got, left = left_ms(deadline), emulated, sleep_ms, armed = -1;
		unsigned reconciled;
		bool woken = false;

		pthread_mutex_lock(&set->lock);
		emulated = reconcile(epfd, set);
		reconciled = set->unsettled;
		got = hk_evq_collect(set, evs, max, sl_mono_ms());
		if (!got && left != 0 && !emulated && set->settled && set->nqueued && !set->forked) {
			struct pollfd kpf = { .fd = epfd, .events = POLLIN };
			bool hit;

			pthread_mutex_unlock(&set->lock);
			hit = hk_evq_spin(set, &kpf, 1, left);
			pthread_mutex_lock(&set->lock);
			if (hit)
				got = hk_evq_collect(set, evs, max, sl_mono_ms());
		}
		/* A member that left the queue since the reconcile gets its place
		 * before any sleep (the reconcile placed all the others: a set
		 * that stays unsettled, with scanned members, still sleeps). */
		sleep_ms = got || set->unsettled != reconciled ? 0 : left;
		/* A kernel member connecting onto the rings in another thread
		 * says nothing the kernel set hears: look again soon. */
		if (set->unseen_connect && (sleep_ms < 0 || sleep_ms > UNSEEN_CONNECT_MS))
			sleep_ms = UNSEEN_CONNECT_MS;
		if (sleep_ms != 0) {
			hk_epoll_sleep_begin(set, &t);
			armed = hk_evq_arm(set);
			if (armed == 0)
				sleep_ms = 0;
			sleep_ms = hk_evq_cap(set, sleep_ms, sl_mono_ms());
			if (sleep_ms != 0)
				sleep_ms = hk_evq_stall_cap(set, sleep_ms);
		}
		if (!emulated) {
			r = 0;
			if (got < max) {
				pthread_mutex_unlock(&set->lock);
				r = sl_sys.epoll_pwait(epfd, evs + got, max - got, sleep_ms, mask);
				pthread_mutex_lock(&set->lock);
			}
			if (armed >= 0)
				hk_evq_disarm(set);
			hk_epoll_sleep_end(set, &t);
			if (sleep_ms != 0)
				hk_evq_stall_after_sleep(set);
			if (r >= 0) {
				bool looked = got > 0; /* a member is reported once per wait */

				got += hk_evq_strip(set, evs + got, r, &woken);
				if (!looked && got < max)
					got += hk_evq_collect(set, evs + got, max - got, sl_mono_ms());
			}
		} else {
			p.n = 0;
			p.sleeping = sleep_ms != 0;
			r = plan_set(&p, epfd, set);
			pthread_mutex_unlock(&set->lock);
			if (r == 0)
				r = sl_poll_sigmask(p.pfds, (nfds_t)p.n, sleep_ms, mask);
			else
				errno = ENOMEM;
			plan_awake(&p);
			pthread_mutex_lock(&set->lock);
			if (armed >= 0)
				hk_evq_disarm(set);
			hk_epoll_sleep_end(set, &t);
			if (sleep_ms != 0)
				hk_evq_stall_after_sleep(set);
			if (r >= 0) {
				bool looked = got > 0;

				got += collect(set, &p, evs + got, max - got);
				if (!looked && got < max)
					got += hk_evq_collect(set, evs + got, max - got, sl_mono_ms());
				if ((p.pfds[0].revents & POLLIN) && got < max) {
					r = sl_sys.epoll_wait(epfd, evs + got, max - got, 0);
					if (r > 0)
						got += hk_evq_strip(set, evs + got, r, &woken);
				}
			}
		}
		/* Level-triggered members still ready: the kernel wakes the set's
		 * other waiters for them too. */
		if (got && set->rl_n && set->sleeping)
			hk_epoll_wake_sleepers(epfd, set);
		pthread_mutex_unlock(&set->lock);
		if (r < 0 && !got)
			break;
		/* At the deadline, a wake-up that took the place of the
		 * application's events gets one more look. */
		if (got || (left_ms(deadline) == 0 && (!woken || retried))) {
			r = got;
			break;
		}
		retried |= woken && left_ms(deadline) == 0;
	}
	plan_free(&p);
	return r;
}

HK_EXPORT int epoll_pwait(int epfd, struct epoll_event *evs, int max, int timeout, const sigset_t *mask)
{
	struct epset *set;

	hk_enter();
	set = set_of(epfd);
	if (!set)
		return sl_sys.epoll_pwait(epfd, evs, max, timeout, mask);
	if (max <= 0) {
		errno = EINVAL;
		return -1;
	}
	if (!evs) {
		errno = EFAULT;
		return -1;
	}
	return wait_set(epfd, set, evs, max, timeout, mask);
}

HK_EXPORT int epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout)
{
	return epoll_pwait(epfd, evs, max, timeout, NULL);
}

void hk_epoll_forget_fd(int fd)
{
	struct epset *set;
	struct sl_sock *s;

	if (!atomic_load_explicit(&open_sets, memory_order_relaxed))
		return;
	set = set_of(fd);
	if (set) {
		pthread_mutex_lock(&set->lock);
		set->open = false;
		hk_evq_release(set);
		set->n = 0;
		if (set->wake_fd >= 0)
			sl_own_fd_close(set->wake_fd);
		set->wake_fd = -1;
		set->incarnation++; /* its waiters still in the kernel wait on a closed set, as there */
		pthread_mutex_unlock(&set->lock);
		atomic_fetch_sub(&open_sets, 1);
	}
	/* The kernel drops a member when its last descriptor closes. */
	s = sl_sock_get(fd);
	if (!set && (!s || atomic_load(&s->fd_refs) > 1))
		return;
	for (int e = 0, hi = atomic_load(&highest_set_fd); e <= hi; e++) {
		struct epset *other = atomic_load_explicit(&sets[e], memory_order_acquire);
		struct member *m;

		if (!other || !other->open)
			continue;
		pthread_mutex_lock(&other->lock);
		if ((m = find(other, fd))) {
			bool emulated = !m->in_kernel;

			remove_at(e, other, m); /* a kernel entry goes with the fd by itself */
			if (emulated) /* waiters stop watching the closing connection */
				hk_epoll_wake_sleepers(e, other);
		}
		pthread_mutex_unlock(&other->lock);
	}
}

void hk_epoll_before_exec(void)
{
	if (!atomic_load_explicit(&open_sets, memory_order_relaxed))
		return;
	for (int e = 0, hi = atomic_load(&highest_set_fd); e <= hi; e++) {
		struct epset *set = atomic_load_explicit(&sets[e], memory_order_acquire);

		if (!set || !set->open)
			continue;
		pthread_mutex_lock(&set->lock);
		hk_evq_before_exec(e, set);
		pthread_mutex_unlock(&set->lock);
	}
}

/* poll/select entries that are emulated epoll sets become their nested
 * plan; the set's entry is ready when any part of it is. */
int hk_poll(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask)
{
	int64_t deadline = timeout_ms < 0 ? -1 : sl_mono_ms() + timeout_ms;
	struct plan p = { 0 };
	int r, ready = 0;
	bool nested = false;

	for (nfds_t i = 0; i < n && !nested; i++)
		nested = set_of(fds[i].fd) != NULL;
	if (!nested) {
		bool used;

		r = hk_pollq(fds, n, timeout_ms, mask, &used);
		return used ? r : sl_poll_sigmask(fds, n, timeout_ms, mask);
	}
	/* Rounds: a set changed under the sleep is read again. */
	do {
		int left = left_ms(deadline);

		p.n = 0;
		p.sleeping = left != 0;
		for (nfds_t i = 0; i < n; i++) {
			struct epset *inner = set_of(fds[i].fd);

			if (inner && (fds[i].events & POLLIN))
				r = plan_nested(&p, inner, fds[i].fd);
			else
				r = plan_add(&p, fds[i].fd, fds[i].events, -2 - (int)i);
			if (r < 0) {
				plan_free(&p);
				errno = ENOMEM;
				return -1;
			}
		}
		r = sl_poll_sigmask(p.pfds, (nfds_t)p.n, left, mask);
		plan_awake(&p);
		if (r < 0)
			break;
		ready = 0;
		for (nfds_t i = 0; i < n; i++) {
			fds[i].revents = 0;
			for (int k = 0; k < p.n; k++)
				if (p.owner[k] == -2 - (int)i || (p.owner[k] == fds[i].fd && set_of(fds[i].fd)))
					fds[i].revents |= p.pfds[k].revents;
			if (set_of(fds[i].fd) && fds[i].revents)
				fds[i].revents = POLLIN;
			ready += fds[i].revents != 0;
		}
		r = ready;
	} while (!ready && left_ms(deadline) != 0);
	plan_free(&p);
	return r;
}

HK_EXPORT int epoll_pwait2(int epfd, struct epoll_event *evs, int max, const struct timespec *ts, const sigset_t *mask)
{
	long long ms;

	if (!ts)
		return epoll_pwait(epfd, evs, max, -1, mask);
	if (ts->tv_sec < 0 || ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000) {
		errno = EINVAL;
		return -1;
	}
	ms = (long long)ts->tv_sec * 1000 + (ts->tv_nsec + 999999) / 1000000;
	return epoll_pwait(epfd, evs, max, ms > INT32_MAX ? INT32_MAX : (int)ms, mask);
}
