/* poll_queue.c — poll, ppoll, select and pselect over many ring connections
 * at the cost of the ready ones: each thread keeps a set of its own whose
 * event queue (epoll_queue.c) holds the connections its calls name, so a
 * sleep arms one flag and waits on one bell; kernel entries go to the kernel.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "preload_api.h"
#include "epoll_set.h"
#include "hook.h"

/* Fewer ring entries than this: wait.c's per-connection sleep, which costs
 * less than the set's for a handful (no epoll fd in the kernel wait). */
#define PQ_MIN 8
/* Members that no call named for this many calls leave the set (their
 * registrations hold slots of the connection's four). */
#define PQ_FORGET_CALLS 64

/* What a call needs of a member, kept dense beside the set's members (same
 * index): a call walks its whole array, and a member's own lines would
 * make each entry two cache misses. */
struct pq_ent {
	int fd;
	unsigned gen;         /* the call that last named it */
	struct sl_sock *sock; /* its q_sock */
	uint32_t events, rev; /* what its entries ask; what this call found */
	int entry;            /* its first entry in the call */
	bool ok;              /* queued and not found unfit */
	bool disarmed, dup;   /* not named (silent); named by more than one entry */
};

struct pq {
	struct epset *set;
	struct pq_ent *ent, *ent2; /* [member index], and room to rebuild it */
	int ent_cap, nent;
	unsigned gen;
	int *at;                 /* fd -> index into set->m, -1: none */
	int at_cap, ent2_cap;
	unsigned at_unsettled;   /* set->unsettled when at was last right */
	struct epoll_event *evs; /* reports of one collect, and kernel answers */
	int evs_cap;
	struct pollfd *kfds;     /* the call's kernel entries, then the set's epoll fd */
	nfds_t *kat;             /* kfds[j] is fds[kat[j]] */
	int *emi;                /* entry -> member index, -1: a kernel entry */
	nfds_t k_cap;
	int *rep, rep_cap, nrep; /* members reported in this call */
	bool dup;                /* a descriptor named twice in this call */
	bool no_queue;           /* this process cannot have one (not dumpable) */
	/* In a call: poll is async-signal-safe, and a handler's poll must not
	 * wait for the lock its own thread holds (nor change the set under
	 * the interrupted call): it takes the other path. */
	volatile bool busy;
};

static __thread struct pq *tls_pq;
static pthread_key_t pq_key;
static pthread_once_t pq_once = PTHREAD_ONCE_INIT;

static void pq_close_set(struct pq *pq)
{
	struct epset *set = pq->set;
	int epfd;
	bool open;

	if (!set)
		return;
	pthread_mutex_lock(&set->lock);
	epfd = set->private_fd;
	open = set->open;
	set->private_fd = -1;
	pthread_mutex_unlock(&set->lock);
	/* Not open: its number was taken over (a dup2 onto it moved ours). */
	if (open)
		hk_epoll_private_close(epfd);
	else if (epfd >= 0)
		sl_own_fd_close(epfd);
	pq->set = NULL;
}

static void pq_destroy(void *arg)
{
	struct pq *pq = arg;

	pq_close_set(pq);
	free(pq->at);
	free(pq->ent);
	free(pq->ent2);
	free(pq->evs);
	free(pq->kfds);
	free(pq->kat);
	free(pq->emi);
	free(pq->rep);
	free(pq);
	tls_pq = NULL;
}

static void pq_key_make(void)
{
	if (pthread_key_create(&pq_key, pq_destroy) != 0)
		pq_key = (pthread_key_t)-1;
}

/* This thread's queue, a fresh set after a fork (the copy is the parent's)
 * or after its number was taken over. */
static struct pq *pq_get(void)
{
	struct pq *pq = tls_pq;
	int epfd;

	pthread_once(&pq_once, pq_key_make);
	if (!pq) {
		if (pq_key == (pthread_key_t)-1 || !(pq = calloc(1, sizeof(*pq))))
			return NULL;
		tls_pq = pq;
		pthread_setspecific(pq_key, pq);
	}
	if (pq->set && (pq->set->forked || !pq->set->open))
		pq_close_set(pq);
	if (!pq->set)
		pq->set = hk_epoll_private_open(&epfd);
	return pq->set ? pq : NULL;
}

