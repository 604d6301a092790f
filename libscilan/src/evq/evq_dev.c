/* evq_dev.c — epoll sets' event queues on the device fabric: the set endpoint
 * of each link (its marks page, its armed word in the peer's window), the
 * registrations in the connections' peer areas, and the sender side that
 * marks with a posted write and rings the set only when it is armed.
 */
#include "evq/evq_dev.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "uapi/scilan.h" /* the driver's ABI (-Idriver) */
#include "runtime/log.h"
#include "runtime/own_fd.h"
#include "fabric/fabric.h"
#include "runtime/sys.h"
#include "sync/clock.h"

#define SET_MAP_BYTES ((size_t)SCILAN_SETS * SCILAN_SET_PAGE)

_Static_assert(SL_EVQ_CONN_SLOTS <= 4, "a device registration's wants are one byte of evq_want each");
_Static_assert(SCILAN_SET_MARKS_OFF + SL_EVQ_DEV_SLICES <= SCILAN_SET_PAGE, "marks fit their page");
_Static_assert(SL_EVQ_DEV_SLICES == SCILAN_MAX_SLICES, "a set queues every slice a link can have");

/* Set endpoints' records are never freed: a sender thread of ours that read
 * a registration just before the set closed may still store a mark through
 * it (into private memory by then, dev_close). */
static struct sl_evq_dev *free_devs;
static pthread_mutex_t devs_lock = PTHREAD_MUTEX_INITIALIZER;
/* A connection's set mappings are made and taken down under it. */
static pthread_mutex_t set_maps_lock = PTHREAD_MUTEX_INITIALIZER;

void sl_evq_dev_after_fork_child(void)
{
	pthread_mutex_init(&devs_lock, NULL);
	pthread_mutex_init(&set_maps_lock, NULL);
}

static struct sl_evq_dev *dev_alloc(void)
{
	struct sl_evq_dev *d;

	pthread_mutex_lock(&devs_lock);
	d = free_devs;
	if (d)
		free_devs = d->next_free;
	pthread_mutex_unlock(&devs_lock);
	return d ? d : calloc(1, sizeof(*d));
}

static void dev_free(struct sl_evq_dev *d)
{
	pthread_mutex_lock(&devs_lock);
	d->next_free = free_devs;
	free_devs = d;
	pthread_mutex_unlock(&devs_lock);
}

