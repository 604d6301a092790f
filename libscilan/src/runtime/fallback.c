/* fallback.c — the reasons a connection stays on (or moves to) kernel TCP:
 * their names and sentences, the thread's pending hint from a fabric, and the
 * one place a fallback is recorded (socket, totals, log, statistics file).
 */
#include "runtime/fallback.h"

#include <errno.h>
#include <stdatomic.h>

#include "runtime/log.h"
#include "socket/sock_state.h"
#include "runtime/stats_file.h"

static const struct {
	const char *name, *text, *remedy;
} reasons[SL_FB_COUNT] = {
	[SL_FB_NONE] = { "accelerated", "the connection is carried by the rings", NULL },
	[SL_FB_OFF] = { "off", "scilan is off in this process (the cluster map could not be read)",
			"correct the cluster map the error names (scilan_ctl map list reads it)" },
	[SL_FB_NO_RUNDIR] = { "no-rundir", "no usable runtime directory",
			      "give the user a private one (SCILAN_RUNDIR, mode 0700; the error said what is wrong)" },
	[SL_FB_NO_LISTENER] = { "no-listener",
				"no scilan listener is reachable at the destination (the peer is not on scilan)",
				"run the server under scilan_run too" },
	[SL_FB_NOT_IN_MAP] = { "not-in-map", "the destination is not a device address in the cluster map",
			       "add its node to the cluster map (scilan.conf(5))" },
	[SL_FB_LINK_DOWN] = { "link-down",
			      "the device link is down or its device is missing (or it went down under the "
			      "connection, which failed over to kernel TCP with every byte)",
			      "scilan_ctl status shows the links and devices" },
	[SL_FB_UNREGISTERED] = { "unregistered", "the listener could not be registered with scilan", NULL },
	[SL_FB_NO_OFFER] = { "no-offer", "the client made no offer (it is not on scilan)",
			     "run the client under scilan_run too" },
	[SL_FB_OTHER_USER] = { "other-user",
			       "the client's segment may not be opened (another user, or a non-dumpable process)",
			       "run both ends as one user, and keep the client dumpable" },
	[SL_FB_BAD_OFFER] = { "bad-offer", "the client's offer or segment was invalid", NULL },
	[SL_FB_REVOKED] = { "revoked", "the client withdrew its offer before this accept", NULL },
	[SL_FB_UNCONFIRMED] = { "unconfirmed",
				"the accepting side did not confirm the offer (a plain server: it spoke or closed "
				"first, or was silent for 1 s)",
				"run the server under scilan_run too" },
	[SL_FB_REFUSED] = { "refused", "the accepting side refused the offer (out of descriptors, a bad segment)", NULL },
	[SL_FB_UNDECIDED] = { "undecided",
			      "closed, exec'd or passed with SCM_RIGHTS before the accepting side confirmed", NULL },
	[SL_FB_BUSY] = { "busy", "the offer's name was in use (another connection with the same 4-tuple)", NULL },
	[SL_FB_RESOURCE] = { "resource",
			     "a resource limit (descriptors, memory, tmpfs space, a device link's slices or a "
			     "listener's backlog)",
			     "raise the limit that was hit (SCILAN_LOG=info names it): the descriptor limit "
			     "(ulimit -n), the runtime directory's tmpfs size, the driver's window (mw_size) or "
			     "the server's listen backlog" },
	[SL_FB_BYPASS] = { "bypass",
			   "downgraded: the peer's bytes came on the kernel socket (io_uring, raw system calls, "
			   "or a holder without the hook)", NULL },
	[SL_FB_PEER_MOVED] = { "peer-moved", "downgraded: the peer moved the connection to kernel TCP", NULL },
	[SL_FB_SANDBOX] = { "sandbox", "downgraded: this process installed a seccomp filter", NULL },
	[SL_FB_EXEC] = { "exec", "downgraded: exec or spawn of an image that does not load the hook", NULL },
	[SL_FB_STALLED] = { "stalled",
			    "downgraded: the peer took nothing from its ring for 3 s while this end waited "
			    "(a reader that bypasses the hook)", NULL },
	[SL_FB_CLOSED_UNREAD] = { "closed-unread",
				  "one end closed while the other had taken none of its bytes from the ring: "
				  "that tail went onto the kernel socket (for a reader that bypasses the hook)", NULL },
	[SL_FB_HANDOVER] = { "handover",
			     "downgraded: its rings could not be handed on with exec or SCM_RIGHTS (the segment "
			     "could not be reopened: the process gave up the privilege after set-up)", NULL },
	[SL_FB_OTHER] = { "other",
			  "another failure (a warning before this line says what, or, at SCILAN_LOG=info, a line)", NULL },
	[SL_FB_SHORT] = { "short",
			  "this process's recent connections to the destination were too short for the rings' "
			  "set-up to pay (learnt: one that lasts moves onto the rings, SCILAN_PROMOTE; "
			  "SCILAN_SHORT_CONNS=accelerate offers always)", NULL },
	[SL_FB_ZEROCOPY] = { "zerocopy",
			     "downgraded: a MSG_ZEROCOPY send with SO_ZEROCOPY set, whose completions only the "
			     "kernel's error queue reports", NULL },
	[SL_FB_UNREADABLE_OFFER] = { "unreadable-offer",
				     "the client's offer file or wake-up FIFOs may not be opened by this process's user "
				     "(it changed user without scilan seeing it, or accepts on another user's listener)",
				     "listen and accept as one user, and change user through libc's setuid and its kin, "
				     "which scilan sees" },
	[SL_FB_UNMAPPED_USER] = { "unmapped-user",
				  "the other end runs as a user this process's user namespace does not map: every "
				  "such user reads as the overflow uid, so who owns the other end cannot be checked",
				  "map the other end's uid into this user namespace, or run both ends in one" },
	[SL_FB_PID_NAMESPACE] = { "pid-namespace",
				  "the listener is in another network namespace and another pid namespace: the "
				  "offer would name this process by a pid that means nothing there",
				  "run both ends in one pid namespace, or in one network namespace (a pod), where "
				  "offers pass through the rendezvous" },
	[SL_FB_PORT_RANGE] = { "port-range",
			       "the connection's local port is outside 57344-60999 (and not below 1024), where an "
			       "offer at connect must come from (the program bound it or set its own range, every port of ours was "
			       "taken, or net.ipv4.ip_local_port_range leaves ours out); it moves onto the rings "
			       "later if it lasts",
			       "let the kernel pick the client's port, and keep 57344-60999 inside "
			       "net.ipv4.ip_local_port_range" },
};