static bool grow(void **p, size_t elem, int *cap, int need)
{
	int c = *cap ? *cap : 64;
	void *q;

	if (need <= *cap)
		return true;
	while (c < need)
		c *= 2;
	if (!(q = realloc(*p, (size_t)c * elem)))
		return false;
	*p = q;
	*cap = c;
	return true;
}

static struct pq_ent ent_of(const struct member *m)
{
	return (struct pq_ent){ .fd = m->fd, .sock = m->q_sock, .events = m->events, .ok = m->q >= 0 && !m->q_stale,
				.disarmed = m->disarmed };
}

/* The fd -> member hints and the dense copy again after the members
 * changed behind the call (a removal swaps the last member into its place,
 * a look finds one unfit; set->unsettled counts each), keeping what this
 * call noted of each.  false: out of memory. */
static bool at_sync(struct pq *pq)
{
	struct epset *set = pq->set;
	struct pq_ent *tmp;

	if (pq->at_unsettled == set->unsettled && pq->nent == set->n)
		return true;
	if (!grow((void **)&pq->ent2, sizeof(*pq->ent2), &pq->ent2_cap, set->n + 1) ||
	    !grow((void **)&pq->ent, sizeof(*pq->ent), &pq->ent_cap, set->n + 1))
		return false;
	for (int i = 0; i < set->n; i++) {
		const struct member *m = &set->m[i];
		int old = m->fd >= 0 && m->fd < pq->at_cap ? pq->at[m->fd] : -1;
		struct pq_ent e = ent_of(m);

		if (old >= 0 && old < pq->nent && pq->ent[old].fd == m->fd) {
			e.gen = pq->ent[old].gen;
			e.rev = pq->ent[old].rev;
			e.entry = pq->ent[old].entry;
			e.dup = pq->ent[old].dup;
		}
		pq->ent2[i] = e;
	}
	tmp = pq->ent;
	pq->ent = pq->ent2;
	pq->ent2 = tmp;
	pq->nent = set->n;
	{
		int c = pq->ent_cap;

		pq->ent_cap = pq->ent2_cap;
		pq->ent2_cap = c;
	}
	for (int i = 0; i < pq->at_cap; i++)
		pq->at[i] = -1;
	for (int i = 0; i < set->n; i++)
		if (set->m[i].fd >= 0 && set->m[i].fd < pq->at_cap)
			pq->at[set->m[i].fd] = i;
	pq->at_unsettled = set->unsettled;
	return true;
}

/* The member index for fd (hints in sync), or -1: no walk of the members,
 * so a kernel entry that is a socket of ours (a listener) costs one
 * look-up. */
static int index_of(struct pq *pq, int fd)
{
	int i = fd >= 0 && fd < pq->at_cap ? pq->at[fd] : -1;

	return i >= 0 && i < pq->nent && pq->ent[i].fd == fd ? i : -1;
}

/* A new member for ring connection fd, queued; NULL if it cannot be. */
static struct member *member_add(struct pq *pq, int epfd, int fd)
{
	struct epset *set = pq->set;
	struct sl_sock *s = hk_ep_ring_socket(fd);
	int old = pq->at_cap;

	/* Not yet (an offer out) or never (a peer that cannot mark us): this
	 * call goes the other way, the queue stays for the next. */
	if (!s || !sl_evq_eligible(s))
		return NULL;
	if (!grow((void **)&pq->at, sizeof(int), &pq->at_cap, fd + 1))
		return NULL;
	for (int i = old; i < pq->at_cap; i++)
		pq->at[i] = -1;
	if (set->n == set->cap && !grow((void **)&set->m, sizeof(*set->m), &set->cap, set->n + 1))
		return NULL;
	if (!grow((void **)&pq->ent, sizeof(*pq->ent), &pq->ent_cap, set->n + 1))
		return NULL;
	set->m[set->n] = (struct member){ .fd = fd, .data.u64 = (uint64_t)fd, .q = -1 };
	if (!hk_evq_queue(epfd, set, set->n)) {
		/* An eligible connection and no queue: none can be made here. */
		pq->no_queue = !set->evq.sh;
		return NULL;
	}
	pq->at[fd] = set->n;
	pq->ent[set->n] = ent_of(&set->m[set->n]);
	pq->nent = set->n + 1;
	return &set->m[set->n++];
}

