/* clock.h — the library's and the hook's one clock helper: the monotonic
 * clock for deadlines, spin budgets and sweeps (vDSO: no system call), and
 * the wall clock where a kernel call wants an absolute CLOCK_REALTIME time. */
#ifndef SL_CLOCK_H
#define SL_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t sl_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t sl_mono_ns(void) { return sl_clock_ns(CLOCK_MONOTONIC); }

static inline int64_t sl_mono_ms(void) { return sl_mono_ns() / 1000000; }

/* Milliseconds left until deadline_ms (sl_mono_ms; < 0: none): -1 for no
 * deadline, 0 once past, as poll's timeout wants it. */
static inline int sl_left_ms(int64_t deadline_ms)
{
	int64_t left;

	if (deadline_ms < 0)
		return -1;
	left = deadline_ms - sl_mono_ms();
	return left > 0 ? (int)left : 0;
}

#endif
