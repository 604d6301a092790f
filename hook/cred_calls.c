/* cred_calls.c — the user-id changes of privilege-dropping servers (a root
 * master whose forked workers become another user, as nginx and vsftpd do):
 * before the change, the process withdraws its scilan listeners, since the
 * new user may not open the offers in the old user's runtime directory.
 */
#include <sys/types.h>
#include <unistd.h>
#include <dlfcn.h>

#include "hook.h"
#include "sock.h"

/* Would the effective uid after the call differ from the current one?
 * -1 arguments leave an id unchanged. */
static void before_change(uid_t new_euid)
{
	hk_enter();
	if (new_euid != (uid_t)-1 && new_euid != geteuid())
		sl_user_changing();
}

#define NEXT(name)                                              \
	static __typeof__(&name) next;                          \
	if (!next)                                              \
		*(void **)&next = dlsym(RTLD_NEXT, #name)

HK_EXPORT int setuid(uid_t uid)
{
	NEXT(setuid);
	before_change(uid);
	return next(uid);
}

HK_EXPORT int seteuid(uid_t euid)
{
	NEXT(seteuid);
	before_change(euid);
	return next(euid);
}

HK_EXPORT int setreuid(uid_t ruid, uid_t euid)
{
	NEXT(setreuid);
	before_change(euid);
	return next(ruid, euid);
}

HK_EXPORT int setresuid(uid_t ruid, uid_t euid, uid_t suid)
{
	NEXT(setresuid);
	before_change(euid);
	return next(ruid, euid, suid);
}