static uint32_t ep_events(short ev)
{
	uint32_t e = (uint32_t)ev & HK_EP_EVENT_BITS;

	if (ev & POLLRDNORM)
		e |= EPOLLIN;
	if (ev & POLLWRNORM)
		e |= EPOLLOUT;
	return e;
}

/* An entry's revents from what its member reported. */
static short poll_revents(short asked, uint32_t rev)
{
	if (rev & EPOLLIN)
		rev |= POLLRDNORM;
	if (rev & EPOLLOUT)
		rev |= POLLWRNORM;
	return (short)(rev & ((uint32_t)(unsigned short)asked | POLLHUP | POLLERR));
}

/* The table's entry for fd without a look at the socket, whose line is cold
 * in a large array: a member whose socket it still is needs nothing more
 * (a close takes the member out first, hk_epoll_forget_fd). */
static struct sl_sock *table_peek(int fd)
{
	struct sl_sock *_Atomic *chunk;

	if (fd < 0 || (unsigned)fd >= SL_FD_CHUNKS << SL_FD_CHUNK_BITS)
		return NULL;
	chunk = atomic_load_explicit(&sl_fd_chunks[(unsigned)fd >> SL_FD_CHUNK_BITS], memory_order_acquire);
	return chunk ? atomic_load_explicit(&chunk[fd & ((1u << SL_FD_CHUNK_BITS) - 1)], memory_order_acquire) : NULL;
}

static bool pq_size(struct pq *pq, nfds_t n)
{
	struct pollfd *kf;
	nfds_t *ka;
	int *mi;

	if (n + 1 <= pq->k_cap)
		return true;
	if (!(kf = realloc(pq->kfds, (n + 1) * sizeof(*kf))))
		return false;
	pq->kfds = kf;
	if (!(ka = realloc(pq->kat, (n + 1) * sizeof(*ka))))
		return false;
	pq->kat = ka;
	if (!(mi = realloc(pq->emi, (n + 1) * sizeof(*mi))))
		return false;
	pq->emi = mi;
	pq->k_cap = n + 1;
	return true;
}

/* Name the call's ring entries in the set (set->lock held): a member per
 * descriptor, asking the union of its entries' events (emi: each entry's
 * member, -1 for a kernel entry); the others fill kfds.  false: an entry
 * the queue cannot hold (a connection still connecting, one whose peer
 * cannot mark us, one whose fail-over strip is pending, slots taken): the
 * caller takes the per-connection path
 * for this call. */
