/* test_security.c — the runtime dir is created 0700; unsafe/unusable SCILAN_RUNDIR
 * gives an error and a working fallback; another uid opens nothing of ours and is
 * not accelerated; bad SCILAN_POLL_US/SCILAN_RING_KB values fall back to defaults. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/config.h"
#include "testutil.h"

#define NOBODY 65534

/* Every entry under dir is owned by us and has no group/other permissions. */
static void assert_private_tree(const char *dir, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;

	cr_assert_not_null(d, "opendir %s: %s", dir, strerror(errno));
	cr_assert_eq(lstat(dir, &st), 0);
	cr_assert_eq(st.st_uid, geteuid(), "%s owned by uid %u", dir, (unsigned)st.st_uid);
	cr_assert_eq(st.st_mode & 077, 0, "%s has mode %03o", dir, (unsigned)(st.st_mode & 0777));
	while ((e = readdir(d))) {
		char path[4096];

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		cr_assert_eq(lstat(path, &st), 0);
		cr_assert_eq(st.st_uid, geteuid(), "%s owned by uid %u", path, (unsigned)st.st_uid);
		cr_assert_eq(st.st_mode & 077, 0, "%s has mode %03o", path, (unsigned)(st.st_mode & 0777));
		if (S_ISDIR(st.st_mode) && depth < 4)
			assert_private_tree(path, depth + 1);
	}
	closedir(d);
}

static bool dir_is_empty(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool empty = true;

	if (!d)
		return true;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			empty = false;
	closedir(d);
	return empty;
}

/* A connection in this process and some data both ways; returns the
 * accelerated flags of both ends (must agree). */
static int pair_and_talk(void)
{
	unsigned char *buf = malloc(65536), *got = malloc(65536);
	int c, s, ac, as;

	cr_assert_eq(tu_pair(AF_INET, &c, &s), 0, "pair: %s", strerror(errno));
	ac = tu_accelerated(c);
	as = tu_accelerated(s);
	cr_assert_eq(ac, as, "ends disagree: client %d, server %d", ac, as);
	tu_stream_fill(1, 0, buf, 65536);
	cr_assert_eq(tu_send_all(c, buf, 65536, 0), 65536, "send: %s", strerror(errno));
	cr_assert_eq(tu_recv_all(s, got, 65536), 65536, "recv: %s", strerror(errno));
	cr_assert_eq(tu_stream_check(1, 0, got, 65536), -1, "data corrupted");
	tu_stream_fill(2, 0, buf, 65536);
	cr_assert_eq(tu_send_all(s, buf, 65536, 0), 65536);
	cr_assert_eq(tu_recv_all(c, got, 65536), 65536);
	cr_assert_eq(tu_stream_check(2, 0, got, 65536), -1, "data corrupted");
	scilan_close(c);
	scilan_close(s);
	free(buf);
	free(got);
	return ac;
}

/* ---- the runtime dir is created private -------------------------------------------------- */

Test(security, rundir_created_0700, .timeout = 30)
{
	const char *rundir = tu_isolated_rundir();
	struct stat st;
	int l, c, s;
	uint16_t port;

	cr_assert_not_null(rundir);
	cr_assert_eq(stat(rundir, &st), -1, "test set-up: %s should not exist yet", rundir);
	/* Live listener and connection: registry and offers exist while we look. */
	l = tu_listen(AF_INET, 4, &port);
	cr_assert_geq(l, 0);
	c = tu_connect(AF_INET, port);
	cr_assert_geq(c, 0);
	cr_assert_eq(stat(rundir, &st), 0, "runtime dir %s not created: %s", rundir, strerror(errno));
	cr_assert(S_ISDIR(st.st_mode));
	cr_assert_eq(st.st_mode & 0777, 0700, "runtime dir mode %03o, want 0700", (unsigned)(st.st_mode & 0777));
	cr_assert_eq(st.st_uid, geteuid());
	assert_private_tree(rundir, 0);
	s = tu_accept(l);
	cr_assert_geq(s, 0);
	cr_assert_eq(tu_accelerated(c), 1, "not accelerated with a private runtime dir");
	assert_private_tree(rundir, 0);
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
}

