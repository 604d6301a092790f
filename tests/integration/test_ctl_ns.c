/* test_ctl_ns.c — scilan_ctl stat where processes of pid namespaces of their
 * own share one runtime directory (containers given the same directory):
 * the same pid in two namespaces keeps two statistics files, the host lists
 * both by the pids it knows them by, and a look from inside one namespace
 * (its own /proc, as a container has) lists that namespace's only.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl_run.h"
#include "testutil.h"
#include "young_helpers.h"

static char tmpdir[] = "/tmp/scilan-ctl-ns-test-XXXXXX";

/* A process that is pid 1 of a pid namespace of its own, holding an
 * accelerated pair, its statistics file made, until `hold` closes. */
struct holder {
	pid_t mid;  /* its parent, in our namespace */
	pid_t pid;  /* its pid as we see it */
	int hold_w; /* closing it ends the holder */
};

static void holder_body(int ready_w, int hold_r)
{
	int c, s;
	char b;

	if (getpid() != 1 || tu_pair_rcvbuf(AF_INET, 0, 0, &c, &s) != 0 || tu_accelerated(c) != 1 ||
	    tu_accelerated(s) != 1)
		_exit(5);
	tu_grow_up();
	if (write(ready_w, "r", 1) != 1)
		_exit(6);
	while (read(hold_r, &b, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

/* The earlier holders' hold ends: a later holder must not keep them open. */
static int holds[4], nholds;

static void holder_start(struct holder *h)
{
	int ready[2], hold[2], pidp[2];
	char b;

	cr_assert_eq(pipe(ready), 0);
	cr_assert_eq(pipe(hold), 0);
	cr_assert_eq(pipe(pidp), 0);
	h->mid = fork();
	cr_assert_geq(h->mid, 0);
	if (h->mid == 0) {
		pid_t kid;
		int st;

		close(ready[0]);
		close(hold[1]);
		close(pidp[0]);
		for (int i = 0; i < nholds; i++)
			close(holds[i]);
		if (unshare(CLONE_NEWPID) < 0)
			_exit(3);
		kid = fork();
		if (kid == 0)
			holder_body(ready[1], hold[0]);
		if (kid < 0 || write(pidp[1], &kid, sizeof(kid)) != sizeof(kid))
			_exit(4);
		close(hold[0]);
		if (waitpid(kid, &st, 0) != kid)
			_exit(7);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 8);
	}
	close(ready[1]);
	close(hold[0]);
	close(pidp[1]);
	cr_assert_eq(read(pidp[0], &h->pid, sizeof(h->pid)), (ssize_t)sizeof(h->pid), "no holder pid");
	cr_assert_eq(read(ready[0], &b, 1), 1, "the holder in its pid namespace did not get ready");
	close(pidp[0]);
	close(ready[0]);
	h->hold_w = hold[1];
	cr_assert_lt(nholds, 4);
	holds[nholds++] = hold[1];
}

static void holder_stop(struct holder *h)
{
	int st;

	close(h->hold_w);
	cr_assert_eq(waitpid(h->mid, &st, 0), h->mid);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "holder status %d", st);
}

/* scilan_ctl --json stat run by a process of h's pid namespace that has a
 * /proc of its own (a container's view); its stdout in out. */
static int ctl_inside(const struct holder *h, char *out)
{
	char path[PATH_MAX], outp[PATH_MAX];
	pid_t kid;
	int st, ns;

	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)h->pid);
	snprintf(outp, sizeof(outp), "%s/inside.out", tmpdir);
	ns = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(ns, 0, "%s: %s", path, strerror(errno));
	const char *ctl = ctl_path();
	kid = fork();
	cr_assert_geq(kid, 0);
	if (kid == 0) {
		const char *argv[] = { ctl, "--json", "stat", NULL };
		posix_spawn_file_actions_t fa;
		pid_t in;

		if (setns(ns, CLONE_NEWPID) < 0)
			_exit(3);
		in = fork(); /* the first of our children in its namespace */
		if (in == 0) {
			if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
			    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
				_exit(4);
			posix_spawn_file_actions_init(&fa);
			posix_spawn_file_actions_addopen(&fa, 1, outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
			if (posix_spawn(&in, ctl, &fa, NULL, (char **)argv, environ) != 0 || waitpid(in, &st, 0) != in)
				_exit(5);
			_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 6);
		}
		if (in < 0 || waitpid(in, &st, 0) != in)
			_exit(7);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 8);
	}
	close(ns);
	cr_assert_eq(waitpid(kid, &st, 0), kid);
	ctl_slurp(outp, out);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void setup(void)
{
	cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
	cr_assert_not_null(tu_isolated_rundir());
}

static void teardown(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "test_ctl_ns: could not remove %s\n", tmpdir);
}

TestSuite(ctl_ns, .init = setup, .fini = teardown, .timeout = 60);

static bool can_unshare_pid(void)
{
	pid_t kid = fork();
	int st;

	if (kid == 0)
		_exit(unshare(CLONE_NEWPID) == 0 ? 0 : 1);
	return kid > 0 && waitpid(kid, &st, 0) == kid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

Test(ctl_ns, same_pid_in_two_pid_namespaces_keeps_two_files)
{
	static char inside[CTL_OUT_MAX];
	struct holder a, b;
	char want[64];

	if (!can_unshare_pid())
		cr_skip_test("no new pid namespace here (needs CAP_SYS_ADMIN)");
	holder_start(&a);
	holder_start(&b);
	struct ctl_run *r = ctl_runv(tmpdir, (const char *const[]){ "--json", "stat", NULL });
	cr_assert_eq(r->status, 0, "%s", r->err);
	/* Both pid 1 where they live: each listed by the pid the host knows. */
	snprintf(want, sizeof(want), "{\"pid\":%d,", (int)a.pid);
	cr_expect(strstr(r->out, want), "the first holder (pid %d here, 1 in its namespace) is not listed: %s",
		  (int)a.pid, r->out);
	snprintf(want, sizeof(want), "{\"pid\":%d,", (int)b.pid);
	cr_expect(strstr(r->out, want), "the second holder (pid %d here, 1 in its namespace) is not listed: %s",
		  (int)b.pid, r->out);
	cr_expect(ctl_jq(tmpdir, r->out,
			 "[.connections[] | select(.ns_pid == 1 and .pid_namespace != null)] | length == 4"),
		  "not two ends of each holder, with their own pid and namespace: %s", r->out);
	/* From inside the first namespace: its own two ends only. */
	cr_assert_eq(ctl_inside(&a, inside), 0, "scilan_ctl inside the namespace failed: %s", inside);
	cr_expect(ctl_jq(tmpdir, inside, "[.connections[] | select(.pid == 1)] | length == 2"),
		  "the namespace's own ends are not listed as pid 1: %s", inside);
	cr_expect(ctl_jq(tmpdir, inside, ".connections | length == 2"),
		  "another namespace's connections are listed inside one: %s", inside);
	holder_stop(&a);
	holder_stop(&b);
}
