/* clock.h — the one monotonic clock the library and the hook read for
 * deadlines, spin budgets and sweeps (vDSO: no system call). */
#ifndef SL_CLOCK_H
#define SL_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t sl_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t sl_mono_ms(void) { return sl_mono_ns() / 1000000; }

#endif