const char *sl_fb_name(unsigned reason)
{
	return reason < SL_FB_COUNT ? reasons[reason].name : "?";
}

const char *sl_fb_text(unsigned reason)
{
	return reason < SL_FB_COUNT ? reasons[reason].text : "?";
}

const char *sl_fb_remedy(unsigned reason)
{
	return reason < SL_FB_COUNT && reasons[reason].remedy ? reasons[reason].remedy : "";
}

bool sl_fb_downgrade(unsigned reason)
{
	return (reason >= SL_FB_BYPASS && reason < SL_FB_OTHER) || reason == SL_FB_ZEROCOPY;
}

static _Thread_local enum sl_fb hint;

/* The reasons this process (or the parent it was forked from: a copy that
 * was told already) has explained at notice level. */
static _Atomic uint64_t explained;
_Static_assert(SL_FB_COUNT <= 64, "a bit of explained per reason");

/* The first hint of a set-up stands: the exact destination's lookup says
 * more than the wildcard's that follows it. */
void sl_fb_hint(enum sl_fb reason)
{
	if (hint == SL_FB_NONE)
		hint = reason;
}

enum sl_fb sl_fb_take_hint(enum sl_fb dflt)
{
	enum sl_fb r = hint ? hint : dflt;

	hint = SL_FB_NONE;
	return r;
}

enum sl_fb sl_fb_of_errno(int err, enum sl_fb dflt)
{
	switch (err) {
	case EMFILE:
	case ENFILE:
	case ENOMEM:
	case ENOSPC:
	case EDQUOT:
	case ENOBUFS:
		return SL_FB_RESOURCE;
	case EEXIST:
		return SL_FB_BUSY;
	case ECONNREFUSED:
		return SL_FB_NO_LISTENER;
	default:
		return dflt;
	}
}

void sl_fallback(struct sl_sock *s, enum sl_fb reason, enum sl_fb_side side)
{
	if (reason <= SL_FB_NONE || reason >= SL_FB_COUNT)
		reason = SL_FB_OTHER;
	hint = SL_FB_NONE;
	atomic_fetch_add_explicit(&sl_totals.fallback, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&sl_totals.fb[reason], 1, memory_order_relaxed);
	if (s) {
		s->fb_reason = reason;
		s->fb_side = side;
		sl_stats_conn_plain(s);
	}
	/* Once per reason at the default level: a server with 2,000 plain
	 * clients says what `no-offer` means once, not 2,000 times. */
	uint64_t bit = (uint64_t)1 << reason;
	bool first = !(atomic_fetch_or_explicit(&explained, bit, memory_order_relaxed) & bit);
	const char *remedy = sl_fb_remedy(reason);

	sl_log(first ? SL_LOG_NOTICE : SL_LOG_INFO, "fd %d (%s): kernel TCP, %s: %s%s%s%s", s ? s->fd : -1,
	       side == SL_FB_ACCEPTOR ? "accepted" : "connecting", sl_fb_name(reason), sl_fb_text(reason),
	       *remedy ? "; to change it, " : "", remedy,
	       first ? " (said once per reason: SCILAN_LOG=info names every connection)" : "");
}
