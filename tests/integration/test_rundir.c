/* test_rundir.c — what dead processes leave in the runtime directory (stats
 * files, offers, wake-up FIFOs, half-written offers) is swept by later
 * listens, whatever pid the dead owner had; what live processes hold stays.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "runtime/rundir_sweep.h"
#include "testutil.h"
#include "young_helpers.h"

#define HOLDERS 40  /* connected, then killed */
#define CHURNERS 10 /* connect and close in a loop, killed anywhere in it */
#define CHURN_MAX 30
#define BUDGET 32 /* SL_SWEEP_BUDGET: entries one sweep looks at */

static char rundir[256];

static void setup(void)
{
	const char *r = tu_isolated_rundir();

	cr_assert(r, "no temporary directory");
	snprintf(rundir, sizeof(rundir), "%s", r);
}

struct storm {
	uint16_t port, churn_port;
	_Atomic int ready, churners;
	_Atomic int churned[CHURNERS];
};

/* Connect (accelerated), then wait to be killed without closing. */
static int holder(void *p)
{
	struct storm *st = p;
	int fd = tu_connect(AF_INET, st->port);

	TU_CHECK(fd >= 0, "connect");
	TU_CHECK(tu_accelerated(fd) == 1, "not accelerated");
	tu_grow_up(); /* its statistics file made, for the sweeps to meet */
	atomic_fetch_add(&st->ready, 1);
	for (;;)
		pause();
}

/* Connect to a listener that never accepts and close, over and over: each
 * close leaves a segment lingering with its offer, and the kill lands
 * anywhere, set-up included.  Small rings: the lingering segments add up. */
static int churner(void *p)
{
	struct storm *st = p;
	int me = atomic_fetch_add(&st->churners, 1);

	for (int i = 0; i < CHURN_MAX; i++) {
		int fd = tu_connect_rcvbuf(AF_INET, st->churn_port, 4096);

		TU_CHECK(fd >= 0, "connect");
		scilan_close(fd);
		atomic_fetch_add(&st->churned[me], 1);
	}
	for (;;)
		pause();
}

/* Names in <rundir>/<sub>, except dot files, one per line; their count. */
static int list_dir(const char *sub, char *out, size_t size)
{
	char path[512];
	struct dirent *de;
	size_t len = 0;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s", rundir, sub);
	out[0] = '\0';
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		n++;
		if (len + strlen(de->d_name) + 2 < size)
			len += (size_t)snprintf(out + len, size - len, "%s\n", de->d_name);
	}
	closedir(d);
	return n;
}

/* As if the grace time for files in the middle of a set-up had passed:
 * the files made secs seconds ago. */
static void age_dir_by(const char *sub, time_t secs)
{
	struct timespec old[2] = { { time(NULL) - secs, 0 }, { time(NULL) - secs, 0 } };
	char path[512];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s", rundir, sub);
	d = opendir(path);
	cr_assert(d, "%s: %s", path, strerror(errno));
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			utimensat(dirfd(d), de->d_name, old, AT_SYMLINK_NOFOLLOW);
	closedir(d);
}

static void age_dir(const char *sub)
{
	age_dir_by(sub, 3600);
}

/* Listening is one of the moments a process sweeps. */
static void sweep_once(void)
{
	uint16_t port;
	int l = tu_listen(AF_INET, 1, &port);

	cr_assert_geq(l, 0, "listen: %s", strerror(errno));
	scilan_close(l);
}

static int entries(void)
{
	char names[64];

	return list_dir("stats", names, sizeof(names)) + list_dir("offer", names, sizeof(names)) +
	       list_dir("listen", names, sizeof(names));
}

/* Enough rounds of the bounded sweep to visit every entry twice. */
static void sweep_by_listening(void)
{
	int rounds = 2 * (entries() / BUDGET + 2);

	for (int i = 0; i < rounds; i++)
		sweep_once();
}

