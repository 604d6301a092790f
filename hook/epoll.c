/* epoll.c — epoll for programs whose sets mix kernel fds and scilan
 * connections.  A connection's readiness lives in its rings, which the kernel
 * cannot see: such members stay out of the kernel set and each wait polls
 * them (spin, then the sleep protocol) together with the kernel set itself.
 * Everything else (files, pipes, listeners, plain sockets) is a real kernel
 * member with the kernel's own semantics.  A change another thread makes to
 * the emulated members reaches a waiter already asleep through the set's
 * wake-up descriptor, an eventfd in the kernel set.  This file keeps the
 * sets and their members; epoll_wait.c waits on them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>

#include "preload_api.h"
#include "epoll_set.h"
#include "hook.h"
#include "scilan.h"

#define MAX_SET_FD 65536 /* epoll fds above this number are left to the kernel alone */
/* What the kernel accepts beside EPOLLEXCLUSIVE. */
#define EXCLUSIVE_OK (EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLWAKEUP | EPOLLET | EPOLLEXCLUSIVE)

static struct epset *_Atomic sets[MAX_SET_FD];
static _Atomic int open_sets;
static _Atomic int highest_set_fd; /* bounds the scan at close */

struct epset *hk_ep_set_of(int fd)
{
	struct epset *set;

	if (fd < 0 || fd >= MAX_SET_FD)
		return NULL;
	set = atomic_load_explicit(&sets[fd], memory_order_acquire);
	return set && set->open ? set : NULL;
}

bool hk_epoll_known(int fd)
{
	return atomic_load_explicit(&open_sets, memory_order_relaxed) && hk_ep_set_of(fd);
}

/* A connection whose readiness the kernel cannot see. */
struct sl_sock *hk_ep_ring_socket(int fd)
{
	struct sl_sock *s = sl_sock_get(fd);

	return s && sl_sock_rings_or_deciding(s) ? s : NULL;
}

/* A member whose readiness the kernel set cannot give.  A connector whose
 * late offer is out stays a kernel member (its bytes are the kernel's until
 * it follows; the acceptor's marker is the one exception, which the waits
 * take care of: hk_ep_drop_moved); from its follow, or an
 * acceptor from its take, the connection is emulated, its seam crossed
 * through the library's poll. */
static bool wants_emulation(int fd)
{
	struct sl_sock *s;

	if (hk_ep_set_of(fd))
		return true;
	s = hk_ep_ring_socket(fd);
	return s && !sl_sock_promoting(s);
}

/* The promotion bell: an eventfd in the kernel set of every set with a
 * member that may move (edge-triggered: each ring is one edge per set, and
 * nobody drains it), rung after every change of promotion state.  A thread
 * asleep in the kernel on a set whose member another thread moved onto the
 * rings would otherwise sleep on: the kernel socket says nothing more. */
static _Atomic int promo_bell = -1;
/* Held from the load of the bell's number to the write, and by its move:
 * a ring never writes into a file of the program's that took the old
 * number.  A leaf: nothing else is taken under it. */
static pthread_mutex_t promo_bell_lock = PTHREAD_MUTEX_INITIALIZER;

static void ring_promo_bell(void)
{
	uint64_t one = 1;
	int fd;

	pthread_mutex_lock(&promo_bell_lock);
	fd = atomic_load(&promo_bell);
	/* The raw call: libc's write is a cancellation point, and socket
	 * locks may be held here.  EAGAIN (a full count) leaves an edge
	 * pending anyway. */
	if (fd >= 0)
		(void)syscall(SYS_write, fd, &one, sizeof(one));
	pthread_mutex_unlock(&promo_bell_lock);
}

static void add_promo_bell(int epfd, struct epset *set)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = PROMO_TAG };
	int fd = atomic_load(&promo_bell), none = -1;

	if (fd < 0 && (fd = sl_own_fd_lasting(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC))) >= 0) {
		pthread_mutex_lock(&promo_bell_lock);
		if (!atomic_compare_exchange_strong(&promo_bell, &none, fd)) {
			sl_own_fd_close(fd);
			fd = none;
		}
		pthread_mutex_unlock(&promo_bell_lock);
		sl_promote_on_move(ring_promo_bell);
	}
	/* Without it, a set's sleep is capped as for a move in progress. */
	if (fd >= 0 && (sl_sys.epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) == 0 || errno == EEXIST))
		set->promo_bell_in = true;
}

/* A plain connection that may move onto the rings: armed, or offering. */
static bool may_move(struct sl_sock *s)
{
	return sl_sock_state(s) == SL_PLAIN &&
	       (sl_promote_armed(atomic_load_explicit(&s->promote_role, memory_order_relaxed)) || sl_sock_promoting(s));
}

/* The set holds s: with the bell, if s may move and the set has none yet. */
static void bell_if_may_move(int epfd, struct epset *set, struct sl_sock *s)
{
	if (s && !set->promo_bell_in && !set->forked && may_move(s))
		add_promo_bell(epfd, set);
}

/* Can a plain connection in this set follow its connection onto the rings?
 * Only where the hook sees every wait (a set it emulates, not a forked
 * child's copy), and neither EPOLLONESHOT (a kernel member's disarming is
 * the kernel's, unseen) nor EPOLLEXCLUSIVE. */
static bool promotable_in(const struct epset *set, const struct epoll_event *ev)
{
	return set && !set->forked && ev && !(ev->events & (EPOLLONESHOT | EPOLLEXCLUSIVE));
}

