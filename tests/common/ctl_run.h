/* ctl_run.h — what the scilan_ctl tests share (test_ctl*.c): run the
 * scilan_ctl of this build (../../bin/scilan_ctl from the test binary) as a
 * child with its exit status, stdout and stderr; write a file; ask jq whether
 * a JSON output is valid and says what it should.
 */
#ifndef SCILAN_CTL_RUN_H
#define SCILAN_CTL_RUN_H

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define CTL_OUT_MAX 262144

struct ctl_run {
	int status;               /* exit status, or 128 + signal */
	char out[CTL_OUT_MAX];    /* stdout */
	char err[CTL_OUT_MAX];    /* stderr */
};

static inline const char *ctl_path(void)
{
	static char path[PATH_MAX];
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	cr_assert_gt(n, 0, "readlink /proc/self/exe: %s", strerror(errno));
	self[n] = '\0';
	/* <build>/tests/integration/test_ctl -> <build>/bin/scilan_ctl */
	snprintf(path, sizeof(path), "%s/../../bin/scilan_ctl", dirname(self));
	cr_assert_eq(access(path, X_OK), 0, "%s: %s (make tools)", path, strerror(errno));
	return path;
}

static inline void ctl_slurp(const char *path, char *buf)
{
	FILE *f = fopen(path, "re");
	size_t n;

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	n = fread(buf, 1, CTL_OUT_MAX - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* Run argv[0] (a program on $PATH or a path) with the NULL-terminated argv,
 * stdin from in_path (NULL: /dev/null), stdout and stderr into files of dir;
 * the exit status, or 128 + signal. */
static inline int ctl_spawn(const char *dir, const char *const *argv, const char *in_path, char *out, char *err)
{
	char outp[PATH_MAX], errp[PATH_MAX];
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int st;

	snprintf(outp, sizeof(outp), "%s/stdout", dir);
	snprintf(errp, sizeof(errp), "%s/stderr", dir);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, in_path ? in_path : "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_addopen(&fa, 2, errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_eq(errno = posix_spawnp(&pid, argv[0], &fa, NULL, (char **)argv, environ), 0, "spawn %s: %s",
		     argv[0], strerror(errno));
	posix_spawn_file_actions_destroy(&fa);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	if (out)
		ctl_slurp(outp, out);
	if (err)
		ctl_slurp(errp, err);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* scilan_ctl with the NULL-terminated arguments (at most 30); output files in dir. */
static inline struct ctl_run *ctl_runv(const char *dir, const char *const *args)
{
	static struct ctl_run r;
	const char *argv[32] = { ctl_path() };
	int argc = 1;

	for (const char *const *a = args; *a && argc < 31; a++)
		argv[argc++] = *a;
	argv[argc] = NULL;
	r.status = ctl_spawn(dir, argv, NULL, r.out, r.err);
	return &r;
}

static inline void ctl_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

/* Is json valid JSON for which the jq filter is true (jq -e)? */
static inline bool ctl_jq(const char *dir, const char *json, const char *filter)
{
	char path[PATH_MAX], err[CTL_OUT_MAX];
	const char *argv[] = { "jq", "-e", filter, NULL };
	int rc;

	snprintf(path, sizeof(path), "%s/jq-input.json", dir);
	ctl_write_file(path, json);
	rc = ctl_spawn(dir, argv, path, NULL, err);
	cr_assert_neq(rc, 127, "jq is needed (scripts/deps.sh)");
	return rc == 0;
}

#endif
