/* young_helpers.h — for tests that look at a process's statistics file: a
 * process lists its accelerated connections there once its young period is
 * over, at its next wait (runtime/young.h, socket/idle.c). */
#ifndef SCILAN_YOUNG_HELPERS_H
#define SCILAN_YOUNG_HELPERS_H

#include "runtime/young.h"
#include "socket/idle.h"
#include "testutil.h"

/* Outlive the young period, then do what any wait of ours does first. */
static inline void tu_grow_up(void)
{
	(void)sl_young(); /* started by the first connection, or now */
	tu_sleep_ms(SL_YOUNG_NS / 1000000 + 1);
	sl_about_to_wait();
}

#endif