static void make_file(const char *sub, const char *name, mode_t fifo, const void *data, size_t len)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s/%s", rundir, sub, name);
	if (fifo) {
		cr_assert_eq(mkfifo(path, 0600), 0, "mkfifo %s: %s", path, strerror(errno));
		return;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

Test(rundir, sigkill_storm_leaves_nothing_after_sweeps, .init = setup, .timeout = 120)
{
	struct storm *st = tu_shared_alloc(sizeof(*st));
	struct tu_child kids[HOLDERS + CHURNERS];
	int l = tu_listen(AF_INET, 256, &st->port), l2 = tu_listen_rcvbuf(AF_INET, 4096, 4096, &st->churn_port);
	int accepted[HOLDERS / 2];
	char names[8192], own[32];
	int n;

	cr_assert(l >= 0 && l2 >= 0, "listen: %s", strerror(errno));
	tu_watchdog(90, "the storm");
	for (int i = 0; i < HOLDERS; i++)
		cr_assert_eq(tu_spawn(&kids[i], holder, st), 0);
	for (int i = 0; i < CHURNERS; i++)
		cr_assert_eq(tu_spawn(&kids[HOLDERS + i], churner, st), 0);
	/* Half the holders' connections are accepted (attached), half never are. */
	for (int i = 0; i < HOLDERS / 2; i++) {
		accepted[i] = tu_accept(l);
		cr_assert_geq(accepted[i], 0, "accept: %s", strerror(errno));
	}
	tu_grow_up(); /* ours too, the one file that must stay */
	for (;;) {
		bool churned = true;

		for (int i = 0; i < CHURNERS; i++)
			churned = churned && atomic_load(&st->churned[i]) > 10;
		if (atomic_load(&st->ready) == HOLDERS && churned)
			break;
		tu_sleep_ms(10);
	}
	/* Churners first: one still churning sweeps (at most once a second,
	 * SL_SWEEP_BUDGET entries), and would take dead holders' files before
	 * they are counted below. */
	for (int i = HOLDERS + CHURNERS - 1; i >= 0; i--) {
		tu_kill(&kids[i]);
		tu_reap(&kids[i]);
	}
	n = list_dir("stats", names, sizeof(names));
	cr_assert_geq(n, HOLDERS, "the holders' statistics files are not there to sweep:\n%s", names);
	/* What a process killed between creating its wake-up FIFOs and its
	 * offer, or while writing the offer, leaves. */
	make_file("offer", "killed-in-setup.bell0", 1, NULL, 0);
	make_file("offer", "killed-in-setup.bell1", 1, NULL, 0);
	make_file("offer", "killed-in-setup.5.tmp", 0, "", 0);
	age_dir("offer");
	/* Each sweep looks at a bounded number of entries (an offer goes with
	 * its two FIFOs). */
	n = entries();
	sweep_once();
	cr_expect_leq(n - entries(), 3 * BUDGET, "one sweep removed %d entries", n - entries());
	sweep_by_listening();
	tu_watchdog_cancel();

	snprintf(own, sizeof(own), "%d\n", (int)getpid());
	n = list_dir("stats", names, sizeof(names));
	cr_expect(n == 1 && strcmp(names, own) == 0, "statistics files of dead processes remain (%d):\n%s", n,
		  names);
	n = list_dir("offer", names, sizeof(names));
	cr_expect_eq(n, 0, "offers or FIFOs of dead processes remain (%d):\n%s", n, names);
	for (int i = 0; i < HOLDERS / 2; i++)
		scilan_close(accepted[i]);
	scilan_close(l);
	scilan_close(l2);
}

struct worker {
	uint16_t port;
	struct tu_sync sync;
};

/* Python's multiprocessing ends its workers with os._exit: no destructor
 * runs, so nothing of theirs is removed by them. */
static int exit_without_close(void *p)
{
	struct worker *w = p;
	int fd = tu_connect(AF_INET, w->port);
	uint64_t v;

	TU_CHECK(fd >= 0, "connect");
	TU_CHECK(tu_accelerated(fd) == 1, "not accelerated");
	TU_CHECK(scilan_send(fd, "x", 1, 0) == 1, "send");
	TU_CHECK(tu_sync_get_child(&w->sync, &v) == 0, "wait for the parent's accept");
	return 0; /* tu_spawn _exit()s with it */
}

Test(rundir, forked_children_ending_in_exit_leave_nothing, .init = setup, .timeout = 120)
{
	struct worker w;
	int l = tu_listen(AF_INET, 64, &w.port);
	char names[8192], own[32], c;
	int n;

	cr_assert_geq(l, 0, "listen: %s", strerror(errno));
	tu_watchdog(90, "the children");
	for (int i = 0; i < 20; i++) {
		struct tu_child kid;
		int fd;

		cr_assert_eq(tu_sync_init(&w.sync), 0);
		cr_assert_eq(tu_spawn(&kid, exit_without_close, &w), 0);
		fd = tu_accept(l);
		cr_assert_geq(fd, 0, "accept: %s", strerror(errno));
		cr_assert_eq(tu_recv_all(fd, &c, 1), 1);
		cr_assert_eq(tu_sync_put(&w.sync, 1), 0);
		tu_reap(&kid);
		close(w.sync.parent_fd);
		cr_assert(tu_exited_with(&kid, 0), "child: %s", kid.output);
		scilan_close(fd);
	}
	/* The children's own set-ups already swept their elders' files. */
	sweep_by_listening();
	tu_watchdog_cancel();
	snprintf(own, sizeof(own), "%d\n", (int)getpid());
	n = list_dir("stats", names, sizeof(names));
	cr_expect(n == 0 || (n == 1 && strcmp(names, own) == 0), "statistics files of dead processes remain (%d):\n%s",
		  n, names);
	scilan_close(l);
}

/* A pid proves nothing: it may belong to another process by now.  Files
 * named after, or naming, a live pid are still swept when no process holds
 * them. */
Test(rundir, reused_pids_do_not_keep_files, .init = setup, .timeout = 60)
{
	struct {
		uint64_t magic;
		int32_t pid, memfd;
		uint64_t ino, dev;
	} offer = { 0x3146464f20434c53ull, (int32_t)getpid(), 0, 0, 0 };
	char names[4096], name[32];
	uint16_t port;
	int l = tu_listen(AF_INET, 1, &port), n;

	cr_assert_geq(l, 0, "listen: %s", strerror(errno));
	/* pid 1 lives; the file is not its. */
	make_file("stats", "1", 0, "garbage", 7);
	snprintf(name, sizeof(name), "%d", (int)getppid());
	make_file("stats", name, 0, "garbage", 7);
	make_file("offer", "old-offer", 0, &offer, sizeof(offer));
	make_file("offer", "old-offer.bell0", 1, NULL, 0);
	make_file("offer", "old-offer.bell1", 1, NULL, 0);
	age_dir("offer");
	sweep_by_listening();
	n = list_dir("stats", names, sizeof(names));
	cr_expect_eq(n, 0, "statistics files no live process holds remain:\n%s", names);
	n = list_dir("offer", names, sizeof(names));
	cr_expect_eq(n, 0, "an offer no live process holds remains:\n%s", names);
	scilan_close(l);
}

/* A listener whose offers are named (files and FIFOs in the runtime
 * directory): its socket existed at a fork, so another process may accept
 * on it without the rendezvous (registry.h, SL_REG_NAMED). */
static int listen_named(uint16_t *port)
{
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int l = scilan_socket(AF_INET, SOCK_STREAM, 0), status;
	pid_t kid;

	cr_assert_geq(l, 0);
	cr_assert_eq(scilan_bind(l, (struct sockaddr *)&me, sizeof(me)), 0, "bind: %s", strerror(errno));
	kid = fork();
	cr_assert_geq(kid, 0);
	if (kid == 0)
		_exit(0);
	waitpid(kid, &status, 0);
	cr_assert_eq(scilan_listen(l, 4), 0, "listen: %s", strerror(errno));
	*port = tu_local_port(l);
	return l;
}

/* Live processes' files survive any number of sweeps, old or new. */
static int connect_and_wait(void *p)
{
	struct storm *st = p;
	int fd = tu_connect(AF_INET, st->port);

	TU_CHECK(fd >= 0, "connect");
	TU_CHECK(tu_accelerated(fd) == 1, "not accelerated");
	tu_grow_up();
	atomic_fetch_add(&st->ready, 1);
	for (;;)
		pause();
}

Test(rundir, live_files_survive_sweeps, .init = setup, .timeout = 60)
{
	struct storm *st = tu_shared_alloc(sizeof(*st));
	struct tu_child kid;
	int l = listen_named(&st->port), n;
	char names[4096], want[64];

	cr_assert_geq(l, 0, "listen: %s", strerror(errno));
	tu_watchdog(50, "the live client");
	cr_assert_eq(tu_spawn(&kid, connect_and_wait, st), 0);
	while (atomic_load(&st->ready) == 0)
		tu_sleep_ms(10);
	age_dir("offer");
	sweep_by_listening();
	n = list_dir("offer", names, sizeof(names));
	/* Not accepted yet: its offer and both FIFOs must still be there. */
	cr_expect_eq(n, 3, "a live connector's offer was swept:\n%s", names);
	snprintf(want, sizeof(want), "%d\n", (int)kid.pid);
	n = list_dir("stats", names, sizeof(names));
	cr_expect(n == 1 && strcmp(names, want) == 0, "a live process's statistics file was swept:\n%s", names);
	n = list_dir("listen", names, sizeof(names));
	cr_expect_eq(n, 1, "a live listener's entry was swept:\n%s", names);
	{
		int fd = tu_accept(l);

		cr_expect_geq(fd, 0, "accept after the sweeps: %s", strerror(errno));
		cr_expect_eq(tu_accelerated(fd), 1, "the swept connection is not accelerated");
		scilan_close(fd);
	}
	tu_watchdog_cancel();
	tu_kill(&kid);
	tu_reap(&kid);
	scilan_close(l);
}

/* A container given the same runtime directory: a named listener and its
 * live connector, both of a pid namespace of their own, so the pids in the
 * connector's offer name nothing of ours. */
struct other_ns {
	_Atomic int ready, go, accepted;
};

static int listener_there(struct other_ns *o)
{
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct storm *st = tu_shared_alloc(sizeof(*st));
	int l = scilan_socket(AF_INET, SOCK_STREAM, 0), fd;
	struct tu_child kid;
	pid_t fork_kid;

	TU_CHECK(l >= 0 && scilan_bind(l, (struct sockaddr *)&me, sizeof(me)) == 0, "bind");
	/* A fork while it exists: its offers are named (registry.h). */
	fork_kid = fork();
	TU_CHECK(fork_kid >= 0, "fork");
	if (fork_kid == 0)
		_exit(0);
	waitpid(fork_kid, NULL, 0);
	TU_CHECK(scilan_listen(l, 4) == 0, "listen");
	st->port = tu_local_port(l);
	TU_CHECK(tu_spawn(&kid, connect_and_wait, st) == 0, "spawn");
	while (atomic_load(&st->ready) == 0)
		tu_sleep_ms(10);
	atomic_store(&o->ready, 1);
	while (atomic_load(&o->go) == 0)
		tu_sleep_ms(10);
	fd = tu_accept(l);
	atomic_store(&o->accepted, fd >= 0 ? 1 + tu_accelerated(fd) : -1);
	tu_kill(&kid);
	tu_reap(&kid);
	return 0;
}

static int in_own_pid_namespace(void *p)
{
	pid_t kid;
	int status;

	TU_CHECK(unshare(CLONE_NEWPID) == 0, "unshare(CLONE_NEWPID)");
	kid = fork();
	TU_CHECK(kid >= 0, "fork");
	if (kid == 0)
		_exit(listener_there(p));
	waitpid(kid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* A named offer of another pid namespace, unaccepted a minute: its memfd
 * is not where its pid points here, but its bells are held, and it is kept
 * (the janitor once took it for a dead connector's, after 10 s). */
Test(rundir, offer_of_another_pid_namespace_survives_sweeps, .init = setup, .timeout = 60)
{
	struct other_ns *o = tu_shared_alloc(sizeof(*o));
	struct tu_child kid;
	char names[4096];
	int n;

	{
		pid_t probe = fork();
		int status;

		if (probe == 0)
			_exit(unshare(CLONE_NEWPID) == 0 ? 0 : 1);
		waitpid(probe, &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			cr_skip_test("no new pid namespace here (needs CAP_SYS_ADMIN)");
	}
	tu_watchdog(50, "the listener and client of another pid namespace");
	cr_assert_eq(tu_spawn(&kid, in_own_pid_namespace, o), 0);
	while (atomic_load(&o->ready) == 0)
		tu_sleep_ms(10);
	age_dir_by("offer", 60);
	sweep_by_listening();
	n = list_dir("offer", names, sizeof(names));
	cr_expect_eq(n, 3, "a live connector's offer was swept (%d left):\n%s", n, names);
	atomic_store(&o->go, 1);
	while (atomic_load(&o->accepted) == 0)
		tu_sleep_ms(10);
	cr_expect_eq(atomic_load(&o->accepted), 2, "accepted after the sweeps: %d (-1 failed, 1 kernel TCP)",
		     atomic_load(&o->accepted));
	tu_watchdog_cancel();
	cr_expect_eq(tu_reap(&kid), 0, "the other namespace's processes failed");
}

/* Creation racing sweeps: a sweeper may find a statistics file between its
 * creation and its owner's lock.  Owners open and close connections (the
 * first creates the file, which then stays until exit) while other
 * processes sweep without pause; every owner must find its file whenever it
 * has a connection. */
#define RACERS 6
#define RACE_ROUNDS 200

static int racer(void *p)
{
	char path[512];

	(void)p;
	snprintf(path, sizeof(path), "%s/stats/%d", rundir, (int)getpid());
	/* Grown up: the first connection makes the file itself, among sweeps. */
	tu_grow_up();
	for (int i = 0; i < RACE_ROUNDS; i++) {
		int c, s;

		TU_CHECK(tu_pair(AF_INET, &c, &s) == 0, "pair");
		TU_CHECK(tu_accelerated(c) == 1, "not accelerated");
		TU_CHECK(access(path, F_OK) == 0, "round %d: my statistics file %s was swept", i, path);
		scilan_close(c);
		scilan_close(s);
	}
	return 0;
}

static int sweeper(void *p)
{
	_Atomic int *stop = p;

	while (!atomic_load(stop))
		sl_rundir_sweep(1000);
	return 0;
}

Test(rundir, creation_races_sweeps, .init = setup, .timeout = 120)
{
	_Atomic int *stop = tu_shared_alloc(sizeof(*stop));
	struct tu_child racers[RACERS], sweepers[2];
	char st[128];

	tu_watchdog(100, "the race");
	sweep_once(); /* the runtime directory exists before anyone sweeps */
	for (int i = 0; i < 2; i++)
		cr_assert_eq(tu_spawn(&sweepers[i], sweeper, stop), 0);
	for (int i = 0; i < RACERS; i++)
		cr_assert_eq(tu_spawn(&racers[i], racer, NULL), 0);
	for (int i = 0; i < RACERS; i++) {
		tu_reap(&racers[i]);
		cr_expect(tu_exited_with(&racers[i], 0), "racer %s:\n%s", tu_status_str(&racers[i], st, sizeof(st)),
			  racers[i].output);
	}
	atomic_store(stop, 1);
	for (int i = 0; i < 2; i++)
		tu_reap(&sweepers[i]);
	tu_watchdog_cancel();
}

/* A connection-per-request server must not create and remove its statistics
 * file per connection: once made, the file stays, the same file, through any
 * number of connections and while none is open. */
static int short_connections(void *p)
{
	char path[512];
	struct stat first, now;

	(void)p;
	snprintf(path, sizeof(path), "%s/stats/%d", rundir, (int)getpid());
	TU_CHECK(access(path, F_OK) != 0, "a statistics file before any connection");
	tu_grow_up(); /* a process past its first 10 ms makes it at once */
	for (int i = 0; i < 5; i++) {
		int c, s;

		TU_CHECK(tu_pair(AF_INET, &c, &s) == 0, "pair");
		TU_CHECK(tu_accelerated(c) == 1, "not accelerated");
		TU_CHECK(stat(path, &now) == 0, "round %d: no statistics file with a connection open", i);
		if (i == 0)
			first = now;
		scilan_close(c);
		scilan_close(s);
		TU_CHECK(stat(path, &now) == 0, "round %d: the statistics file went with the last connection", i);
		TU_CHECK(now.st_ino == first.st_ino, "round %d: the statistics file was made again", i);
	}
	return 0;
}

Test(rundir, stats_file_outlives_connections, .init = setup, .timeout = 60)
{
	struct tu_child kid;
	char st[128];

	cr_assert_eq(tu_spawn(&kid, short_connections, NULL), 0);
	tu_reap(&kid);
	cr_expect(tu_exited_with(&kid, 0), "child %s:\n%s", tu_status_str(&kid, st, sizeof(st)), kid.output);
}