/* Private memory in place of a mapping a racing store may still reach. */
static void replace_mapping(void *p, size_t len)
{
	if (p && mmap(p, len, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED)
		sl_err("cannot replace a device set mapping: %s", strerror(errno));
}

/* A link that gave no set (all 16 taken, link down, no node): asked again
 * only after a second.  A set scanning members retries queuing them at
 * every wait, which would otherwise open the node each time. */
#define SET_RETRY_MS 1000
#define RETRY_LINKS 64
static _Atomic int64_t refused_until_ms[RETRY_LINKS];

/* The set endpoint of q on link n: made at the first member of that link. */
static struct sl_evq_dev *dev_open(struct sl_evq *q, int link)
{
	struct scilan_info in;
	struct sl_evq_dev *d = NULL;
	uint32_t set = 0;
	char path[32];
	void *marks = MAP_FAILED, *armed = MAP_FAILED;
	int fd, fixed;

	if (link < RETRY_LINKS && sl_mono_ms() < atomic_load_explicit(&refused_until_ms[link], memory_order_relaxed))
		return NULL;
	snprintf(path, sizeof(path), "/dev/scilan%d", link);
	fd = sl_own_fd(open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK));
	if (fd < 0)
		goto fail;
	if (sl_sys.ioctl(fd, SCILAN_IOC_INFO, &in) < 0 || in.abi_version != SCILAN_ABI_VERSION ||
	    sl_sys.ioctl(fd, SCILAN_IOC_SET_CREATE, &set) < 0 || set >= SCILAN_SETS) {
		/* All of the link's sets taken (EAGAIN): this set scans. */
		sl_debug("%s: no epoll set queue (%s); its connections are scanned", path, strerror(errno));
		goto fail;
	}
	d = dev_alloc();
	if (!d)
		goto fail;
	/* A reused record's pages are private memory a late local wake-up of
	 * its old set may still store into: the new set's pages replace them
	 * in place (never unmapped, no address space left behind). */
	fixed = d->marks ? MAP_FIXED : 0;
	marks = mmap((void *)d->marks, SCILAN_SET_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | fixed, fd,
		     SCILAN_MMAP_SET_MARKS);
	armed = mmap((void *)d->armed, SCILAN_SET_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | fixed, fd,
		     SCILAN_MMAP_SET_ARMED);
	if (marks == MAP_FAILED || armed == MAP_FAILED) {
		sl_warn("%s: cannot map an epoll set's queue (%s); its connections are scanned", path,
			strerror(errno));
		goto fail;
	}
	d->link = link;
	d->set = set;
	d->marks = marks;
	d->armed = armed;
	d->armed_count = &q->dev_armed;
	d->in_kernel = false;
	d->nmembers = 0;
	atomic_store(&d->dead, false);
	atomic_store(&d->report_all, false);
	d->nslices = in.nslices < SL_EVQ_DEV_SLICES ? in.nslices : SL_EVQ_DEV_SLICES;
	for (int i = 0; i < SL_EVQ_DEV_SLICES; i++) {
		d->idx[i] = -1;
		d->sock[i] = NULL;
	}
	atomic_store(&d->fd, fd);
	return d;
fail:
	if (d) {
		/* Whatever got mapped stays with the record, private again. */
		if (marks != MAP_FAILED)
			d->marks = marks;
		if (armed != MAP_FAILED)
			d->armed = armed;
		replace_mapping((void *)d->marks, SCILAN_SET_PAGE);
		replace_mapping((void *)d->armed, SCILAN_SET_PAGE);
		atomic_store(&d->fd, -1);
		dev_free(d);
	}
	if (fd >= 0)
		sl_own_fd_close(fd);
	if (link < RETRY_LINKS)
		atomic_store_explicit(&refused_until_ms[link], sl_mono_ms() + SET_RETRY_MS, memory_order_relaxed);
	return NULL;
}

/* The set endpoint goes (its index back to the link; out of the kernel set
 * unless a process we forked still holds it, which closes its copy at once). */
static void dev_close_fd(struct sl_evq_dev *d)
{
	int fd = atomic_exchange(&d->fd, -1);

	if (fd >= 0)
		sl_own_fd_close(fd);
}

static void dev_close(struct sl_evq_dev *d)
{
	replace_mapping((void *)d->marks, SCILAN_SET_PAGE);
	replace_mapping((void *)d->armed, SCILAN_SET_PAGE);
	dev_close_fd(d);
	dev_free(d);
}

/* q's queue on link, made if none is (or the one there died with its link). */
static struct sl_evq_dev *dev_for(struct sl_evq *q, int link)
{
	int slot = -1;

	for (int i = 0; i < SL_EVQ_DEV_LINKS; i++) {
		struct sl_evq_dev *d = q->dev[i];

		if (d && d->link == link && !atomic_load(&d->dead))
			return d;
		/* A dead one's members leave at their next look; until then
		 * their registrations name it. */
		if (slot < 0 && (!d || (atomic_load(&d->dead) && d->nmembers == 0)))
			slot = i;
	}
	if (slot < 0)
		return NULL;
	if (q->dev[slot]) {
		/* Its members were reset with the link; none is registered. */
		dev_close(q->dev[slot]);
		q->dev[slot] = NULL;
	}
	q->dev[slot] = dev_open(q, link);
	if (q->dev[slot])
		sl_evq_dev_mirror(q, true); /* a thread of the set may be armed already */
	return q->dev[slot];
}

