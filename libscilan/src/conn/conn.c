/* conn.c — the state of an established connection as both ends see it:
 * readiness from ring indices and peer flags, the stimulate side of the sleep
 * protocol, and resets when the peer breaks the protocol or dies.
 */
#include "conn/conn.h"
#include "conn/promotion.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn/agree.h"
#include "conn/failover.h"
#include "evq/evq.h"
#include "fabric/fabric.h"
#include "runtime/log.h"
#include "runtime/stats_file.h"
#include "ring/segment.h"
#include "runtime/sys.h"
#include "ring/urgent.h"
#include "sync/fence_policy.h"

void sl_conn_reset(struct sl_sock *s, const char *why)
{
	if (atomic_exchange(&s->reset, true))
		return;
	if (why)
		sl_warn("fd %d: connection reset: %s", s->fd, why);
	sl_conn_note_error(s);
	if (s->peer_ctl) {
		pthread_mutex_lock(&s->ctl_lock);
		sl_segment_set_state(s, sl_conn_reset_bits(s));
		pthread_mutex_unlock(&s->ctl_lock);
		/* A locked operation: the reset state is visible before we read
		 * the peer's set registrations (a full fence on x86, and TSan
		 * understands it, where it refuses atomic_thread_fence). */
		atomic_fetch_or(&s->peer_ctl->peer_state, 0);
		sl_evq_notify(s, SL_DIR_DATA | SL_DIR_SPACE);
		s->fabric->stimulate(s, SL_TOKEN_DATA | SL_TOKEN_SPACE);
	}
	sl_conn_wake_local(s);
}

bool sl_conn_peer_died(struct sl_sock *s)
{
	uint32_t ps = atomic_load_explicit(&s->own_ctl->peer_state, memory_order_acquire);

	if ((ps & SL_PEER_RESET) || atomic_load(&s->sent_after_close))
		return true;
	return atomic_load(&s->peer_gone) && !(ps & SL_PEER_CLOSED);
}

bool sl_conn_fin_first(struct sl_sock *s)
{
	return atomic_load(&s->sent_after_close) ||
	       (atomic_load_explicit(&s->own_ctl->peer_state, memory_order_acquire) & SL_PEER_RESET_AFTER_FIN);
}

uint32_t sl_conn_reset_bits(const struct sl_sock *s)
{
	/* A FIN sent earlier (by any process of our side) reached the peer
	 * before this reset. */
	uint32_t sent = s->state_to_peer | atomic_load_explicit(&s->peer_ctl->peer_state, memory_order_relaxed);

	return SL_PEER_RESET | SL_PEER_CLOSED | SL_PEER_SHUT_WR | ((sent & SL_PEER_SHUT_WR) ? SL_PEER_RESET_AFTER_FIN : 0);
}

bool sl_conn_unread(struct sl_sock *s)
{
	int64_t avail;

	sl_lock(&s->rx_lock);
	avail = sl_rx_waiting(s);
	sl_unlock(&s->rx_lock);
	return avail > 0;
}

/* SO_LINGER {1, 0}.  The option lives on the kernel socket (shared by fork,
 * exec and SCM_RIGHTS), so it is asked there. */
static bool linger_abort(const struct sl_sock *s)
{
	struct linger l;
	socklen_t len = sizeof(l);

	return sl_sys.getsockopt(s->fd, SOL_SOCKET, SO_LINGER, &l, &len) == 0 && l.l_onoff && l.l_linger == 0;
}

uint32_t sl_conn_close_bits(struct sl_sock *s, bool unread)
{
	sl_urg_drain_kernel(s);
	return unread || linger_abort(s) ? sl_conn_reset_bits(s) : SL_PEER_SHUT_WR | SL_PEER_CLOSED;
}

void sl_conn_note_error(struct sl_sock *s)
{
	if (!atomic_exchange(&s->error_noted, true))
		atomic_store(&s->pending_error, sl_conn_fin_first(s) ? EPIPE : ECONNRESET);
}