Test(security, default_rundir_is_private, .timeout = 30)
{
	char path[64];
	struct stat st;

	unsetenv("SCILAN_RUNDIR");
	/* The login manager's private /run/user/<uid> when there is one. */
	snprintf(path, sizeof(path), "/run/user/%u", (unsigned)geteuid());
	if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 077))
		snprintf(path, sizeof(path), "/run/user/%u/scilan", (unsigned)geteuid());
	else if (stat("/dev/shm", &st) < 0 || !S_ISDIR(st.st_mode))
		cr_skip_test("no /dev/shm here");
	else
		snprintf(path, sizeof(path), "/dev/shm/scilan-%u", (unsigned)geteuid());
	cr_assert_eq(pair_and_talk(), 1, "not accelerated with the default runtime dir");
	cr_assert_eq(lstat(path, &st), 0, "default runtime dir %s missing: %s", path, strerror(errno));
	cr_assert(S_ISDIR(st.st_mode), "%s is not a directory", path);
	cr_assert_eq(st.st_mode & 0777, 0700, "%s has mode %03o, want 0700", path, (unsigned)(st.st_mode & 0777));
	cr_assert_eq(st.st_uid, geteuid(), "%s owned by uid %u", path, (unsigned)st.st_uid);
}

/* ---- another uid cannot silently turn scilan off ------------------------------------------ */

struct preempt_arg {
	uid_t uid;
};

/* As uid a->uid, with no settings: a connection and a few bytes; prints
 * whether it was accelerated (stderr is captured with stdout). */
static int default_rundir_user(void *p)
{
	struct preempt_arg *a = p;
	char b[5];
	int c, s;

	TU_CHECK(setgroups(0, NULL) == 0 && setgid(a->uid) == 0 && setuid(a->uid) == 0, "become uid %u",
		 (unsigned)a->uid);
	unsetenv("SCILAN_RUNDIR");
	unsetenv("XDG_RUNTIME_DIR");
	TU_CHECK(tu_pair(AF_INET, &c, &s) == 0, "pair");
	tu_log("accelerated=%d", tu_accelerated(c));
	TU_CHECK(tu_send_all(c, "hello", 5, 0) == 5 && tu_recv_all(s, b, 5) == 5 && !memcmp(b, "hello", 5), "data");
	return 0;
}

static void run_as(uid_t uid, struct tu_child *child)
{
	struct preempt_arg *a = tu_shared_alloc(sizeof(*a));

	a->uid = uid;
	cr_assert_eq(tu_spawn(child, default_rundir_user, a), 0);
	tu_reap(child);
}

/* Another uid made /dev/shm/scilan-<uid> first (here root, for a uid of its
 * own).  The user is told which directory, whose, and what to do; and once
 * the login manager's /run/user/<uid> exists, no other uid can pre-empt the
 * runtime directory at all. */
