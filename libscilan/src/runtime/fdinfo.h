/* fdinfo.h — what the kernel says of a descriptor (fdinfo.c): its mount and
 * inode, read from procfs without any call into the file's own file system.
 */
#ifndef SCILAN_FDINFO_H
#define SCILAN_FDINFO_H

#include <sys/types.h>

struct sl_fdinfo {
	long mnt_id;
	unsigned long long ino; /* 0 when the kernel does not say (before Linux 5.14) */
};

/* Descriptor fd of process pid (0: this process), from /proc/PID/fdinfo/FD.
 * 0, or -1 with errno (ENOENT: the process or the descriptor is gone). */
int sl_fdinfo_of(pid_t pid, int fd, struct sl_fdinfo *out);

#endif
