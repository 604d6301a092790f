/* self.h — this process as the library names it (self.c): its pid and fork
 * count live in socket/sock_state.h, which every layer reads; here, what the
 * process must do while it still has one thread.
 */
#ifndef SCILAN_SELF_H
#define SCILAN_SELF_H

/* The process is about to make a thread (the hook's pthread_create).  What
 * the kernel does cheaply for a process of one thread and behind an RCU
 * grace period (milliseconds) for one of several is done now: the
 * descriptor table grown for ours, the membarrier registration. */
void sl_before_threads(void);
/* The hook is loading: what every connection needs of the process and only
 * /proc says (its start time and pid namespace, holders.c) is learnt now,
 * where the first look into /proc costs the exec some 40 us, not the first
 * connection's reply; so is pidfd_getfd's reach.  Not the network
 * namespace, which the process may still leave (unshare). */
void sl_self_at_load(void);

#endif