Test(security, default_rundir_taken_by_another_uid, .timeout = 60)
{
	uid_t uid = (uid_t)(61000 + getpid() % 1000);
	char shm[64], run_user[64], scilan_dir[96], owner[32], st_buf[128];
	struct tu_child child;
	struct stat st;

	if (geteuid() != 0)
		cr_skip_test("needs root to play two users");
	unsetenv("SCILAN_RUNDIR");
	snprintf(shm, sizeof(shm), "/dev/shm/scilan-%u", (unsigned)uid);
	snprintf(run_user, sizeof(run_user), "/run/user/%u", (unsigned)uid);
	snprintf(scilan_dir, sizeof(scilan_dir), "%s/scilan", run_user);
	tu_rmtree(shm);
	tu_rmtree(run_user);
	cr_assert_eq(mkdir(shm, 0755), 0, "%s: %s", shm, strerror(errno));

	run_as(uid, &child);
	cr_expect(tu_exited_with(&child, 0), "uid %u: %s\n%s", (unsigned)uid,
		  tu_status_str(&child, st_buf, sizeof(st_buf)), child.output);
	cr_expect(strstr(child.output, "accelerated=0"), "accelerated through a directory of uid 0:\n%s",
		  child.output);
	cr_expect(strstr(child.output, shm), "the error does not name %s:\n%s", shm, child.output);
	snprintf(owner, sizeof(owner), "uid 0");
	cr_expect(strstr(child.output, owner), "the error does not name the owner:\n%s", child.output);
	cr_expect(strstr(child.output, "SCILAN_RUNDIR"), "the error does not say what to do:\n%s", child.output);

	if (stat("/run/user", &st) == 0 && S_ISDIR(st.st_mode)) {
		cr_assert_eq(mkdir(run_user, 0700), 0, "%s: %s", run_user, strerror(errno));
		cr_assert_eq(chown(run_user, uid, uid), 0);
		run_as(uid, &child);
		cr_expect(tu_exited_with(&child, 0), "uid %u: %s\n%s", (unsigned)uid,
			  tu_status_str(&child, st_buf, sizeof(st_buf)), child.output);
		cr_expect(strstr(child.output, "accelerated=1"), "not accelerated with /run/user/%u:\n%s",
			  (unsigned)uid, child.output);
		if (lstat(scilan_dir, &st) < 0)
			cr_expect_fail("%s not used: %s", scilan_dir, strerror(errno));
		else
			cr_expect(st.st_uid == uid && (st.st_mode & 0777) == 0700, "%s: uid %u mode %03o", scilan_dir,
				  (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
	}
	tu_rmtree(shm);
	tu_rmtree(run_user);
}

/* ---- unsafe or unusable runtime dirs: error and fallback ------------------------------------ */

static void expect_fallback_with_error(const char *rundir, const char *what)
{
	int token;
	char *err;

	setenv("SCILAN_RUNDIR", rundir, 1);
	token = tu_capture_begin();
	cr_assert_geq(token, 0);
	cr_assert_eq(pair_and_talk(), 0, "%s: connection accelerated through an unsafe runtime dir %s", what,
		     rundir);
	err = tu_capture_end(token);
	cr_assert_not_null(err);
	cr_assert(strstr(err, rundir) != NULL, "%s: no error naming %s on stderr; stderr was:\n%s", what, rundir,
		  err);
	cr_assert(strstr(err, "scilan") != NULL, "%s: error does not say it is scilan's:\n%s", what, err);
	free(err);
}

Test(security, rundir_world_writable, .timeout = 30)
{
	const char *dir = tu_tmpdir();

	cr_assert_not_null(dir);
	cr_assert_eq(chmod(dir, 0777), 0);
	expect_fallback_with_error(dir, "mode 0777");
	cr_assert(dir_is_empty(dir), "scilan created files inside the insecure runtime dir %s", dir);
}

Test(security, rundir_group_readable, .timeout = 30)
{
	const char *dir = tu_tmpdir();

	cr_assert_not_null(dir);
	cr_assert_eq(chmod(dir, 0750), 0);
	expect_fallback_with_error(dir, "mode 0750");
	cr_assert(dir_is_empty(dir), "scilan created files inside %s", dir);
}

Test(security, rundir_owned_by_someone_else, .timeout = 30)
{
	const char *dir;

	if (geteuid() != 0) {
		/* Any directory of another user will do; "/" belongs to root. */
		expect_fallback_with_error("/", "owned by root");
		return;
	}
	dir = tu_tmpdir();
	cr_assert_not_null(dir);
	cr_assert_eq(chown(dir, NOBODY, NOBODY), 0, "chown: %s", strerror(errno));
	expect_fallback_with_error(dir, "owned by uid 65534");
	cr_assert(dir_is_empty(dir), "scilan created files inside %s", dir);
}

Test(security, rundir_is_a_file, .timeout = 30)
{
	const char *dir = tu_tmpdir();
	char path[256];
	int fd;

	cr_assert_not_null(dir);
	snprintf(path, sizeof(path), "%s/file", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	expect_fallback_with_error(path, "a regular file");
}

/* Uncreatable: an error, the fallback, and nothing lost across processes. */
struct bulk_arg {
	uint16_t port;
	size_t bytes;
	struct tu_sync sync;
};

static int bulk_receiver(void *p)
{
	struct bulk_arg *a = p;
	unsigned char *buf = malloc(a->bytes);
	struct tu_hash h;
	int fd = tu_connect(AF_INET, a->port);

	TU_CHECK(buf != NULL && fd >= 0, "connect");
	TU_CHECK(tu_accelerated(fd) == 0, "accelerated without a runtime dir");
	TU_CHECK(tu_recv_all(fd, buf, a->bytes) == (ssize_t)a->bytes, "receive all");
	TU_CHECK(tu_stream_check(9, 0, buf, a->bytes) == -1, "data corrupted");
	tu_hash_init(&h, 0);
	tu_hash_update(&h, buf, a->bytes);
	TU_CHECK(tu_sync_put_child(&a->sync, tu_hash_final(&h)) == 0, "report");
	TU_CHECK(scilan_recv(fd, buf, 1, 0) == 0, "EOF");
	scilan_close(fd);
	free(buf);
	return 0;
}

Test(security, rundir_uncreatable, .timeout = 60)
{
	static const char *bad = "/proc/nonexistent/scilan-run";
	struct bulk_arg *a = tu_shared_alloc(sizeof(*a));
	struct tu_child child;
	unsigned char *buf;
	uint64_t hash;
	int l, s, token;
	char *err, st[128];

	tu_watchdog(50, "uncreatable rundir");
	cr_assert_not_null(a);
	a->bytes = 4u << 20;
	cr_assert_eq(tu_sync_init(&a->sync), 0);
	setenv("SCILAN_RUNDIR", bad, 1);
	token = tu_capture_begin();
	l = tu_listen(AF_INET, 4, &a->port);
	err = tu_capture_end(token);
	cr_assert_geq(l, 0, "listen without a runtime dir: %s", strerror(errno));
	cr_assert(strstr(err, bad) != NULL, "no error naming %s on stderr; stderr was:\n%s", bad, err);
	free(err);
	cr_assert_eq(tu_spawn(&child, bulk_receiver, a), 0);
	s = tu_accept(l);
	cr_assert_geq(s, 0);
	cr_assert_eq(tu_accelerated(s), 0);
	buf = malloc(a->bytes);
	tu_stream_fill(9, 0, buf, a->bytes);
	cr_assert_eq(tu_send_all(s, buf, a->bytes, 0), (ssize_t)a->bytes, "send: %s", strerror(errno));
	cr_assert_eq(tu_sync_get(&a->sync, &hash), 0, "receiver failed:\n%s", (tu_reap(&child), child.output));
	cr_assert_eq(hash, tu_hash_buf(buf, a->bytes), "checksum mismatch through the fallback");
	scilan_close(s);
	tu_reap(&child);
	cr_assert(tu_exited_with(&child, 0), "receiver %s\n%s", tu_status_str(&child, st, sizeof(st)), child.output);
	scilan_close(l);
	free(buf);
}

/* ---- another uid ------------------------------------------------------------------------------- */

struct other_arg {
	char rundir[256];       /* ours */
	char files[8][512];     /* files inside ours */
	int nfiles;
	char own_rundir[256];   /* the other user's own (empty: inherit our SCILAN_RUNDIR) */
	pid_t owner_pid;
	uint16_t port;
	struct tu_sync sync;
};

static int other_uid_main(void *p)
{
	struct other_arg *a = p;
	char path[600], b[32];
	uint64_t v;
	int fd;

	TU_CHECK(setgroups(0, NULL) == 0, "setgroups");
	TU_CHECK(setgid(NOBODY) == 0, "setgid");
	TU_CHECK(setuid(NOBODY) == 0, "setuid");
	TU_CHECK(geteuid() == NOBODY, "still uid %u", (unsigned)geteuid());
	if (a->own_rundir[0])
		setenv("SCILAN_RUNDIR", a->own_rundir, 1);
	/* Our listener, files and segments exist once the owner says go. */
	TU_CHECK(tu_sync_get_child(&a->sync, &v) == 0, "wait for go");

	/* Nothing of ours can be opened, listed or created. */
	fd = open(a->rundir, O_RDONLY | O_DIRECTORY);
	TU_CHECK(fd < 0 && errno == EACCES, "opened the other user's runtime dir %s", a->rundir);
	TU_CHECK(opendir(a->rundir) == NULL && errno == EACCES, "listed %s", a->rundir);
	for (int i = 0; i < a->nfiles; i++) {
		fd = open(a->files[i], O_RDONLY);
		TU_CHECK(fd < 0 && errno == EACCES, "opened %s", a->files[i]);
		fd = open(a->files[i], O_WRONLY);
		TU_CHECK(fd < 0 && errno == EACCES, "opened %s for writing", a->files[i]);
	}
	snprintf(path, sizeof(path), "%s/planted", a->rundir);
	fd = open(path, O_CREAT | O_WRONLY, 0666);
	TU_CHECK(fd < 0 && errno == EACCES, "created %s", path);
	/* Nor the shared segments through /proc. */
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)a->owner_pid);
	TU_CHECK(opendir(path) == NULL, "listed %s", path);
	for (int n = 3; n < 64; n++) {
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)a->owner_pid, n);
		fd = open(path, O_RDWR);
		TU_CHECK(fd < 0, "opened %s", path);
	}

	/* Its connection works (its first scilan call): accelerated when it has
	 * a runtime directory of its own, since the segment is handed to our
	 * listener (rendezvous.c), never opened from our side; else scilan is
	 * off in it and the connection is kernel TCP. */
	fd = tu_connect(AF_INET, a->port);
	TU_CHECK(fd >= 0, "connect as uid %d", NOBODY);
	TU_CHECK(tu_accelerated(fd) == (a->own_rundir[0] ? 1 : 0), "accelerated %d with own rundir %d",
		 tu_accelerated(fd), a->own_rundir[0] != 0);
	TU_CHECK(tu_send_all(fd, "from-nobody", 11, 0) == 11, "send");
	TU_CHECK(tu_recv_all(fd, b, 5) == 5 && memcmp(b, "reply", 5) == 0, "reply");
	TU_CHECK(scilan_close(fd) == 0, "close");
	return 0;
}

