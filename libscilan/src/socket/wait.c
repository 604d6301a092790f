/* wait.c — the sleep side of the interrupt-flag protocol, for one socket
 * (sl_wait) or many (scilan_poll: a wait is a poll of one entry):
 * spin for the socket's poll time (forced, or learnt: spin_policy.c), then
 * arm the peer-visible wake words, flush, re-check, and sleep in the kernel
 * on the bell and the kernel socket.
 * Within a process one thread at a time sleeps per socket and direction
 * (data, space); tokens drained for another direction are passed on.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sync/clock.h"
#include "conn/agree.h"
#include "conn/stall.h"
#include "sync/barrier.h"
#include "conn/conn.h"
#include "conn/failover.h"
#include "fabric/fabric.h"
#include "runtime/log.h"
#include "scilan.h"
#include "socket/idle.h"
#include "sync/spin.h"
#include "sync/spin_policy.h"
#include "runtime/sys.h"
#include "socket/wait.h"

#define STACK_FDS 32
/* A direction another thread sleeps on is watched without being armed; its
 * token may be consumed by that thread first, so such sleeps are bounded. */
#define SHARED_WAIT_CAP_MS 10
/* How often a spin asks the kernel about the call's kernel descriptors. */
#define SPIN_KERNEL_NS 20000

static int dirs_of(short events)
{
	return ((events & (POLLIN | POLLRDNORM | POLLRDHUP | POLLPRI)) ? SL_DIR_DATA : 0) |
	       ((events & (POLLOUT | POLLWRNORM)) ? SL_DIR_SPACE : 0);
}

/* Become the sleeper of s for the given directions: blocking until deadline
 * (a recv or send of this thread; -1 = no deadline) or trying (scilan_poll,
 * block false).  Returns the directions held. */
static int hold(struct sl_sock *s, int dirs, bool block, int64_t deadline)
{
	struct timespec until;
	int held = 0;

	for (int d = 0; d < 2; d++) {
		if (!(dirs & (1 << d)))
			continue;
		if (block && deadline < 0) {
			pthread_mutex_lock(&s->sleep_lock[d]);
		} else if (block) {
			/* SO_RCVTIMEO/SO_SNDTIMEO also bound the wait for our turn. */
			int64_t realtime = deadline - sl_mono_ns() + sl_clock_ns(CLOCK_REALTIME);

			until.tv_sec = realtime / 1000000000;
			until.tv_nsec = realtime % 1000000000;
			if (pthread_mutex_timedlock(&s->sleep_lock[d], &until) != 0)
				continue;
		} else if (pthread_mutex_trylock(&s->sleep_lock[d]) != 0) {
			continue;
		}
		atomic_fetch_add(&s->sleepers[d], 1);
		held |= 1 << d;
	}
	return held;
}

static void unhold(struct sl_sock *s, int held)
{
	for (int d = 0; d < 2; d++) {
		if (!(held & (1 << d)))
			continue;
		atomic_fetch_sub(&s->sleepers[d], 1);
		pthread_mutex_unlock(&s->sleep_lock[d]);
	}
}

/* revents of every accelerated entry; kernel entries are left alone. */
static int scan(struct pollfd *fds, nfds_t n, struct sl_sock **socks)
{
	int ready = 0;

	for (nfds_t i = 0; i < n; i++) {
		if (!socks[i])
			continue;
		fds[i].revents = sl_conn_ready(socks[i], fds[i].events);
		ready += fds[i].revents != 0;
	}
	return ready;
}

/* Tokens drained here that another of our threads sleeps for go back into
 * the bell, or that thread could sleep past its wake-up. */
static void pass_on(struct sl_sock *s, int tokens, int held)
{
	const struct sl_fabric_ops *fabric = s->fabric;
	int others = atomic_load(&s->sleepers[0]) + atomic_load(&s->sleepers[1]) - __builtin_popcount(held);

	if ((tokens & SL_TOKEN_DATA) && !(held & SL_DIR_DATA) && atomic_load(&s->sleepers[0]) > 0)
		fabric->ring_self(s, SL_TOKEN_DATA);
	if ((tokens & SL_TOKEN_SPACE) && !(held & SL_DIR_SPACE) && atomic_load(&s->sleepers[1]) > 0)
		fabric->ring_self(s, SL_TOKEN_SPACE);
	if ((tokens & SL_TOKEN_LOCAL) && others > 0)
		fabric->ring_self(s, SL_TOKEN_LOCAL);
}

