/* cred_calls.c — the user-id changes of privilege-dropping servers (a root
 * master whose forked workers become another user, as nginx and vsftpd do):
 * before the change, the process withdraws its listeners' registry entries,
 * since the new user may not open the offer files in the old user's runtime
 * directory.  Their rendezvous stays: offers reach it as descriptors.  Root
 * giving itself up for good also hands the new user the sockets it made that
 * nothing listens on yet, which the new user will (varnish's worker).
 */
#include <sys/types.h>
#include <unistd.h>

#include "hook.h"
#include "preload_api.h"

/* e: the effective uid now; ruid, euid, suid: the real, effective and saved
 * uids after the call, as the caller computed them from getresuid (-1
 * arguments leave an id unchanged). */
static void before_change(uid_t e, uid_t ruid, uid_t euid, uid_t suid)
{
	hk_enter();
	if (euid != e)
		sl_user_changing();
	/* For good: no id of the process root any more.  A step aside (seteuid
	 * keeping the saved uid root, as varnish's master does around each
	 * privileged call) may come back, and hands nothing over. */
	if (e == 0 && ruid != 0 && euid != 0 && suid != 0)
		sl_user_leaving_root(euid);
}

static uid_t or_now(uid_t id, uid_t now)
{
	return id == (uid_t)-1 ? now : id;
}

HK_EXPORT int setuid(uid_t uid)
{
	uid_t r, e, s;

	/* Root's setuid sets all three; anyone else's the effective one. */
	if (getresuid(&r, &e, &s) == 0)
		before_change(e, e == 0 ? uid : r, uid, e == 0 ? uid : s);
	return HK_NEXT(setuid)(uid);
}

HK_EXPORT int seteuid(uid_t euid)
{
	uid_t r, e, s;

	if (getresuid(&r, &e, &s) == 0)
		before_change(e, r, or_now(euid, e), s);
	return HK_NEXT(seteuid)(euid);
}

HK_EXPORT int setreuid(uid_t ruid, uid_t euid)
{
	uid_t r, e, s;

	/* The saved uid follows the new effective one when the real one is set
	 * or the effective one set to other than the real one (setreuid(2)). */
	if (getresuid(&r, &e, &s) == 0) {
		uid_t ne = or_now(euid, e);
		bool saved_follows = ruid != (uid_t)-1 || (euid != (uid_t)-1 && euid != r);

		before_change(e, or_now(ruid, r), ne, saved_follows ? ne : s);
	}
	return HK_NEXT(setreuid)(ruid, euid);
}

HK_EXPORT int setresuid(uid_t ruid, uid_t euid, uid_t suid)
{
	uid_t r, e, s;

	if (getresuid(&r, &e, &s) == 0)
		before_change(e, or_now(ruid, r), or_now(euid, e), or_now(suid, s));
	return HK_NEXT(setresuid)(ruid, euid, suid);
}
