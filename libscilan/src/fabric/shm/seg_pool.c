/* seg_pool.c — segment memory outside a connection's life: the connecting
 * side's segment (a sealed memfd, reserved, mapped, its header and offer
 * word written) and its anonymous bells, made at connect or one set ahead
 * of need per process; and closed connections' mappings and descriptors,
 * let go of at the process's next wait.  Both while the process waits (for
 * a reply, say), not while a connect or close waits on them.
 */
#include "fabric/shm/seg_pool.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/own_fd.h"
#include "fabric/shm/offer_names.h"
#include "ring/segment.h"
#include "runtime/sys.h"

/* Whether this kernel has MADV_POPULATE_WRITE (5.14), by which senders
 * reserve the rest of their rings later; once per process.  The kernel
 * refuses an advice it does not know before it looks at the range, and an
 * empty range is then done at once: one system call, nothing mapped. */
static bool can_populate(void)
{
	static _Atomic int known; /* 0 unknown, 1 yes, -1 no */

	if (!atomic_load(&known))
		atomic_store(&known, madvise(NULL, 0, 23 /* MADV_POPULATE_WRITE */) == 0 ? 1 : -1);
	return atomic_load(&known) > 0;
}

static int reserve(int fd, uint64_t off, uint64_t len)
{
	int err = posix_fallocate(fd, (off_t)off, (off_t)len);

	errno = err;
	return err ? -1 : 0;
}

static int create_memfd(const struct sl_seg_header *hdr)
{
	int fd = memfd_create("scilan-segment", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	int err;

	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)hdr->total_size) < 0)
		goto fail;
	/* Reserve pages now: a full memory cgroup must fail this connect, not
	 * raise SIGBUS on a later store.  All of it cost half of a short
	 * connection (two 256 KiB rings, ~180 us of ~360): only the header, the
	 * control pages and the first SL_RING_RESERVE_FIRST of each ring here;
	 * each sender reserves the rest of its ring before it first writes
	 * there (ARCHITECTURE.md, "Segment memory"). */
	if (!can_populate()) {
		if (reserve(fd, 0, hdr->total_size) < 0)
			goto fail;
	} else {
		for (int a = 0; a < 2; a++) {
			uint64_t ring = hdr->ring_cap[a] < SL_RING_RESERVE_FIRST ? hdr->ring_cap[a] : SL_RING_RESERVE_FIRST;
			uint64_t from = a ? hdr->area_off[1] : 0;

			if (reserve(fd, from, hdr->area_off[a] - from + SL_AREA_CTL_SIZE + ring) < 0)
				goto fail;
		}
	}
	/* Sealed against shrinking, a peer cannot truncate the file under our mapping. */
	if (sl_sys.fcntl(fd, F_ADD_SEALS, SL_SEGMENT_SEALS) < 0)
		goto fail;
	return fd;
fail:
	err = errno;
	sl_sys.close(fd);
	errno = err;
	return -1;
}

