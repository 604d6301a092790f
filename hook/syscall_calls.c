/* syscall_calls.c — syscall(3), the generic entry some programs use instead
 * of libc's wrappers: the descriptor-closing calls go through the hook (libuv,
 * so every Node.js program, closes each descriptor with syscall(SYS_close)),
 * and so do fcntl and ioctl, which set O_NONBLOCK, and setsockopt, which sets
 * the timeouts a sleep trusts; the data calls on a socket of ours go
 * through the hook's functions; every other number goes to libc unchanged.
 */
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hook.h"

/* Does data call `number` name a descriptor of ours (a socket the library
 * keeps state for, or an epoll set the hook emulates)? */
static bool data_call_on_ours(long number, const long a[6])
{
	if (number == SYS_epoll_ctl)
		return sl_sock_get((int)a[2]) || hk_epoll_known((int)a[0]);
	if (number == SYS_splice && sl_sock_get((int)a[2]))
		return true;
	return sl_sock_get((int)a[0]) != NULL;
}

/* The hook's own function for data call `number`, with syscall(2)'s
 * arguments. */
static long data_call(long number, const long a[6])
{
	switch (number) {
	case SYS_read:
		return read((int)a[0], (void *)a[1], (size_t)a[2]);
	case SYS_write:
		return write((int)a[0], (const void *)a[1], (size_t)a[2]);
	case SYS_readv:
		return readv((int)a[0], (const struct iovec *)a[1], (int)a[2]);
	case SYS_writev:
		return writev((int)a[0], (const struct iovec *)a[1], (int)a[2]);
	case SYS_recvfrom:
		return recvfrom((int)a[0], (void *)a[1], (size_t)a[2], (int)a[3], (struct sockaddr *)a[4],
				(socklen_t *)a[5]);
	case SYS_sendto:
		return sendto((int)a[0], (const void *)a[1], (size_t)a[2], (int)a[3], (const struct sockaddr *)a[4],
			      (socklen_t)a[5]);
	case SYS_recvmsg:
		return recvmsg((int)a[0], (struct msghdr *)a[1], (int)a[2]);
	case SYS_sendmsg:
		return sendmsg((int)a[0], (const struct msghdr *)a[1], (int)a[2]);
	case SYS_recvmmsg:
		return recvmmsg((int)a[0], (struct mmsghdr *)a[1], (unsigned int)a[2], (int)a[3],
				(struct timespec *)a[4]);
	case SYS_sendmmsg:
		return sendmmsg((int)a[0], (struct mmsghdr *)a[1], (unsigned int)a[2], (int)a[3]);
	case SYS_sendfile:
		return sendfile((int)a[0], (int)a[1], (off_t *)a[2], (size_t)a[3]);
	case SYS_splice:
		return splice((int)a[0], (loff_t *)a[1], (int)a[2], (loff_t *)a[3], (size_t)a[4], (unsigned int)a[5]);
	default: /* SYS_epoll_ctl */
		return epoll_ctl((int)a[0], (int)a[1], (int)a[2], (struct epoll_event *)a[3]);
	}
}

HK_EXPORT long syscall(long number, ...)
{
	va_list ap;
	long a[6];

	/* libc's syscall takes six arguments whatever the number; those the
	 * caller did not pass are whatever sits in their registers or on the
	 * stack, read and passed on unused, as libc itself does. */
	va_start(ap, number);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	switch (number) {
	case SYS_close:
		/* Unseen, the close would leave the connection's state under a
		 * number the kernel hands out again: the next socket there
		 * would be taken for the closed connection, and the closed one
		 * would never be released (mapping, bells, the peer's EOF). */
		return hk_close((int)a[0]);
#ifdef SYS_close_range
	case SYS_close_range:
		if (!__atomic_load_n((bool *)&hk_ready, __ATOMIC_ACQUIRE)) /* as in hk_close */
			return HK_NEXT(syscall)(number, a[0], a[1], a[2], a[3], a[4], a[5]);
		return close_range((unsigned int)a[0], (unsigned int)a[1], (int)a[2]);
#endif
#ifdef SYS_seccomp
	case SYS_seccomp:
		/* A filter may refuse what the rings need (sandbox_calls.c). */
		if (a[0] == SECCOMP_SET_MODE_FILTER)
			hk_before_seccomp();
		return HK_NEXT(syscall)(number, a[0], a[1], a[2], a[3], a[4], a[5]);
#endif
	case SYS_fcntl:
		/* The hint of O_NONBLOCK the data path trusts (fd_calls.c). */
		return fcntl((int)a[0], (int)a[1], a[2]);
	case SYS_ioctl:
		return ioctl((int)a[0], (unsigned long)a[1], (void *)a[2]);
	case SYS_setsockopt:
		/* SO_RCVTIMEO and SO_SNDTIMEO, which a sleep trusts (wait.c). */
		return setsockopt((int)a[0], (int)a[1], (int)a[2], (const void *)a[3], (socklen_t)a[4]);
	case SYS_read:
	case SYS_write:
	case SYS_readv:
	case SYS_writev:
	case SYS_recvfrom:
	case SYS_sendto:
	case SYS_recvmsg:
	case SYS_sendmsg:
	case SYS_recvmmsg:
	case SYS_sendmmsg:
	case SYS_sendfile:
	case SYS_splice:
	case SYS_epoll_ctl:
		/* On a socket of ours, through the hook: a ring connection's
		 * bytes are in its rings, and a plain one's reads must not take
		 * the peer's switch marker (promotion) for data. */
		if (!data_call_on_ours(number, a))
			return HK_NEXT(syscall)(number, a[0], a[1], a[2], a[3], a[4], a[5]);
		return data_call(number, a);
	default:
		return HK_NEXT(syscall)(number, a[0], a[1], a[2], a[3], a[4], a[5]);
	}
}
