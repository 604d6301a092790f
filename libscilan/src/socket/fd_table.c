/* fd_table.c — maps kernel fd numbers to scilan state (two-level array;
 * slots are reused, never freed, so a racing lookup can never touch freed
 * memory; the lock-free lookup is sl_sock_get, inline in sock_state.h), and
 * the table's side of fork.
 */
#include "socket/sock_state.h"
#include "conn/failover.h"
#include "conn/promotion.h"
#include "conn/promotion_trigger.h"
#include "evq/evq_dev.h"
#include "fabric/fabric.h"
#include "fabric/shm/seg_pool.h"

#include "fabric/shm/rendezvous.h"
#include "process/holders.h"
#include "runtime/own_fd.h"
#include "ring/segment.h"
#include "runtime/stats.h"
#include "runtime/stats_file.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK_BITS SL_FD_CHUNK_BITS
#define CHUNK_SIZE (1u << CHUNK_BITS)
#define CHUNKS SL_FD_CHUNKS

struct sl_sock *_Atomic *_Atomic sl_fd_chunks[SL_FD_CHUNKS];
/* Slots set aside by dup over them: a racing lookup may still read one, so
 * they are kept for sl_sock_new to reuse rather than freed. */
static struct sl_sock *spare[64];
static unsigned spares;
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;

#define reset_store(obj, value) atomic_store_explicit(obj, value, memory_order_relaxed)

static struct sl_sock *_Atomic *chunk_for(unsigned fd, bool create)
{
	struct sl_sock *_Atomic *chunk = atomic_load_explicit(&sl_fd_chunks[fd >> CHUNK_BITS], memory_order_acquire);
	struct sl_sock *_Atomic *expected = NULL;

	if (chunk || !create)
		return chunk;
	chunk = calloc(CHUNK_SIZE, sizeof(*chunk));
	if (!chunk)
		return NULL;
	if (!atomic_compare_exchange_strong(&sl_fd_chunks[fd >> CHUNK_BITS], &expected, chunk)) {
		free(chunk);
		chunk = expected;
	}
	return chunk;
}

struct sl_sock *sl_sock_new(int fd, int domain, enum sl_state state)
{
	struct sl_sock *_Atomic *chunk;
	struct sl_sock *s, *expected = NULL;

