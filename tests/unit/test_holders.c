/* test_holders.c — unit tests of the holder table (holders.c) on a shared
 * anonymous page: the last live holder's release, expected holders, holders
 * that died without a word (reaped or zombie), reused pids, other pid
 * namespaces, idempotent release. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process/holders.h"
#include "ring/layout.h"

static struct sl_sock *made; /* one per test, freed by the suite's fini */

static void cleanup(void)
{
	if (made) {
		munmap(made->htab, SL_PAGE);
		free(made);
		made = NULL;
	}
}

TestSuite(holders, .fini = cleanup);

static struct sl_sock *fresh(void)
{
	struct sl_seg_holders *h = mmap(NULL, SL_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct sl_sock *s = calloc(1, sizeof(*s));

	cr_assert(h != MAP_FAILED && s);
	s->own_area = 1;
	s->htab = h;
	s->holders = &h->count[1];
	s->users = h->user[1];
	sl_holders_init(s);
	made = s;
	return s;
}

/* Start time of pid from /proc/PID/stat (field 22). */
static uint64_t start_of(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	cr_assert(f);
	cr_assert(fgets(buf, sizeof(buf), f));
	fclose(f);
	p = strrchr(buf, ')') + 2;
	for (int field = 3; field < 22; field++)
		p = strchr(p, ' ') + 1;
	sscanf(p, "%llu", &start);
	return start;
}

/* An entry written the way another process would have written its own. */
static void put_entry(struct sl_sock *s, int i, pid_t pid, uint64_t start, uint32_t ns)
{
	struct sl_holder *h = &s->htab->slot[1][i];

	atomic_store(&h->tag, 7ull << 32 | (uint32_t)pid);
	atomic_store(&h->start, start);
	atomic_store(&h->pidns, ns);
	atomic_store(&h->ready, 7);
	atomic_fetch_add(&s->htab->count[1], 1);
}

Test(holders, sole_holder_release_is_last_and_idempotent)
{
	struct sl_sock *s = fresh();

	cr_assert_eq(atomic_load(s->holders), 1);
	cr_assert(sl_holders_release(s));
	cr_assert_not(sl_holders_release(s), "a second release (another dup alias) must not close again");
	cr_assert_eq(atomic_load(s->holders), 0);
}

Test(holders, expected_holder_counts_until_it_arrives)
{
	struct sl_sock *s = fresh();

	sl_holders_expect(s);
	cr_assert_eq(atomic_load(s->holders), 2);
	cr_assert_not(sl_holders_release(s), "a holder on its way (fork child, SCM in flight) keeps it open");
	sl_holders_unexpect(s);
	cr_assert_eq(atomic_load(s->holders), 0);
}

/* A forked holder that names itself, then dies without releasing; the
 * parent releases after it was reaped (reap) or while it is a zombie. */
static void dead_child_case(bool reap)
{
	struct sl_sock *s = fresh();
	int p[2];
	char b;
	pid_t pid;

	cr_assert_eq(pipe(p), 0);
	sl_holders_expect(s);
	pid = fork();
	if (pid == 0) {
		sl_holders_arrive(s);
		_exit(write(p[1], "r", 1) == 1 ? 0 : 1);
	}
	cr_assert_eq(read(p[0], &b, 1), 1);
	if (reap) {
		cr_assert_eq(waitpid(pid, NULL, 0), pid);
	} else {
		siginfo_t si;

		cr_assert_eq(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	}
	cr_assert_eq(atomic_load(&s->htab->unnamed[1]), 0, "the child named itself");
	cr_assert(sl_holders_release(s), "a dead holder must not keep the connection open");
	cr_assert_eq(atomic_load(s->holders), 0, "its entry was freed");
	if (!reap)
		waitpid(pid, NULL, 0);
}

Test(holders, holder_that_died_without_release_is_not_counted)
{
	dead_child_case(true);
}

Test(holders, zombie_holder_is_not_counted)
{
	dead_child_case(false);
}

Test(holders, live_holder_is_counted_and_releases_last)
{
	struct sl_sock *s = fresh();
	int ready[2], go[2], status;
	char b;
	pid_t pid;

	cr_assert_eq(pipe(ready), 0);
	cr_assert_eq(pipe(go), 0);
	sl_holders_expect(s);
	pid = fork();
	if (pid == 0) {
		sl_holders_arrive(s);
		if (write(ready[1], "r", 1) != 1 || read(go[0], &b, 1) != 1)
			_exit(3);
		_exit(sl_holders_release(s) ? 0 : 1);
	}
	cr_assert_eq(read(ready[0], &b, 1), 1);
	cr_assert_not(sl_holders_release(s), "the child lives and holds it");
	cr_assert_eq(write(go[1], "g", 1), 1);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's release was the last");
}

Test(holders, reused_pid_is_not_counted)
{
	struct sl_sock *s = fresh();
	pid_t parent = getppid();

	/* Our parent lives, but under another start time it is another process. */
	put_entry(s, 5, parent, start_of(parent) + 1, 0);
	cr_assert(sl_holders_release(s));
}

Test(holders, live_pid_with_its_start_time_is_counted)
{
	struct sl_sock *s = fresh();
	pid_t parent = getppid();

	put_entry(s, 5, parent, start_of(parent), 0);
	cr_assert_not(sl_holders_release(s));
}

Test(holders, holder_in_another_pid_namespace_is_counted)
{
	struct sl_sock *s = fresh();
	struct stat st;

	cr_assert_eq(stat("/proc/self/ns/pid", &st), 0);
	/* Its pid means nothing here: kept as live, the safe side. */
	put_entry(s, 3, 999999, 12345, (uint32_t)st.st_ino + 1);
	cr_assert_not(sl_holders_release(s));
}

Test(holders, garbage_counts_never_go_negative)
{
	struct sl_sock *s = fresh();

	atomic_store(&s->htab->unnamed[1], -5);
	sl_holders_unexpect(s);
	cr_assert_eq(atomic_load(&s->htab->unnamed[1]), -5, "a negative count is left alone, never decremented");
	cr_assert(sl_holders_release(s));
}