int sl_anon_bell(void)
{
	char path[48];
	int p[2], fd;

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	/* The acceptor reopens what we pass through its /proc/self/fd
	 * (runtime/bell_fd.c), which checks the pipe's mode: pipefs makes it
	 * 0600, closed to an acceptor of another user.  Only holders of a
	 * descriptor of the pipe reach it there. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", p[0]);
	fd = fchmod(p[0], 0666) == 0 ? open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC) : -1;
	sl_sys.close(p[0]);
	sl_sys.close(p[1]);
	return sl_own_fd(fd);
}

static void close_bells(struct sl_made *m)
{
	sl_own_fd_close(m->bell_rx);
	sl_own_fd_close(m->bell_tx);
	m->bell_rx = m->bell_tx = -1;
}

static int make_bells(struct sl_made *m)
{
	int err;

	m->bell_rx = sl_anon_bell();
	m->bell_tx = m->bell_rx < 0 ? -1 : sl_anon_bell();
	if (m->bell_tx >= 0)
		return 0;
	err = errno;
	close_bells(m);
	errno = err;
	return -1;
}

static void unmake(struct sl_made *m)
{
	int err = errno;

	close_bells(m);
	munmap(m->base, m->hdr.total_size);
	sl_own_fd_close(m->fd);
	errno = err;
}

static int build(const struct sl_seg_header *hdr, bool bells, struct sl_made *m)
{
	struct stat st;
	int err;

	m->bell_rx = m->bell_tx = -1;
	m->hdr = *hdr;
	m->fd = sl_own_fd(create_memfd(hdr));
	if (m->fd < 0)
		return -1;
	m->base = mmap(NULL, hdr->total_size, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
	if (m->base == MAP_FAILED) {
		err = errno;
		sl_own_fd_close(m->fd);
		errno = err;
		return -1;
	}
	memcpy(m->base, hdr, sizeof(*hdr));
	/* Here, where a set made ahead pays it before any connect needs it. */
	sl_segment_touch(m->base, hdr);
	/* Before the offer is published: the acceptor's compare-and-swap needs it. */
	atomic_store((_Atomic uint32_t *)((unsigned char *)m->base + SL_SEG_OFFER_OFF), SL_OFFER_OFFERED);
	if (fstat(m->fd, &st) < 0 || (bells && make_bells(m) < 0)) {
		unmake(m);
		return -1;
	}
	m->ino = st.st_ino;
	m->dev = st.st_dev;
	return 0;
}

/* The set made ahead.  Made by a thread of this process, for this process
 * only: a fork child throws its copy away (sl_seg_pool_after_fork_child),
 * so no segment ever serves two connections; pid catches a child made
 * without the fork handlers (a raw clone). */
struct premade {
	struct sl_made m;
	pid_t pid;
};

static struct premade *_Atomic slot;
static _Atomic bool need;        /* a set is wanted and none is made */
static _Atomic unsigned offers;  /* offers made by this process (the pool starts at 2) */
static pthread_mutex_t tmpl_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sl_seg_header tmpl; /* the layout of the last offer */
static bool tmpl_bells;

static void discard(struct premade *p)
{
	unmake(&p->m);
	free(p);
}

int sl_seg_make(const struct sl_seg_header *hdr, bool bells, struct sl_made *m)
{
	struct premade *p = atomic_exchange(&slot, NULL);

	if (p && (p->pid != sl_self_pid || memcmp(&p->m.hdr, hdr, sizeof(*hdr)) != 0)) {
		discard(p);
		p = NULL;
	}
	if (!p)
		return build(hdr, bells, m);
	*m = p->m;
	free(p);
	if (!bells) {
		close_bells(m);
	} else if (m->bell_rx < 0 && make_bells(m) < 0) {
		unmake(m);
		return -1;
	}
	return 0;
}

void sl_seg_pool_note_offer(const struct sl_seg_header *hdr, bool bells)
{
	pthread_mutex_lock(&tmpl_lock);
	tmpl = *hdr;
	tmpl_bells = bells;
	pthread_mutex_unlock(&tmpl_lock);
	/* A process that connects once (a command-line client) makes nothing
	 * ahead: the first offer only teaches the layout. */
	if (atomic_fetch_add(&offers, 1) >= 1 && !atomic_load(&slot))
		atomic_store(&need, true);
}

/* Unmap a segment and close its descriptors (-1 entries skipped) and offer file. */
void sl_shm_unmap(void *seg, size_t len, const int fds[SL_SHM_FDS], const char *offer_path)
{
	if (seg)
		munmap(seg, len);
	for (int i = 0; i < SL_SHM_FDS; i++)
		sl_own_fd_close(fds[i]);
	if (offer_path && *offer_path)
		sl_shm_unlink_offer(offer_path);
}

/* Closed connections' segments: the last unmap of a segment frees its
 * pages (shmem_evict_inode), ~10-20 us that a close paid before the next
 * connect could start. */
#define RETIRE_MAX 4

struct retired {
	void *seg;
	size_t len;
	int fds[SL_SHM_FDS];
};

