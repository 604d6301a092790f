/* fd_calls.c — descriptor-level calls on scilan sockets: fcntl and ioctl
 * (non-blocking mode, queue sizes), the dup family (a duplicate names the same
 * connection), and vfork (run as fork: a vfork child shares our memory).
 */
#include <dlfcn.h>
#include <errno.h>
#include <linux/close_range.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>
#include <linux/sockios.h>

#include "hook.h"
#include "preload_api.h"

static void note_nonblock(int fd, bool on)
{
	struct sl_sock *s = sl_sock_get(fd);

	if (s)
		sl_sock_note_nonblock(s, on);
}

/* newfd now names what fd names, in the table too. */
static int alias_result(int fd, int newfd)
{
	struct sl_sock *s;

	if (newfd < 0 || newfd == fd)
		return newfd;
	s = sl_sock_get(fd);
	if (s && sl_sock_alias(newfd, s) < 0) {
		/* No table slot: a duplicate we cannot serve would read the kernel
		 * socket and see none of the ring's data. */
		sl_sys.close(newfd);
		errno = EMFILE;
		return -1;
	}
	/* A plain connection with two numbers stays plain: an epoll set holds
	 * it by the number it was added with, which may be the one closed
	 * before the move, and would never see it move (epoll.c). */
	if (s)
		sl_promote_stop(s);
	return newfd;
}

/* dup and fcntl(F_DUPFD*) take the lowest free number (at least the
 * one asked): one closed behind our back still has stale state, and 0-2
 * switch the standard stream as dup2 onto them does. */
static int dup_result(int fd, int newfd)
{
	if (newfd < 0)
		return newfd;
	hk_fd_reused(newfd);
	newfd = alias_result(fd, newfd);
	if (newfd >= 0)
		hk_std_stream_after_change(newfd);
	return newfd;
}

/* Would the kernel's dup2/dup3(fd, newfd, flags) fail before replacing
 * newfd?  Then newfd must be left alone: released, its connection would be
 * closed while the number still names the kernel socket, whose data the
 * peer never reads. */
static bool dup_would_fail(int fd, int newfd, int flags)
{
	struct rlimit rl;

	if (flags & ~O_CLOEXEC || fd == newfd || newfd < 0 || fcntl(fd, F_GETFD) < 0)
		return true;
	return getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (rlim_t)newfd >= rl.rlim_cur;
}

/* dup2/dup3 onto an open scilan socket closes that socket first; onto a
 * descriptor the library keeps for itself, ours moves elsewhere first (the
 * program cannot know the number is taken: bash's `exec 5<>` does this). */
static int release_target(int newfd)
{
	if (sl_sock_get(newfd) || hk_epoll_known(newfd)) {
		hk_epoll_forget_fd(newfd);
		sl_sock_release(newfd);
	}
	return sl_own_fd_evict(newfd);
}

HK_EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	unsigned long arg;
	int r;

	va_start(ap, cmd);
	arg = va_arg(ap, unsigned long); /* unused by commands without one; harmless to read on x86-64 */
	va_end(ap);
	hk_enter();
	if (sl_own_fd_is(fd)) {
		errno = EBADF; /* to the program, the library's descriptors are not open */
		return -1;
	}
	r = sl_sys.fcntl(fd, cmd, arg);
	if (r >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC))
		return dup_result(fd, r);
	if (r >= 0 && cmd == F_SETFL && sl_sock_get(fd))
		note_nonblock(fd, (arg & O_NONBLOCK) != 0);
	return r;
}

HK_EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	unsigned long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, unsigned long);
	va_end(ap);
	return fcntl(fd, cmd, arg);
}

