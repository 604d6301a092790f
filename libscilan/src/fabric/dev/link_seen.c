/* link_seen.c — the process's last word on each device link it saw down:
 * while a link is down, every connection it left tries to come back twice a
 * second (promotion_trigger.c); those tries ask the device once per link
 * per LINK_RECHECK_MS, whatever the number of connections.
 */
#include "fabric/dev/link_seen.h"

#include <stdatomic.h>
#include <stdint.h>

#include "sync/clock.h"

/* A tenth of a second: a link's return is seen that much later at most,
 * against the half second a connection waits between its tries anyway. */
#define LINK_RECHECK_MS 100
#define LINKS_SEEN 64 /* links numbered beyond are asked every time */

/* When each link was last seen down (0: never, or seen up since). */
static _Atomic int64_t down_seen_ns[LINKS_SEEN];

enum sl_link_seen sl_dev_link_seen(int link)
{
	int64_t at, now;

	if (link < 0 || link >= LINKS_SEEN || !(at = atomic_load_explicit(&down_seen_ns[link], memory_order_relaxed)))
		return SL_LINK_NOT_SEEN_DOWN;
	now = sl_mono_ns();
	if (now - at < (int64_t)LINK_RECHECK_MS * 1000000)
		return SL_LINK_DOWN_LATELY;
	/* Renewed for the others while this caller asks: they skip the link
	 * until its answer (or the next recheck, should it never note one). */
	return atomic_compare_exchange_strong(&down_seen_ns[link], &at, now) ? SL_LINK_RECHECK : SL_LINK_DOWN_LATELY;
}

void sl_dev_link_note(int link, bool up)
{
	int64_t now;

	if (link < 0 || link >= LINKS_SEEN)
		return;
	now = sl_mono_ns();
	atomic_store_explicit(&down_seen_ns[link], up ? 0 : now ? now : 1, memory_order_relaxed);
}
