/* young.c — the young period's clock (young.h): one start time per process,
 * kept across fork (a child carries on its parent's connections) and gone
 * with exec (a new image starts again).
 */
#include "runtime/young.h"

#include <stdatomic.h>

#include "sync/clock.h"

/* 0: not started; then the end of the young period. */
static _Atomic int64_t young_until;
static _Atomic bool grown;

int64_t sl_young_left_ns(void)
{
	int64_t now, until;

	if (atomic_load_explicit(&grown, memory_order_relaxed))
		return 0;
	now = sl_mono_ns();
	until = atomic_load_explicit(&young_until, memory_order_relaxed);
	if (!until) {
		int64_t mine = now + SL_YOUNG_NS;

		if (atomic_compare_exchange_strong(&young_until, &until, mine))
			return SL_YOUNG_NS;
	}
	if (now < until)
		return until - now;
	atomic_store_explicit(&grown, true, memory_order_relaxed);
	return 0;
}

bool sl_young(void)
{
	return sl_young_left_ns() > 0;
}