HK_EXPORT int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;
	struct sl_sock *s;
	int r;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	hk_enter();
	s = sl_sock_connected(fd);
	/* A seam pending (a late offer out, or a fail-over before the peer's
	 * marker): the peer's bytes before its point are what there is to
	 * read, never the marker or what follows it (the FIONREAD below). */
	if (s && !sl_sock_on_rings(s) && !(req == FIONREAD && atomic_load(&s->seam_pending))) {
		/* Failed over, the peer's header not yet stripped: the kernel
		 * answers once it is, and until then nothing of the program's
		 * is there to read. */
		if (req == FIONREAD && sl_fail_over_strip_now(s)) {
			if (!arg) {
				errno = EFAULT;
				return -1;
			}
			*(int *)arg = 0;
			return 0;
		}
		s = NULL;
	}
	if (s && req == SIOCATMARK) {
		if (!arg) {
			errno = EFAULT;
			return -1;
		}
		sl_lock(&s->rx_lock);
		*(int *)arg = s->seg ? sl_urg_atmark(s) : 0;
		sl_unlock(&s->rx_lock);
		return 0;
	}
	if (s && (req == FIONREAD || req == SIOCOUTQ)) {
		int64_t n;

		if (!arg) {
			errno = EFAULT;
			return -1;
		}
		if (req == FIONREAD) {
			sl_lock(&s->rx_lock);
			n = s->seg ? sl_promote_rx_waiting(s) : 0;
			sl_unlock(&s->rx_lock);
		} else {
			/* Nothing waits in a send queue: what a send wrote sits in
			 * the peer's receive ring, delivered, as bytes the peer's
			 * kernel acknowledged; a full ring blocks the send. */
			n = 0;
		}
		*(int *)arg = n < 0 ? 0 : (int)n;
		return 0;
	}
	r = sl_sys.ioctl(fd, req, arg);
	if (r == 0 && req == FIONBIO && arg)
		note_nonblock(fd, *(int *)arg != 0);
	return r;
}

HK_EXPORT int dup(int fd)
{
	hk_enter();
	return dup_result(fd, sl_sys.dup(fd));
}

HK_EXPORT int dup2(int fd, int newfd)
{
	int r;

	hk_enter();
	if (sl_own_fd_is(fd)) {
		errno = EBADF; /* not a descriptor the program opened */
		return -1;
	}
	if (!dup_would_fail(fd, newfd, 0) && release_target(newfd) < 0)
		return -1;
	hk_std_stream_before_change(newfd);
	r = alias_result(fd, sl_sys.dup2(fd, newfd));
	hk_std_stream_after_change(newfd);
	return r;
}

HK_EXPORT int dup3(int fd, int newfd, int flags)
{
	int r;

	hk_enter();
	if (sl_own_fd_is(fd)) {
		errno = EBADF;
		return -1;
	}
	if (!dup_would_fail(fd, newfd, flags) && release_target(newfd) < 0)
		return -1;
	hk_std_stream_before_change(newfd);
	r = alias_result(fd, sl_sys.dup3(fd, newfd, flags));
	hk_std_stream_after_change(newfd);
	return r;
}

HK_EXPORT pid_t vfork(void)
{
	hk_enter();
	return fork();
}

/* close_range and closefrom close descriptors behind close()'s back: their
 * scilan sockets are released first, so no stale state can later describe
 * a file that reuses the number. */
static void release_range(unsigned int first, unsigned int last)
{
	for (unsigned int fd = first; fd <= last && fd < (1u << 20); fd++) {
		if (sl_sock_get((int)fd) || hk_epoll_known((int)fd)) {
			hk_epoll_forget_fd((int)fd);
			sl_sock_release((int)fd);
		}
		if (fd == ~0u)
			break;
	}
}

/* close_range over [first, last] around the library's own descriptors. */
static int close_range_around_own(unsigned int first, unsigned int last, int flags)
{
	int own;

	while ((own = sl_own_fd_next(first, last)) >= 0) {
		if ((unsigned int)own > first && HK_NEXT(close_range)(first, (unsigned int)own - 1, flags) < 0)
			return -1;
		if ((unsigned int)own == last)
			return 0;
		first = (unsigned int)own + 1;
	}
	return HK_NEXT(close_range)(first, last, flags);
}

HK_EXPORT int close_range(unsigned int first, unsigned int last, int flags)
{
	hk_enter();
	if (first > last)
		return HK_NEXT(close_range)(first, last, flags);
	/* CLOSE_RANGE_CLOEXEC only marks them; exec's hand-over skips those. */
	if (!(flags & CLOSE_RANGE_CLOEXEC))
		release_range(first, last);
	return close_range_around_own(first, last, flags);
}

HK_EXPORT void closefrom(int lowfd)
{
	hk_enter();
	if (lowfd < 0)
		return;
	release_range((unsigned int)lowfd, ~0u);
	if (close_range_around_own((unsigned int)lowfd, ~0u, 0) == 0)
		return;
	/* No close_range (a kernel before 5.9): one at a time, as glibc would. */
	for (long fd = lowfd, max = sysconf(_SC_OPEN_MAX); fd < max; fd++)
		if (!sl_own_fd_is((int)fd))
			sl_sys.close((int)fd);
}
