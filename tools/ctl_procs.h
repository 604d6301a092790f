/* ctl_procs.h — the process behind a statistics file as this scilan_ctl sees
 * it (ctl_procs.c): found in our /proc by the pid namespace and pid the file
 * names, with its network namespace and the container its control group
 * names.
 */
#ifndef SCILAN_CTL_PROCS_H
#define SCILAN_CTL_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ctl_proc {
	int pid;            /* as our /proc numbers it */
	uint32_t netns;     /* inode of its network namespace, 0 not known */
	char container[80]; /* "libpod 0123456789ab", "pod <uid> 0123456789ab", or "" */
};

/* The pid namespace this process is in (inode), 0 if unknown. */
uint32_t ctl_own_pidns(void);
/* Find the process that is ns_pid in pid namespace pidns among those our
 * /proc shows: false when none is (another container's, seen from inside
 * one, or gone).  The first call reads /proc once; ctl_procs_forget drops
 * that reading (for --watch). */
bool ctl_proc_find(uint32_t pidns, int ns_pid, struct ctl_proc *out);
void ctl_procs_forget(void);
/* The container a control group path names (a runtime's scope or
 * directory), or "" (exposed for the tests). */
void ctl_container_of_cgroup(const char *path, char *out, size_t size);

#endif