bool sl_evq_dev_eligible(struct sl_sock *s)
{
	/* Registrations are plain stores into the peer's memory (no atomics
	 * across the link), claimed in this process's memory: only while no
	 * other process holds the connection. */
	return s->dev_link >= 0 && !atomic_load_explicit(&s->dev_lost, memory_order_relaxed) &&
	       !sl_sock_held_elsewhere(s) && s->dev_own_slice < SL_EVQ_DEV_SLICES;
}

static _Atomic uint8_t *want_byte(struct sl_area_ctl *c, int k)
{
	return (_Atomic uint8_t *)&c->evq_want + k;
}

int sl_evq_dev_register(struct sl_evq *q, struct sl_sock *s, uint32_t index, uint64_t tag, uint64_t set_id)
{
	struct sl_evq_dev *d = dev_for(q, s->dev_link);
	uint32_t claims = atomic_load(&s->dev_claims);
	struct sl_evq_reg *r;
	int k;

	/* One registration per connection and set: a second descriptor of
	 * the same connection (dup) in the set is scanned. */
	if (!d || d->idx[s->dev_own_slice] >= 0)
		return -1;
	do {
		for (k = 0; k < SL_EVQ_CONN_SLOTS && (claims & (1u << k)); k++)
			;
		if (k == SL_EVQ_CONN_SLOTS)
			return -1;
	} while (!atomic_compare_exchange_weak(&s->dev_claims, &claims, claims | (1u << k)));
	r = &s->peer_ctl->evq[k];
	atomic_store_explicit(&r->pub, 0, memory_order_relaxed);
	atomic_store_explicit(want_byte(s->peer_ctl, k), 0, memory_order_relaxed);
	atomic_store_explicit(&r->set_id, set_id, memory_order_relaxed);
	atomic_store_explicit(&r->pid, SL_EVQ_DEV_PID, memory_order_relaxed);
	atomic_store_explicit(&r->memfd, -1, memory_order_relaxed);
	atomic_store_explicit(&r->bell, (int32_t)d->set, memory_order_relaxed);
	atomic_store_explicit(&r->index, index, memory_order_relaxed);
	atomic_store_explicit(&r->pub, tag, memory_order_release);
	d->idx[s->dev_own_slice] = (int32_t)index;
	d->sock[s->dev_own_slice] = s;
	d->slot[s->dev_own_slice] = (int8_t)k;
	d->nmembers++;
	atomic_store(&s->dev_set_member, true);
	atomic_store(&s->dev_wanted[k], 0);
	atomic_store(&s->dev_reg[k], d);
	return k;
}

void sl_evq_dev_unregister(struct sl_sock *s, int k, uint64_t pub)
{
	struct sl_evq_dev *d;

	if (k < 0 || k >= SL_EVQ_CONN_SLOTS || !(atomic_load(&s->dev_claims) & (1u << k)))
		return;
	d = atomic_exchange(&s->dev_reg[k], NULL);
	if (d && s->dev_own_slice < SL_EVQ_DEV_SLICES && d->sock[s->dev_own_slice] == s &&
	    d->slot[s->dev_own_slice] == k) {
		d->idx[s->dev_own_slice] = -1;
		d->sock[s->dev_own_slice] = NULL;
		d->nmembers--;
	}
	atomic_store(&s->dev_wanted[k], 0);
	if (atomic_load_explicit(&s->peer_ctl->evq[k].pub, memory_order_relaxed) == pub) {
		atomic_store_explicit(&s->peer_ctl->evq[k].pub, 0, memory_order_relaxed);
		atomic_store_explicit(want_byte(s->peer_ctl, k), 0, memory_order_relaxed);
	}
	atomic_fetch_and(&s->dev_claims, ~(1u << k));
}