uint64_t sl_conn_rcv_mark(struct sl_sock *s)
{
	int lowat = atomic_load_explicit(&s->rcvlowat, memory_order_relaxed);
	socklen_t len = sizeof(lowat);
	uint64_t bound, room;

	if (lowat == 0) {
		if (sl_sys.getsockopt(s->fd, SOL_SOCKET, SO_RCVLOWAT, &lowat, &len) < 0 || lowat < 1)
			lowat = 1;
		atomic_store_explicit(&s->rcvlowat, lowat, memory_order_relaxed);
	}
	if (lowat == 1 || !s->seg)
		return 1;
	/* The peer's word: a hostile value only makes us readable sooner. */
	bound = s->rx.cap;
	room = atomic_load_explicit(s->rx.sender_room, memory_order_relaxed);
	if (room && room < bound)
		bound = room;
	return (uint64_t)lowat < bound ? (uint64_t)lowat : bound;
}

short sl_conn_ready(struct sl_sock *s, short events)
{
	short rev = 0, urg = 0;
	uint32_t ps;
	int64_t avail, readable, space;
	bool peer_fin, shut_wr;

	/* Promoted, the peer's kernel bytes still before its switch point
	 * (promotion.c): the reading side is the kernel's (-1: not any more). */
	short seam_in = atomic_load_explicit(&s->seam_pending, memory_order_acquire) ? sl_promote_ready(s, events) : -1;

	/* Our offer out and undecided, or the peer's bytes on the kernel
	 * socket: a poll or epoll wait is where a program that never calls
	 * recv learns that the connection is kernel TCP now. */
	if (sl_agree_plain(s, SL_AGREE_POLL)) {
		short kernel;

		if (atomic_load(&s->strip_pending))
			return sl_fail_over_ready(s, events);
		kernel = sl_agree_kernel_ready(s, events);
		/* The seam still pending (a late offer out, or moved back before
		 * it was crossed): the reading side is the seam's, as below, not
		 * the kernel's, which counts the acceptor's marker readable. */
		if (seam_in >= 0 && !atomic_load(&s->shut_rd))
			kernel = (short)((kernel & ~(POLLIN | POLLRDNORM | POLLRDHUP)) | (seam_in & (events | POLLHUP | POLLERR)));
		return kernel;
	}
	shut_wr = atomic_load(&s->shut_wr);
	if (atomic_load(&s->reset))
		return (short)((events & (POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM | POLLRDHUP)) | POLLHUP |
			       (atomic_load(&s->pending_error) ? POLLERR : 0));
	/* State before indices: data written before the peer's FIN is then visible. */
	ps = atomic_load_explicit(&s->own_ctl->peer_state, memory_order_acquire);
	sl_lock(&s->rx_lock);
	avail = readable = sl_rx_waiting(s);
	if (avail > 0)
		urg = sl_urg_ready(s, &readable);
	sl_unlock(&s->rx_lock);
	if (avail < 0) {
		sl_conn_reset(s, "peer wrote an impossible write index");
		return sl_conn_ready(s, events);
	}
	if (sl_conn_peer_died(s)) {
		/* POLLERR only while the error is pending: once a recv, send or
		 * SO_ERROR took it, the kernel shows IN|OUT|HUP|RDHUP.  Data still
		 * in the ring does not hide the reset (tcp_poll). */
		sl_conn_note_error(s);
		return (short)((events & (POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM | POLLRDHUP | urg)) | POLLHUP |
			       (atomic_load(&s->pending_error) ? POLLERR : 0));
	}
	rev |= urg;
	peer_fin = (ps & (SL_PEER_SHUT_WR | SL_PEER_CLOSED)) || atomic_load(&s->peer_gone);
	if ((readable > 0 && (uint64_t)readable >= sl_conn_rcv_mark(s)) || peer_fin || atomic_load(&s->shut_rd))
		rev |= POLLIN | POLLRDNORM;
	if (peer_fin || atomic_load(&s->shut_rd)) /* tcp_poll: any RCV_SHUTDOWN */
		rev |= POLLRDHUP;
	if (shut_wr || (ps & SL_PEER_CLOSED) || atomic_load(&s->peer_gone)) {
		rev |= POLLOUT | POLLWRNORM;
	} else if (events & (POLLOUT | POLLWRNORM)) {
		/* Room only when asked (it is masked off otherwise): a reader's
		 * wait takes no tx lock.  A bad read index is then found by the
		 * next send, or the next wait for room. */
		sl_lock(&s->tx_lock);
		space = sl_tx_room(s, s->tx.room / 4);
		sl_unlock(&s->tx_lock);
		if (space < 0) {
			sl_conn_reset(s, "peer published an impossible read index");
			return sl_conn_ready(s, events);
		}
		/* Like the kernel's minimum write space: no POLLOUT for a sliver. */
		if ((uint64_t)space >= s->tx.room / 4)
			rev |= POLLOUT | POLLWRNORM;
	}
	if ((peer_fin || atomic_load(&s->shut_rd)) && shut_wr)
		rev |= POLLHUP;
	/* Shut down for reading: the end, whatever the seam holds (tcp_poll). */
	if (seam_in >= 0 && !atomic_load(&s->shut_rd))
		rev = (short)((rev & ~(POLLIN | POLLRDNORM | POLLRDHUP)) | seam_in);
	return (short)(rev & (events | POLLHUP | POLLERR));
}

