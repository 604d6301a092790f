/* segment.c — the geometry of a connection segment: one header page, then the
 * creator's area and the attacher's area, each a control page plus its ring.
 * The attacher trusts nothing in the header until sl_segment_valid says so.
 */
#include "ring/segment.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process/holders.h"
#include "runtime/bell_fd.h"
#include "runtime/sys.h"

void sl_segment_layout(struct sl_seg_header *hdr, uint64_t cap0, uint64_t cap1)
{
	memset(hdr, 0, sizeof(*hdr));
	hdr->magic = SL_SEG_MAGIC;
	hdr->version = SL_SEG_VERSION;
	hdr->header_size = SL_SEG_HEADER_SIZE;
	hdr->area_off[0] = SL_SEG_HEADER_SIZE;
	hdr->ring_cap[0] = cap0;
	hdr->area_off[1] = SL_SEG_HEADER_SIZE + SL_AREA_CTL_SIZE + cap0;
	hdr->ring_cap[1] = cap1;
	hdr->total_size = hdr->area_off[1] + SL_AREA_CTL_SIZE + cap1;
}

static int cap_valid(uint64_t cap)
{
	return cap >= SL_RING_MIN && cap <= SL_RING_MAX && (cap & (cap - 1)) == 0;
}

int sl_segment_valid(const struct sl_seg_header *hdr, uint64_t size)
{
	struct sl_seg_header expect;

	if (hdr->magic != SL_SEG_MAGIC || hdr->version != SL_SEG_VERSION || !cap_valid(hdr->ring_cap[0]) ||
	    !cap_valid(hdr->ring_cap[1]))
		return 0;
	/* The geometry is fully determined by the two capacities. */
	sl_segment_layout(&expect, hdr->ring_cap[0], hdr->ring_cap[1]);
	return memcmp(&expect, hdr, sizeof(expect)) == 0 && expect.total_size == size;
}

/* A page's first touch in a process costs a fault: 4-11 us measured in a
 * virtual machine that shadows page tables (a write fault to shared memory
 * twice a read's).  Every connection's first exchange touches both control
 * pages and the first page of both rings; a read now maps each page
 * writable (shmem has no write-notify), so the exchange takes no page fault
 * (a software dirty bit may still fault its first write).  Reads only: the
 * pages are reserved (the creator's fallocate), and a peer that punched
 * them costs us a page each, as its later writes would. */
__attribute__((no_sanitize("thread"))) void sl_segment_touch(const void *base, const struct sl_seg_header *hdr)
{
	const volatile unsigned char *b = base;

	for (int a = 0; a < 2; a++) {
		(void)b[hdr->area_off[a]];
		(void)b[hdr->area_off[a] + SL_AREA_CTL_SIZE];
	}
}

void sl_segment_bind(struct sl_sock *s, void *base, size_t len, int own, const struct sl_seg_header *hdr)
{
	unsigned char *b = base;

	sl_segment_touch(base, hdr);
	sl_segment_bind_areas(s, base, len, own, (struct sl_seg_holders *)(b + SL_SEG_HOLDERS_OFF),
			      (struct sl_area_ctl *)(b + hdr->area_off[own]),
			      (struct sl_area_ctl *)(b + hdr->area_off[1 - own]), hdr->ring_cap[own],
			      hdr->ring_cap[1 - own]);
	/* A memfd: the creator reserved only the start of the rings. */
	sl_ring_tx_lazy(&s->tx);
}

static void map_areas(struct sl_sock *s, void *base, size_t len, int own, struct sl_seg_holders *h,
		      struct sl_area_ctl *own_ctl, struct sl_area_ctl *peer_ctl, uint64_t own_cap, uint64_t peer_cap)
{
	s->seg = base;
	s->seg_len = len;
	s->own_area = own;
	s->htab = h;
	s->holders = &h->count[own];
	s->users = h->user[own];
	s->own_ctl = own_ctl;
	s->peer_ctl = peer_ctl;
	sl_ring_rx_init(&s->rx, own_ctl, (const unsigned char *)own_ctl + SL_AREA_CTL_SIZE, peer_ctl, own_cap);
	sl_ring_tx_init(&s->tx, peer_ctl, (unsigned char *)peer_ctl + SL_AREA_CTL_SIZE, own_ctl, peer_cap);
	if (s->sndbuf > 0)
		sl_ring_tx_limit(&s->tx, s->sndbuf);
}

