/* futex.c — the futex system calls the shm fabric sleeps and wakes with:
 * FUTEX_WAIT for one word, futex_waitv (Linux 5.16) for a poll set of
 * several, FUTEX_WAKE; shared (not private) so the key is the memfd page.
 */
#include "futex.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#ifndef FUTEX_32
#define FUTEX_32 2
/* Linux 5.16's uapi, for older headers. */
struct futex_waitv {
	uint64_t val;
	uint64_t uaddr;
	uint32_t flags;
	uint32_t __reserved;
};
#endif

/* A kernel (or a seccomp filter) without futex_waitv: sets watch one word. */
static _Atomic bool no_waitv;

bool sl_futex_fits(int n)
{
	return n >= 1 && n <= SL_FUTEX_MAX && (n == 1 || !atomic_load_explicit(&no_waitv, memory_order_relaxed));
}

static int wait_one(_Atomic uint32_t *word, uint32_t expect, int timeout_ms)
{
	struct timespec ts = { .tv_sec = timeout_ms / 1000, .tv_nsec = (long)(timeout_ms % 1000) * 1000000 };

	/* Relative timeout: FUTEX_WAIT measures it on CLOCK_MONOTONIC. */
	if (syscall(SYS_futex, word, FUTEX_WAIT, expect, &ts, NULL, 0) == 0)
		return 0;
	return -1;
}

static int wait_many(_Atomic uint32_t *const *words, const uint32_t *expect, int n, int timeout_ms)
{
	struct futex_waitv w[SL_FUTEX_MAX];
	struct timespec until;
	long r;

	for (int i = 0; i < n; i++)
		w[i] = (struct futex_waitv){ .val = expect[i], .uaddr = (uintptr_t)words[i], .flags = FUTEX_32 };
	/* futex_waitv takes an absolute time on the clock it is given. */
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	r = syscall(SYS_futex_waitv, w, (unsigned)n, 0, &until, CLOCK_MONOTONIC);
	if (r >= 0)
		return (int)r;
	if (errno == ENOSYS || errno == EPERM || errno == EACCES) {
		atomic_store_explicit(&no_waitv, true, memory_order_relaxed);
		errno = ENOSYS;
	}
	return -1;
}

int sl_futex_wait(_Atomic uint32_t *const *words, const uint32_t *expect, int n, int timeout_ms)
{
	if (n == 1)
		return wait_one(words[0], expect[0], timeout_ms);
	return wait_many(words, expect, n, timeout_ms);
}

void sl_futex_wake(_Atomic uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}
