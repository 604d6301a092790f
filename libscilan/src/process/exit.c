/* exit.c — what the process's exit does to its ring connections, on every
 * fabric: the peer must see a close, never a death.
 */
#include <stdbool.h>

#include "conn/agree.h"
#include "conn/conn.h"
#include "conn/stall.h"
#include "process/holders.h"
#include "ring/segment.h"
#include "socket/sock_state.h"

/* Exit closes our sockets in the kernel, a close the peer must see as EOF
 * (or as the reset TCP sends for unread data or SO_LINGER {1, 0}), not as a
 * death.  An offer still out is revoked first (the last live holder's exit,
 * as its close would): its ring bytes go onto the kernel socket, which the
 * kernel delivers after we are gone, where the segment would die with us. */
static bool close_at_exit(struct sl_sock *s)
{
	bool unread;

	if (!sl_sock_on_rings(s) || !s->seg)
		return false;
	if (sl_agree_pending(s) && !sl_holders_others(s) && sl_agree_decide(s, SL_AGREE_FORCE))
		return false;
	/* And bytes an agreed peer took none of, as our close would (socket/lifecycle.c). */
	if (!sl_holders_others(s) && sl_stall_at_close(s) && sl_bypass_leave(s, SL_FB_CLOSED_UNREAD))
		return false;
	unread = sl_conn_unread(s);
	if (sl_segment_release_holder(s)) {
		sl_segment_set_state(s, sl_conn_close_bits(s, unread));
		sl_conn_wake_peer(s);
	}
	return false;
}

__attribute__((destructor)) static void close_all_at_exit(void)
{
	sl_sock_any(close_at_exit);
}