/* Steps 2-3 of the sleep protocol for the directions we hold: drain stale
 * wake-ups, give the sender our read index, then ask the peer to wake us. */
static void arm(struct sl_sock *s, int held)
{
	const struct sl_fabric_ops *fabric = s->fabric;

	pass_on(s, fabric->drain(s), held);
	pthread_mutex_lock(&s->ctl_lock);
	fabric->offer_settle(s);
	pthread_mutex_unlock(&s->ctl_lock);
	if (held & SL_DIR_DATA) {
		sl_lock(&s->rx_lock);
		sl_ring_rx_publish(&s->rx);
		sl_unlock(&s->rx_lock);
		atomic_store_explicit(&s->peer_ctl->wake_on_data, 1, memory_order_relaxed);
		/* Counted here, only written there: on NTB a read of the
		 * peer's area crosses the link. */
		atomic_store_explicit(&s->peer_ctl->data_arms,
				      atomic_fetch_add_explicit(&s->data_arms, 1, memory_order_relaxed) + 1,
				      memory_order_relaxed);
	}
	if (held & SL_DIR_SPACE)
		atomic_store_explicit(&s->peer_ctl->wake_on_space, 1, memory_order_relaxed);
}

static void disarm(struct sl_sock *s, int held)
{
	if (held & SL_DIR_DATA)
		atomic_store_explicit(&s->peer_ctl->wake_on_data, 0, memory_order_relaxed);
	if (held & SL_DIR_SPACE)
		atomic_store_explicit(&s->peer_ctl->wake_on_space, 0, memory_order_relaxed);
}

/* The signal mask a ppoll/pselect/epoll_pwait caller asked to sleep with:
 * every kernel wait of this call is a ppoll under it, so a signal the mask
 * lets in wakes the sleep as atomically as the kernel's own call would. */
static __thread const sigset_t *wait_sigmask;

int sl_poll_kernel(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask)
{
	struct timespec ts;

	if (!mask)
		return sl_sys.poll(fds, n, timeout_ms);
	ts.tv_sec = timeout_ms / 1000;
	ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000;
	return sl_sys.ppoll(fds, n, timeout_ms < 0 ? NULL : &ts, mask);
}

static int kernel_wait(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	return sl_poll_kernel(fds, n, timeout_ms, wait_sigmask);
}

static int remaining_ms(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - sl_mono_ns();
	if (left <= 0)
		return 0;
	return (int)((left + 999999) / 1000000);
}

/* What to ask of an accelerated entry's kernel socket.  Its bytes are news
 * (an end, a plain acceptor's answer, a bypass) except while a promotion's
 * seam is pending: then they are the peer's bytes before its switch point,
 * readable to a reader (the scan says so) but not a wake-up for a writer,
 * which would find them there at every sleep and spin, starving the very
 * kernel TCP that must deliver the peer's side of the seam (an echo server
 * blocked on a full ring while its peer's bytes wait unread).  The end and
 * errors still wake it. */
static short kernel_events(struct sl_sock *s, short asked)
{
	if (!(asked & (POLLIN | POLLRDNORM)) && atomic_load_explicit(&s->seam_pending, memory_order_acquire))
		return POLLRDHUP;
	return POLLIN;
}

/* One kernel poll: bells and kernel sockets of accelerated entries, the
 * application's own descriptors as given.  Returns the ready kernel entries;
 * *stirred (if given) is set when an entry whose offer is out saw its kernel
 * socket wake: a scan made before this poll no longer tells its state. */
