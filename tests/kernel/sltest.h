/* sltest.h — what sltest's files (sltest.c and sltest_*.c) share: the two
 * nodes and the mock's link switch, the links' debugfs counters, a child's
 * change of uid, the SIGBUS escape, and every test's entry point.
 */
#ifndef SLTEST_H
#define SLTEST_H

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* One failure count and one table of listeners for all of sltest's files:
 * guest.h and slring.h declare them extern, sltest.c defines them. */
#define GUEST_MULTI_FILE
#include "slring.h"

#define NODE_A "/dev/scilan0"
#define NODE_B "/dev/scilan1"
#define MOCK_LINK "/sys/kernel/debug/ntb_mock/link"
#define SL_MAX_FDS 600

/* A debugfs counter of the link ("endpoints", "slices_busy"). */
static inline int settle(int link, const char *key, long want)
{
	return settle_for(link, key, want, 3000);
}

/* A forked child becomes this unprivileged uid (and gid); 0 or -1. */
static inline int become_uid(uid_t uid)
{
	return setgroups(0, NULL) == 0 && setgid(uid) == 0 && setuid(uid) == 0 ? 0 : -1;
}

/* Where a test that touches zapped mappings jumps back to on SIGBUS
 * (sltest.c): sigsetjmp(sigbus_jmp, 1), then signal(SIGBUS, sigbus_handler). */
extern sigjmp_buf sigbus_jmp;
void sigbus_handler(int sig);

/* The tests (sltest.c runs them in its own order); each prints its
 * "TEST <name> PASS|FAIL ..." line. */
/* sltest_ring.c: data over the ring protocol. */
void test_pingpong(const char *name, long spin, int iters);
void test_stream(long spin, size_t total);
/* sltest_hostile.c: bad arguments and mappings. */
void test_hostile(void);
/* sltest_lifetime.c: what endpoints hold and give back. */
void test_killed(void);
void test_exhaustion(void);
void test_churn(int n);
void test_backlog(void);
void test_unload_busy_mapped(void);
void test_abandon(void);
/* sltest_link.c: the link cut under connections. */
void test_linkdown(void);
void test_zap_inodes(void);
void test_sink_private(void);
void test_flap(int flaps);
/* sltest_sets.c: set endpoints. */
void test_sets(void);
void test_sets_linkdown(void);
void test_sets_per_uid(void);
void test_sets_per_uid_userns(void);

#endif
