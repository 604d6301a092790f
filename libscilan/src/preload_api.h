/* preload_api.h — everything of the library the preload hook (hook/) may
 * use: the headers below and the accessors for the ring words it watches.
 * scripts/check-layers.sh fails when a hook file includes anything else.
 */
#ifndef SCILAN_PRELOAD_API_H
#define SCILAN_PRELOAD_API_H

#include <stdatomic.h>
#include <stdint.h>

#include "conn/agree.h"
#include "conn/conn.h"
#include "conn/failover.h"
#include "conn/promotion.h"
#include "conn/promotion_trigger.h"
#include "conn/stall.h"
#include "evq/evq.h"
#include "fabric/fabric.h"
#include "process/handover.h"
#include "process/self.h"
#include "ring/segment.h"
#include "ring/urgent.h"
#include "runtime/config.h"
#include "runtime/log.h"
#include "runtime/own_fd.h"
#include "runtime/stats.h"
#include "runtime/stats_sink.h"
#include "runtime/sys.h"
#include "socket/sock_state.h"
#include "socket/wait.h"
#include "sync/barrier.h"
#include "sync/clock.h"
#include "sync/spin.h"
#include "sync/spin_policy.h"

/* What an edge-triggered epoll member compares between two waits (hook/epoll.c):
 * a new state edge (peer flags, or our reset in the top bit), new data,
 * or a send that found the ring full since the last report.  Only for a
 * connected socket (own_ctl and the rings are bound). */
static inline uint32_t sl_edge_state(const struct sl_sock *s)
{
	return atomic_load(&s->own_ctl->peer_state) | (uint32_t)atomic_load(&s->reset) << 31;
}

static inline uint64_t sl_rx_written(const struct sl_sock *s)
{
	return atomic_load(s->rx.write_idx);
}

/* Whether bytes the sender wrote up to `written` are still unread by us. */
static inline bool sl_rx_unread(const struct sl_sock *s, uint64_t written)
{
	return written != s->rx.read;
}

static inline uint32_t sl_tx_blocked_count(const struct sl_sock *s)
{
	return atomic_load(&s->tx_blocked);
}

#endif
