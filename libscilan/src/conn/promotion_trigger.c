/* promotion_trigger.c — when a live plain connection tries promotion: the
 * connector offers once the connection outlived the short-connection
 * policy's bound, the acceptor looks for the offer now and then at its
 * calls, and neither starts while a thread of ours is inside a kernel call
 * on the socket (ARCHITECTURE.md, "Promotion").
 */
#include "conn/promotion_trigger.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <time.h>

#include "conn/promotion.h"
#include "fabric/fabric.h"
#include "runtime/config.h"
#include "runtime/endpoint_key.h"
#include "runtime/io_uring_seen.h"
#include "runtime/log.h"
#include "runtime/sys.h"

/* The connector's back-off after an offer nobody took: from 1 s, doubling
 * to a minute (a hooked server whose sockets cannot move, an epoll one,
 * costs a segment and a two-second window now and then). */
#define CONNECTOR_GAP_FIRST_MS 1000
#define CONNECTOR_GAP_MAX_MS 64000
/* A connection whose link went down tries to come back this soon, and so
 * on, the wait doubling only to RETURN_GAP_MAX_MS: back on the link within
 * a second of its return however long the cut, at the price of a try (an
 * open and an ioctl of the device) twice a second while it stays down.
 * The acceptor's looks follow the same gaps, so that an offer (out for
 * SL_PROMOTE_WAIT_MS) meets several even in a short spell of link. */
#define RETURN_GAP_FIRST_MS 150
#define RETURN_GAP_MAX_MS 500
/* Offers of a return nobody took (the link up, the acceptor not looking:
 * closed, forked, a member of an epoll set): then it backs off as a
 * promotion does. */
#define RETURN_UNTAKEN_MAX 5
/* After an acceptor's refusal (no room for its marker): the next offer,
 * so soon only so many times (an acceptor that refuses every offer costs us
 * a segment each time). */
#define REFUSED_RETRY_MS 100
#define REFUSED_RETRIES 4
/* The acceptor's looks: the first when its connector may first offer, then
 * 25 ms later, doubling to half a second, so that an offer (out for
 * SL_PROMOTE_WAIT_MS) meets a look at the acceptor's next calls.  A look
 * that finds nothing is one accept4 on the rendezvous queue. */
#define ACCEPTOR_GAP_FIRST_MS 25
#define ACCEPTOR_GAP_MAX_MS 500
/* A try waits this long for the kernel calls in flight to end (the calls
 * that come meanwhile wait at the gate): a full-duplex stream's reader and
 * writer are in the kernel most of the time, and each call returns as soon
 * as the peer reads or writes.  Then it comes again this soon. */
#define DRAIN_WAIT_NS (20 * 1000000LL)
#define BUSY_RETRY_MS 10
#define BUSY_RETRY_MAX_MS 2000
/* The acceptor's wait for room for its marker before it takes an offer. */
#define ROOM_WAIT_MS 50

/* Which thread holds a socket's gate: the address of a thread-local. */
static _Thread_local char this_thread;

static int64_t ms_from_now(uint32_t ms)
{
	return sl_mono_ns() + (int64_t)ms * 1000000;
}

bool sl_promote_connector_possible(const struct sl_sock *s)
{
	return sl_config()->promote && s->fabric->offer_late && atomic_load(&s->promote_role) != SL_PROMOTE_NEVER;
}

void sl_promote_arm_connector(struct sl_sock *s, int64_t after_ns)
{
	if (!sl_promote_connector_possible(s))
		return;
	atomic_store(&s->promote_gap_ms, CONNECTOR_GAP_FIRST_MS);
	atomic_store(&s->promote_role, SL_PROMOTE_CONNECTOR);
	atomic_store(&s->promote_at_ns, sl_mono_ns() + after_ns);
}

/* Could the peer be a process of ours that reached the listener's
 * rendezvous (its abstract socket is this network namespace's)?  Its
 * address is then loopback, or our end's own. */
static bool peer_here(struct sl_sock *s)
{
	struct sl_key local, peer = s->known_peer;

	if (sl_key_is_loopback(&peer))
		return true;
	return sl_conn_keys(s->fd, &local, &peer) == 0 && sl_key_same_addr(&local, &peer);
}

void sl_promote_arm_acceptor(struct sl_sock *s, struct sl_sock *listener, int64_t after_ns)
{
	const struct sl_fabric_ops *f = sl_fabric_late_for(listener, &s->known_peer);
	bool queue = false;

	for (int i = 0; i < SL_MAX_REG; i++)
		queue |= listener->rdv_fd[i] >= 0;
	/* A late offer comes over the device from a device node, else through
	 * the listener's rendezvous alone, from a process of this network
	 * namespace. */
	if (!sl_config()->promote || !f->take_late || atomic_load(&s->promote_role) == SL_PROMOTE_NEVER ||
	    (f == &sl_fabric_shm && (!queue || !peer_here(s))))
		return;
	/* A plain connection's fabric is where its late offer comes. */
	s->fabric = f;
	s->promote_listener = listener;
	s->promote_listener_gen = atomic_load(&listener->listen_gen);
	atomic_store(&s->promote_gap_ms, ACCEPTOR_GAP_FIRST_MS);
	atomic_store(&s->promote_role, SL_PROMOTE_ACCEPTOR);
	atomic_store(&s->promote_at_ns, sl_mono_ns() + after_ns);
}