static void list_files(const char *dir, struct other_arg *a, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)) && a->nfiles < 8) {
		char path[512];
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (lstat(path, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode) && depth < 3)
			list_files(path, a, depth + 1);
		else if (S_ISREG(st.st_mode))
			snprintf(a->files[a->nfiles++], sizeof(a->files[0]), "%s", path);
	}
	closedir(d);
}

static void other_uid(bool own_rundir)
{
	struct other_arg *a = tu_shared_alloc(sizeof(*a));
	struct tu_child child;
	const char *rundir, *theirs;
	int l, s, c0, s0;
	char b[16], st[128];

	if (geteuid() != 0)
		cr_skip_test("needs root to switch to uid %d", NOBODY);
	tu_watchdog(50, "other uid");
	cr_assert_not_null(a);
	memset(a, 0, sizeof(*a));
	rundir = tu_isolated_rundir();
	cr_assert_not_null(rundir);
	snprintf(a->rundir, sizeof(a->rundir), "%s", rundir);
	if (own_rundir) {
		theirs = tu_tmpdir();
		cr_assert_not_null(theirs);
		cr_assert_eq(chown(theirs, NOBODY, NOBODY), 0);
		snprintf(a->own_rundir, sizeof(a->own_rundir), "%s/run", theirs);
	}
	a->owner_pid = getpid();
	/* The child is forked before our first scilan call, so that its library
	 * state (settings, runtime dir) is its own. */
	cr_assert_eq(tu_sync_init(&a->sync), 0);
	cr_assert_eq(tu_spawn(&child, other_uid_main, a), 0);
	/* Our listener and a live accelerated connection (so there are offers,
	 * registry entries and segments to attack). */
	l = tu_listen(AF_INET, 8, &a->port);
	cr_assert_geq(l, 0);
	cr_assert_eq(tu_pair(AF_INET, &c0, &s0), 0);
	cr_assert_eq(tu_accelerated(c0), 1);
	list_files(rundir, a, 0);
	cr_assert_gt(a->nfiles, 0, "no files in %s to try", rundir);
	cr_assert_eq(tu_sync_put(&a->sync, 1), 0, "child died:\n%s", (tu_reap(&child), child.output));
	s = tu_accept(l);
	cr_assert_geq(s, 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(s), own_rundir ? 1 : 0, "connection from another uid accepted as accelerated %d",
		     tu_accelerated(s));
	cr_assert_eq(tu_recv_all(s, b, 11), 11);
	cr_assert_arr_eq(b, "from-nobody", 11);
	cr_assert_eq(tu_send_all(s, "reply", 5, 0), 5);
	tu_reap(&child);
	cr_assert(tu_exited_with(&child, 0), "uid %d child %s\n%s", NOBODY, tu_status_str(&child, st, sizeof(st)),
		  child.output);
	/* Our own connection was not disturbed. */
	cr_assert_eq(tu_send_all(c0, "still", 5, 0), 5);
	cr_assert_eq(tu_recv_all(s0, b, 5), 5);
	scilan_close(s);
	scilan_close(c0);
	scilan_close(s0);
	scilan_close(l);
	if (own_rundir) {
		struct stat sst;

		if (stat(a->own_rundir, &sst) == 0)
			cr_assert_eq(sst.st_uid, (uid_t)NOBODY, "the other user's runtime dir is not theirs");
	}
}