	if (fd < 0 || (unsigned)fd >= CHUNKS * CHUNK_SIZE)
		return NULL;
	chunk = chunk_for((unsigned)fd, true);
	if (!chunk)
		return NULL;
	s = atomic_load_explicit(&chunk[fd & (CHUNK_SIZE - 1)], memory_order_acquire);
	if (s && atomic_load(&s->fd_refs) > 1 && s->fd != fd) {
		/* The slot still names a dup'ed socket whose alias was closed
		 * behind our back: leave that socket alone. */
		atomic_fetch_sub(&s->fd_refs, 1);
		atomic_store(&chunk[fd & (CHUNK_SIZE - 1)], NULL);
		s = NULL;
	}
	if (!s) {
		pthread_mutex_lock(&spare_lock);
		if (spares) {
			s = spare[--spares];
			pthread_mutex_unlock(&spare_lock);
			if (!atomic_compare_exchange_strong(&chunk[fd & (CHUNK_SIZE - 1)], &expected, s)) {
				pthread_mutex_lock(&spare_lock);
				spare[spares++] = s;
				pthread_mutex_unlock(&spare_lock);
				s = expected;
			}
			goto reset;
		}
		pthread_mutex_unlock(&spare_lock);
		s = calloc(1, sizeof(*s));
		if (!s)
			return NULL;
		pthread_mutex_init(&s->ctl_lock, NULL);
		pthread_mutex_init(&s->lost_lock, NULL);
		pthread_mutex_init(&s->sleep_lock[0], NULL);
		pthread_mutex_init(&s->sleep_lock[1], NULL);
		if (!atomic_compare_exchange_strong(&chunk[fd & (CHUNK_SIZE - 1)], &expected, s)) {
			pthread_mutex_destroy(&s->ctl_lock);
			pthread_mutex_destroy(&s->lost_lock);
			pthread_mutex_destroy(&s->sleep_lock[0]);
			pthread_mutex_destroy(&s->sleep_lock[1]);
			free(s);
			s = expected;
		}
	}
reset:
	/* Reset everything but the lock, which may be held by nobody now.
	 * Relaxed: every reader takes ctl_lock or acquires the state stored
	 * last, and a fenced store each (some fifty) was a quarter of a
	 * microsecond of every socket a server made. */
	pthread_mutex_lock(&s->ctl_lock);
	s->fd = fd;
	reset_store(&s->fd_refs, 1);
	s->owner = sl_self_pid;
	s->domain = domain;
	reset_store(&s->poll_us, 0);
	reset_store(&s->spin_learn[0], 0);
	reset_store(&s->spin_learn[1], 0);
	reset_store(&s->tx_lock.owner, 0);
	reset_store(&s->rx_lock.owner, 0);
	reset_store(&s->sleepers[0], 0);
	reset_store(&s->sleepers[1], 0);
	s->fork_mark = 0;
	s->sends_since_check = 0;
	reset_store(&s->nonblock_hint, false);
	atomic_store(&s->nonblock_exact_at, 0); /* adopted (exec, SCM_RIGHTS): ask the kernel */
	sl_sock_forget_timeouts(s);
	s->ring_bytes = 0;
	s->sndbuf = 0;
	reset_store(&s->rcvlowat, 0);
	reset_store(&s->tcp_inq, -1);
	s->nodelay = false;
	reset_store(&s->evq_reach, 0);
	reset_store(&s->evq_refused, false);
	for (int i = 0; i < SL_MAX_REG; i++) {
		s->reg_fd[i] = -1;
		s->reg_flags[i] = NULL;
		if (s->reg_path)
			s->reg_path[i][0] = '\0';
		s->rdv_fd[i] = -1;
		s->rdv_gate[i] = NULL;
	}
	if (s->dev_listen)
		s->dev_listen->count = 0;
	s->defer_accept = 0;
	s->fastopen_connect = false;
	s->own_area = 0;
	sl_segment_unbind(s);
	s->state_to_peer = 0;
	s->memfd = -1;
	s->rdv_conn = -1;
	s->rdv_only = false;
	s->maybe_shared = false;
	s->born_fork = atomic_load(&sl_forks);
	s->offer_path[0] = '\0';
	reset_store(&s->agree, 0);
	s->agree_deadline_ns = 0;
	reset_store(&s->stall_since_ns, 0);
	reset_store(&s->stall_read, 0);
	reset_store(&s->stall_kernel, 0);
	reset_store(&s->stall_kernel_seen, false);
	reset_store(&s->shut_rd, false);
	reset_store(&s->shut_wr, false);
	reset_store(&s->peer_gone, false);
	reset_store(&s->pending_error, 0);
	reset_store(&s->error_noted, false);
	reset_store(&s->reset, false);
	reset_store(&s->sent_after_close, false);
	memset(&s->urg, 0, sizeof(s->urg));
	s->fabric = &sl_fabric_shm;
	s->bell_rx = s->bell_tx = -1;
	s->dev_map[0] = s->dev_map[1] = NULL;
	s->dev_slice = 0;
	reset_store(&s->dev_lost, false);
	/* A connection closed mid fail-over leaves these behind: the next
	 * socket on the slot must not be taken for one with a peer's header
	 * to strip. */
	reset_store(&s->fail_over_due, false);
	reset_store(&s->strip_pending, false);
	sl_fail_over_forget(s);
	s->dev_link = -1;
	s->dev_own_slice = s->dev_peer_slice = 0;
	s->dev_set_map[0] = s->dev_set_map[1] = NULL;
	reset_store(&s->dev_claims, 0);
	reset_store(&s->dev_set_member, false);
	for (int k = 0; k < 4; k++) {
		reset_store(&s->dev_reg[k], NULL);
		reset_store(&s->dev_wanted[k], 0);
	}
	reset_store(&s->late_offer, false);
	reset_store(&s->seam_pending, false);
	memset(&s->seam_rx, 0, sizeof(s->seam_rx));
	memset(&s->seam_point, 0, sizeof(s->seam_point));
	reset_store(&s->promote_role, 0);
	reset_store(&s->promote_at_ns, 0);
	reset_store(&s->promote_gap_ms, 0);
	reset_store(&s->promote_gate, 0);
	reset_store(&s->promote_no_room, false);
	reset_store(&s->promote_refusals, 0);
	reset_store(&s->promote_busy_ms, 0);
	reset_store(&s->promote_return, false);
	reset_store(&s->promote_untaken, 0);
	reset_store(&s->was_promoted, false);
	s->promote_listener = NULL;
	atomic_fetch_add(&s->listen_gen, 1); /* acceptors of the listener that lived here stop looking */
	reset_store(&s->counting_turns, false);
	reset_store(&s->sent_unanswered, false);
	reset_store(&s->turns, 0);
	memset(&s->policy_dst, 0, sizeof(s->policy_dst));
	memset(&s->known_local, 0, sizeof(s->known_local));
	memset(&s->known_peer, 0, sizeof(s->known_peer));
	s->policy_since_ns = 0;
	s->port_confined = false;
	s->own_port_range = false;
	atomic_store_explicit(&s->ctr, &s->own_ctr, memory_order_relaxed);
	s->stats_slot = -1;
	atomic_store_explicit(&s->stats_wanted, false, memory_order_relaxed);
	s->fb_reason = SL_FB_NONE;
	reset_store(&s->own_ctr.tx_bytes, 0);
	reset_store(&s->own_ctr.rx_bytes, 0);
	reset_store(&s->own_ctr.sleeps, 0);
	reset_store(&s->own_ctr.wakeups, 0);
	atomic_store_explicit(&s->state, (int)state, memory_order_release);
	pthread_mutex_unlock(&s->ctl_lock);
	return s;
}