void sl_promote_note_listener(struct sl_sock *s, struct sl_sock *listener)
{
	s->promote_listener = listener;
	s->promote_listener_gen = atomic_load(&listener->listen_gen);
}

void sl_promote_arm_return(struct sl_sock *s)
{
	int role = s->own_area == 0 ? SL_PROMOTE_CONNECTOR : SL_PROMOTE_ACCEPTOR;

	if (!sl_config()->promote || !s->fabric->offer_late || atomic_load(&s->promote_role) != SL_PROMOTE_NONE ||
	    (role == SL_PROMOTE_ACCEPTOR && !s->promote_listener))
		return;
	/* A member of our epoll sets over the device stays on kernel TCP:
	 * its sets' registrations in the dead session's area are not made
	 * again in a new one (ARCHITECTURE.md).  A mark that stays: the
	 * set's reconcile may have dropped the registration before this. */
	if (atomic_load(&s->dev_set_member)) {
		sl_promote_forbid(s);
		return;
	}
	atomic_store(&s->promote_return, true);
	atomic_store(&s->promote_untaken, 0);
	/* Armed once the peer's fail-over header is read: until then an armed
	 * socket's kernel calls go the library's way (the gate), and a send
	 * there would only find the strip still pending. */
	if (atomic_load(&s->strip_pending))
		return;
	atomic_store(&s->promote_gap_ms, RETURN_GAP_FIRST_MS);
	atomic_store(&s->promote_role, role);
	atomic_store(&s->promote_at_ns, ms_from_now(RETURN_GAP_FIRST_MS));
}

void sl_promote_strip_ended(struct sl_sock *s)
{
	if (atomic_load(&s->promote_return))
		sl_promote_arm_return(s);
}

void sl_promote_forbid(struct sl_sock *s)
{
	if (atomic_load_explicit(&s->promote_role, memory_order_relaxed) == SL_PROMOTE_NEVER)
		return;
	atomic_store(&s->promote_role, SL_PROMOTE_NEVER);
	atomic_store(&s->promote_at_ns, 0);
}

void sl_promote_back_off(struct sl_sock *s)
{
	uint32_t gap = atomic_load(&s->promote_gap_ms);

	if (!sl_promote_armed(atomic_load(&s->promote_role)))
		return;
	atomic_store(&s->promote_at_ns, ms_from_now(gap));
	if (gap < (atomic_load(&s->promote_return) ? RETURN_GAP_MAX_MS : CONNECTOR_GAP_MAX_MS))
		atomic_store(&s->promote_gap_ms, gap * 2);
}

void sl_promote_untaken(struct sl_sock *s, enum sl_untaken why)
{
	if (!sl_promote_armed(atomic_load(&s->promote_role)))
		return;
	/* The acceptor looked and found no room for its marker: it waits for
	 * room at its next look, which this offer, made soon, meets. */
	if (why == SL_UNTAKEN_REFUSED && atomic_fetch_add(&s->promote_refusals, 1) < REFUSED_RETRIES) {
		atomic_store(&s->promote_at_ns, ms_from_now(REFUSED_RETRY_MS));
		return;
	}
	/* Cut under the offer (the link flaps): the acceptor had no fair
	 * chance, and the link may be back already; counting it would end a
	 * return's short gap after a few flaps, and the connection would stay
	 * on kernel TCP for a minute after the link settled. */
	if (why == SL_UNTAKEN_LINK_LOST && atomic_load(&s->promote_return)) {
		atomic_store(&s->promote_gap_ms, RETURN_GAP_FIRST_MS);
		atomic_store(&s->promote_at_ns, ms_from_now(RETURN_GAP_FIRST_MS));
		return;
	}
	if (why == SL_UNTAKEN && atomic_load(&s->promote_return) &&
	    atomic_fetch_add(&s->promote_untaken, 1) + 1 >= RETURN_UNTAKEN_MAX)
		atomic_store(&s->promote_return, false);
	sl_promote_back_off(s);
}

/* The acceptor's look, under its listener's ctl_lock: a listener closed
 * since (its slot maybe reused) bumped its generation under that lock, and
 * its rendezvous queues are gone; then this connection never looks again. */
static void look(struct sl_sock *s)
{
	struct sl_sock *l = s->promote_listener;
	int r = 0;

	if (!l) /* closed, and its slot reused, while we tried */
		return;

	/* The take needs room for our marker, and refuses without it (the
	 * connector offers again 100 ms later).  A stream at speed keeps
	 * our socket full: after such a refusal the next look waits for room
	 * first, here, outside the locks the take holds; with the gate held
	 * our writers add nothing while the peer's reader drains it.  Not
	 * before every look: a socket full because its plain peer reads
	 * slowly would stall its calls for nothing. */
	if (atomic_exchange(&s->promote_no_room, false))
		sl_sys.poll(&(struct pollfd){ .fd = s->fd, .events = POLLOUT }, 1, ROOM_WAIT_MS);
	pthread_mutex_lock(&l->ctl_lock);
	if (atomic_load(&l->listen_gen) != s->promote_listener_gen || sl_sock_state(l) != SL_LISTENING) {
		pthread_mutex_unlock(&l->ctl_lock);
		sl_promote_forbid(s);
		return;
	}
	r = sl_promote_look(s, l);
	pthread_mutex_unlock(&l->ctl_lock);
	/* Reset: nothing more to look for.  Taken: disarmed as it moved (a
	 * later link-down move arms its return). */
	if (r < 0)
		sl_promote_forbid(s);
}