Test(security, other_uid_with_own_rundir, .timeout = 60)
{
	other_uid(true);
}

Test(security, other_uid_pointed_at_our_rundir, .timeout = 60)
{
	other_uid(false);
}

/* ---- bad settings ------------------------------------------------------------------------------- */

struct env_arg {
	const char *name, *value;
	int want_poll_us;
	int want_ring;
	bool want_error;
};

/* In a fresh child (settings are read at its first scilan call). */
static int env_child(void *p)
{
	struct env_arg *a = p;
	int c, s, v;
	socklen_t len = sizeof(v);
	char b[8];

	setenv(a->name, a->value, 1);
	TU_CHECK(tu_pair(AF_INET, &c, &s) == 0, "pair with %s=%s", a->name, a->value);
	TU_CHECK(tu_accelerated(c) == 1 && tu_accelerated(s) == 1, "%s=%s disabled acceleration", a->name, a->value);
	TU_CHECK(tu_send_all(c, "env-ok", 6, 0) == 6, "send");
	TU_CHECK(tu_recv_all(s, b, 6) == 6 && memcmp(b, "env-ok", 6) == 0, "recv");
	TU_CHECK(scilan_getsockopt(c, SOL_SCILAN, SCILAN_SO_POLL_US, &v, &len) == 0, "get poll_us");
	TU_CHECK(v == a->want_poll_us, "%s=%s: poll time %d, want %d", a->name, a->value, v, a->want_poll_us);
	len = sizeof(v);
	TU_CHECK(scilan_getsockopt(s, SOL_SCILAN, SCILAN_SO_RING_SIZE, &v, &len) == 0, "get ring");
	TU_CHECK(v == a->want_ring, "%s=%s: ring %d, want %d", a->name, a->value, v, a->want_ring);
	scilan_close(c);
	scilan_close(s);
	return 0;
}

