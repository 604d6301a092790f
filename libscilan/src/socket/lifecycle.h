/* lifecycle.h — what the two halves of the socket life cycle share
 * (lifecycle.c, connect.c).
 */
#ifndef SCILAN_LIFECYCLE_H
#define SCILAN_LIFECYCLE_H

#include "runtime/fallback.h"
#include "socket/sock_state.h"

/* The connection is kernel TCP for reason, unless a fabric said better
 * (sl_fb_hint). */
void sl_become_plain(struct sl_sock *s, enum sl_fb reason, enum sl_fb_side side);

/* Why a process with scilan off or without a runtime directory does not try. */
enum sl_fb sl_unusable_reason(void);

#endif