static pthread_mutex_t retire_lock = PTHREAD_MUTEX_INITIALIZER;
static struct retired retired[RETIRE_MAX];
static int nretired;
static _Atomic bool retire_pending;

static void let_go(const struct retired *r)
{
	sl_shm_unmap(r->seg, r->len, r->fds, NULL);
}

void sl_seg_retire(void *seg, size_t len, const int fds[SL_SHM_FDS])
{
	struct retired r = { .seg = seg, .len = len }, oldest;
	bool full;
	int err = errno;

	memcpy(r.fds, fds, sizeof(r.fds));
	pthread_mutex_lock(&retire_lock);
	full = nretired == RETIRE_MAX;
	if (full) {
		oldest = retired[0];
		memmove(retired, retired + 1, sizeof(retired[0]) * (RETIRE_MAX - 1));
		nretired--;
	}
	retired[nretired++] = r;
	pthread_mutex_unlock(&retire_lock);
	atomic_store(&retire_pending, true);
	/* A process that never waits lets go as it closes, RETIRE_MAX later. */
	if (full)
		let_go(&oldest);
	errno = err;
}

static void let_go_all(void)
{
	struct retired batch[RETIRE_MAX];
	int n;

	pthread_mutex_lock(&retire_lock);
	n = nretired;
	memcpy(batch, retired, sizeof(batch[0]) * (size_t)n);
	nretired = 0;
	pthread_mutex_unlock(&retire_lock);
	for (int i = 0; i < n; i++)
		let_go(&batch[i]);
}

void sl_seg_pool_idle(void)
{
	struct sl_seg_header hdr;
	struct premade *p, *expected = NULL;
	bool bells;
	int err;

	if (atomic_load_explicit(&retire_pending, memory_order_relaxed) && atomic_exchange(&retire_pending, false)) {
		err = errno;
		let_go_all();
		errno = err;
	}
	if (!atomic_load_explicit(&need, memory_order_relaxed) || !atomic_exchange(&need, false))
		return;
	err = errno;
	pthread_mutex_lock(&tmpl_lock);
	hdr = tmpl;
	bells = tmpl_bells;
	pthread_mutex_unlock(&tmpl_lock);
	p = malloc(sizeof(*p));
	/* A failure (no memory, descriptors) waits for the next offer to ask again. */
	if (p && build(&hdr, bells, &p->m) == 0) {
		p->pid = sl_self_pid;
		if (!atomic_compare_exchange_strong(&slot, &expected, p))
			discard(p);
	} else {
		free(p);
	}
	errno = err;
}

static void renumber(int *fd, int from, int to)
{
	if (*fd == from)
		*fd = to;
}

void sl_seg_pool_renumber(int from, int to)
{
	struct premade *p = atomic_load(&slot);

	pthread_mutex_lock(&retire_lock);
	for (int i = 0; i < nretired; i++)
		for (int k = 0; k < SL_SHM_FDS; k++)
			renumber(&retired[i].fds[k], from, to);
	pthread_mutex_unlock(&retire_lock);
	if (!p)
		return;
	renumber(&p->m.fd, from, to);
	renumber(&p->m.bell_rx, from, to);
	renumber(&p->m.bell_tx, from, to);
}

void sl_seg_pool_before_fork(void)
{
	pthread_mutex_lock(&retire_lock);
}

void sl_seg_pool_after_fork_parent(void)
{
	pthread_mutex_unlock(&retire_lock);
}

void sl_seg_pool_after_fork_child(void)
{
	struct premade *p = atomic_exchange(&slot, NULL);

	/* The parent's: it may hand it to its next connection. */
	if (p)
		discard(p);
	atomic_store(&need, false);
	atomic_store(&offers, 0);
	pthread_mutex_init(&tmpl_lock, NULL);
	/* Our copies of what the parent lets go of: not ours to keep.  The
	 * lock was held across the fork (sl_seg_pool_before_fork). */
	pthread_mutex_init(&retire_lock, NULL);
	let_go_all();
	atomic_store(&retire_pending, false);
}