void sl_conn_wake_local(struct sl_sock *s)
{
	/* Only for sleepers of this process.  The bell is shared with the
	 * processes we forked (or that forked us): a wake-up rung when none of
	 * our threads sleeps on s is drained by theirs, whose waits it does not
	 * end, and two of their sleepers (a reader and a writer) pass it to
	 * each other forever.  Our own sleepers count themselves before they
	 * look at the state our caller just changed (shut, reset: stored before
	 * the full fence that sl_evq_notify_local begins with), so skipping
	 * loses no wake-up; a poller that could not take a direction (another
	 * thread held it) sleeps at most 10 ms. */
	sl_evq_notify_local(s);
	if (!atomic_load(&s->sleepers[0]) && !atomic_load(&s->sleepers[1]))
		return;
	s->fabric->ring_self(s, SL_TOKEN_LOCAL);
}

/* Reviews (of SENDS_PER_LIVENESS_CHECK sends each, io.c) a connection
 * that kept flipping must find quiet in a row: at most 64, some 16k sends. */
#define FENCE_QUIET_MAX 64

/* The peer waits for our data: it sleeps, and while we publish unfenced
 * each of its sleeps costs a membarrier, an IPI to every CPU that runs a
 * scilan process.  Fenced from now on, and the flag taken back, until a
 * fence review finds the peer quiet.  Safe without a word from the peer
 * (tests/model, -DSWITCH): the flag's clear is stored after every index we
 * published unfenced (x86 stores become visible in order), so a sleeper that
 * reads it clear sees those indices in its re-check, and every later publish
 * fences.  Only the process that set the flag (fence_owner) ever publishes
 * unfenced: a fork child, a receiver of the socket and an exec'd image
 * publish fenced. */
