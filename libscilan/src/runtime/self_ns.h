/* self_ns.h — the pid namespace this process is in, as the kernel names it
 * (self_ns.c): what another process must share for our pids to mean us.
 */
#ifndef SCILAN_SELF_NS_H
#define SCILAN_SELF_NS_H

#include <stdint.h>

/* The inode of our pid namespace (/proc/self/ns/pid), 0 if unknown.  Read
 * once per process image and fork: a child forked after unshare(CLONE_NEWPID)
 * is in the new namespace. */
uint32_t sl_self_pidns(void);

#endif
