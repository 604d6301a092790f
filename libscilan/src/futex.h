/* futex.h — sleeping on a 32-bit word of a shared mapping and waking its
 * sleepers (shared futexes, never FUTEX_PRIVATE: the word is in a segment
 * two processes map), one word or several at once (futex_waitv).
 */
#ifndef SCILAN_FUTEX_H
#define SCILAN_FUTEX_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* The most words one sleep watches (the kernel's own limit is 128). */
#define SL_FUTEX_MAX 16

/* Sleep while *words[i] == expect[i] for every i, at most timeout_ms (>= 0):
 * the index of a word whose wake ended the sleep, or -1 with errno EAGAIN (a
 * word already differed), ETIMEDOUT, EINTR (a signal handler ran), or
 * ENOSYS when the kernel (or a seccomp filter) refuses several words. */
int sl_futex_wait(_Atomic uint32_t *const *words, const uint32_t *expect, int n, int timeout_ms);
/* Wake every sleeper on word, in any process. */
void sl_futex_wake(_Atomic uint32_t *word);
/* Can one sleep watch n words? (futex_waitv answered ENOSYS once: only 1.) */
bool sl_futex_fits(int n);

#endif