static bool pq_name(struct pq *pq, int epfd, struct pollfd *fds, nfds_t n, nfds_t *nk)
{
	struct epset *set = pq->set;
	unsigned gen = ++pq->gen;
	nfds_t k = 0;
	int seen = 0;
	bool dup = false;

	if (!pq_size(pq, n) || !at_sync(pq))
		return false;
	for (nfds_t i = 0; i < n; i++) {
		int fd = fds[i].fd, x;
		struct sl_sock *raw = table_peek(fd);
		uint32_t ev = ep_events(fds[i].events);
		struct pq_ent *e;

		/* The peer's fail-over header may wait on its kernel socket, which
		 * the kernel would report readable: scilan_poll strips it first.
		 * So with a promoting connector's, which may hold the acceptor's
		 * marker alone: scilan_poll follows the claim first. */
		if (raw && (sl_sock_strip_pending(raw) || sl_sock_promoting(raw)))
			return false;
		x = raw ? index_of(pq, fd) : -1;
		if (x < 0 || pq->ent[x].sock != raw || !pq->ent[x].ok) {
			struct sl_sock *s = sl_sock_get(fd);
			enum sl_state st = s ? sl_sock_state(s) : SL_UNUSED;
			struct member *m;

			/* A connect in progress is the other path's to finish. */
			if (st == SL_CONNECTING)
				return false;
			if (st != SL_CONNECTED) {
				pq->kfds[k] = fds[i];
				pq->kat[k++] = i;
				pq->emi[i] = -1;
				continue;
			}
			if (x >= 0) {
				/* Another socket on its number, or out of the queue
				 * (an exec that failed): its place again. */
				m = &set->m[x];
				hk_evq_unqueue(epfd, set, m);
				if (!hk_evq_queue(epfd, set, x))
					return false;
				pq->ent[x].sock = m->q_sock;
				pq->ent[x].ok = true;
			} else if (!(m = member_add(pq, epfd, fd))) {
				return false;
			} else {
				x = (int)(m - set->m);
			}
		}
		e = &pq->ent[x];
		pq->emi[i] = x;
		if (e->gen != gen) {
			e->gen = gen;
			e->rev = 0;
			e->entry = (int)i;
			e->dup = false;
			seen++;
			if (e->disarmed || e->events != ev) {
				/* Named again, or asking otherwise: looked at anew. */
				set->m[x].events = e->events = ev;
				set->m[x].disarmed = e->disarmed = false;
				hk_evq_touch(set, &set->m[x]);
			}
		} else {
			e->dup = dup = true;
			if ((e->events | ev) != e->events) {
				set->m[x].events = e->events |= ev;
				hk_evq_touch(set, &set->m[x]);
			}
		}
	}
	/* Members this call does not name are silent (a look skips them and
	 * asks their peer for nothing more); long unnamed ones leave (the
	 * last member takes the place of one removed, in both arrays). */
	for (int i = 0; seen != set->n && i < set->n; i++) {
		struct pq_ent *e = &pq->ent[i];

		if (e->gen == gen)
			continue;
		if (gen - e->gen > PQ_FORGET_CALLS) {
			int last = set->n - 1;

			if (e->fd >= 0 && e->fd < pq->at_cap)
				pq->at[e->fd] = -1;
			hk_ep_remove_member(epfd, set, &set->m[i]);
			if (i != last) {
				pq->ent[i] = pq->ent[last];
				pq->at[pq->ent[i].fd] = i;
				for (nfds_t j = 0; pq->ent[i].gen == gen && j < n; j++)
					if (pq->emi[j] == last)
						pq->emi[j] = i;
			}
			pq->nent = set->n;
			pq->at_unsettled = set->unsettled;
			i--;
			continue;
		}
		if (!e->disarmed)
			set->m[i].disarmed = e->disarmed = true;
	}
	pq->dup = dup;
	*nk = k;
	return true;
}

/* Reports of the set's queue into its members (set->lock held); the
 * members reported are listed in rep. */
static int pq_collect(struct pq *pq)
{
	struct epset *set = pq->set;
	int got;

	if (!grow((void **)&pq->evs, sizeof(*pq->evs), &pq->evs_cap, set->n + 1) ||
	    !grow((void **)&pq->rep, sizeof(*pq->rep), &pq->rep_cap, set->n + 1))
		return -1;
	got = hk_evq_collect(set, pq->evs, set->n + 1, sl_mono_ms());
	/* A look found a member unfit: the caller leaves this path. */
	if (pq->at_unsettled != set->unsettled)
		return got;
	for (int j = 0; j < got; j++) {
		int x = index_of(pq, pq->evs[j].data.fd);

		if (x < 0)
			continue;
		if (!pq->ent[x].rev && pq->nrep < pq->rep_cap)
			pq->rep[pq->nrep++] = x;
		pq->ent[x].rev |= pq->evs[j].events;
	}
	return got;
}

/* The answer, each entry's revents (set->lock held, the members where
 * pq_name left them): the kernel entries as the kernel said, the ring
 * entries none but those of the members reported. */
static int pq_answer(struct pq *pq, struct pollfd *fds, nfds_t n, nfds_t nk)
{
	int ready = 0;

	for (nfds_t i = 0; i < n; i++)
		if (pq->emi[i] >= 0)
			fds[i].revents = 0;
	for (nfds_t j = 0; j < nk; j++) {
		fds[pq->kat[j]].revents = pq->kfds[j].revents;
		ready += pq->kfds[j].revents != 0;
	}
	for (int r = 0; r < pq->nrep; r++) {
		struct pq_ent *e = &pq->ent[pq->rep[r]];

		if (e->gen != pq->gen || !e->rev)
			continue;
		if (!e->dup) {
			fds[e->entry].revents = poll_revents(fds[e->entry].events, e->rev);
			ready += fds[e->entry].revents != 0;
			continue;
		}
		for (nfds_t i = 0; i < n; i++)
			if (pq->emi[i] == pq->rep[r]) {
				fds[i].revents = poll_revents(fds[i].events, e->rev);
				ready += fds[i].revents != 0;
			}
	}
	return ready;
}

