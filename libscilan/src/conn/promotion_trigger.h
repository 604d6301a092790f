/* promotion_trigger.h — when a live plain connection tries promotion: the
 * connector's late offer once the connection outlived the short-connection
 * policy, the acceptor's looks for one, and the count of kernel calls in
 * flight that must be zero when either starts (promotion_trigger.c).
 */
#ifndef SCILAN_PROMOTION_TRIGGER_H
#define SCILAN_PROMOTION_TRIGGER_H

#include <stdbool.h>

#include "socket/sock_state.h"
#include "sync/clock.h"

/* A socket's promote_role: NONE until a connect or accept arms it; NEVER
 * once a use promotion cannot follow was seen (sticky, armed or not). */
enum { SL_PROMOTE_NONE, SL_PROMOTE_CONNECTOR, SL_PROMOTE_ACCEPTOR, SL_PROMOTE_NEVER };
static inline bool sl_promote_armed(int role)
{
	return role == SL_PROMOTE_CONNECTOR || role == SL_PROMOTE_ACCEPTOR;
}

/* A connect the offer policy kept on kernel TCP (reason short): it offers
 * once it has lived after_ns (as long as a connection that pays for the
 * rings). */
void sl_promote_arm_connector(struct sl_sock *s, int64_t after_ns);
/* Would sl_promote_arm_connector arm s (promotion on, its fabric able to
 * offer late, nothing forbidding it)? */
bool sl_promote_connector_possible(const struct sl_sock *s);
/* A connection accepted from listener without an offer (no-offer): it looks
 * for a late one from after_ns on, now and then, while the listener lives. */
void sl_promote_arm_acceptor(struct sl_sock *s, struct sl_sock *listener, int64_t after_ns);
/* An accepted connection on the rings: which listener it came from, for
 * the looks of a return after its link went down (not armed yet). */
void sl_promote_note_listener(struct sl_sock *s, struct sl_sock *listener);
/* A connection its device link left (a link-down move to kernel TCP): it
 * tries to come back onto the link every RETURN_GAP_FIRST_MS or so, the
 * connector offering and the acceptor looking, as a promotion does. */
void sl_promote_arm_return(struct sl_sock *s);
/* The peer's fail-over header was read (failover.c): a return noted at
 * the move is armed now. */
void sl_promote_strip_ended(struct sl_sock *s);
/* Why a late offer ended without a claim (promotion.c). */
enum sl_untaken {
	SL_UNTAKEN,           /* out its whole time, nobody took it */
	SL_UNTAKEN_REFUSED,   /* the acceptor found no room for its marker */
	SL_UNTAKEN_LINK_LOST, /* the device's link went down under it */
};
/* The next offer after one nobody took: later, the wait doubling, and a
 * return gives up its short gap after a few; refused (the acceptor waits
 * for room at its next look): soon; its link lost, no fault of the
 * acceptor's: a return starts its short gap again. */
void sl_promote_untaken(struct sl_sock *s, enum sl_untaken why);
/* A use that promotion cannot follow (a kernel epoll set holds the socket, a
 * stdio stream reads it, splice, urgent data): the connection stays on
 * kernel TCP for good.  Takes effect for the next offer or look. */
void sl_promote_forbid(struct sl_sock *s);
/* After an offer that could not be made: the next one later, the wait
 * doubling. */
void sl_promote_back_off(struct sl_sock *s);

/* The offer or look, if one is due (from a call on s through the library). */
void sl_promote_try(struct sl_sock *s);
static inline void sl_promote_maybe(struct sl_sock *s)
{
	int64_t at = atomic_load_explicit(&s->promote_at_ns, memory_order_relaxed);

	if (__builtin_expect(at != 0, 0) && sl_mono_ns() >= at)
		sl_promote_try(s);
}

/* A call about to read or write s's kernel socket (s not on the rings, its
 * promote_role set): true when it may, counted, and must call
 * sl_promote_kernel_leave after; false when it must go through the library
 * instead (s started moving).  An offer or look being made waits it. */
bool sl_promote_kernel_enter(struct sl_sock *s);
static inline void sl_promote_kernel_leave(struct sl_sock *s)
{
	if (s)
		atomic_fetch_sub_explicit(&s->kcalls, 1, memory_order_release);
}

/* A kernel call for a socket sl_sock_route sent there (k: what it counted,
 * or NULL), its result and errno as the kernel gave them. */
#define SL_KERNEL_CALL(k, call)                                                                                        \
	({                                                                                                             \
		__typeof__(call) sl_kr_ = (call);                                                                      \
		sl_promote_kernel_leave(k);                                                                            \
		sl_kr_;                                                                                                \
	})

#endif
