/* testing.h — the library's two knobs for tests that play a hostile peer
 * (defined where they act); not part of the public API (scilan.h) and not
 * exported by libscilan.so.  Test-only code lives in tests/common.
 */
#ifndef SCILAN_TESTING_H
#define SCILAN_TESTING_H

/* How long a move to kernel TCP (bypass.c) waits for the peer on the kernel
 * socket before it resets, in ms; tests that play a hostile peer shorten it. */
extern int sl_bypass_wait_ms;

/* Nonzero: every extension of a ring's memory reservation fails as if
 * memory were exhausted (ring.c). */
extern int sl_test_reserve_fail;

#endif
