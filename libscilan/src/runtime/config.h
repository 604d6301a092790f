/* config.h — the process-wide settings read once from the environment
 * (SCILAN_POLL_US, SCILAN_RING_KB, SCILAN_SHORT_CONNS, SCILAN_FAIL_OVER,
 * SCILAN_LOG, SCILAN_RUNDIR) and the
 * cluster map ($SCILAN_CONF).
 */
#ifndef SCILAN_CONFIG_H
#define SCILAN_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/cluster_map.h"

#include "sync/spin_policy.h"

/* Defaults chosen by measurement (see README.md, "Tuning"): the spin is
 * learnt unless SCILAN_POLL_US forces one (spin_policy.h). */
#define SL_DEFAULT_POLL_US SL_POLL_ADAPTIVE
#define SL_DEFAULT_RING_KB 256
#define SL_MAX_POLL_US 10000000

/* A full file-system path (the runtime directory and what is built from it):
 * never kept on the stack, which may be an application thread's 16 KiB. */
#define SL_PATH_SIZE PATH_MAX

struct sl_config {
	int poll_us;             /* spin before sleeping; 0 = interrupt mode, SL_POLL_ADAPTIVE = learnt */
	uint64_t ring_bytes;     /* default receive ring capacity */
	bool learn_short_conns;  /* SCILAN_SHORT_CONNS=learn (default): destinations whose
				  * connections are too short to pay get kernel TCP (offer_policy.h) */
	bool promote;            /* SCILAN_PROMOTE=on (default): a live kernel TCP connection between
				  * hooked ends moves onto the rings (conn/promotion_trigger.c) */
	bool fail_over;          /* SCILAN_FAIL_OVER=on (default): device connections keep a mirror of
				  * what they send, and fail over to kernel TCP at link down (failover.c) */
	char rundir[SL_PATH_SIZE];      /* per-user runtime directory ("" = none usable) */
	struct sl_cluster_map map; /* $SCILAN_CONF; empty if missing or bad (reported once) */
	bool off;                /* scilan is off in this process (reported once): no listener warnings */
};

/* The settings, parsed on first use; bad values are reported and replaced by defaults. */
const struct sl_config *sl_config(void);

/* Parse a decimal integer in [min, max]; returns 0 or -1 (nothing written). */
int sl_parse_int(const char *text, long long min, long long max, long long *out);

#endif
