/* new_fd_calls.c — the calls that create descriptors outside libscilan (the
 * open family, mkstemp/fopen/tmpfile, pipes, socketpair, eventfd, memfd,
 * signalfd, timerfd, inotify): a number they return that our tables still
 * hold was closed behind the hook's back (syscall(SYS_close), io_uring's
 * close), so what the tables say about it is stale and is released.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "hook.h"
#include "preload_api.h"

#ifndef __OPEN_NEEDS_MODE
#define __OPEN_NEEDS_MODE(fl) (((fl) & O_CREAT) || ((fl) & __O_TMPFILE) == __O_TMPFILE)
#endif

/* Our own text, from the linker: the library's own opens (a bell, the stats
 * file, a registry entry) also come through these wrappers, sometimes with a
 * library lock held that releasing a connection takes again.  Those numbers
 * are left for the program's next creating call to find. */
extern const char __ehdr_start[] __attribute__((visibility("hidden")));
extern const char etext[] __attribute__((visibility("hidden")));

static bool from_library(const void *ret)
{
	return (const char *)ret >= __ehdr_start && (const char *)ret < etext;
}

void hk_fd_reused(int fd)
{
	if (fd < 0 || !(sl_sock_get(fd) || hk_epoll_known(fd)))
		return;
	sl_debug("fd %d was closed behind the hook's back (a raw close?): its stale state is released", fd);
	/* What our standard stream holds was written for the connection. */
	hk_std_stream_before_change(fd);
	hk_epoll_forget_fd(fd);
	sl_sock_release_stale(fd);
	hk_std_stream_after_change(fd);
}

static int created(int fd, const void *ret)
{
	if (fd >= 0 && !from_library(ret))
		hk_fd_reused(fd);
	return fd;
}

static int created2(int r, const int fds[2], const void *ret)
{
	if (r == 0 && !from_library(ret)) {
		hk_fd_reused(fds[0]);
		hk_fd_reused(fds[1]);
	}
	return r;
}

static FILE *created_file(FILE *f, const void *ret)
{
	if (f)
		created(fileno(f), ret);
	return f;
}

#define RET __builtin_return_address(0)

/* A call of the program's that failed for want of descriptors is made once
 * more after agreed offers gave back the segment descriptors they still
 * held (sl_reclaim_descriptors).  Not the library's own calls. */
#define RETRY_EMFILE(failed, expr)                                                                   \
	({                                                                                           \
		__typeof__(expr) r_ = (expr);                                                        \
		if (failed && errno == EMFILE && !from_library(RET) && sl_reclaim_descriptors()) \
			r_ = (expr);                                                                 \
		r_;                                                                                  \
	})
#define RETRY_INT(expr) RETRY_EMFILE(r_ < 0, expr)
#define RETRY_FILE(expr) RETRY_EMFILE(!r_, expr)

#define OPEN_MODE(flags, mode)                                 \
	do {                                                   \
		if (__OPEN_NEEDS_MODE(flags)) {                \
			va_list ap_;                           \
			va_start(ap_, flags);                  \
			mode = va_arg(ap_, mode_t);            \
			va_end(ap_);                           \
		}                                              \
	} while (0)

HK_EXPORT int open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	OPEN_MODE(flags, mode);
	return created(RETRY_INT(HK_NEXT(open)(path, flags, mode)), RET);
}

HK_EXPORT int open64(const char *path, int flags, ...)
{
	mode_t mode = 0;

	OPEN_MODE(flags, mode);
	return created(RETRY_INT(HK_NEXT(open64)(path, flags, mode)), RET);
}

HK_EXPORT int openat(int dir, const char *path, int flags, ...)
{
	mode_t mode = 0;

	OPEN_MODE(flags, mode);
	return created(RETRY_INT(HK_NEXT(openat)(dir, path, flags, mode)), RET);
}

HK_EXPORT int openat64(int dir, const char *path, int flags, ...)
{
	mode_t mode = 0;

	OPEN_MODE(flags, mode);
	return created(RETRY_INT(HK_NEXT(openat64)(dir, path, flags, mode)), RET);
}