/* No kernel call of ours on s any more (the gate held: none starts). */
static bool drained(struct sl_sock *s)
{
	int64_t until = sl_mono_ns() + DRAIN_WAIT_NS;

	while (atomic_load(&s->kcalls) != 0) {
		if (sl_mono_ns() > until)
			return false;
		nanosleep(&(struct timespec){ .tv_nsec = 50000 }, NULL);
	}
	return true;
}

/* Busy again and again (a reader blocked on a quiet direction, a full
 * send queue): the wait for it doubles, or our calls would spend most of
 * their time here. */
static void retry_busy(struct sl_sock *s)
{
	uint32_t busy = atomic_load(&s->promote_busy_ms);

	busy = busy < BUSY_RETRY_MS ? BUSY_RETRY_MS : busy * 2 > BUSY_RETRY_MAX_MS ? BUSY_RETRY_MAX_MS : busy * 2;
	atomic_store(&s->promote_busy_ms, busy);
	atomic_store(&s->promote_at_ns, ms_from_now(busy));
}

void sl_promote_try(struct sl_sock *s)
{
	uintptr_t none = 0, me = (uintptr_t)&this_thread;
	int role = atomic_load(&s->promote_role), cancel;
	int64_t at;

	if (!sl_promote_armed(role) || sl_sock_state(s) != SL_PLAIN || sl_sock_promoting(s))
		return;
	/* One try at a time; the calls of other threads wait at the gate,
	 * which a cancelled thread would leave held for good. */
	if (!atomic_compare_exchange_strong(&s->promote_gate, &none, me))
		return;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	at = atomic_load(&s->promote_at_ns);
	if (!at || sl_mono_ns() < at || sl_sock_state(s) != SL_PLAIN || sl_sock_promoting(s))
		goto out;
	/* Both sequentially consistent: a call stores its count, then loads
	 * the gate; we stored the gate, then load the count.  One of us sees
	 * the other.  A thread inside a kernel read now would take the peer's
	 * marker for data, a write would land past our switch point. */
	/* Past the hook: io_uring's reads would take the peer's marker for
	 * data, and a forked or passed socket's other holders count nothing
	 * here.  Either way the connection stays as it is, for good. */
	if (sl_io_uring_seen() || sl_sock_maybe_shared(s)) {
		sl_promote_forbid(s);
		goto out;
	}
	if (!drained(s)) {
		retry_busy(s);
		goto out;
	}
	if (role == SL_PROMOTE_CONNECTOR) {
		int r = sl_promote_offer(s);

		if (r == 1) {
			/* Our send queue is full: a claim now would find no room
			 * for our marker.  A stream's queue empties by the
			 * acceptor's reads, not by our offers: soon again. */
			retry_busy(s);
			goto out;
		}
		atomic_store(&s->promote_busy_ms, 0);
		if (r == 0) {
			/* Out: the offer's decision (promotion.c) backs off if
			 * nobody takes it. */
			atomic_store(&s->promote_at_ns, 0);
		} else {
			sl_debug("fd %d: no late offer (%m)", s->fd);
			sl_promote_back_off(s);
		}
	} else {
		uint32_t gap = atomic_load(&s->promote_gap_ms);

		atomic_store(&s->promote_busy_ms, 0);
		atomic_store(&s->promote_at_ns, ms_from_now(gap));
		if (gap < (atomic_load(&s->promote_return) ? RETURN_GAP_MAX_MS : ACCEPTOR_GAP_MAX_MS))
			atomic_store(&s->promote_gap_ms, gap * 2);
		look(s);
	}
out:
	atomic_store(&s->promote_gate, 0);
	pthread_setcancelstate(cancel, NULL);
}

bool sl_promote_kernel_enter(struct sl_sock *s)
{
	uintptr_t me = (uintptr_t)&this_thread, holder;

	for (;;) {
		atomic_fetch_add(&s->kcalls, 1);
		holder = atomic_load(&s->promote_gate);
		/* Held by this very thread: a signal handler's call interrupted
		 * our own try, which cannot go on until the handler returns
		 * (the library's locks give a handler the same rule). */
		if (!holder || holder == me)
			break;
		atomic_fetch_sub(&s->kcalls, 1);
		while (atomic_load(&s->promote_gate))
			sched_yield();
	}
	if (sl_sock_state(s) != SL_PLAIN || sl_sock_promoting(s) || sl_sock_strip_pending(s)) {
		atomic_fetch_sub(&s->kcalls, 1);
		return false;
	}
	return true;
}
