/* test_peer_uid.c — unit tests of what a reported uid proves (peer_uid.c):
 * the overflow uid names one user only where our user namespace maps every
 * uid; a namespace that maps a few makes it anyone's. */
#include <criterion/criterion.h>

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/peer_uid.h"

#define OVERFLOW_UID 65534

static bool in_initial_user_namespace(void)
{
	char map[128] = "";
	FILE *f = fopen("/proc/self/uid_map", "r");

	if (!f)
		return false;
	if (!fgets(map, sizeof(map), f))
		map[0] = '\0';
	fclose(f);
	return strstr(map, "4294967295") != NULL;
}

Test(peer_uid, every_uid_names_one_user_where_all_are_mapped)
{
	if (!in_initial_user_namespace())
		cr_skip_test("not in a user namespace that maps every uid");
	cr_assert(sl_uids_name_users(OVERFLOW_UID, OVERFLOW_UID), "the real nobody is one user here");
	cr_assert(sl_uid_may_speak_for(OVERFLOW_UID, OVERFLOW_UID));
	cr_assert(sl_uid_may_speak_for(0, 1000), "root stands in for anyone");
	cr_assert_not(sl_uid_may_speak_for(1000, 1001));
}

/* In a child: a user namespace mapping its root alone (the child writes
 * its own map, as an unprivileged process may). */
static int check_in_small_namespace(void)
{
	uid_t outside = geteuid(); /* inside, unmapped until the map is written */
	char map[32];
	int fd;

	if (unshare(CLONE_NEWUSER) < 0)
		return 10;
	fd = open("/proc/self/setgroups", O_WRONLY);
	if (fd >= 0) {
		(void)!write(fd, "deny", 4);
		close(fd);
	}
	snprintf(map, sizeof(map), "0 %d 1\n", (int)outside);
	fd = open("/proc/self/uid_map", O_WRONLY);
	if (fd < 0 || write(fd, map, strlen(map)) != (ssize_t)strlen(map))
		return 11;
	close(fd);
	if (sl_uids_name_users(OVERFLOW_UID, 0) || sl_uids_name_users(0, OVERFLOW_UID))
		return 1;
	if (!sl_uids_name_users(0, 1000))
		return 2;
	if (sl_uids_name_users(OVERFLOW_UID, OVERFLOW_UID))
		return 3;
	return 0;
}

Test(peer_uid, overflow_uid_names_no_one_where_uids_are_unmapped)
{
	int status;
	pid_t kid = fork();

	cr_assert_geq(kid, 0);
	if (kid == 0)
		_exit(check_in_small_namespace());
	cr_assert_eq(waitpid(kid, &status, 0), kid);
	cr_assert(WIFEXITED(status), "child died");
	if (WEXITSTATUS(status) >= 10)
		cr_skip_test("cannot make a user namespace here (step %d)", WEXITSTATUS(status));
	cr_assert_eq(WEXITSTATUS(status), 0,
		     "child: %d (1: the overflow uid named one user beside root, 2: mapped uids did not, 3: two "
		     "overflow uids did)",
		     WEXITSTATUS(status));
}
