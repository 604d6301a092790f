/* bell_fd.c — every wake-up pipe that comes from another process passes
 * here before use: checked to be a pipe without asking any file system, and
 * reopened into an open file description that only we hold.
 *
 * Why a description of our own: the sender keeps the one it passed, and
 * file status flags belong to the description, so it could clear
 * O_NONBLOCK on it at any time and our drain would block in read(); ours,
 * opened read-write, also makes us a reader, so ringing the pipe never
 * raises SIGPIPE.  Why no file system: F_GETPIPE_SZ and the /proc link of
 * an anonymous pipe ("pipe:[ino]", pipefs's own name) are answered by the
 * kernel alone, where an fstat or an open of a FIFO on a FUSE mount waits
 * for its daemon.
 */
#include "runtime/bell_fd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/config.h"
#include "runtime/fdinfo.h"
#include "runtime/own_fd.h"
#include "runtime/sys.h"

#define ANON_PIPE "pipe:["

/* The mount fd's file is on; -1 unknown. */
static int mount_of(int fd)
{
	struct sl_fdinfo info;

	return sl_fdinfo_of(0, fd, &info) < 0 ? -1 : (int)info.mnt_id;
}

/* Our runtime directory's mount, where our named offers' FIFOs live; -1 if none. */
static int rundir_mount(void)
{
	static _Atomic int known; /* mount id + 1; 0 not looked up yet */
	int k = atomic_load_explicit(&known, memory_order_relaxed), dir, id = -1;

	if (k)
		return k - 1;
	if (sl_config()->rundir[0] &&
	    (dir = open(sl_config()->rundir, O_PATH | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		id = mount_of(dir);
		sl_sys.close(dir);
	}
	if (id >= 0)
		atomic_store_explicit(&known, id + 1, memory_order_relaxed);
	return id;
}

/* A named FIFO: our own user's wherever it is (its FIFOs are in its runtime
 * directory, which may not be ours: another SCILAN_RUNDIR), anyone's on the
 * mount of our runtime directory, which we use anyway; a stranger's
 * elsewhere may be on a mount that never answers the open below. */
static bool named_fifo_ok(int fd, enum sl_bell_from from)
{
	int mnt;

	if (from == SL_BELL_OUR_USER)
		return true;
	mnt = mount_of(fd);
	return mnt >= 0 && mnt == rundir_mount();
}

int sl_bell_reopen(int fd, enum sl_bell_from from)
{
	char path[48], link[sizeof(ANON_PIPE)];
	ssize_t n;

	if (fd < 0) {
		errno = EBADF;
		return -1;
	}
	/* Pipes and FIFOs only: a file, a socket, /dev/zero fail here. */
	if (sl_sys.fcntl(fd, F_GETPIPE_SZ) <= 0) {
		errno = EINVAL;
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	/* Our own user's FIFOs may be anywhere (named_fifo_ok): no need to
	 * tell them from anonymous pipes, which costs a connect or an accept
	 * a system call per bell.  A stranger's: only as long as the anonymous
	 * name's start, since a path always begins with '/' and so no file of
	 * any file system reads as one. */
	if (from != SL_BELL_OUR_USER) {
		n = readlink(path, link, sizeof(link) - 1);
		if (n < 0)
			return -1;
		link[n] = '\0';
		if (strcmp(link, ANON_PIPE) != 0 && !named_fifo_ok(fd, from)) {
			errno = EPERM;
			return -1;
		}
	}
	/* The same pipe, through a description of our own.  Another user's
	 * pipe opens only if its maker allowed it (sl_anon_bell's mode). */
	return open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
}

int sl_bell_adopt(int fd, enum sl_bell_from from)
{
	int ours = sl_bell_reopen(fd, from), err = errno;

	if (fd >= 0)
		sl_sys.close(fd);
	errno = err;
	return sl_own_fd(ours);
}
