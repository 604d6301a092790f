/* idle.h — the work a thread does when it is about to wait for its peer
 * (a recv that finds the ring empty, a poll or epoll wait that would block),
 * kept off the paths whose latency the program sees (idle.c).
 */
#ifndef SCILAN_IDLE_H
#define SCILAN_IDLE_H

/* Cheap when there is nothing to do: a few relaxed loads. */
void sl_about_to_wait(void);
/* The spin is over and the thread sleeps in the kernel.  A grown process
 * does its chores now (-1).  A young one sleeps at most the ms returned, so
 * that one asleep since its first connection still makes its statistics
 * file soon after (-1: no cap wanted). */
int sl_about_to_sleep(void);

#endif