static int pq_wait(struct pq *pq, struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask, bool *used);

int hk_pollq(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask, bool *used)
{
	struct pq *pq;
	nfds_t rings = 0;
	int r;

	*used = false;
	for (nfds_t i = 0; i < n && rings < PQ_MIN; i++)
		rings += sl_sock_get(fds[i].fd) != NULL;
	if (rings < PQ_MIN || ((pq = tls_pq) && pq->busy) || !(pq = pq_get()) || pq->no_queue)
		return 0;
	pq->busy = true;
	r = pq_wait(pq, fds, n, timeout_ms, mask, used);
	pq->busy = false;
	return r;
}

static int pq_wait(struct pq *pq, struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask, bool *used)
{
	int64_t deadline = timeout_ms < 0 ? -1 : sl_mono_ms() + timeout_ms;
	struct epset *set = pq->set;
	nfds_t nk = 0;
	int epfd, r = 0, ready = 0;
	unsigned unsettled;

	pthread_mutex_lock(&set->lock);
	epfd = set->private_fd;
	if (!set->open || epfd < 0 || !pq_name(pq, epfd, fds, n, &nk)) {
		pthread_mutex_unlock(&set->lock);
		return 0;
	}
	*used = true;
	pq->nrep = 0;
	/* A member found unfit for the queue by a look (moved to kernel TCP,
	 * another socket on its number) sends the call to the other path. */
	unsettled = set->unsettled;
	pq->kfds[nk] = (struct pollfd){ .fd = epfd, .events = POLLIN };
	for (;;) {
		int left = sl_left_ms(deadline), got, sleep_ms, armed = -1;

		got = pq_collect(pq);
		if (got < 0)
			break;
		if (!got && left != 0) {
			bool hit;

			pthread_mutex_unlock(&set->lock);
			hit = hk_evq_spin(set, pq->kfds, nk + 1, left);
			pthread_mutex_lock(&set->lock);
			if (hit && (got = pq_collect(pq)) < 0)
				break;
		}
		if (set->unsettled != unsettled || !set->open)
			break;
		sleep_ms = got ? 0 : left;
		if (sleep_ms != 0) {
			armed = hk_evq_sleep_arm(set, &sleep_ms);
		}
		pthread_mutex_unlock(&set->lock);
		/* Reports in hand and no kernel entry: nothing to ask the kernel
		 * (a queued peer's end is looked at by the next sleeping call). */
		r = got && !nk ? 0 : sl_poll_kernel(pq->kfds, nk + 1, sleep_ms, mask);
		pthread_mutex_lock(&set->lock);
		if (armed >= 0)
			hk_evq_disarm(set);
		if (sleep_ms != 0)
			hk_evq_after_sleep(set);
		if (r < 0 && !got) {
			/* EINTR and the like, as the kernel's poll (never restarted). */
			pthread_mutex_unlock(&set->lock);
			return -1;
		}
		if (r < 0) {
			/* Reports in hand: they are the answer; the kernel said nothing. */
			for (nfds_t j = 0; j <= nk; j++)
				pq->kfds[j].revents = 0;
		}
		if (r > 0 && pq->kfds[nk].revents) {
			int kn, cap = pq->evs_cap;
			bool woken = false;

			kn = sl_sys.epoll_wait(epfd, pq->evs, cap, 0);
			if (kn > 0)
				hk_evq_strip(set, pq->evs, kn, &woken);
		}
		if (!got && pq_collect(pq) < 0)
			break;
		if (set->unsettled != unsettled || !set->open)
			break;
		ready = pq_answer(pq, fds, n, nk);
		if (ready || sl_left_ms(deadline) == 0) {
			pthread_mutex_unlock(&set->lock);
			return ready;
		}
	}
	/* An entry the queue no longer holds (closed under the wait, moved to
	 * kernel TCP): the per-connection path answers, in the time left. */
	pthread_mutex_unlock(&set->lock);
	return sl_poll_sigmask(fds, n, sl_left_ms(deadline), mask);
}