int sl_evq_dev_want(struct sl_sock *s, int k, int dirs)
{
	/* One byte per registration, stored whole (a read of the peer's word
	 * would cross the link): room is asked after data in the same look,
	 * so its store keeps the data bit. */
	uint8_t v = (dirs & SL_DIR_SPACE) ? 3 : (dirs & SL_DIR_DATA) ? 1 : 0,
		had = atomic_load_explicit(&s->dev_wanted[k], memory_order_relaxed);

	/* Stored already and not consumed since (no mark of it was taken):
	 * it stands, and it landed at the last arm's read-back.  Storing it
	 * at every look would send every member back for a second look at
	 * every arm, and the set would never sleep. */
	if ((had & v) == v)
		return 0;
	atomic_store_explicit(&s->dev_wanted[k], v, memory_order_relaxed);
	atomic_store_explicit(want_byte(s->peer_ctl, k), v, memory_order_relaxed);
	/* The posted store lands before a sleep: sl_evq_arm's read-back. */
	return SL_EVQ_RELOOK;
}

static int take_dev(struct sl_evq_dev *d, void (*fn)(void *arg, uint32_t index), void *arg)
{
	_Atomic uint64_t *w = (_Atomic uint64_t *)(d->marks + SCILAN_SET_MARKS_OFF);
	int n = 0;

	if (atomic_load_explicit(&d->report_all, memory_order_relaxed) && atomic_exchange(&d->report_all, false))
		for (uint32_t x = 0; x < d->nslices; x++)
			if (d->idx[x] >= 0) {
				fn(arg, (uint32_t)d->idx[x]);
				n++;
			}
	for (uint32_t i = 0; i < (d->nslices + 7) / 8; i++) {
		uint64_t bytes = atomic_load_explicit(&w[i], memory_order_relaxed);

		while (bytes) {
			uint32_t slice = i * 8 + (uint32_t)__builtin_ctzll(bytes) / 8;

			bytes &= ~(0xffull << (8 * (slice % 8)));
			/* A peer may mark any slice: only members count.  Its
			 * mark says it consumed our want: the next look asks again. */
			if (atomic_exchange(&d->marks[SCILAN_SET_MARKS_OFF + slice], 0) && d->idx[slice] >= 0) {
				if (d->sock[slice])
					atomic_store(&d->sock[slice]->dev_wanted[(int)d->slot[slice]], 0);
				fn(arg, (uint32_t)d->idx[slice]);
				n++;
			}
		}
	}
	return n;
}

int sl_evq_dev_take(struct sl_evq *q, void (*fn)(void *arg, uint32_t index), void *arg)
{
	int n = 0;

	for (int i = 0; i < SL_EVQ_DEV_LINKS; i++)
		if (q->dev[i])
			n += take_dev(q->dev[i], fn, arg);
	return n;
}

bool sl_evq_dev_pending(const struct sl_evq *q)
{
	for (int i = 0; i < SL_EVQ_DEV_LINKS; i++) {
		const struct sl_evq_dev *d = q->dev[i];
		_Atomic uint64_t *w;

		if (!d)
			continue;
		if (atomic_load_explicit(&d->report_all, memory_order_relaxed))
			return true;
		w = (_Atomic uint64_t *)(d->marks + SCILAN_SET_MARKS_OFF);
		for (uint32_t j = 0; j < (d->nslices + 7) / 8; j++)
			if (atomic_load_explicit(&w[j], memory_order_relaxed))
				return true;
	}
	return false;
}