static int kernel_poll(struct pollfd *fds, nfds_t n, struct sl_sock **socks, struct pollfd *kfds, int timeout_ms,
		       bool sleeping, bool *stirred)
{
	nfds_t m = 0;
	int r, ready = 0;

	for (nfds_t i = 0; i < n; i++) {
		if (!socks[i]) {
			kfds[m++] = fds[i];
			continue;
		}
		kfds[m++] = (struct pollfd){ .fd = sleeping ? socks[i]->bell_rx : -1, .events = POLLIN };
		kfds[m++] = (struct pollfd){ .fd = socks[i]->fd, .events = kernel_events(socks[i], fds[i].events) };
		if (sleeping) {
			atomic_fetch_add_explicit(&sl_ctr(socks[i])->sleeps, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&sl_totals.sleeps, 1, memory_order_relaxed);
		}
	}
	r = kernel_wait(kfds, m, timeout_ms);
	if (r < 0)
		return -1;
	m = 0;
	for (nfds_t i = 0; i < n; i++) {
		if (!socks[i]) {
			fds[i].revents = kfds[m++].revents;
			ready += fds[i].revents != 0;
			continue;
		}
		if (kfds[m].revents) {
			atomic_fetch_add_explicit(&sl_ctr(socks[i])->wakeups, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&sl_totals.wakeups, 1, memory_order_relaxed);
		}
		/* The kernel connection only becomes readable at the end: the
		 * peer closed it or its process died; or, our offer out, a
		 * plain acceptor spoke or closed, or the kernel reset it (its
		 * listener closed with it queued), which the scan decides
		 * (agree.c).  A device endpoint's POLLHUP/POLLERR (peer closed,
		 * link down) stays set: it must end the wait, not make it spin. */
		if (kfds[m + 1].revents || (kfds[m].revents & (POLLHUP | POLLERR))) {
			if (stirred && sl_agree_pending(socks[i]))
				*stirred = true;
			sl_conn_kernel_woke(socks[i]);
		}
		m += 2;
	}
	return ready;
}

/* A peer that publishes unfenced (barrier.h) needs our membarrier before the
 * re-check, when we sleep for its data. */
static bool need_remote_barrier(struct sl_sock **socks, nfds_t n, const int *held)
{
	for (nfds_t i = 0; i < n; i++)
		if (socks[i] && (held[i] & SL_DIR_DATA) &&
		    (atomic_load_explicit(&socks[i]->own_ctl->peer_state, memory_order_relaxed) & SL_PEER_UNFENCED))
			return true;
	return false;
}

static void warn_barrier_once(void)
{
	static _Atomic bool warned;

	if (!atomic_exchange(&warned, true))
		sl_warn("membarrier failed (%s): sleeps for data are capped at %d ms", strerror(errno),
			SHARED_WAIT_CAP_MS);
}

/* A connection of the set moved to kernel TCP (agree.c): the caller must
 * wait for it as for any kernel socket. */
static bool any_fell_back(struct sl_sock **socks, nfds_t n)
{
	for (nfds_t i = 0; i < n; i++)
		if (socks[i] && sl_fell_back(socks[i]))
			return true;
	return false;
}

/* Steps 2-5 for every accelerated entry, until something is ready.  held[i]
 * is what the caller already holds for entry i, or NULL to try per round. */