/* Fortified builds call these when the flags need no mode. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dir, const char *path, int flags);
int __openat64_2(int dir, const char *path, int flags);

HK_EXPORT int __open_2(const char *path, int flags)
{
	return created(RETRY_INT(HK_NEXT(__open_2)(path, flags)), RET);
}

HK_EXPORT int __open64_2(const char *path, int flags)
{
	return created(RETRY_INT(HK_NEXT(__open64_2)(path, flags)), RET);
}

HK_EXPORT int __openat_2(int dir, const char *path, int flags)
{
	return created(RETRY_INT(HK_NEXT(__openat_2)(dir, path, flags)), RET);
}

HK_EXPORT int __openat64_2(int dir, const char *path, int flags)
{
	return created(RETRY_INT(HK_NEXT(__openat64_2)(dir, path, flags)), RET);
}

HK_EXPORT int creat(const char *path, mode_t mode)
{
	return created(RETRY_INT(HK_NEXT(creat)(path, mode)), RET);
}

HK_EXPORT int creat64(const char *path, mode_t mode)
{
	return created(RETRY_INT(HK_NEXT(creat64)(path, mode)), RET);
}

/* glibc opens these files with internal calls no preload sees. */
HK_EXPORT int mkstemp(char *tmpl)
{
	return created(HK_NEXT(mkstemp)(tmpl), RET);
}

HK_EXPORT int mkstemp64(char *tmpl)
{
	return created(HK_NEXT(mkstemp64)(tmpl), RET);
}

HK_EXPORT int mkostemp(char *tmpl, int flags)
{
	return created(HK_NEXT(mkostemp)(tmpl, flags), RET);
}

HK_EXPORT int mkstemps(char *tmpl, int suffixlen)
{
	return created(HK_NEXT(mkstemps)(tmpl, suffixlen), RET);
}

HK_EXPORT int mkostemps(char *tmpl, int suffixlen, int flags)
{
	return created(HK_NEXT(mkostemps)(tmpl, suffixlen, flags), RET);
}

HK_EXPORT FILE *fopen(const char *path, const char *mode)
{
	return created_file(RETRY_FILE(HK_NEXT(fopen)(path, mode)), RET);
}

HK_EXPORT FILE *fopen64(const char *path, const char *mode)
{
	return created_file(RETRY_FILE(HK_NEXT(fopen64)(path, mode)), RET);
}

HK_EXPORT FILE *tmpfile(void)
{
	return created_file(HK_NEXT(tmpfile)(), RET);
}

HK_EXPORT FILE *tmpfile64(void)
{
	return created_file(HK_NEXT(tmpfile64)(), RET);
}

HK_EXPORT int pipe(int fds[2])
{
	return created2(RETRY_INT(HK_NEXT(pipe)(fds)), fds, RET);
}

HK_EXPORT int pipe2(int fds[2], int flags)
{
	return created2(RETRY_INT(HK_NEXT(pipe2)(fds, flags)), fds, RET);
}

HK_EXPORT int socketpair(int domain, int type, int protocol, int fds[2])
{
	return created2(RETRY_INT(HK_NEXT(socketpair)(domain, type, protocol, fds)), fds, RET);
}

HK_EXPORT int eventfd(unsigned int initval, int flags)
{
	return created(RETRY_INT(HK_NEXT(eventfd)(initval, flags)), RET);
}

HK_EXPORT int memfd_create(const char *name, unsigned int flags)
{
	return created(RETRY_INT(HK_NEXT(memfd_create)(name, flags)), RET);
}

HK_EXPORT int signalfd(int fd, const sigset_t *mask, int flags)
{
	int r = HK_NEXT(signalfd)(fd, mask, flags);

	/* fd >= 0 changes the mask of an existing signalfd. */
	return fd < 0 ? created(r, RET) : r;
}

HK_EXPORT int timerfd_create(int clock, int flags)
{
	return created(RETRY_INT(HK_NEXT(timerfd_create)(clock, flags)), RET);
}

HK_EXPORT int inotify_init(void)
{
	return created(RETRY_INT(HK_NEXT(inotify_init)()), RET);
}

HK_EXPORT int inotify_init1(int flags)
{
	return created(RETRY_INT(HK_NEXT(inotify_init1)(flags)), RET);
}
