/* test_run.c — scilan_run as users run it (the build's, found from
 * /proc/self/exe as ../../bin/scilan_run): --profile sets SCILAN_PROFILE for
 * the command, and an unknown profile is a usage error. */
#include <criterion/criterion.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Run `scilan_run args` through sh; its stdout (and stderr if err) in out;
 * the exit status.  A build without the hook (the sanitizer builds) preloads
 * /dev/null, which ld.so skips with a complaint on stderr. */
static int run(const char *args, bool err, char *out, size_t size)
{
	char lib[PATH_MAX + 32];
	char self[PATH_MAX], cmd[PATH_MAX * 2];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	size_t len = 0;
	FILE *p;
	int st;

	cr_assert_gt(n, 0);
	self[n] = '\0';
	dirname(self);
	snprintf(lib, sizeof(lib), "%s/../../lib/libscilan_preload.so", self);
	if (access(lib, R_OK) != 0)
		setenv("SCILAN_PRELOAD_LIB", "/dev/null", 1);
	snprintf(cmd, sizeof(cmd), "%s/../../bin/scilan_run %s %s", self, args, err ? "2>&1" : "2>/dev/null");
	p = popen(cmd, "r");
	cr_assert_not_null(p, "popen: %s", strerror(errno));
	while (len + 1 < size && (n = (ssize_t)fread(out + len, 1, size - 1 - len, p)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

Test(run, profile_is_passed_to_the_command)
{
	char out[4096];

	unsetenv("SCILAN_PROFILE");
	cr_assert_eq(run("--profile low-cpu /usr/bin/printenv SCILAN_PROFILE", false, out, sizeof(out)), 0, "%s", out);
	cr_expect_str_eq(out, "low-cpu\n");
	cr_assert_eq(run("-P latency /usr/bin/printenv SCILAN_PROFILE", false, out, sizeof(out)), 0, "%s", out);
	cr_expect_str_eq(out, "latency\n");
}

Test(run, unknown_profile_is_a_usage_error)
{
	char out[4096];

	cr_expect_eq(run("--profile turbo /bin/true", true, out, sizeof(out)), 2);
	cr_expect(strstr(out, "latency|balanced|low-cpu"), "%s", out);
}