/* Should the hook remember fd as a member at all?  Sockets libscilan knows
 * can change state (a fresh socket connects), epoll sets can be nested;
 * anything else is a plain kernel member the hook never looks at again. */
static bool tracked(int fd)
{
	return sl_sock_get(fd) || hk_ep_set_of(fd);
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
int hk_ep_reconcile(int epfd, struct epset *set)
{
	int scanned = 0;
	bool settled = !set->forked, unseen = false;
	unsigned epoch = sl_promote_epoch_now();
	int promoting = 0;

	/* A connection of ours moved (promotion): any member may be it. */
	if (epoch != set->promote_epoch) {
		set->promote_epoch = epoch;
		hk_ep_unsettle(set);
	}
	/* Deleted members not added back before this wait leave the queue. */
	if (set->nparked)
		hk_evq_release_parked(epfd, set, -1);
	if (set->settled)
		return set->nscan;
	for (int i = 0; i < set->n; i++) {
		struct member *m = &set->m[i];
		struct sl_sock *s;
		bool emulate = wants_emulation(m->fd);

		/* Moving onto the rings: the seam's end (another thread's read
		 * may cross it) says nothing the kernel set hears. */
		if ((s = sl_sock_get(m->fd)) && sl_promote_window(s)) {
			settled = false;
			promoting += sl_sock_promoting(s);
		}
		bell_if_may_move(epfd, set, s);
		/* No bell: a move another thread makes is looked for soon. */
		if (s && !set->promo_bell_in && (may_move(s) || sl_promote_window(s)))
			unseen = true;

		if (m->q >= 0 && set->forked) {
			scanned += !m->disarmed; /* its other process's queue: scan it */
			continue;
		}
		if (m->q >= 0 && emulate && !m->q_stale)
			continue;
		if (m->in_kernel && emulate)
			m->et_reported = 0; /* its kernel edges were not ours to mark */
		hk_evq_unqueue(epfd, set, m);
		if (emulate && !hk_ep_set_of(m->fd) && hk_evq_queue(epfd, set, i))
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
	set->npromoting = promoting;
	return scanned;
}

int hk_ep_drop_moved(struct epset *set, struct epoll_event *evs, int n, unsigned since, bool *dropped)
{
	int kept = 0;

	if (sl_promote_epoch_now() == since && !set->npromoting)
		return n;
	for (int i = 0; i < n; i++) {
		struct member *only = NULL;
		struct sl_sock *s;
		int matches = 0;

		/* The kernel says which member only by its data: one that
		 * another member shares is kept (at worst a spurious event). */
		for (int k = 0; k < set->n && matches < 2; k++)
			if (set->m[k].data.u64 == evs[i].data.u64) {
				only = &set->m[k];
				matches++;
			}
		if (matches != 1 || !only->in_kernel || !(s = sl_sock_get(only->fd))) {
			evs[kept++] = evs[i];
			continue;
		}
		/* Never waits: a follow with no room for its marker is left
		 * for a later call (its event kept: at worst a spurious one). */
		if (sl_sock_promoting(s))
			sl_promote_poll(s);
		if (wants_emulation(only->fd)) {
			hk_ep_unsettle(set);
			*dropped = true;
			continue;
		}
		evs[kept++] = evs[i];
	}
	return kept;
}

/* Our wake-up descriptor moved: the program dup2'ed onto its number. */
static void wake_fd_moved(int from, int to)
{
	int bell = from;

	pthread_mutex_lock(&promo_bell_lock);
	atomic_compare_exchange_strong(&promo_bell, &bell, to);
	pthread_mutex_unlock(&promo_bell_lock);
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
	set->forked = set->settled = set->bell_in_kernel = set->unseen_connect = set->promo_bell_in = false;
	set->npromoting = 0;
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
	if ((inner = hk_ep_set_of(fd))) {
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
	/* Before a thread asleep on the set could miss the member's move. */
	bell_if_may_move(epfd, set, sl_sock_get(fd));
	if (set->nparked && hk_evq_unpark(epfd, set, set->n)) {
		set->n++;
		return 0;
	}
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
	set = hk_ep_set_of(epfd);
	/* A kernel member follows its connection onto the rings only in a set
	 * whose waits the hook sees (hk_ep_reconcile moves it); elsewhere a
	 * plain connection stays plain (ARCHITECTURE.md, "Promotion"). */
	if (op != EPOLL_CTL_DEL && (epfd == fd || !promotable_in(set, ev)))
		hk_promote_forbid_fd(fd);
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
		   (op == EPOLL_CTL_MOD || hk_ep_set_of(fd) || (ev->events & ~(uint32_t)EXCLUSIVE_OK))) {
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
			hk_evq_park(set, m); /* else remove_at unqueues it */
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

void hk_epoll_forget_fd(int fd)
{
	struct epset *set;
	struct sl_sock *s;

	if (!atomic_load_explicit(&open_sets, memory_order_relaxed))
		return;
	set = hk_ep_set_of(fd);
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
	/* A parked place's kernel entry is ours to remove while fd names it
	 * (a dup of the file would keep it in the kernel set). */
	if (hk_evq_any_parked())
		for (int e = 0, hi = atomic_load(&highest_set_fd); e <= hi; e++) {
			struct epset *other = atomic_load_explicit(&sets[e], memory_order_acquire);

			if (!other || !other->open || other == set)
				continue;
			pthread_mutex_lock(&other->lock);
			hk_evq_release_parked(e, other, fd);
			pthread_mutex_unlock(&other->lock);
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