static void peer_waited_for_data(struct sl_sock *s)
{
	atomic_store_explicit(&s->peer_waited_lately, true, memory_order_relaxed);
	if (!atomic_load_explicit(&s->peer_waited, memory_order_relaxed) && !atomic_exchange(&s->peer_waited, true))
		sl_fence_note(true);
	/* Our own word as the peer reads it: taking the locks only to switch. */
	if (!s->fence_owner ||
	    !(atomic_load_explicit(&s->peer_ctl->peer_state, memory_order_relaxed) & SL_PEER_UNFENCED))
		return;
	sl_lock(&s->tx_lock);
	pthread_mutex_lock(&s->ctl_lock);
	if (s->tx.unfenced) {
		s->tx.unfenced = false;
		sl_segment_clear_state(s, SL_PEER_UNFENCED);
		/* A review's unfencing that did not last: the next one waits
		 * twice as long (a peer whose waits we seldom see, one that
		 * finds our reply as it arms, would make us flip every review). */
		if (s->unfenced_by_review && s->fence_quiet_needed < FENCE_QUIET_MAX)
			s->fence_quiet_needed = s->fence_quiet_needed ? 2 * s->fence_quiet_needed : 2;
		s->unfenced_by_review = false;
	}
	pthread_mutex_unlock(&s->ctl_lock);
	sl_unlock(&s->tx_lock);
}

void sl_conn_fence_review_locked(struct sl_sock *s)
{
	uint32_t arms;
	bool waited;

	if (s->tx.unfenced || !s->fence_owner)
		return;
	/* A wait we saw, or an arm we did not: a peer whose re-check after
	 * arming finds our data never sleeps, and we never see its arm, but
	 * unfenced it would pay a membarrier at every one. */
	arms = atomic_load_explicit(&s->own_ctl->data_arms, memory_order_relaxed);
	waited = atomic_exchange_explicit(&s->peer_waited_lately, false, memory_order_relaxed) ||
		 arms != s->data_arms_seen;
	s->data_arms_seen = arms;
	if (waited) {
		s->fence_quiet = 0;
		return;
	}
	if (++s->fence_quiet < (s->fence_quiet_needed ? s->fence_quiet_needed : 1))
		return;
	s->fence_quiet = 0;
	s->unfenced_by_review = true;
	/* The flag first, then one full fence, then plain stores: a sleeper
	 * that read the flag clear (and skipped its membarrier) armed before
	 * the flag was visible, so our next look at its arm word sees it
	 * (tests/model, -DSWITCH; without the fence a wake-up is lost). */
	pthread_mutex_lock(&s->ctl_lock);
	sl_segment_set_state(s, SL_PEER_UNFENCED);
	atomic_thread_fence(memory_order_seq_cst);
	s->tx.unfenced = true;
	pthread_mutex_unlock(&s->ctl_lock);
}

void sl_conn_look_for_data_waiters(struct sl_sock *s, bool fenced)
{
	bool waited;

	if (!fenced)
		atomic_thread_fence(memory_order_seq_cst);
	waited = sl_evq_notify(s, SL_DIR_DATA);

	if (atomic_load_explicit(&s->own_ctl->wake_on_data, memory_order_relaxed) &&
	    atomic_exchange(&s->own_ctl->wake_on_data, 0)) {
		s->fabric->stimulate(s, SL_TOKEN_DATA);
		waited = true;
	}
	if (waited)
		peer_waited_for_data(s);
}

bool sl_conn_peer_wants_room(struct sl_sock *s, bool published_for_room)
{
	if (!published_for_room)
		sl_ring_rx_publish(&s->rx);
	atomic_thread_fence(memory_order_seq_cst);
	sl_evq_notify(s, SL_DIR_SPACE);
	return atomic_load_explicit(&s->own_ctl->wake_on_space, memory_order_relaxed) &&
	       atomic_exchange(&s->own_ctl->wake_on_space, 0);
}

void sl_conn_wake_peer(struct sl_sock *s)
{
	int tokens = 0;

	atomic_thread_fence(memory_order_seq_cst);
	sl_evq_notify(s, SL_DIR_DATA | SL_DIR_SPACE);
	if (atomic_exchange(&s->own_ctl->wake_on_data, 0))
		tokens |= SL_TOKEN_DATA;
	if (atomic_exchange(&s->own_ctl->wake_on_space, 0))
		tokens |= SL_TOKEN_SPACE;
	if (tokens)
		s->fabric->stimulate(s, tokens);
}

