/* stall.c — watching, from our waits, whether the peer takes anything of
 * what we put in its ring; a peer that takes nothing for SL_STALL_MS may be
 * reading the kernel socket where the hook cannot see (an SCM_RIGHTS
 * receiver without the hook, io_uring), so the connection moves to kernel
 * TCP, which is safe whoever the peer is (bypass.c, "leaving").
 */
#include "conn/stall.h"

#include <linux/sockios.h>
#include <sys/ioctl.h>

#include "conn/agree.h"
#include "conn/seam.h"
#include "ring/layout.h"
#include "runtime/log.h"
#include "runtime/sys.h"

bool sl_stall_watch(const struct sl_sock *s)
{
	uint32_t peer;

	if (!s->seg || !s->tx.read_copy || !s->tx.remote_write || sl_fell_back(s) ||
	    atomic_load(&s->reset) || sl_agree_pending(s))
		return false;
	peer = atomic_load_explicit(&s->own_ctl->peer_state, memory_order_relaxed);
	if (peer & (SL_PEER_CLOSED | SL_PEER_RESET | SL_PEER_PLAIN))
		return false;
	return atomic_load_explicit(s->tx.remote_write, memory_order_relaxed) !=
	       atomic_load_explicit(s->tx.read_copy, memory_order_relaxed);
}

/* A promotion's kernel stream under way explains a peer that takes nothing
 * from our ring: it reads our ring only after our bytes before our switch
 * point, and an echoing peer blocked on the full ring it sends us in waits
 * for us to read its bytes before its own point.  Both end by kernel TCP
 * alone.  Its progress is what we read of the kernel stream less what our
 * kernel still holds of ours, which grows with either; false when nothing
 * is under way (no seam of ours pending, our kernel queue empty), as for a
 * reader past the hook.  Asked only when the bound ran out (syscalls). */
static bool kernel_stream_progress(struct sl_sock *s, uint64_t *progress)
{
	uint64_t read = 0;
	int outq = 0;

	if (sl_sys.ioctl(s->fd, SIOCOUTQ, &outq) < 0 || outq < 0)
		outq = 0;
	if (!atomic_load_explicit(&s->seam_pending, memory_order_acquire) && outq == 0)
		return false;
	if (sl_seam_read_total(s->fd, &read) < 0)
		return false;
	*progress = read - (uint64_t)outq;
	return true;
}

bool sl_stall_note(struct sl_sock *s, int64_t now_ns)
{
	uint64_t read, progress = 0;
	int64_t since;

	if (!sl_stall_watch(s)) {
		atomic_store_explicit(&s->stall_since_ns, 0, memory_order_relaxed);
		return false;
	}
	read = atomic_load_explicit(s->tx.read_copy, memory_order_relaxed);
	since = atomic_load_explicit(&s->stall_since_ns, memory_order_relaxed);
	if (!since || read != atomic_load_explicit(&s->stall_read, memory_order_relaxed)) {
		atomic_store_explicit(&s->stall_read, read, memory_order_relaxed);
		atomic_store_explicit(&s->stall_since_ns, now_ns, memory_order_relaxed);
		atomic_store_explicit(&s->stall_kernel_seen, false, memory_order_relaxed);
		return false;
	}
	if (now_ns - since < (int64_t)SL_STALL_MS * 1000000)
		return false;
	/* Another bound while the promotion's kernel stream moves; one that
	 * stopped moving (a program that never reads keeps our seam pending)
	 * is a stall like any. */
	if (kernel_stream_progress(s, &progress) && (!atomic_load_explicit(&s->stall_kernel_seen, memory_order_relaxed) ||
						      progress != atomic_load_explicit(&s->stall_kernel, memory_order_relaxed))) {
		atomic_store_explicit(&s->stall_kernel, progress, memory_order_relaxed);
		atomic_store_explicit(&s->stall_kernel_seen, true, memory_order_relaxed);
		atomic_store_explicit(&s->stall_since_ns, now_ns, memory_order_relaxed);
		return false;
	}
	return true;
}

bool sl_stall_at_close(const struct sl_sock *s)
{
	/* The first consume publishes at once, so 0 is "nothing taken since
	 * it agreed".  A peer that read anything through the ring, or wrote
	 * into ours, uses the hook: it reads the rest after our close as TCP
	 * would deliver it.  Urgent marks stay out: a move re-sends them as
	 * plain bytes. */
	return sl_stall_watch(s) && atomic_load_explicit(s->tx.read_copy, memory_order_acquire) == 0 &&
	       atomic_load_explicit(s->rx.write_idx, memory_order_acquire) == 0 &&
	       atomic_load_explicit(&s->peer_ctl->urg_count, memory_order_relaxed) == 0;
}

/* What the stall looked like, for a debug log: our ring's indices, the
 * kernel socket's queues, and a promotion's seam (a peer still reading our
 * kernel bytes before our switch point takes nothing from the ring). */
static void stall_show(struct sl_sock *s)
{
	const _Atomic uint64_t *x = s->seam_point.x;
	int outq = -1, inq = -1;

	/* Rare (a stall ends the connection's ring life): two ioctls, the
	 * kernel's own (the hook's would answer SIOCINQ for the ring). */
	if (sl_sys.ioctl(s->fd, SIOCOUTQ, &outq) < 0 || sl_sys.ioctl(s->fd, SIOCINQ, &inq) < 0)
		outq = inq = -1;
	sl_debug("fd %d: stalled at peer read %llu, our write %llu; kernel queues out %d, in %d; seam %s (read %llu, "
		 "peer point %llu)",
		 s->fd, (unsigned long long)atomic_load(s->tx.read_copy),
		 (unsigned long long)atomic_load(s->tx.remote_write), outq, inq,
		 atomic_load(&s->seam_pending) ? "pending" : "none", (unsigned long long)s->seam_rx.read,
		 x ? (unsigned long long)atomic_load(x) : 0ull);
}

void sl_stall_move(struct sl_sock *s)
{
	atomic_store_explicit(&s->stall_since_ns, 0, memory_order_relaxed);
	sl_info("fd %d: the peer took nothing from its ring for %d s while we waited: it may read the kernel "
		"socket; the connection continues on kernel TCP",
		s->fd, SL_STALL_MS / 1000);
	stall_show(s);
	sl_bypass_leave(s, SL_FB_STALLED);
}
