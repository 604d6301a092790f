/* epoll_wait.c — waiting on emulated epoll sets (epoll_wait and its
 * siblings, and poll/select entries that are sets): what a wait polls, the
 * edge-triggered marks, the spin and the sleep, the events reported.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "preload_api.h"
#include "epoll_set.h"
#include "hook.h"
#include "scilan.h"

#define EVENT_BITS (EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLRDHUP)
/* The longest sleep of a set with a kernel member that may yet connect. */
#define UNSEEN_CONNECT_MS 10

/* Promoted with its seam pending: the peer's kernel bytes arrived so far. */
static uint64_t kernel_arrived(struct sl_sock *s)
{
	uint64_t n;

	sl_lock(&s->rx_lock);
	n = sl_promote_kernel_arrived(s);
	sl_unlock(&s->rx_lock);
	return n;
}

/* Poll events to ask for member m: under EPOLLET, an event already reported
 * is asked again only after its edge (new data, a send that found the ring
 * full, a state change).  -1 means nothing to wait for. */
short hk_ep_wanted(struct member *m, struct sl_sock *s)
{
	uint32_t ev = m->events & EVENT_BITS;
	uint32_t state;
	uint64_t written;

	if (!(m->events & EPOLLET) || !m->et_reported || !s || !sl_sock_on_rings(s))
		return (short)ev;
	state = sl_edge_state(s);
	if (state != m->et_state_mark)
		return (short)ev;
	if (m->et_reported & (EPOLLHUP | EPOLLERR))
		return -1; /* nothing more can happen on this connection */
	/* Data left unread since the report is no new edge; an empty ring is
	 * asked for, as the next arrival is one.  Promoted with the peer's
	 * bytes still on the kernel socket (its seam pending), whose arrivals
	 * no ring index shows: a growth of their count is an edge too, and
	 * bytes left unread there are none. */
	written = sl_rx_written(s);
	if (atomic_load_explicit(&s->seam_pending, memory_order_acquire) && kernel_arrived(s) != m->et_kernel_mark)
		written = m->et_rx_mark + 1; /* a new arrival on the kernel socket: an edge */
	if ((m->et_reported & EPOLLIN) && written == m->et_rx_mark &&
	    (sl_rx_unread(s, written) || atomic_load_explicit(&s->seam_pending, memory_order_acquire)))
		ev &= ~(uint32_t)(EPOLLIN | EPOLLRDHUP);
	/* A pending urgent byte is an edge again only when more data arrives. */
	if ((m->et_reported & EPOLLPRI) && written == m->et_rx_mark)
		ev &= ~(uint32_t)EPOLLPRI;
	/* Writable again only after a send found the ring full, as TCP's
	 * write-space wake-up needs a send that ran out of room. */
	if ((m->et_reported & EPOLLOUT) && sl_tx_blocked_count(s) == m->et_tx_mark)
		ev &= ~(uint32_t)EPOLLOUT;
	return ev ? (short)ev : -1;
}

void hk_ep_mark_reported(struct member *m, struct sl_sock *s, uint32_t revents)
{
	if (m->events & EPOLLONESHOT)
		m->disarmed = true;
	if (!(m->events & EPOLLET) || !s || !sl_sock_on_rings(s))
		return;
	m->et_reported = revents;
	m->et_rx_mark = sl_rx_written(s);
	m->et_tx_mark = sl_tx_blocked_count(s);
	m->et_state_mark = sl_edge_state(s);
	if (atomic_load_explicit(&s->seam_pending, memory_order_acquire))
		m->et_kernel_mark = kernel_arrived(s);
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
	hk_ep_reconcile(inner_fd, inner);
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
		if ((inner = hk_ep_set_of(m->fd))) {
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
		if (hk_ep_set_of(m->fd))
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
		int got, left = sl_left_ms(deadline), emulated, sleep_ms, armed = -1;
		unsigned reconciled, epoch;
		bool woken = false;

		pthread_mutex_lock(&set->lock);
		/* Before the reconcile: a move after it shows as a new epoch. */
		epoch = sl_promote_epoch_now();
		emulated = hk_ep_reconcile(epfd, set);
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
			armed = hk_evq_sleep_arm(set, &sleep_ms);
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
				hk_evq_after_sleep(set);
			if (r >= 0) {
				bool looked = got > 0; /* a member is reported once per wait */

				got += hk_ep_drop_moved(set, evs + got, hk_evq_strip(set, evs + got, r, &woken), epoch,
							&woken);
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
				hk_evq_after_sleep(set);
			if (r >= 0) {
				bool looked = got > 0;

				got += collect(set, &p, evs + got, max - got);
				if (!looked && got < max)
					got += hk_evq_collect(set, evs + got, max - got, sl_mono_ms());
				if ((p.pfds[0].revents & POLLIN) && got < max) {
					r = sl_sys.epoll_wait(epfd, evs + got, max - got, 0);
					if (r > 0)
						got += hk_ep_drop_moved(set, evs + got,
									hk_evq_strip(set, evs + got, r, &woken), epoch,
									&woken);
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
		if (got || (sl_left_ms(deadline) == 0 && (!woken || retried))) {
			r = got;
			break;
		}
		retried |= woken && sl_left_ms(deadline) == 0;
	}
	plan_free(&p);
	return r;
}

HK_EXPORT int epoll_pwait(int epfd, struct epoll_event *evs, int max, int timeout, const sigset_t *mask)
{
	struct epset *set;
	int saved, r;

	hk_enter();
	set = hk_ep_set_of(epfd);
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
	saved = errno;
	r = wait_set(epfd, set, evs, max, timeout, mask);
	if (r >= 0)
		errno = saved; /* as hk_poll */
	return r;
}

HK_EXPORT int epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout)
{
	return epoll_pwait(epfd, evs, max, timeout, NULL);
}

/* poll/select entries that are emulated epoll sets become their nested
 * plan; the set's entry is ready when any part of it is. */
static int poll_emulated(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask)
{
	int64_t deadline = timeout_ms < 0 ? -1 : sl_mono_ms() + timeout_ms;
	struct plan p = { 0 };
	int r, ready = 0;
	bool nested = false;

	for (nfds_t i = 0; i < n && !nested; i++)
		nested = hk_ep_set_of(fds[i].fd) != NULL;
	if (!nested) {
		bool used;

		r = hk_pollq(fds, n, timeout_ms, mask, &used);
		return used ? r : sl_poll_sigmask(fds, n, timeout_ms, mask);
	}
	/* Rounds: a set changed under the sleep is read again. */
	do {
		int left = sl_left_ms(deadline);

		p.n = 0;
		p.sleeping = left != 0;
		for (nfds_t i = 0; i < n; i++) {
			struct epset *inner = hk_ep_set_of(fds[i].fd);

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
				if (p.owner[k] == -2 - (int)i || (p.owner[k] == fds[i].fd && hk_ep_set_of(fds[i].fd)))
					fds[i].revents |= p.pfds[k].revents;
			if (hk_ep_set_of(fds[i].fd) && fds[i].revents)
				fds[i].revents = POLLIN;
			ready += fds[i].revents != 0;
		}
		r = ready;
	} while (!ready && sl_left_ms(deadline) != 0);
	plan_free(&p);
	return r;
}

/* A success leaves errno as it was, as the kernel's poll and epoll_wait
 * do: our waits went through calls (a drained bell's EAGAIN) that do not. */
int hk_poll(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask)
{
	int saved = errno, r = poll_emulated(fds, n, timeout_ms, mask);

	if (r >= 0)
		errno = saved;
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