void sl_sock_forget(struct sl_sock *s)
{
	atomic_store_explicit(&s->state, SL_UNUSED, memory_order_release);
}

int sl_sock_alias(int newfd, struct sl_sock *s)
{
	struct sl_sock *_Atomic *chunk;
	struct sl_sock *old;

	if (newfd < 0 || (unsigned)newfd >= CHUNKS * CHUNK_SIZE || !(chunk = chunk_for((unsigned)newfd, true)))
		return -1;
	atomic_fetch_add(&s->fd_refs, 1);
	old = atomic_exchange(&chunk[newfd & (CHUNK_SIZE - 1)], s);
	if (old && old != s) {
		pthread_mutex_lock(&spare_lock);
		if (spares < sizeof(spare) / sizeof(spare[0]))
			spare[spares++] = old; /* else leaked: never freed under a reader */
		pthread_mutex_unlock(&spare_lock);
	}
	return 0;
}

bool sl_sock_unalias(int fd, struct sl_sock *s)
{
	struct sl_sock *_Atomic *chunk = chunk_for((unsigned)fd, false);

	if (atomic_load(&s->fd_refs) <= 1 || !chunk)
		return false;
	atomic_store(&chunk[fd & (CHUNK_SIZE - 1)], NULL);
	atomic_fetch_sub(&s->fd_refs, 1);
	if (s->fd == fd) {
		/* Our own calls used this number: move them to another alias. */
		int alias_found = -1;

		for (unsigned c = 0; c < CHUNKS && alias_found < 0; c++) {
			struct sl_sock *_Atomic *ch = atomic_load_explicit(&sl_fd_chunks[c], memory_order_acquire);

			for (unsigned i = 0; ch && i < CHUNK_SIZE; i++)
				if (atomic_load(&ch[i]) == s && (int)(c * CHUNK_SIZE + i) != fd) {
					alias_found = (int)(c * CHUNK_SIZE + i);
					break;
				}
		}
		if (alias_found >= 0)
			s->fd = alias_found;
	}
	return true;
}

/* In a fork child, for every state we have (in use or not): the locks and
 * sleeper counts as if no thread used them.  A thread of the parent may
 * have been asleep in recv (holding a sleep lock), copying (a ring lock) or
 * in connect (ctl_lock); it does not exist here, and a close waiting for it
 * would never return. */
static void reset_in_child(struct sl_sock *s)
{
	sl_lock_reset(&s->tx_lock);
	sl_lock_reset(&s->rx_lock);
	pthread_mutex_init(&s->ctl_lock, NULL);
	pthread_mutex_init(&s->lost_lock, NULL);
	pthread_mutex_init(&s->sleep_lock[0], NULL);
	pthread_mutex_init(&s->sleep_lock[1], NULL);
	atomic_store(&s->sleepers[0], 0);
	atomic_store(&s->sleepers[1], 0);
	/* A try or a kernel call of a parent's thread does not exist here;
	 * and a socket two processes hold never moves (promotion_trigger.c:
	 * the other's calls are not counted here). */
	atomic_store(&s->promote_gate, 0);
	atomic_store(&s->kcalls, 0);
	sl_promote_forbid(s);
	/* The parent's device registrations are the parent's (the child's
	 * copies of its sets scan; evq_dev.c). */
	atomic_store(&s->dev_claims, 0);
	atomic_store(&s->dev_set_member, false);
	for (int k = 0; k < 4; k++) {
		atomic_store(&s->dev_reg[k], NULL);
		atomic_store(&s->dev_wanted[k], 0);
	}
}