void sl_segment_bind_areas(struct sl_sock *s, void *base, size_t len, int own, struct sl_seg_holders *h,
			   struct sl_area_ctl *own_ctl, struct sl_area_ctl *peer_ctl, uint64_t own_cap,
			   uint64_t peer_cap)
{
	map_areas(s, base, len, own, h, own_ctl, peer_ctl, own_cap, peer_cap);
	sl_holders_init(s);
	atomic_store(&s->users[SL_USE_RX], sl_self_pid);
	atomic_store(&s->users[SL_USE_TX], sl_self_pid);
}

void sl_segment_adopt_areas(struct sl_sock *s, void *base, size_t len, int own, struct sl_seg_holders *h,
			    struct sl_area_ctl *own_ctl, struct sl_area_ctl *peer_ctl, uint64_t own_cap,
			    uint64_t peer_cap)
{
	map_areas(s, base, len, own, h, own_ctl, peer_ctl, own_cap, peer_cap);
}

void sl_segment_adopt(struct sl_sock *s, void *base, size_t len, int own, const struct sl_seg_header *hdr)
{
	unsigned char *b = base;

	/* The holder words and users stay as the other holders left them. */
	map_areas(s, base, len, own, (struct sl_seg_holders *)(b + SL_SEG_HOLDERS_OFF),
		  (struct sl_area_ctl *)(b + hdr->area_off[own]), (struct sl_area_ctl *)(b + hdr->area_off[1 - own]),
		  hdr->ring_cap[own], hdr->ring_cap[1 - own]);
	sl_ring_tx_lazy(&s->tx);
}

void sl_segment_set_state(struct sl_sock *s, uint32_t bits)
{
	s->state_to_peer |= bits;
	atomic_store_explicit(&s->peer_ctl->peer_state, s->state_to_peer, memory_order_release);
}

void sl_segment_clear_state(struct sl_sock *s, uint32_t bits)
{
	s->state_to_peer &= ~bits;
	atomic_store_explicit(&s->peer_ctl->peer_state, s->state_to_peer, memory_order_release);
}

/* What a socket points at when it has no segment: a thread racing with
 * close() reads a connection that is shut and reset, never unmapped memory.
 * Stores meant for a peer land in the sink and are never read. */
static struct sl_area_ctl closed_own = { .peer_state = SL_PEER_SHUT_WR | SL_PEER_CLOSED | SL_PEER_RESET };
static struct sl_area_ctl closed_sink;
static _Atomic int32_t closed_holders;
static _Atomic int32_t closed_users[2];

void sl_segment_unbind(struct sl_sock *s)
{
	s->seg = NULL;
	s->seg_len = 0;
	s->offer_word = NULL;
	s->own_ctl = &closed_own;
	s->peer_ctl = &closed_sink;
	s->htab = NULL;
	s->holder_slot = SL_HOLDER_NONE;
	s->holders = &closed_holders;
	s->users = closed_users;
	sl_ring_rx_init(&s->rx, &closed_own, NULL, &closed_sink, 0);
	sl_ring_tx_init(&s->tx, &closed_sink, NULL, &closed_own, 0);
}

void sl_claim_rx_take(struct sl_sock *s)
{
	uint64_t read;

	read = atomic_load_explicit(s->rx.remote_read, memory_order_acquire);
	s->rx.read = s->rx.published = s->rx.write_seen = read;
	atomic_store_explicit(&s->users[SL_USE_RX], sl_self_pid, memory_order_relaxed);
}

void sl_claim_tx_take(struct sl_sock *s)
{
	s->tx.write = atomic_load_explicit(s->tx.remote_write, memory_order_acquire);
	s->tx.read_seen = atomic_load_explicit(s->tx.read_copy, memory_order_acquire);
	atomic_store_explicit(&s->users[SL_USE_TX], sl_self_pid, memory_order_relaxed);
}

void sl_rx_publish_exact(struct sl_sock *s)
{
	sl_lock(&s->rx_lock);
	if (atomic_load_explicit(&s->users[SL_USE_RX], memory_order_relaxed) == sl_self_pid)
		sl_ring_rx_publish(&s->rx);
	sl_unlock(&s->rx_lock);
}

bool sl_segment_recover_indices(struct sl_sock *s)
{
	uint64_t write;

	/* What the old holder published last is exactly where it stood. */
	s->rx.read = s->rx.published = s->rx.write_seen = atomic_load(s->rx.remote_read);
	s->tx.write = atomic_load(s->tx.remote_write);
	s->tx.read_seen = atomic_load(s->tx.read_copy);
	write = atomic_load(s->rx.write_idx);
	return s->tx.write - s->tx.read_seen <= s->tx.cap && write - s->rx.read <= s->rx.cap;
}