bool sl_conn_kernel_ended(struct sl_sock *s)
{
	char b;
	ssize_t n;

	/* Not the carriers of the peer's urgent sends' SIGURG. */
	sl_urg_drop_carriers(s);
	do
		n = sl_sys.recv(s->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n > 0) {
		sl_agree_stir(s);
		return false;
	}
	return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
}

bool sl_conn_check_peer(struct sl_sock *s)
{
	/* While our offer is out the kernel socket may carry a plain
	 * acceptor's bytes, which only the fall-back may read; once it is
	 * kernel TCP, its pending error is the application's. */
	if (atomic_load(&s->peer_gone) || !sl_agree_on_rings(s))
		return false;
	if (!s->fabric->peer_gone(s))
		return false;
	atomic_store(&s->peer_gone, true);
	return true;
}

bool sl_conn_kernel_woke(struct sl_sock *s)
{
	/* Our offer is out: a plain acceptor spoke or closed, or the kernel
	 * reset the connection (its listener closed with it queued); the
	 * agreement reads which at the next look (agree.c). */
	if (sl_agree_pending(s)) {
		sl_agree_stir(s);
		return false;
	}
	return sl_conn_check_peer(s);
}

/* Did every signal handler ask for SA_RESTART?  We cannot tell which signal
 * interrupted poll(2), so restart only if any of them would have. */
bool sl_conn_signals_restart(void)
{
	struct sigaction sa;

	for (int sig = 1; sig < NSIG; sig++) {
		/* Faults are synchronous: they cannot interrupt a poll(2). */
		if (sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE ||
		    sig == SIGILL || sig == SIGTRAP || sig == SIGSYS || sigaction(sig, NULL, &sa) < 0)
			continue;
		if (!(sa.sa_flags & SA_SIGINFO) && (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN))
			continue;
		if (!(sa.sa_flags & SA_RESTART))
			return false;
	}
	return true;
}

int sl_conn_timeout_ms(struct sl_sock *s, short events)
{
	struct timeval tv;
	socklen_t len = sizeof(tv);
	int dir = (events & POLLOUT) ? 1 : 0, opt = dir ? SO_SNDTIMEO : SO_RCVTIMEO, ms;

	/* The kernel keeps SO_RCVTIMEO/SO_SNDTIMEO for us; asked when we block,
	 * unless what it said last is still exact: every setsockopt of this
	 * process goes through the hook (sl_nonblock_changes_seen), none
	 * since, no fork since, and no other process holds the socket (as the
	 * O_NONBLOCK hint, conn_spin.c).  A sleep in interrupt mode then costs
	 * no getsockopt. */
	if (sl_sock_still_exact(s, atomic_load_explicit(&s->timeo_exact_at[dir], memory_order_acquire)))
		return atomic_load_explicit(&s->timeo_ms[dir], memory_order_relaxed);
	if (sl_sys.getsockopt(s->fd, SOL_SOCKET, opt, &tv, &len) < 0)
		return -1;
	if (tv.tv_sec == 0 && tv.tv_usec == 0)
		ms = -1;
	else if (tv.tv_sec >= INT_MAX / 1000 - 1)
		ms = INT_MAX; /* ~24 days: as good as forever, and no overflow */
	else
		ms = (int)(tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000);
	atomic_store_explicit(&s->timeo_ms[dir], ms, memory_order_relaxed);
	atomic_store_explicit(&s->timeo_exact_at[dir], sl_sock_exact_stamp(s), memory_order_release);
	return ms;
}

void sl_conn_became_connected(struct sl_sock *s)
{
	int one = 1;

	sl_sys.setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	sl_stats_conn_open(s);
	atomic_store_explicit(&s->state, (int)SL_CONNECTED, memory_order_release);
	atomic_fetch_add_explicit(&sl_totals.accelerated, 1, memory_order_relaxed);
	sl_debug("fd %d: connected over the %s fabric", s->fd, s->fabric->name);
}