static int sleep_until_ready(struct pollfd *fds, nfds_t n, struct sl_sock **socks, struct pollfd *kfds,
			     int64_t deadline, const int *held_by_caller)
{
	int held[STACK_FDS], *h = held, ready, kready, timeout;

	if (!held_by_caller && n > STACK_FDS && !(h = calloc(n, sizeof(*h)))) {
		errno = ENOMEM;
		return -1;
	}
	for (;;) {
		bool capped = false, stall = false;
		int chores_ms = sl_about_to_sleep();

		for (nfds_t i = 0; i < n; i++) {
			if (!socks[i])
				continue;
			if (held_by_caller)
				h[i] = held_by_caller[i];
			else
				h[i] = hold(socks[i], dirs_of(fds[i].events), false, -1);
			/* Shared with a forked process, whose sleeper may drain
			 * a wake-up meant for ours: never sleep long. */
			capped |= h[i] != dirs_of(fds[i].events) || sl_side_shared(socks[i]);
			/* Our offer out: a refusal or the deadline must be seen. */
			capped |= sl_agree_pending(socks[i]);
			/* Our bytes unread in its ring: the peer's progress must be
			 * seen (stall.c). */
			stall |= sl_stall_watch(socks[i]);
			arm(socks[i], h[i]);
		}
		for (nfds_t i = 0; i < n; i++)
			if (socks[i])
				socks[i]->fabric->flush_remote(socks[i]);
		if (need_remote_barrier(socks, n, h) && sl_barrier_remote() < 0) {
			/* Cannot order the peer's unfenced stores: never sleep long. */
			warn_barrier_once();
			capped = true;
		}
		ready = scan(fds, n, socks);
		kready = 0;
		if (!ready) {
			timeout = remaining_ms(deadline);
			if (capped && (timeout < 0 || timeout > SHARED_WAIT_CAP_MS))
				timeout = SHARED_WAIT_CAP_MS;
			if (stall && (timeout < 0 || timeout > SL_STALL_CHECK_MS))
				timeout = SL_STALL_CHECK_MS;
			if (chores_ms >= 0 && (timeout < 0 || timeout > chores_ms))
				timeout = chores_ms;
			kready = kernel_poll(fds, n, socks, kfds, timeout, true, NULL);
		}
		for (nfds_t i = 0; i < n; i++) {
			if (!socks[i])
				continue;
			disarm(socks[i], h[i]);
			if (!held_by_caller)
				unhold(socks[i], h[i]);
		}
		/* A peer that took nothing of ours for the bound while we waited:
		 * kernel TCP from here (the caller redoes its call there). */
		for (nfds_t i = 0; i < n && !ready && kready == 0; i++)
			if (socks[i] && sl_stall_note(socks[i], sl_mono_ns()))
				sl_stall_move(socks[i]);
		if (kready < 0)
			break;
		ready = scan(fds, n, socks) + kready;
		if (ready || remaining_ms(deadline) == 0 || any_fell_back(socks, n))
			break;
	}
	if (h != held && !held_by_caller)
		free(h);
	return kready < 0 ? -1 : ready;
}

/* The learnt spin of a poll set with a single accelerated connection is that
 * connection's, per direction; a larger set (an event loop) learns per
 * thread, since its waits end with whichever connection speaks first. */
static __thread _Atomic uint64_t set_spin_learn;

/* How long to spin for this set, in ns: the longest forced poll time, or
 * the learnt budget if a socket of it is adaptive (*learn says where). */
static int64_t spin_budget(struct pollfd *fds, nfds_t n, struct sl_sock **socks, int64_t now,
			   _Atomic uint64_t **learn, uint32_t *learnt, bool *yield)
{
	int64_t forced = 0;
	nfds_t adaptive = 0, one = 0;

	for (nfds_t i = 0; i < n; i++) {
		int us = socks[i] ? atomic_load(&socks[i]->poll_us) : 0;

		if (us == SL_POLL_ADAPTIVE && adaptive++ == 0)
			one = i;
		else if (us > 0 && (int64_t)us * 1000 > forced)
			forced = (int64_t)us * 1000;
	}
	*learn = NULL;
	*learnt = 0;
	*yield = false;
	if (adaptive == 0)
		return forced;
	if (adaptive == 1)
		*learn = &socks[one]->spin_learn[(dirs_of(fds[one].events) & SL_DIR_DATA) ? 0 : 1];
	else
		*learn = &set_spin_learn;
	*learnt = sl_spin_budget(*learn, now, yield);
	return *learnt > forced ? *learnt : forced;
}

static int poll_accelerated(struct pollfd *fds, nfds_t n, int timeout_ms, struct sl_sock **socks,
			    struct pollfd *kfds, bool spin, const int *held_by_caller)
{
	int64_t start = sl_mono_ns(), deadline = timeout_ms < 0 ? -1 : start + (int64_t)timeout_ms * 1000000;
	int64_t spin_end, spin_ns = 0, next_kernel;
	bool has_kernel = false;
	_Atomic uint64_t *learn = NULL;
	uint32_t learnt = 0;
	bool yield = false, stirred = false;
	int ready;