void sl_evq_dev_mirror(struct sl_evq *q, bool read_back)
{
	uint32_t on;

	pthread_mutex_lock(&q->dev_lock);
	/* Under the lock each store is the count's latest truth, so the last
	 * one to land is too (two threads arming and disarming at once). */
	on = atomic_load(&q->dev_armed) > 0;
	for (int i = 0; i < SL_EVQ_DEV_LINKS; i++)
		if (q->dev[i] && !atomic_load(&q->dev[i]->dead))
			atomic_store_explicit(q->dev[i]->armed, on, memory_order_relaxed);
	pthread_mutex_unlock(&q->dev_lock);
	if (!read_back)
		return;
	/* Step 3 across PCIe, for the set: the fence drains the write-combining
	 * buffers, and a load through the peer window returns only after our
	 * earlier posted writes there (this mirror, the wants of the looks
	 * before) landed, since read completions do not pass posted writes. */
	atomic_thread_fence(memory_order_seq_cst);
	for (int i = 0; i < SL_EVQ_DEV_LINKS; i++)
		if (q->dev[i] && !atomic_load(&q->dev[i]->dead))
			(void)atomic_load_explicit(q->dev[i]->armed, memory_order_acquire);
}

/* Link down under set d.  The endpoint is readable for good now: it goes at
 * once, mappings first (they hold the file, which the kernel set would
 * report at every wait: a set that never slept again).  Its members see
 * the link down now (nothing else watches their endpoints: most fail over,
 * link_down.c) and are all looked at once at the next take; a later member
 * of the link makes a new set. */
static void dev_died(struct sl_evq_dev *d)
{
	atomic_store(&d->dead, true);
	replace_mapping((void *)d->marks, SCILAN_SET_PAGE);
	replace_mapping((void *)d->armed, SCILAN_SET_PAGE);
	dev_close_fd(d);
	for (uint32_t x = 0; x < d->nslices; x++) {
		struct sl_sock *s = d->sock[x];

		if (s && s->fabric->peer_gone(s))
			atomic_store(&s->peer_gone, true);
	}
	atomic_store(&d->report_all, true);
}

void sl_evq_dev_drain(struct sl_evq *q)
{
	for (int i = 0; i < SL_EVQ_DEV_LINKS; i++) {
		struct sl_evq_dev *d = q->dev[i];
		uint32_t t;
		ssize_t n;

		if (!d || atomic_load(&d->dead))
			continue;
		do
			n = sl_sys.read(atomic_load(&d->fd), &t, sizeof(t));
		while (n == (ssize_t)sizeof(t) || (n < 0 && errno == EINTR));
		if (n < 0 && errno == ECONNRESET)
			dev_died(d);
	}
}

void sl_evq_dev_forget_wants(struct sl_evq *q)
{
	for (int i = 0; i < SL_EVQ_DEV_LINKS; i++) {
		struct sl_evq_dev *d = q->dev[i];

		for (uint32_t x = 0; d && x < d->nslices; x++)
			if (d->sock[x])
				atomic_store(&d->sock[x]->dev_wanted[(int)d->slot[x]], 0);
	}
}

void sl_evq_dev_close(struct sl_evq *q)
{
	for (int i = 0; i < SL_EVQ_DEV_LINKS; i++)
		if (q->dev[i]) {
			dev_close(q->dev[i]);
			q->dev[i] = NULL;
		}
}

/* The connection's mappings of the peer's marks pages and of our armed
 * pages: made at its first mark, under a lock (a rare path). */
static bool set_maps(struct sl_sock *s)
{
	void *marks = MAP_FAILED, *armed = MAP_FAILED;
	bool ok;

	pthread_mutex_lock(&set_maps_lock);
	/* Not after the release took them down (the mapping would hold the
	 * endpoint, and with it the slice, after the close). */
	if (!s->dev_set_map[1] && s->dev_map[0] && s->bell_rx >= 0 && !atomic_load(&s->dev_lost)) {
		marks = mmap(NULL, SET_MAP_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, s->bell_rx,
			     (off_t)SCILAN_MMAP_PEER_MARKS(s->dev_slice));
		armed = mmap(NULL, SET_MAP_BYTES, PROT_READ, MAP_SHARED, s->bell_rx,
			     (off_t)SCILAN_MMAP_OUR_ARMED(s->dev_slice));
		if (marks != MAP_FAILED && armed != MAP_FAILED) {
			/* [1] published last: a sender that sees it uses [0]. */
			s->dev_set_map[0] = marks;
			__atomic_store_n(&s->dev_set_map[1], armed, __ATOMIC_RELEASE);
		} else {
			static bool warned;

			if (!warned)
				sl_warn("fd %d: cannot map the peer's epoll sets (%s): their waits see our data at "
					"their next sweep", s->fd, strerror(errno));
			warned = true;
			if (marks != MAP_FAILED)
				munmap(marks, SET_MAP_BYTES);
			if (armed != MAP_FAILED)
				munmap(armed, SET_MAP_BYTES);
		}
	}
	ok = s->dev_set_map[1] != NULL;
	pthread_mutex_unlock(&set_maps_lock);
	return ok;
}