int64_t sl_rx_waiting(struct sl_sock *s)
{
	uint64_t write, read;

	if (atomic_load_explicit(&s->users[SL_USE_RX], memory_order_relaxed) == sl_self_pid)
		return sl_ring_rx_avail_fresh(&s->rx);
	/* Another process of our side reads: its published index is the base. */
	write = atomic_load_explicit(s->rx.write_idx, memory_order_acquire);
	read = atomic_load_explicit(s->rx.remote_read, memory_order_acquire);
	return write - read > s->rx.cap ? -1 : (int64_t)(write - read);
}

int64_t sl_tx_room(struct sl_sock *s, uint64_t want)
{
	uint64_t write, read;

	if (atomic_load_explicit(&s->users[SL_USE_TX], memory_order_relaxed) == sl_self_pid)
		return sl_ring_tx_space(&s->tx, want);
	write = atomic_load_explicit(s->tx.remote_write, memory_order_acquire);
	read = atomic_load_explicit(s->tx.read_copy, memory_order_acquire);
	if (write - read > s->tx.cap)
		return -1;
	return write - read >= s->tx.room ? 0 : (int64_t)(s->tx.room - (write - read));
}

bool sl_segment_release_holder(struct sl_sock *s)
{
	return sl_holders_release(s);
}

/* Is fd a segment as we make them: a regular (memfd) file sealed against
 * resizing?  Seals first: once F_SEAL_SHRINK is on, the size fstat reports
 * is final.  -1 with errno otherwise. */
/* -1 not probed yet, 0 no, 1 yes. */
static _Atomic int reopenable = -1;

bool sl_segment_reopenable(void)
{
	int r = atomic_load_explicit(&reopenable, memory_order_relaxed);
	char path[128];
	void *p = MAP_FAILED;
	int fd, again;

	if (r >= 0)
		return r;
	/* A page of our own, reopened the way sl_handover_segment_fd would. */
	fd = memfd_create("scilan-probe", MFD_CLOEXEC);
	if (fd >= 0 && ftruncate(fd, 4096) == 0)
		p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (fd >= 0)
		sl_sys.close(fd);
	r = 0;
	if (p != MAP_FAILED) {
		snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx", (unsigned long)p,
			 (unsigned long)p + 4096);
		again = open(path, O_RDWR | O_CLOEXEC);
		r = again >= 0;
		if (again >= 0)
			sl_sys.close(again);
		munmap(p, 4096);
	}
	atomic_store_explicit(&reopenable, r, memory_order_relaxed);
	return r;
}

static _Atomic bool probe_wanted;

int sl_segment_reopenable_known(void)
{
	int r = atomic_load_explicit(&reopenable, memory_order_relaxed);

	if (r < 0 && !atomic_load_explicit(&probe_wanted, memory_order_relaxed))
		atomic_store_explicit(&probe_wanted, true, memory_order_relaxed);
	return r;
}

void sl_segment_reopen_idle(void)
{
	if (atomic_load_explicit(&probe_wanted, memory_order_relaxed) &&
	    atomic_exchange_explicit(&probe_wanted, false, memory_order_relaxed))
		sl_segment_reopenable();
}

void sl_segment_reopen_forget(void)
{
	atomic_store_explicit(&reopenable, -1, memory_order_relaxed);
}

int sl_segment_fd_check(int fd, struct stat *st)
{
	if ((sl_sys.fcntl(fd, F_GET_SEALS) & SL_SEGMENT_SEALS) != SL_SEGMENT_SEALS) {
		errno = EPERM;
		return -1;
	}
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

void sl_segment_refuse(int fd, int bell)
{
	uint32_t offered = SL_OFFER_OFFERED;
	char token = SL_TOKEN_LOCAL;
	struct stat st;
	int seals = sl_sys.fcntl(fd, F_GET_SEALS), ours;
	void *page;

	/* A file that can shrink could be cut under the store (SIGBUS); one
	 * shorter than the word's page has no offer word at all. */
	if (seals < 0 || !(seals & F_SEAL_SHRINK) || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size < (off_t)SL_PAGE)
		return;
	page = mmap(NULL, SL_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (page == MAP_FAILED)
		return;
	atomic_compare_exchange_strong((_Atomic uint32_t *)((unsigned char *)page + SL_SEG_OFFER_OFF), &offered,
				       SL_OFFER_REFUSED);
	munmap(page, SL_PAGE);
	/* Its sleeps are capped at 10 ms while the offer is out: the bell only
	 * saves those.  Rung through a description of our own: the one passed
	 * may be made blocking by its sender between any check and the write,
	 * or have no reader (SIGPIPE); not a pipe at all, it is not rung. */
	ours = sl_bell_reopen(bell, SL_BELL_STRANGER);
	if (ours >= 0) {
		sl_sys.write(ours, &token, 1);
		sl_sys.close(ours);
	}
}
