/* link_seen.h — the process's last word on each device link it saw down
 * (link_seen.c): a live connection's tries to come back onto a link skip
 * one seen down lately instead of asking the device each.
 */
#ifndef SCILAN_LINK_SEEN_H
#define SCILAN_LINK_SEEN_H

#include <stdbool.h>

enum sl_link_seen {
	SL_LINK_NOT_SEEN_DOWN, /* never, or seen up since: ask as usual */
	SL_LINK_DOWN_LATELY,   /* seen down within the recheck: do not ask */
	SL_LINK_RECHECK,       /* seen down before that: one caller asks again */
};

/* What this process last saw of /dev/scilanN (N < 0 or too large: never
 * seen down).  SL_LINK_RECHECK is answered to one caller per recheck; the
 * others meanwhile get SL_LINK_DOWN_LATELY. */
enum sl_link_seen sl_dev_link_seen(int link);
/* What a look at link N found (an INFO, a connect, a reset endpoint). */
void sl_dev_link_note(int link, bool up);

#endif