void sl_evq_dev_mark_peer(struct sl_sock *s, struct sl_evq_reg *r)
{
	uint64_t pub = atomic_load_explicit(&r->pub, memory_order_acquire);
	uint32_t set;

	if (!pub || atomic_load_explicit(&r->pid, memory_order_relaxed) != SL_EVQ_DEV_PID)
		return;
	set = (uint32_t)atomic_load_explicit(&r->bell, memory_order_relaxed);
	/* The registration is the peer's word: a set or a slice out of range
	 * is ignored (its waiter sees us at its next sweep). */
	if (set >= SCILAN_SETS || s->dev_peer_slice >= SCILAN_SET_PAGE - SCILAN_SET_MARKS_OFF ||
	    (!__atomic_load_n(&s->dev_set_map[1], __ATOMIC_ACQUIRE) && !set_maps(s)))
		return;
	atomic_store_explicit((_Atomic uint8_t *)s->dev_set_map[0] + (size_t)set * SCILAN_SET_PAGE +
				      SCILAN_SET_MARKS_OFF + s->dev_peer_slice,
			      1, memory_order_relaxed);
	/* The set-level sleep protocol: marked (the fence drains the
	 * write-combining buffer), then the armed word, in our own memory. */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit((_Atomic uint32_t *)((unsigned char *)s->dev_set_map[1] +
						      (size_t)set * SCILAN_SET_PAGE),
				 memory_order_relaxed) &&
	    sl_sys.ioctl(s->bell_rx, SCILAN_IOC_STIMULATE_SET, &set) < 0 && errno != ECONNRESET)
		sl_debug("fd %d: ringing the peer's epoll set: %s", s->fd, strerror(errno));
}

void sl_evq_dev_notify_local(struct sl_sock *s)
{
	uint32_t token = SCILAN_TOKEN_LOCAL;

	for (int k = 0; k < SL_EVQ_CONN_SLOTS; k++) {
		struct sl_evq_dev *d = atomic_load(&s->dev_reg[k]);
		int fd;

		if (!d || s->dev_own_slice >= SL_EVQ_DEV_SLICES)
			continue;
		atomic_store(&d->marks[SCILAN_SET_MARKS_OFF + s->dev_own_slice], 1);
		fd = atomic_load(&d->fd);
		if (fd >= 0 && atomic_load(d->armed_count) > 0 && sl_sys.ioctl(fd, SCILAN_IOC_RING_SELF, &token) < 0)
			sl_debug("fd %d: waking our epoll set: %s", s->fd, strerror(errno));
	}
}

void sl_evq_dev_unmap(struct sl_sock *s, bool replace)
{
	pthread_mutex_lock(&set_maps_lock);
	for (int i = 0; i < 2; i++) {
		if (!s->dev_set_map[i])
			continue;
		if (replace)
			replace_mapping(s->dev_set_map[i], SET_MAP_BYTES);
		else
			munmap(s->dev_set_map[i], SET_MAP_BYTES);
	}
	if (!replace)
		s->dev_set_map[0] = s->dev_set_map[1] = NULL;
	pthread_mutex_unlock(&set_maps_lock);
}
