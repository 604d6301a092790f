/* sandbox_calls.c — a process confining itself with seccomp (OpenSSH's
 * pre-authentication child) may be refused what the rings need (polls of
 * more descriptors than its RLIMIT_NOFILE, recv, membarrier): before the
 * filter is installed, its connections move to kernel TCP (bypass.c).
 */
#include <linux/seccomp.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "preload_api.h"
#include "hook.h"

static bool leave_one(int fd, struct sl_sock *s)
{
	(void)fd;
	if (sl_sock_on_rings(s) && s->seg && !sl_fell_back(s) && !atomic_load(&s->reset))
		sl_bypass_leave(s, SL_FB_SANDBOX);
	return false;
}

void hk_before_seccomp(void)
{
	hk_enter();
	sl_log_before_sandbox();
	sl_sock_any_fd(leave_one);
}

HK_EXPORT int prctl(int option, ...)
{
	unsigned long a[4];
	va_list ap;

	va_start(ap, option);
	for (int i = 0; i < 4; i++)
		a[i] = va_arg(ap, unsigned long);
	va_end(ap);
	if (option == PR_SET_SECCOMP && a[0] == SECCOMP_MODE_FILTER)
		hk_before_seccomp();
	return HK_NEXT(prctl)(option, a[0], a[1], a[2], a[3]);
}
