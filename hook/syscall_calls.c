/* syscall_calls.c — syscall(3), the generic entry some programs use instead
 * of libc's wrappers: the descriptor-closing calls go through the hook (libuv,
 * so every Node.js program, closes each descriptor with syscall(SYS_close)),
 * and so do fcntl and ioctl, which set O_NONBLOCK, and setsockopt, which sets
 * the timeouts a sleep trusts; the data calls go to libc unchanged, but keep
 * a plain connection off promotion; every other number goes to libc
 * unchanged.
 */
#include <fcntl.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hook.h"

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
		/* Past the hook, as before; but a plain connection used this way
		 * never moves onto the rings (promotion): its calls would not be
		 * counted, nor cross the seam. */
		hk_promote_forbid_fd((int)a[0]);
		if (number == SYS_splice)
			hk_promote_forbid_fd((int)a[2]);
		return HK_NEXT(syscall)(number, a[0], a[1], a[2], a[3], a[4], a[5]);
	case SYS_epoll_ctl:
		if (a[1] != EPOLL_CTL_DEL)
			hk_promote_forbid_fd((int)a[2]);
		return HK_NEXT(syscall)(number, a[0], a[1], a[2], a[3], a[4], a[5]);
	default:
		return HK_NEXT(syscall)(number, a[0], a[1], a[2], a[3], a[4], a[5]);
	}
}