/* At load, after self.c's (constructor priorities run in order), so before
 * any handler registered at run time (the hook's epoll sets', at a program's
 * first epoll_create): in the child the table is the child's, its locks
 * free, before a set's handler runs.  config.c registered them at the first
 * configuration, which a native program reaches at its first scilan call;
 * the hook configures at load, so its order is unchanged. */
__attribute__((constructor(102))) static void register_fork_handlers(void)
{
	pthread_atfork(sl_sock_count_fork, sl_sock_after_fork_parent, sl_sock_after_fork_child);
}

void sl_sock_after_fork_child(void)
{
	/* One thread now, with a new tid: no lock may stay biased to (or held
	 * by) a thread of the parent. */
	sl_lock_tid = 0;
	sl_self_pid = getpid();
	pthread_mutex_init(&spare_lock, NULL);
	sl_own_fd_fork_unlock(true);
	sl_rdv_fork_unlock(true);
	sl_reclaim_after_fork_child();
	sl_evq_dev_after_fork_child();
	for (unsigned i = 0; i < spares; i++)
		reset_in_child(spare[i]);
	for (unsigned c = 0; c < CHUNKS; c++) {
		struct sl_sock *_Atomic *chunk = atomic_load_explicit(&sl_fd_chunks[c], memory_order_acquire);

		for (unsigned i = 0; chunk && i < CHUNK_SIZE; i++) {
			struct sl_sock *s = atomic_load_explicit(&chunk[i], memory_order_acquire);

			if (s)
				reset_in_child(s);
		}
	}
	sl_holders_in_child();
	sl_seg_pool_after_fork_child();
	sl_stats_file_after_fork_child();
	sl_stats_reset_in_child();
}

bool sl_sock_any(bool (*fn)(struct sl_sock *s))
{
	for (unsigned c = 0; c < CHUNKS; c++) {
		struct sl_sock *_Atomic *chunk = atomic_load_explicit(&sl_fd_chunks[c], memory_order_acquire);

		for (unsigned i = 0; chunk && i < CHUNK_SIZE; i++) {
			struct sl_sock *s = atomic_load_explicit(&chunk[i], memory_order_acquire);

			if (s && sl_sock_state(s) != SL_UNUSED && fn(s))
				return true;
		}
	}
	return false;
}

bool sl_sock_any_fd(bool (*fn)(int fd, struct sl_sock *s))
{
	for (unsigned c = 0; c < CHUNKS; c++) {
		struct sl_sock *_Atomic *chunk = atomic_load_explicit(&sl_fd_chunks[c], memory_order_acquire);

		for (unsigned i = 0; chunk && i < CHUNK_SIZE; i++) {
			struct sl_sock *s = atomic_load_explicit(&chunk[i], memory_order_acquire);

			if (s && sl_sock_state(s) != SL_UNUSED && fn((int)(c * CHUNK_SIZE + i), s))
				return true;
		}
	}
	return false;
}

static bool settle_promoting(struct sl_sock *s)
{
	if (sl_sock_promoting(s))
		sl_promote_settle(s);
	return false;
}

void sl_sock_count_fork(void)
{
	/* A late offer out is decided first (revoked, or followed): the
	 * child's reads and ours could not both cross its seam. */
	sl_sock_any(settle_promoting);
	/* In the parent before fork, so that a parent that closes at once
	 * cannot close the connection under the child. */
	sl_holders_before_fork();
	/* Last, in the order evictions nest them: the child then inherits
	 * no list or table in the middle of an update. */
	sl_rdv_fork_lock();
	sl_own_fd_fork_lock();
	sl_seg_pool_before_fork();
	pthread_mutex_lock(&spare_lock);
}

void sl_sock_after_fork_parent(void)
{
	pthread_mutex_unlock(&spare_lock);
	sl_seg_pool_after_fork_parent();
	sl_own_fd_fork_unlock(false);
	sl_rdv_fork_unlock(false);
}
