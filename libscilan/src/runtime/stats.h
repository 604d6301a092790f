/* stats.h — per-process counters (connections accelerated or fallen back to
 * the kernel, bytes, sleeps and wake-ups) for SCILAN_STATS and scilan_ctl.
 */
#ifndef SCILAN_STATS_H
#define SCILAN_STATS_H

#include <stdint.h>

#include "socket/sock_state.h"

struct sl_stats {
	uint64_t accelerated, fallback, tx_bytes, rx_bytes, sleeps, wakeups;
	uint64_t promoted; /* of the fallbacks, moved onto the rings later (counted accelerated too) */
	uint64_t fb[SL_FB_COUNT]; /* fallbacks per reason (fallback.h) */
};

void sl_stats_read(struct sl_stats *out);
/* A forked child starts counting from zero: the parent reports its own. */
void sl_stats_reset_in_child(void);
/* The SCILAN_STATS line, written to fd in one write. */
void sl_stats_print(int fd);

#endif