	for (nfds_t i = 0; i < n; i++) {
		fds[i].revents = 0;
		has_kernel |= !socks[i] && fds[i].fd >= 0;
	}
	ready = scan(fds, n, socks);
	if (ready || timeout_ms == 0) {
		/* Not sleeping, so look at the kernel sockets here: an event loop
		 * that never blocks must still learn that a peer died, or that
		 * the connection it offered is kernel TCP now (a reset shows as
		 * the kernel shows it, not as the ring's room). */
		int kready = kernel_poll(fds, n, socks, kfds, 0, false, &stirred);

		return kready < 0 ? -1 : (ready && !stirred ? ready : scan(fds, n, socks)) + kready;
	}
	/* A wait that would block: the time for the set-up work kept off the
	 * connect path (idle.c). */
	sl_about_to_wait();
	/* Decided only for a wait that would block, so instant answers do
	 * not count as waits the spin caught. */
	if (spin)
		spin_ns = spin_budget(fds, n, socks, start, &learn, &learnt, &yield);
	spin_end = start + spin_ns;
	if (deadline >= 0 && deadline < spin_end)
		spin_end = deadline;
	next_kernel = start + SPIN_KERNEL_NS;
	for (unsigned iter = 1; spin_ns > 0; iter++) {
		int64_t now;

		ready = scan(fds, n, socks);
		if (ready) {
			int kready = kernel_poll(fds, n, socks, kfds, 0, false, &stirred);

			if (learn && learnt)
				sl_spin_note(learn, learnt, true, sl_mono_ns() - start);
			return kready < 0 ? -1 : (stirred ? scan(fds, n, socks) : ready) + kready;
		}
		if (!sl_spin_turn(iter, yield))
			continue;
		now = sl_mono_ns();
		if (now >= spin_end)
			break;
		/* The set's kernel entries (a listener, a pipe) and the kernel
		 * sockets (a peer's end) are asked now and then: a forced spin of
		 * seconds must not keep them waiting. */
		if (now >= next_kernel && has_kernel) {
			int kready = kernel_poll(fds, n, socks, kfds, 0, false, &stirred);

			next_kernel = now + SPIN_KERNEL_NS;
			if (kready != 0) {
				if (learn && learnt)
					sl_spin_note(learn, learnt, true, sl_mono_ns() - start);
				return kready < 0 ? -1 : scan(fds, n, socks) + kready;
			}
		}
	}
	/* The spin, forced or learnt, ends here; the sleep protocol below is
	 * the same whatever the policy chose. */
	ready = sleep_until_ready(fds, n, socks, kfds, deadline, held_by_caller);
	if (learn && ready >= 0)
		sl_spin_note(learn, learnt, false, sl_mono_ns() - start);
	return ready;
}

static int poll_once(struct pollfd *fds, nfds_t n, int timeout_ms, bool *fell_back)
{
	struct sl_sock *stack_socks[STACK_FDS], **socks = stack_socks;
	struct pollfd stack_kfds[2 * STACK_FDS], *kfds = stack_kfds;
	int any = 0, r;

	*fell_back = false;
	for (nfds_t i = 0; i < n && !any; i++)
		any = sl_ring_sock(fds[i].fd) != NULL;
	if (!any)
		return kernel_wait(fds, n, timeout_ms);
	if (n > STACK_FDS) {
		socks = calloc(n, sizeof(*socks));
		kfds = calloc(2 * n, sizeof(*kfds));
		if (!socks || !kfds) {
			free(socks);
			free(kfds);
			errno = ENOMEM;
			return -1;
		}
	}
	for (nfds_t i = 0; i < n; i++)
		socks[i] = sl_ring_sock(fds[i].fd);
	r = poll_accelerated(fds, n, timeout_ms, socks, kfds, true, NULL);
	*fell_back = r == 0 && any_fell_back(socks, n);
	if (socks != stack_socks) {
		free(socks);
		free(kfds);
	}
	return r;
}

/* Move non-blocking connects along; true if one is still in progress. */
static bool progress_connects(const struct pollfd *fds, nfds_t n)
{
	bool pending = false;

	for (nfds_t i = 0; i < n; i++) {
		struct sl_sock *s = sl_sock_get(fds[i].fd);

		if (s && sl_sock_state(s) == SL_CONNECTING) {
			sl_connect_progress(s);
			pending |= sl_sock_state(s) == SL_CONNECTING;
		}
	}
	return pending;
}

/* A connection that failed over and has not yet read past the peer's
 * fail-over header: the kernel reports that header readable, and a program
 * woken for it would block in its recv (failover.c).  The strip runs here,
 * never waiting, and POLLIN stays only where the program's bytes are.  The
 * same for a promoting connector's kernel socket woken by the acceptor's
 * marker.  The entries still ready; *masked: one lost its POLLIN (wait
 * again: the strip or the follow consumed what the kernel had, so the next
 * wait sleeps, on the ring if the connection is there now). */
