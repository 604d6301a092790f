/* fallback.h — why a connection is kernel TCP and not accelerated: the one
 * documented set of reasons (man scilan(7)), recorded once per connection on
 * either end, counted per process, logged and published for scilan_ctl.
 */
#ifndef SCILAN_FALLBACK_H
#define SCILAN_FALLBACK_H

#include <stdbool.h>

/* Stable numbers: they are stored in the statistics file (stats_file.h). */
enum sl_fb {
	SL_FB_NONE = 0,     /* accelerated (no reason) */
	SL_FB_OFF,          /* scilan is off in this process (unreadable cluster map) */
	SL_FB_NO_RUNDIR,    /* no usable runtime directory */
	SL_FB_NO_LISTENER,  /* connector: no scilan listener reachable at the destination */
	SL_FB_NOT_IN_MAP,   /* connector, device fabric: destination not in the cluster map */
	SL_FB_LINK_DOWN,    /* device fabric: the link is down or its device missing */
	SL_FB_UNREGISTERED, /* acceptor: the listener could not be registered */
	SL_FB_NO_OFFER,     /* acceptor: the client made no offer (not on scilan) */
	SL_FB_OTHER_USER,   /* acceptor: the client's segment may not be opened (another user) */
	SL_FB_BAD_OFFER,    /* acceptor: the offer or its segment was invalid */
	SL_FB_REVOKED,      /* acceptor: the client withdrew its offer before this accept */
	SL_FB_UNCONFIRMED,  /* connector: the acceptor did not take the offer (a plain server) */
	SL_FB_REFUSED,      /* connector: the acceptor refused the offer */
	SL_FB_UNDECIDED,    /* connector: closed, exec'd or passed before the acceptor confirmed */
	SL_FB_BUSY,         /* connector: the offer's name was in use (same 4-tuple) */
	SL_FB_RESOURCE,     /* a resource limit: descriptors, memory, tmpfs space, device slices */
	SL_FB_BYPASS,       /* downgraded: the peer's bytes came on the kernel socket */
	SL_FB_PEER_MOVED,   /* downgraded: the peer moved the connection to kernel TCP */
	SL_FB_SANDBOX,      /* downgraded: this process installed a seccomp filter */
	SL_FB_EXEC,         /* downgraded: exec (or spawn) of an image without the hook */
	SL_FB_STALLED,      /* downgraded: the peer took nothing from its ring while we waited */
	SL_FB_CLOSED_UNREAD, /* not a fallback: the unread tail moved at one end's close (stall.c) */
	SL_FB_HANDOVER,     /* downgraded: the rings could not be handed on (exec, SCM_RIGHTS) */
	SL_FB_OTHER,        /* anything else (a warning says what) */
	SL_FB_SHORT,        /* connector: its connections to the destination were too short to pay (offer_policy.c) */
	SL_FB_ZEROCOPY,     /* downgraded: a MSG_ZEROCOPY send with SO_ZEROCOPY set wants the kernel's completions */
	SL_FB_UNREADABLE_OFFER, /* acceptor: the client's offer file or bells may not be opened by this user */
	SL_FB_UNMAPPED_USER, /* either side: the other end's user is not mapped in our user namespace */
	SL_FB_PID_NAMESPACE, /* connector: the listener, found only by its registry entry, is in another pid namespace */
	SL_FB_PORT_RANGE,   /* connector: its port is outside the range offers at connect come from (offer_port.h) */
	SL_FB_COUNT
};

/* Which end of the connection this process is. */
enum sl_fb_side { SL_FB_CONNECTOR = 0, SL_FB_ACCEPTOR = 1 };

/* The short name ("no-listener"), "accelerated" for SL_FB_NONE, "?" if unknown. */
const char *sl_fb_name(unsigned reason);
/* One sentence for the log and the man page. */
const char *sl_fb_text(unsigned reason);
/* How to change it, where the user can ("" if not). */
const char *sl_fb_remedy(unsigned reason);
/* Set after the connection had used the rings. */
bool sl_fb_downgrade(unsigned reason);

struct sl_sock;

/* A fabric's lookup or attach says why it found nothing better than kernel
 * TCP; the socket layer's next record on this thread takes it (else its
 * own default).  Cleared by that record. */
void sl_fb_hint(enum sl_fb reason);
/* The pending hint, or dflt; clears the hint. */
enum sl_fb sl_fb_take_hint(enum sl_fb dflt);
/* A failed set-up's errno as a reason (EMFILE... resource, EEXIST busy,
 * ECONNREFUSED no listener), else dflt. */
enum sl_fb sl_fb_of_errno(int err, enum sl_fb dflt);

/* The connection of s (NULL: a socket scilan has no state for) is kernel TCP
 * for reason: remembered in the socket (the first reason stays), counted in
 * the process totals, logged (at notice level the first time the process
 * meets the reason, with what it means and how to change it; at info level
 * after that), and published in the statistics file for scilan_ctl stat
 * --all.  Once per connection. */
void sl_fallback(struct sl_sock *s, enum sl_fb reason, enum sl_fb_side side);

#endif
