/* evq.c — epoll sets' event queues: the waiter's memfd with the ready bitmap,
 * its bell (a pipe the peers take with pidfd_getfd, evq_peer.c), the
 * registrations in the connections' peer areas, and the sender side that
 * marks and rings.
 */
#include "evq/evq.h"
#include "evq/evq_dev.h"
#include "evq/evq_peer.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "conn/agree.h"
#include "fabric/fabric.h"
#include "ring/layout.h"
#include "runtime/log.h"
#include "runtime/own_fd.h"
#include "runtime/self_ns.h"
#include "runtime/sys.h"

#define EVQ_MAGIC 0x3151564520434c53ull /* "SLC EVQ1" */
#define EVQ_MAPS 1024                   /* sets of other processes one process marks */

static size_t evq_size(void)
{
	return (sizeof(struct sl_evq_shared) + SL_PAGE - 1) & ~(size_t)(SL_PAGE - 1);
}

int sl_evq_open(struct sl_evq *q)
{
	int fds[2] = { -1, -1 }, memfd;
	struct sl_evq_shared *sh;
	struct stat st;
	uint64_t id = 0;

	*q = (struct sl_evq){ .memfd = -1, .bell_r = -1, .bell_w = -1 };
	pthread_mutex_init(&q->dev_lock, NULL);
	memfd = memfd_create("scilan-evq", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (memfd < 0)
		return -1;
	/* Sealed: a peer checks that no size change can fault its mapping. */
	if (ftruncate(memfd, (off_t)evq_size()) < 0 ||
	    sl_sys.fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0 ||
	    pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0 || fstat(fds[0], &st) < 0)
		goto fail;
	sh = mmap(NULL, evq_size(), PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (sh == MAP_FAILED)
		goto fail;
	while (!id && getrandom(&id, sizeof(id), 0) != sizeof(id))
		id = 0;
	sh->set_id = id;
	sh->bell_dev = st.st_dev;
	sh->bell_ino = st.st_ino;
	atomic_store(&sh->armed, 0);
	atomic_thread_fence(memory_order_seq_cst);
	sh->magic = EVQ_MAGIC;
	q->sh = sh;
	q->memfd = sl_own_fd_lasting(memfd);
	q->bell_r = sl_own_fd_lasting(fds[0]);
	q->bell_w = sl_own_fd_lasting(fds[1]);
	return 0;
fail:
	sl_sys.close(memfd);
	if (fds[0] >= 0) {
		sl_sys.close(fds[0]);
		sl_sys.close(fds[1]);
	}
	return -1;
}

void sl_evq_close(struct sl_evq *q)
{
	if (!q->sh)
		return;
	/* Only our copy: a forked child drops the parent's queue, which the
	 * parent goes on using.  Peers that mapped it keep their mapping. */
	munmap(q->sh, evq_size());
	sl_own_fd_close(q->memfd);
	sl_own_fd_close(q->bell_r);
	sl_own_fd_close(q->bell_w);
	/* A device link's set endpoint is an open file a fork shares: the
	 * set lives on while the parent holds it. */
	sl_evq_dev_close(q);
	q->sh = NULL;
	q->memfd = q->bell_r = q->bell_w = -1;
	atomic_store(&q->dev_armed, 0);
}

/* May this process take any process's descriptors (pidfd_getfd)? */
static bool can_take_any(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	return syscall(SYS_capget, &h, d) == 0 &&
	       (d[CAP_TO_INDEX(CAP_SYS_PTRACE)].effective & CAP_TO_MASK(CAP_SYS_PTRACE));
}

void sl_evq_publish_marker(struct sl_area_ctl *c)
{
	bool any = can_take_any();

	/* pidfd_getfd checks the real ids (PTRACE_MODE_ATTACH_REALCREDS). */
	atomic_store_explicit(&c->marker_uid, (uint32_t)getuid(), memory_order_relaxed);
	atomic_store_explicit(&c->marker_gid, (uint32_t)getgid(), memory_order_relaxed);
	atomic_store_explicit(&c->marker_pidns, sl_self_pidns(), memory_order_relaxed);
	atomic_fetch_or_explicit(&c->marker_flags,
				 SL_MARKER_CRED | SL_MARKER_GETFD | SL_MARKER_PIDNS | (any ? SL_MARKER_ANY : 0) |
					 (sl_evq_can_take(any) ? 0 : SL_MARKER_LOST),
				 memory_order_release);
}

/* Whether the peer can take our sets' descriptors, as the kernel decides
 * for pidfd_getfd (ptrace_may_access, "attach" with real ids): it has all
 * our user and group ids, or CAP_SYS_PTRACE (a peer that Yama stops says
 * LOST at once; our dumpability make_queue checks).  An older library
 * opens them through /proc/PID/fd ("read" with file-system ids: its
 * effective ids are published), which the same comparison predicts.  A
 * peer of another user (a root client of an nginx worker that runs as
 * nobody) could never mark us: every answer would wait for the set's
 * sweep. */
static bool marker_reaches(struct sl_sock *s)
{
	uint32_t f = atomic_load_explicit(&s->own_ctl->marker_flags, memory_order_acquire), uid, gid;
	signed char known = atomic_load_explicit(&s->evq_reach, memory_order_relaxed);
	uid_t ru, eu, su;
	gid_t rg, eg, sg;
	bool ok;

	if (f & SL_MARKER_LOST)
		return false;
	if (known)
		return known > 0;
	/* An older library says nothing: it is trusted to reach us, as before. */
	if (!(f & SL_MARKER_CRED))
		return true;
	/* Our registrations name us by pid, which a peer in another pid
	 * namespace (a container of the same pod) looks up in its own: it
	 * would take some process of its own there, or none, at every mark
	 * while our set waited for its sweep. */
	if ((f & SL_MARKER_PIDNS) &&
	    atomic_load_explicit(&s->own_ctl->marker_pidns, memory_order_relaxed) != sl_self_pidns()) {
		atomic_store_explicit(&s->evq_reach, -1, memory_order_relaxed);
		return false;
	}
	uid = atomic_load_explicit(&s->own_ctl->marker_uid, memory_order_relaxed);
	gid = atomic_load_explicit(&s->own_ctl->marker_gid, memory_order_relaxed);
	ok = (f & SL_MARKER_ANY) ||
	     (getresuid(&ru, &eu, &su) == 0 && getresgid(&rg, &eg, &sg) == 0 && ru == uid && eu == uid && su == uid &&
	      rg == gid && eg == gid && sg == gid);
	atomic_store_explicit(&s->evq_reach, ok ? 1 : -1, memory_order_relaxed);
	return ok;
}

bool sl_evq_eligible(struct sl_sock *s)
{
	/* A peer that does not say it marks (an older library), or cannot, or
	 * forged a registration of ours (evq_refused), has its connections
	 * scanned.  The device fabric's peer is on another
	 * node and marks the set's page in our window (evq_dev.c).  A
	 * promoted connection whose seam is pending still has bytes, or the
	 * peer's marker, to come on its kernel socket, which no mark tells. */
	if (!sl_sock_on_rings(s) || !s->seg || sl_agree_pending(s) || sl_fell_back(s) ||
	    atomic_load_explicit(&s->seam_pending, memory_order_acquire) ||
	    !(atomic_load_explicit(&s->own_ctl->peer_state, memory_order_relaxed) & SL_PEER_EVQ) ||
	    atomic_load_explicit(&s->evq_refused, memory_order_relaxed))
		return false;
	if (s->dev_map[0])
		return sl_evq_dev_eligible(s);
	return s->fabric == &sl_fabric_shm && marker_reaches(s);
}

/* A device registration's want bits are byte k (evq_dev.c), which the
 * masks of evq.h cover too: data in the even bits, room in the odd ones. */
static uint32_t slot_bits(const struct sl_sock *s, int k)
{
	return s->dev_map[0] ? 0xffu << (8 * k) : 3u << (2 * k);
}

static uint32_t dir_bits(int k, int dirs)
{
	return (uint32_t)(((dirs & SL_DIR_DATA) ? 1u : 0u) | ((dirs & SL_DIR_SPACE) ? 2u : 0u)) << (2 * k);
}

int sl_evq_register(struct sl_evq *q, struct sl_sock *s, uint32_t index, uint64_t *pub)
{
	static _Atomic uint32_t counter;
	struct sl_area_ctl *c = s->peer_ctl;
	uint64_t tag = (uint64_t)(uint32_t)sl_self_pid << 32 | (atomic_fetch_add(&counter, 1) + 1);

	if (!q->sh || index >= SL_EVQ_SLOTS)
		return -1;
	sl_evq_cover(q, index + 1); /* before any peer can learn the index */
	if (s->dev_map[0]) {
		int k = sl_evq_dev_register(q, s, index, tag, q->sh->set_id);

		if (k >= 0)
			*pub = tag;
		return k;
	}
	for (int k = 0; k < SL_EVQ_CONN_SLOTS; k++) {
		struct sl_evq_reg *r = &c->evq[k];
		uint64_t free_ = 0;

		if (!atomic_compare_exchange_strong(&r->claim, &free_, tag))
			continue;
		atomic_store(&r->pub, 0);
		atomic_store(&r->set_id, q->sh->set_id);
		atomic_store(&r->pid, sl_self_pid);
		atomic_store(&r->memfd, q->memfd);
		atomic_store(&r->bell, q->bell_w);
		atomic_store(&r->index, index);
		atomic_store_explicit(&r->pub, tag, memory_order_release);
		*pub = tag;
		return k;
	}
	return -1;
}

void sl_evq_unregister(struct sl_sock *s, int k, uint64_t pub)
{
	struct sl_evq_reg *r;

	if (k < 0 || k >= SL_EVQ_CONN_SLOTS)
		return;
	if (s->dev_map[0] || (atomic_load(&s->dev_claims) & (1u << k))) {
		sl_evq_dev_unregister(s, k, pub);
		return;
	}
	r = &s->peer_ctl->evq[k];
	/* Only ours: after a close the area is a sink anyway. */
	if (!atomic_compare_exchange_strong(&r->pub, &pub, 0))
		return;
	atomic_fetch_and(&s->peer_ctl->evq_want, ~dir_bits(k, SL_DIR_DATA | SL_DIR_SPACE));
	atomic_store(&r->claim, 0);
}

int sl_evq_want(struct sl_sock *s, int k, int dirs)
{
	uint32_t bits = dir_bits(k, dirs);

	if (s->dev_map[0])
		return sl_evq_dev_want(s, k, dirs);
	/* Set already: the peer has not acted on it since, and will. */
	if ((atomic_load(&s->peer_ctl->evq_want) & bits) == bits)
		return 0;
	atomic_fetch_or(&s->peer_ctl->evq_want, bits);
	/* A peer that publishes data unfenced (barrier.h) could read this word
	 * before our store lands while we read its index before its store
	 * lands (store buffering): both would miss, until the next sweep.  Its
	 * half of the fence is ours to pay, as wait.c's sleeper pays it, but
	 * only before a sleep, followed by a second look (the caller's). */
	return (dirs & SL_DIR_DATA) &&
			       (atomic_load_explicit(&s->own_ctl->peer_state, memory_order_relaxed) & SL_PEER_UNFENCED)
		       ? SL_EVQ_RELOOK | SL_EVQ_BARRIER
		       : 0;
}

void sl_evq_mark(struct sl_evq_shared *sh, int bell_w, uint32_t index)
{
	uint32_t w = index / 64;
	uint64_t bit = 1ull << (index % 64), sbit = 1ull << (w % 64);
	char byte = 1;

	if (index >= SL_EVQ_SLOTS)
		return;
	/* The bit before the summary: a waiter that clears the summary reads
	 * the bits after, so a bit is never left behind a clear summary. */
	if (!(atomic_load_explicit(&sh->bits[w], memory_order_relaxed) & bit))
		atomic_fetch_or(&sh->bits[w], bit);
	if (!(atomic_load_explicit(&sh->summary[w / 64], memory_order_relaxed) & sbit))
		atomic_fetch_or(&sh->summary[w / 64], sbit);
	else
		atomic_thread_fence(memory_order_seq_cst);
	/* The set-level sleep protocol: marked, then the armed word. */
	if (atomic_load(&sh->armed) > 0 && sl_sys.write(bell_w, &byte, 1) < 0 && errno != EAGAIN)
		sl_debug("epoll set bell not rung: %s", strerror(errno));
}

void sl_evq_cover(struct sl_evq *q, uint32_t slots)
{
	uint32_t words = (slots + 64 * 64 - 1) / (64 * 64);

	if (words > SL_EVQ_SUMMARY)
		words = SL_EVQ_SUMMARY;
	if (words > atomic_load_explicit(&q->summary_words, memory_order_relaxed))
		atomic_store_explicit(&q->summary_words, words, memory_order_relaxed);
}

int sl_evq_take(struct sl_evq *q, void (*fn)(void *arg, uint32_t index), void *arg)
{
	struct sl_evq_shared *sh = q->sh;
	int n = sl_evq_dev_take(q, fn, arg);

	if (!sh)
		return n;
	for (uint32_t i = 0, words = atomic_load_explicit(&q->summary_words, memory_order_relaxed); i < words; i++) {
		uint64_t sum;

		if (!atomic_load_explicit(&sh->summary[i], memory_order_relaxed))
			continue;
		sum = atomic_exchange(&sh->summary[i], 0);
		while (sum) {
			uint32_t w = i * 64 + (uint32_t)__builtin_ctzll(sum);
			uint64_t bits = atomic_exchange(&sh->bits[w], 0);

			sum &= sum - 1;
			while (bits) {
				fn(arg, w * 64 + (uint32_t)__builtin_ctzll(bits));
				bits &= bits - 1;
				n++;
			}
		}
	}
	return n;
}

bool sl_evq_pending(const struct sl_evq *q)
{
	if (q->sh)
		for (uint32_t i = 0, words = atomic_load_explicit(&q->summary_words, memory_order_relaxed); i < words; i++)
			if (atomic_load_explicit(&q->sh->summary[i], memory_order_relaxed))
				return true;
	return sl_evq_dev_pending(q);
}

void sl_evq_drain(struct sl_evq *q)
{
	char buf[256];

	while (sl_sys.read(q->bell_r, buf, sizeof(buf)) == (ssize_t)sizeof(buf))
		;
	sl_evq_dev_drain(q);
}

static bool has_dev(const struct sl_evq *q)
{
	for (int i = 0; i < SL_EVQ_DEV_LINKS; i++)
		if (q->dev[i])
			return true;
	return false;
}

void sl_evq_arm(struct sl_evq *q)
{
	/* A full fence: the armed count before the re-check of the summary. */
	atomic_fetch_add(&q->sh->armed, 1);
	atomic_fetch_add(&q->dev_armed, 1);
	if (has_dev(q))
		sl_evq_dev_mirror(q, true);
}

void sl_evq_disarm(struct sl_evq *q)
{
	atomic_fetch_sub(&q->sh->armed, 1);
	/* An awake set costs the device peers' senders no system call. */
	if (atomic_fetch_sub(&q->dev_armed, 1) == 1 && has_dev(q))
		sl_evq_dev_mirror(q, false);
}

int sl_evq_new_bells(struct sl_evq *q, int *fds, int max)
{
	int n = 0;

	for (int i = 0; i < SL_EVQ_DEV_LINKS && n < max; i++)
		if (q->dev[i] && !q->dev[i]->in_kernel && !atomic_load(&q->dev[i]->dead)) {
			q->dev[i]->in_kernel = true;
			fds[n++] = q->dev[i]->fd;
		}
	return n;
}

void sl_evq_forget_wants(struct sl_evq *q)
{
	sl_evq_dev_forget_wants(q);
}

void sl_evq_set_closed(struct sl_evq *q)
{
	sl_evq_dev_close(q);
}

void sl_evq_fd_moved(struct sl_evq *q, int from, int to)
{
	if (q->memfd == from)
		q->memfd = to;
	if (q->bell_r == from)
		q->bell_r = to;
	if (q->bell_w == from)
		q->bell_w = to;
	for (int i = 0; i < SL_EVQ_DEV_LINKS; i++)
		if (q->dev[i] && q->dev[i]->fd == from)
			q->dev[i]->fd = to;
}

/* The sets of other processes this process marks: mapped at the first mark
 * and kept (a set a peer closed stays mapped, unread, until we exit). */
struct evq_map {
	int32_t pid;
	uint64_t set_id;
	struct sl_evq_shared *sh;
	int bell_w;
};
static struct evq_map maps[EVQ_MAPS];
static _Atomic int nmaps;
static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;

/* Map set_id of process pid; NULL if it is not what the registration says
 * (*v says why). */
static struct evq_map *map_set(int32_t pid, uint64_t set_id, int32_t memfd, int32_t bell,
			       enum sl_evq_take_verdict *v)
{
	struct evq_map *m = NULL;
	struct sl_evq_shared *sh;
	int bw = -1, n;

	pthread_mutex_lock(&maps_lock);
	n = atomic_load(&nmaps);
	for (int i = 0; i < n; i++)
		if (maps[i].pid == pid && maps[i].set_id == set_id) {
			m = &maps[i];
			goto out;
		}
	if (n == EVQ_MAPS) {
		static bool warned;

		if (!warned)
			sl_warn("more than %d epoll sets of peers: their waits see our data at their next sweep",
				EVQ_MAPS);
		warned = true;
		*v = SL_EVQ_GONE;
		goto out;
	}
	/* The registration is the peer's word: what it names is taken only as
	 * the kernel shows it, and used only as a set's queue (evq_peer.c). */
	*v = sl_evq_take_peer(pid, memfd, bell, set_id, EVQ_MAGIC, evq_size(), &sh, &bw);
	if (*v == SL_EVQ_UNREACHABLE) {
		static bool warned;

		/* Not a peer that cannot reach us (marker_reaches kept those
		 * off the queue): one that changed user since it published.
		 * (A waiter that is gone is no news.) */
		if (!warned)
			sl_warn("cannot take the epoll set of pid %d: its waits see our data at their next sweep",
				(int)pid);
		warned = true;
	}
	if (*v != SL_EVQ_TAKEN)
		goto out;
	maps[n] = (struct evq_map){ .pid = pid, .set_id = set_id, .sh = sh, .bell_w = sl_own_fd(bw) };
	m = &maps[n];
	atomic_store(&nmaps, n + 1);
out:
	pthread_mutex_unlock(&maps_lock);
	return m;
}

/* Mark the set of s's registration r; false if we may not take it.  A
 * registration that names what is not a set's queue is a hostile peer's:
 * none of this connection's are acted on any more. */
static bool mark_reg(struct sl_sock *s, struct sl_evq_reg *r)
{
	uint64_t pub = atomic_load_explicit(&r->pub, memory_order_acquire), set_id;
	enum sl_evq_take_verdict v = SL_EVQ_TAKEN;
	int32_t pid, memfd, bell;
	uint32_t index;
	struct evq_map *m = NULL;
	int n;

	if (!pub || atomic_load_explicit(&s->evq_refused, memory_order_relaxed))
		return true;
	set_id = atomic_load(&r->set_id);
	pid = atomic_load(&r->pid);
	memfd = atomic_load(&r->memfd);
	bell = atomic_load(&r->bell);
	index = atomic_load(&r->index);
	if (atomic_load(&r->pub) != pub || index >= SL_EVQ_SLOTS)
		return true; /* re-registered meanwhile: the new registrant looks itself */
	n = atomic_load(&nmaps);
	for (int i = 0; i < n && !m; i++)
		if (maps[i].pid == pid && maps[i].set_id == set_id)
			m = &maps[i];
	if (!m)
		m = map_set(pid, set_id, memfd, bell, &v);
	if (m)
		sl_evq_mark(m->sh, m->bell_w, index);
	if (v == SL_EVQ_NOT_A_SET) {
		static _Atomic bool warned;

		/* Once per process: a hostile peer may open many connections. */
		if (!atomic_exchange(&s->evq_refused, true) && !atomic_exchange(&warned, true))
			sl_warn("a peer registered an epoll set that is not one (pid %d): its sets of this "
				"connection see our data at their next sweep", (int)pid);
		return false;
	}
	return v != SL_EVQ_UNREACHABLE;
}

void sl_evq_notify_asked(struct sl_sock *s, uint32_t w)
{
	struct sl_area_ctl *c = s->own_ctl;

	if (s->dev_map[0]) {
		w = atomic_fetch_and(&c->evq_want, ~w) & w;
		for (int k = 0; k < SL_EVQ_CONN_SLOTS; k++)
			if (w & slot_bits(s, k))
				sl_evq_dev_mark_peer(s, &c->evq[k]);
		return;
	}
	/* The peer's sets take this connection off their queues at their
	 * next sweep; no use trying to take them at every send till then. */
	if ((atomic_load_explicit(&s->peer_ctl->marker_flags, memory_order_relaxed) & SL_MARKER_LOST) ||
	    atomic_load_explicit(&s->evq_refused, memory_order_relaxed))
		return;
	w = atomic_fetch_and(&c->evq_want, ~w) & w;
	for (int k = 0; k < SL_EVQ_CONN_SLOTS; k++)
		if ((w & slot_bits(s, k)) && !mark_reg(s, &c->evq[k]))
			atomic_fetch_or(&s->peer_ctl->marker_flags, SL_MARKER_LOST);
}

void sl_evq_notify_local(struct sl_sock *s)
{
	struct sl_area_ctl *c = s->peer_ctl;

	/* Every set of our side, whatever it asked for: a local change is rare
	 * and may be any readiness (a forked holder's sets see it too).  The
	 * fence orders our caller's state change before every later load, the
	 * registrations here and sl_conn_wake_local's sleeper counts. */
	atomic_thread_fence(memory_order_seq_cst);
	if (s->dev_map[0]) {
		/* Our registrations there are in the peer's memory: this
		 * process's record of them is read instead (evq_dev.c). */
		sl_evq_dev_notify_local(s);
		return;
	}
	/* The peer can write these registrations too: the same checks. */
	for (int k = 0; k < SL_EVQ_CONN_SLOTS; k++)
		(void)mark_reg(s, &c->evq[k]);
}