Test(security, bad_env_settings_use_defaults, .timeout = 120)
{
	const int dpoll = SL_DEFAULT_POLL_US, dring = SL_DEFAULT_RING_KB << 10;
	static const char *bad_poll[] = { "abc", "-1", "12abc", "", "99999999999999" };
	static const char *bad_ring[] = { "-5", "abc", "0", "1", "1000000000", "8k" };
	struct env_arg cases[32];
	int n = 0;
	char st[128];

	tu_watchdog(100, "bad settings");
	for (size_t i = 0; i < sizeof(bad_poll) / sizeof(bad_poll[0]); i++)
		cases[n++] = (struct env_arg){ "SCILAN_POLL_US", bad_poll[i], dpoll, dring, bad_poll[i][0] != '\0' };
	for (size_t i = 0; i < sizeof(bad_ring) / sizeof(bad_ring[0]); i++)
		cases[n++] = (struct env_arg){ "SCILAN_RING_KB", bad_ring[i], dpoll, dring, true };
	/* Good values for contrast. */
	cases[n++] = (struct env_arg){ "SCILAN_POLL_US", "0", 0, dring, false };
	cases[n++] = (struct env_arg){ "SCILAN_RING_KB", "64", dpoll, 65536, false };
	cases[n++] = (struct env_arg){ "SCILAN_LOG", "nonsense", dpoll, dring, true };
	for (int i = 0; i < n; i++) {
		struct tu_child child;

		cr_assert_eq(tu_spawn(&child, env_child, &cases[i]), 0);
		tu_reap(&child);
		cr_assert(tu_exited_with(&child, 0), "%s=\"%s\": child %s\n%s", cases[i].name, cases[i].value,
			  tu_status_str(&child, st, sizeof(st)), child.output);
		if (cases[i].want_error)
			cr_assert(strstr(child.output, cases[i].name) != NULL,
				  "%s=\"%s\": no error naming the variable on stderr; output:\n%s", cases[i].name,
				  cases[i].value, child.output);
	}
}