static int past_headers_and_markers(struct pollfd *fds, nfds_t n, bool *masked)
{
	const short in = POLLIN | POLLRDNORM;
	int ready = 0;

	*masked = false;
	for (nfds_t i = 0; i < n; i++) {
		struct sl_sock *s = (fds[i].revents & in) ? sl_sock_get(fds[i].fd) : NULL;

		/* With our late offer out, the entry was the kernel's: what woke
		 * it may be the acceptor's marker alone, which the ready check
		 * takes (following the claim), and the ring's readiness counts. */
		if (s && (sl_sock_strip_pending(s) || sl_sock_promoting(s))) {
			short rev = sl_sock_promoting(s) ? sl_conn_ready(s, fds[i].events)
							 : sl_fail_over_ready(s, fds[i].events);

			if (!(rev & in)) {
				fds[i].revents &= (short)~in;
				*masked = true;
			}
			fds[i].revents |= (short)(rev & POLLERR);
		}
		ready += fds[i].revents != 0;
	}
	return ready;
}

int scilan_poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? -1 : sl_mono_ns() + (int64_t)timeout_ms * 1000000;
	int r, slice;
	bool fell_back, masked;

	if (n > 0 && !fds) {
		errno = EFAULT;
		return -1;
	}
	/* A connecting socket's data will arrive in its ring, which the kernel
	 * cannot see: wait in slices and finish the connect between them. */
	while (progress_connects(fds, n)) {
		slice = remaining_ms(deadline);
		if (slice < 0 || slice > SHARED_WAIT_CAP_MS)
			slice = SHARED_WAIT_CAP_MS;
		r = poll_once(fds, n, slice, &fell_back);
		if (r > 0)
			r = past_headers_and_markers(fds, n, &masked);
		if (r != 0 || remaining_ms(deadline) == 0)
			return r;
	}
	/* A connection that fell back to kernel TCP during the wait is waited
	 * for again, now as the kernel socket it has become. */
	do {
		r = poll_once(fds, n, remaining_ms(deadline), &fell_back);
		masked = false;
		if (r > 0)
			r = past_headers_and_markers(fds, n, &masked);
	} while ((fell_back || (r == 0 && masked)) && remaining_ms(deadline) != 0);
	return r;
}

int sl_poll_sigmask(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask)
{
	int r;

	wait_sigmask = mask;
	r = scilan_poll(fds, n, timeout_ms);
	wait_sigmask = NULL;
	return r;
}

int sl_wait(struct sl_sock *s, short events, bool spin_first)
{
	struct pollfd pfd = { .fd = s->fd, .events = events };
	struct sl_sock *socks[1] = { s };
	struct pollfd kfds[2];
	int held[1], r, timeout;
	int64_t deadline;

	/* Threads of this process that wait on s in the same direction take
	 * turns: each arm would otherwise race the others' drains. */
	timeout = sl_conn_timeout_ms(s, events);
	deadline = timeout < 0 ? -1 : sl_mono_ns() + (int64_t)timeout * 1000000;
	held[0] = hold(s, dirs_of(events), true, deadline);
	if (held[0] != dirs_of(events)) {
		unhold(s, held[0]);
		errno = EAGAIN;
		return -1;
	}
	if (deadline >= 0)
		timeout = remaining_ms(deadline);
	/* 0 without a timeout: ready once, but another thread took it first.
	 * EINTR: the kernel restarts recv/send after an SA_RESTART handler
	 * (unless a socket timeout is set), so we must too. */
	do
		r = poll_accelerated(&pfd, 1, timeout, socks, kfds, spin_first, held);
	while (timeout < 0 && !sl_fell_back(s) &&
	       (r == 0 || (r < 0 && errno == EINTR && sl_conn_signals_restart())));
	unhold(s, held[0]);
	/* Fell back to kernel TCP: the caller redoes its call there. */
	if (sl_fell_back(s))
		return 0;
	if (r == 0) {
		errno = EAGAIN;
		return -1;
	}
	return r < 0 ? -1 : 0;
}
