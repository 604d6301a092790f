/* cred_calls.c — the user-id changes of privilege-dropping servers (a root
 * master whose forked workers become another user, as nginx and vsftpd do):
 * before the change, the process withdraws its listeners' registry entries,
 * since the new user may not open the offer files in the old user's runtime
 * directory.  Their rendezvous stays: offers reach it as descriptors.
 */
#include <sys/types.h>
#include <unistd.h>

#include "hook.h"
#include "preload_api.h"

/* Would the effective uid after the call differ from the current one?
 * -1 arguments leave an id unchanged. */
static void before_change(uid_t new_euid)
{
	hk_enter();
	if (new_euid != (uid_t)-1 && new_euid != geteuid())
		sl_user_changing();
}

HK_EXPORT int setuid(uid_t uid)
{
	before_change(uid);
	return HK_NEXT(setuid)(uid);
}

HK_EXPORT int seteuid(uid_t euid)
{
	before_change(euid);
	return HK_NEXT(seteuid)(euid);
}

HK_EXPORT int setreuid(uid_t ruid, uid_t euid)
{
	before_change(euid);
	return HK_NEXT(setreuid)(ruid, euid);
}

HK_EXPORT int setresuid(uid_t ruid, uid_t euid, uid_t suid)
{
	before_change(euid);
	return HK_NEXT(setresuid)(ruid, euid, suid);
}
