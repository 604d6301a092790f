/* test_hostile_evq.c — a peer's epoll-set registrations (struct sl_evq_reg in
 * the control area) that name files and processes that are not the peer's
 * event queue: the marking end (root) never opens, maps, writes or closes
 * what they name, and keeps serving.  ARCHITECTURE.md, "The event queue". */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/fuse.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "evq/evq.h"
#include "ring/layout.h"
#include "test_segment.h"
#include "testutil.h"

#define WATCHDOG_SECS 60
#define EVQ_MAGIC 0x3151564520434c53ull /* evq.c's "SLC EVQ1" */
#define ROUNDS 50
#define NOBODY 65534

static size_t evq_size(void)
{
	return (sizeof(struct sl_evq_shared) + SL_PAGE - 1) & ~(size_t)(SL_PAGE - 1);
}

static void need_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root: the victim must be root, the attacker another uid");
}

/* ---- processes named by the forged registrations ------------------------------------------- */

/* A forked process that opens what its role says as user uid, reports up
 * to three descriptor numbers and stays until released. */
struct holder {
	pid_t pid;
	int release; /* write end: closing it lets the holder exit */
	int fd[3];
};

typedef void (*holder_role)(void *arg, int fd[3]);

/* then: what the holder does once released, its exit status (0: as expected). */
static void holder_start_then(struct holder *h, uid_t uid, holder_role role, int (*then)(void *), void *arg)
{
	int rep[2], rel[2];
	char b;

	cr_assert_eq(pipe(rep), 0);
	cr_assert_eq(pipe(rel), 0);
	h->pid = fork();
	cr_assert_geq(h->pid, 0);
	if (h->pid == 0) {
		int fd[3] = { -1, -1, -1 };

		close(rep[0]);
		close(rel[1]);
		if (uid != 0 && (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0))
			_exit(2);
		/* As an attacker's exec'd program would be. */
		prctl(PR_SET_DUMPABLE, 1);
		role(arg, fd);
		if (write(rep[1], fd, sizeof(fd)) != (ssize_t)sizeof(fd))
			_exit(3);
		while (read(rel[0], &b, 1) > 0)
			;
		_exit(then ? then(arg) : 0);
	}
	close(rep[1]);
	close(rel[0]);
	cr_assert_eq(read(rep[0], h->fd, sizeof(h->fd)), (ssize_t)sizeof(h->fd), "holder did not start");
	close(rep[0]);
	h->release = rel[1];
}

static void holder_start(struct holder *h, uid_t uid, holder_role role, void *arg)
{
	holder_start_then(h, uid, role, NULL, arg);
}

static void holder_stop(struct holder *h)
{
	int st;

	close(h->release);
	cr_assert_eq(waitpid(h->pid, &st, 0), h->pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "holder ended with status 0x%x", st);
}

/* ---- the scene: a root victim and its hostile peer ----------------------------------------- */

/* Both ends in this process (the victim is the marking end: its sends mark
 * the sets the peer registered); the hostile end writes the victim's
 * control words directly. */
struct scene {
	int victim, hostile;
	struct sl_area_ctl *victim_ctl; /* the victim receives into it: its registrations are the peer's */
	struct sl_area_ctl *peer_ctl;   /* the hostile end receives into it: the victim's own sets register there */
	uint64_t served;
};

static void scene_open(struct scene *sc)
{
	struct sl_test_hseg h;

	memset(sc, 0, sizeof(*sc));
	cr_assert_eq(tu_pair(AF_INET, &sc->hostile, &sc->victim), 0);
	cr_assert_eq(tu_accelerated(sc->victim), 1);
	sl_test_hostile_view(sc->hostile, &h); /* the segment's magic and areas checked */
	sc->victim_ctl = h.victim;
	sc->peer_ctl = h.mine;
}

static void scene_close(struct scene *sc)
{
	scilan_close(sc->hostile);
	scilan_close(sc->victim);
}

static void forge(struct sl_area_ctl *c, int k, int32_t pid, int32_t memfd, int32_t bell, uint64_t set_id)
{
	struct sl_evq_reg *r = &c->evq[k];
	static uint64_t tag = 0x4141000000000000ull;

	atomic_store(&r->pub, 0);
	atomic_store(&r->claim, ++tag);
	atomic_store(&r->set_id, set_id);
	atomic_store(&r->pid, pid);
	atomic_store(&r->memfd, memfd);
	atomic_store(&r->bell, bell);
	atomic_store(&r->index, 7);
	atomic_store(&r->pub, tag);
}

/* One send of the victim's, after asking it (as the peer may) to mark every
 * set and clearing the "cannot mark" flag it may have left: the victim
 * must deliver the byte whatever it made of the registrations. */
static void victim_sends(struct scene *sc)
{
	char b = 'v';

	atomic_store(&sc->victim_ctl->evq_want, 0xffffffffu);
	atomic_fetch_and(&sc->peer_ctl->marker_flags, ~SL_MARKER_LOST);
	cr_assert_eq(scilan_send(sc->victim, &b, 1, MSG_NOSIGNAL), 1, "victim send: %s", strerror(errno));
	cr_assert_eq(scilan_recv(sc->hostile, &b, 1, 0), 1, "the victim's byte did not arrive");
	cr_assert_eq(b, 'v');
	sc->served++;
}

/* The peer's registration of one of its sets, forged, and ROUNDS sends. */
static void attack(struct scene *sc, int32_t pid, int32_t memfd, int32_t bell, uint64_t set_id)
{
	for (int i = 0; i < ROUNDS; i++) {
		forge(sc->victim_ctl, i % SL_EVQ_CONN_SLOTS, pid, memfd, bell, set_id);
		victim_sends(sc);
	}
}

/* ---- files and observers -------------------------------------------------------------------- */

static char dir[64];

/* A directory everybody may search (so an O_PATH open of a root-only file in
 * it works for anyone, as for /etc/shadow). */
static const char *make_dir(void)
{
	strcpy(dir, "/tmp/scilan-hevq-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(chmod(dir, 0755), 0);
	return dir;
}

static pid_t fuse_server = -1;

/* Also after a failed assertion (the test's .fini). */
static void cleanup_dir(void)
{
	char mnt[96];

	if (fuse_server > 0) {
		snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
		umount2(mnt, MNT_DETACH);
		kill(fuse_server, SIGKILL);
		waitpid(fuse_server, NULL, 0);
		fuse_server = -1;
	}
	if (dir[0])
		tu_rmtree(dir);
	dir[0] = '\0';
}

static char *path_in_dir(const char *name)
{
	static char p[2][128];
	static int i;

	i ^= 1;
	snprintf(p[i], sizeof(p[i]), "%s/%s", dir, name);
	return p[i];
}

/* A root-only file whose first bytes look like an event queue (set_id) and
 * that is big enough to be mapped as one. */
static void write_secret(const char *path, uint64_t set_id, const struct stat *bell)
{
	size_t size = 4 * evq_size();
	unsigned char *buf = calloc(1, size);
	struct sl_evq_shared *sh = (struct sl_evq_shared *)buf;
	int fd;

	cr_assert_not_null(buf);
	memset(buf + sizeof(*sh), 'S', size - sizeof(*sh));
	sh->magic = EVQ_MAGIC;
	sh->set_id = set_id;
	if (bell) {
		sh->bell_dev = bell->st_dev;
		sh->bell_ino = bell->st_ino;
	}
	atomic_store(&sh->armed, 1);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, buf, size), (ssize_t)size);
	close(fd);
	free(buf);
}

static void assert_same_content(const char *path, const void *expect, size_t size)
{
	unsigned char *now = malloc(size);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, now, size, 0), (ssize_t)size);
	cr_assert(memcmp(now, expect, size) == 0, "%s was written by the victim", path);
	close(fd);
	free(now);
}

static void *read_all(const char *path, size_t size)
{
	unsigned char *buf = malloc(size);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, buf, size, 0), (ssize_t)size);
	close(fd);
	return buf;
}

/* Opens, reads, writes, closes of path from now on. */
static int watch(const char *path)
{
	int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);

	cr_assert_geq(in, 0);
	cr_assert_geq(inotify_add_watch(in, path,
					IN_OPEN | IN_ACCESS | IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CLOSE_NOWRITE),
		      0);
	return in;
}

static void assert_untouched(int in, const char *what)
{
	char ev[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n = read(in, ev, sizeof(ev));

	cr_assert(n < 0 && errno == EAGAIN, "the victim touched %s (inotify mask 0x%x)", what,
		  n > 0 ? ((struct inotify_event *)ev)->mask : 0);
	close(in);
}

/* ---- (a) the peer's own O_PATH descriptor of a root-only file -------------------------------- */

struct opath_arg {
	const char *path;
};

static void role_opath(void *p, int fd[3])
{
	struct opath_arg *a = p;

	fd[0] = open(a->path, O_PATH | O_CLOEXEC);
	fd[1] = fd[0];
	if (fd[0] < 0)
		_exit(4);
}

static void opath_of_root_only_file(uid_t attacker, bool local)
{
	const char *secret;
	struct opath_arg a;
	struct holder h;
	struct scene sc;
	struct stat before, after;
	void *content;
	int in;

	need_root();
	tu_watchdog(WATCHDOG_SECS, "hostile evq");
	make_dir();
	secret = path_in_dir("shadow");
	write_secret(secret, 0x1234, NULL);
	/* Read before the times are taken: a first read moves atime. */
	content = read_all(secret, 4 * evq_size());
	cr_assert_eq(stat(secret, &before), 0);
	a.path = secret;
	holder_start(&h, attacker, role_opath, &a);
	scene_open(&sc);
	in = watch(secret);
	if (local) {
		/* The victim's own sets register in the peer's area, which the
		 * peer can write as well: a local change marks them. */
		forge(sc.peer_ctl, 0, h.pid, h.fd[0], h.fd[1], 0x1234);
		cr_assert_eq(scilan_shutdown(sc.victim, SHUT_WR), 0);
		forge(sc.peer_ctl, 1, h.pid, h.fd[0], h.fd[1], 0x1234);
		cr_assert_eq(scilan_shutdown(sc.victim, SHUT_RDWR), 0);
		cr_assert_eq(scilan_recv(sc.hostile, (char[1]){ 0 }, 1, 0), 0, "EOF after the victim's shutdown");
	} else {
		attack(&sc, h.pid, h.fd[0], h.fd[1], 0x1234);
	}
	assert_untouched(in, "the root-only file behind the peer's O_PATH descriptor");
	cr_assert_eq(stat(secret, &after), 0);
	cr_assert(after.st_atim.tv_sec == before.st_atim.tv_sec && after.st_atim.tv_nsec == before.st_atim.tv_nsec,
		  "atime changed");
	cr_assert(after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec,
		  "mtime changed");
	assert_same_content(secret, content, (size_t)before.st_size);
	free(content);
	scene_close(&sc);
	holder_stop(&h);
	cleanup_dir();
}

Test(hostile_evq, opath_of_root_only_file_from_another_uid_not_opened, .timeout = 120, .fini = cleanup_dir)
{
	opath_of_root_only_file(NOBODY, false);
}

Test(hostile_evq, opath_of_root_only_file_from_the_same_uid_not_opened, .timeout = 120, .fini = cleanup_dir)
{
	opath_of_root_only_file(0, false);
}

Test(hostile_evq, forged_registration_of_our_own_set_not_opened, .timeout = 120, .fini = cleanup_dir)
{
	opath_of_root_only_file(NOBODY, true);
}

/* ---- (b) a third party's files: a root-only file and pipe, an unsealed memfd ---------------- */

struct third_arg {
	const char *path;
	int memfd; /* inherited, or -1 */
	int pipe_w;
};

static void role_third_party(void *p, int fd[3])
{
	struct third_arg *a = p;

	fd[0] = a->memfd >= 0 ? a->memfd : open(a->path, O_RDWR | O_CLOEXEC);
	fd[1] = a->pipe_w;
	if (fd[0] < 0)
		_exit(4);
}

static void third_party(uid_t owner, bool memfd)
{
	struct third_arg a = { .memfd = -1 };
	int bell[2], in = -1;
	struct stat bst, st;
	struct holder h;
	struct scene sc;
	void *content;
	size_t size;
	char b;

	need_root();
	tu_watchdog(WATCHDOG_SECS, "hostile evq");
	make_dir();
	cr_assert_eq(pipe2(bell, O_NONBLOCK | O_CLOEXEC), 0);
	cr_assert_eq(fstat(bell[0], &bst), 0);
	a.path = path_in_dir("their-data");
	write_secret(a.path, 0x5678, &bst);
	cr_assert_eq(stat(a.path, &st), 0);
	size = (size_t)st.st_size;
	if (memfd) {
		/* The same bytes in a memfd nobody sealed: a third party's shared memory. */
		void *buf = read_all(a.path, size);

		a.memfd = memfd_create("third-party", MFD_CLOEXEC);
		cr_assert_geq(a.memfd, 0);
		cr_assert_eq(pwrite(a.memfd, buf, size, 0), (ssize_t)size);
		free(buf);
	}
	content = read_all(a.path, size);
	a.pipe_w = bell[1];
	holder_start(&h, owner, role_third_party, &a);
	scene_open(&sc);
	if (!memfd)
		in = watch(a.path);
	attack(&sc, h.pid, h.fd[0], h.fd[1], 0x5678);
	if (memfd) {
		unsigned char *now = malloc(size);

		cr_assert_eq(pread(a.memfd, now, size, 0), (ssize_t)size);
		cr_assert(memcmp(now, content, size) == 0, "the victim wrote into the third party's memfd");
		free(now);
	} else {
		assert_untouched(in, "the third party's root-only file");
		assert_same_content(a.path, content, size);
	}
	cr_assert(read(bell[0], &b, 1) < 0 && errno == EAGAIN, "the victim wrote into the third party's pipe");
	free(content);
	scene_close(&sc);
	holder_stop(&h);
	cleanup_dir();
}

Test(hostile_evq, third_party_root_file_and_pipe_untouched, .timeout = 120, .fini = cleanup_dir)
{
	third_party(0, false);
}

Test(hostile_evq, third_party_unsealed_memfd_untouched, .timeout = 120, .fini = cleanup_dir)
{
	third_party(NOBODY, true);
}

/* ---- the peer's own queue, well formed, whose bell is a root-only FIFO ----------------------- */

struct fifo_arg {
	const char *fifo;
	uint64_t set_id;
};

static void role_queue_with_fifo_bell(void *p, int fd[3])
{
	struct fifo_arg *a = p;
	struct sl_evq_shared *sh;
	struct stat st;

	fd[0] = memfd_create("scilan-evq", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	fd[1] = open(a->fifo, O_PATH | O_CLOEXEC);
	if (fd[0] < 0 || fd[1] < 0 || fstat(fd[1], &st) < 0 || ftruncate(fd[0], (off_t)evq_size()) < 0 ||
	    fcntl(fd[0], F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		_exit(4);
	sh = mmap(NULL, evq_size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd[0], 0);
	if (sh == MAP_FAILED)
		_exit(5);
	sh->magic = EVQ_MAGIC;
	sh->set_id = a->set_id;
	sh->bell_dev = st.st_dev;
	sh->bell_ino = st.st_ino;
	atomic_store(&sh->armed, 1);
}

Test(hostile_evq, root_only_fifo_as_bell_never_written, .timeout = 120, .fini = cleanup_dir)
{
	struct fifo_arg a = { .set_id = 0x9abc };
	struct holder h;
	struct scene sc;
	int reader, in;
	char b;

	need_root();
	tu_watchdog(WATCHDOG_SECS, "hostile evq");
	make_dir();
	a.fifo = path_in_dir("daemon.fifo");
	cr_assert_eq(mkfifo(a.fifo, 0600), 0);
	/* A root daemon reading its private FIFO. */
	reader = open(a.fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	cr_assert_geq(reader, 0);
	holder_start(&h, NOBODY, role_queue_with_fifo_bell, &a);
	scene_open(&sc);
	in = watch(a.fifo);
	attack(&sc, h.pid, h.fd[0], h.fd[1], a.set_id);
	assert_untouched(in, "the root-only FIFO");
	cr_assert_neq(read(reader, &b, 1), 1, "the victim wrote into the root-only FIFO");
	close(reader);
	scene_close(&sc);
	holder_stop(&h);
	cleanup_dir();
}

/* ---- the victim's own descriptors: closing another description of a file drops our locks ---- */

Test(hostile_evq, victims_own_file_not_reopened_its_lock_kept, .timeout = 120, .fini = cleanup_dir)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	const char *lockfile;
	struct scene sc;
	pid_t child;
	int fd, st;

	need_root();
	tu_watchdog(WATCHDOG_SECS, "hostile evq");
	make_dir();
	lockfile = path_in_dir("db.lock");
	write_secret(lockfile, 0x77, NULL);
	fd = open(lockfile, O_RDWR | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fcntl(fd, F_SETLK, &fl), 0);
	scene_open(&sc);
	attack(&sc, getpid(), fd, fd, 0x77);
	/* Another process asks who locks it: still we. */
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		struct flock q = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int f = open(lockfile, O_RDWR);

		_exit(f >= 0 && fcntl(f, F_GETLK, &q) == 0 && q.l_type == F_WRLCK ? 0 : 1);
	}
	cr_assert_eq(waitpid(child, &st, 0), child);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the victim lost its lock on its own file");
	close(fd);
	scene_close(&sc);
	cleanup_dir();
}

/* ---- (d) garbage ----------------------------------------------------------------------------- */

Test(hostile_evq, garbage_registrations_victim_keeps_serving, .timeout = 120, .fini = cleanup_dir)
{
	static const int32_t pids[] = { 0, -1, 1, 0x7fffffff, -0x7fffffff - 1 };
	static const int32_t fds[] = { -1, 0, 1, 2, 3, 1 << 30, -0x7fffffff - 1 };
	struct scene sc;

	/* A connection per registration: the first that is not a set's
	 * queue ends the victim's marking for its connection. */
	tu_watchdog(WATCHDOG_SECS, "hostile evq");
	for (size_t i = 0; i < sizeof(pids) / sizeof(pids[0]); i++)
		for (size_t j = 0; j < sizeof(fds) / sizeof(fds[0]); j++) {
			scene_open(&sc);
			forge(sc.victim_ctl, (int)(j % SL_EVQ_CONN_SLOTS), pids[i], fds[j], fds[(j + 1) % 7], j);
			victim_sends(&sc);
			victim_sends(&sc);
			scene_close(&sc);
		}
	/* Our own process: every descriptor of ours as the queue and bell. */
	for (int fd = 0; fd < 64; fd++) {
		scene_open(&sc);
		forge(sc.victim_ctl, fd % SL_EVQ_CONN_SLOTS, getpid(), fd, fd + 1, (uint64_t)fd);
		victim_sends(&sc);
		victim_sends(&sc);
		scene_close(&sc);
	}
}

/* ---- (c) a file whose file system never answers (FUSE) --------------------------------------- */

/* A minimal FUSE server with one file, "f": it records the pid of every
 * request and answers those of any process but the attacker with EIO (a
 * hostile server would not answer at all: the victim would hang). */
struct fuse_log {
	_Atomic pid_t attacker;
	_Atomic int others;       /* requests of any other process after the attacker opened "f" */
	_Atomic pid_t other_pid;  /* the first of them */
	_Atomic int armed;
};

static void fuse_reply(int dev, uint64_t unique, int error, const void *body, size_t len)
{
	struct {
		struct fuse_out_header h;
		unsigned char body[256];
	} out;

	out.h.len = (uint32_t)(sizeof(out.h) + len);
	out.h.error = error;
	out.h.unique = unique;
	if (len)
		memcpy(out.body, body, len); /* body is NULL for a bare error */
	(void)!write(dev, &out, out.h.len);
}

static void fuse_attr(struct fuse_attr *a, uint64_t node)
{
	memset(a, 0, sizeof(*a));
	a->ino = node;
	a->mode = node == FUSE_ROOT_ID ? S_IFDIR | 0755 : S_IFREG | 0644;
	a->nlink = 1;
	a->size = node == FUSE_ROOT_ID ? 0 : 65536;
	a->blksize = 4096;
}

static void fuse_serve(int dev, struct fuse_log *log)
{
	static unsigned char buf[FUSE_MIN_READ_BUFFER + 65536];

	for (;;) {
		ssize_t n = read(dev, buf, sizeof(buf));
		struct fuse_in_header *in = (struct fuse_in_header *)buf;

		if (n < 0 && (errno == EINTR || errno == ENOENT))
			continue;
		if (n < (ssize_t)sizeof(*in))
			_exit(0);
		if (atomic_load(&log->armed) && (pid_t)in->pid != atomic_load(&log->attacker) &&
		    in->opcode != FUSE_INIT && in->opcode != FUSE_FORGET && in->opcode != FUSE_DESTROY) {
			pid_t none = 0;

			atomic_compare_exchange_strong(&log->other_pid, &none, (pid_t)in->pid);
			atomic_fetch_add(&log->others, 1);
			if (in->opcode != FUSE_INTERRUPT)
				fuse_reply(dev, in->unique, -EIO, NULL, 0);
			continue;
		}
		switch (in->opcode) {
		case FUSE_INIT: {
			struct fuse_init_out o = { .major = FUSE_KERNEL_VERSION, .minor = FUSE_KERNEL_MINOR_VERSION,
						   .max_readahead = 65536, .max_write = 4096, .time_gran = 1 };

			fuse_reply(dev, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_LOOKUP: {
			struct fuse_entry_out o = { .nodeid = 2, .generation = 1 };

			if (strcmp((char *)(in + 1), "f") != 0) {
				fuse_reply(dev, in->unique, -ENOENT, NULL, 0);
				break;
			}
			fuse_attr(&o.attr, 2);
			fuse_reply(dev, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_GETATTR: {
			struct fuse_attr_out o = { 0 };

			fuse_attr(&o.attr, in->nodeid);
			fuse_reply(dev, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_OPEN:
		case FUSE_OPENDIR: {
			struct fuse_open_out o = { .fh = 1 };

			fuse_reply(dev, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_FORGET:
		case FUSE_BATCH_FORGET:
		case FUSE_INTERRUPT:
			break;
		case FUSE_FLUSH:
		case FUSE_RELEASE:
		case FUSE_RELEASEDIR:
			fuse_reply(dev, in->unique, 0, NULL, 0);
			break;
		default:
			fuse_reply(dev, in->unique, -ENOSYS, NULL, 0);
		}
	}
}

struct fuse_arg {
	const char *path;
};

static void role_fuse_file(void *p, int fd[3])
{
	struct fuse_arg *a = p;

	fd[0] = open(a->path, O_RDONLY | O_CLOEXEC);
	fd[1] = fd[0];
	if (fd[0] < 0)
		_exit(4);
}

Test(hostile_evq, fuse_file_never_touched, .timeout = 120, .fini = cleanup_dir)
{
	struct fuse_log *log = tu_shared_alloc(sizeof(*log));
	struct fuse_arg a;
	char opts[128];
	const char *mnt;
	struct holder h;
	struct scene sc;
	int dev;

	need_root();
	tu_watchdog(WATCHDOG_SECS, "hostile evq");
	cr_assert_not_null(log);
	memset(log, 0, sizeof(*log));
	make_dir();
	mnt = path_in_dir("mnt");
	cr_assert_eq(mkdir(mnt, 0755), 0);
	dev = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (dev < 0) {
		cleanup_dir();
		cr_skip_test("no /dev/fuse: %s", strerror(errno));
	}
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", dev);
	if (mount("scilan-test", mnt, "fuse.scilan-test", MS_NOSUID | MS_NODEV, opts) < 0) {
		close(dev);
		cleanup_dir();
		cr_skip_test("cannot mount FUSE: %s", strerror(errno));
	}
	fuse_server = fork();
	cr_assert_geq(fuse_server, 0);
	if (fuse_server == 0)
		fuse_serve(dev, log);
	a.path = path_in_dir("mnt/f");
	holder_start(&h, NOBODY, role_fuse_file, &a);
	atomic_store(&log->attacker, h.pid);
	atomic_store(&log->armed, 1);
	scene_open(&sc);
	attack(&sc, h.pid, h.fd[0], h.fd[1], 0x4242);
	atomic_store(&log->armed, 0);
	cr_assert_eq(atomic_load(&log->others), 0, "pid %d (the victim is %d) made %d requests of the FUSE file",
		     (int)atomic_load(&log->other_pid), (int)getpid(), atomic_load(&log->others));
	scene_close(&sc);
	holder_stop(&h);
	close(dev);
	cleanup_dir();
}

/* ---- a real set still gets its marks, also once its waiter is gone ---------------------------- */

/* The waiter: a real queue (sl_evq_open), armed as before a sleep; once
 * released, it says whether the victim marked bit 7 and rang the bell. */
struct waiter_arg {
	uint64_t set_id; /* shared memory */
};

static struct sl_evq waiter_q;

static void marked(void *arg, uint32_t index)
{
	*(uint32_t *)arg |= index == 7 ? 1u : 2u;
}

static void role_waiter(void *p, int fd[3])
{
	struct waiter_arg *a = p;

	if (sl_evq_open(&waiter_q) < 0)
		_exit(6);
	sl_evq_cover(&waiter_q, 8); /* the forged registration's bit 7 */
	sl_evq_arm(&waiter_q);
	a->set_id = waiter_q.sh->set_id;
	fd[0] = waiter_q.memfd;
	fd[1] = waiter_q.bell_w;
}

static int waiter_verdict(void *p)
{
	uint32_t got = 0;
	char b;

	(void)p;
	sl_evq_take(&waiter_q, marked, &got);
	if (got != 1)
		return 10 + (int)got;
	return read(waiter_q.bell_r, &b, 1) == 1 ? 0 : 20;
}

static void real_set_marked(uid_t waiter)
{
	struct waiter_arg *a = tu_shared_alloc(sizeof(*a));
	struct holder h;
	struct scene sc;

	need_root();
	tu_watchdog(WATCHDOG_SECS, "hostile evq");
	cr_assert_not_null(a);
	holder_start_then(&h, waiter, role_waiter, waiter_verdict, a);
	scene_open(&sc);
	forge(sc.victim_ctl, 0, h.pid, h.fd[0], h.fd[1], a->set_id);
	victim_sends(&sc);
	cr_assert_eq(atomic_load(&sc.peer_ctl->marker_flags) & SL_MARKER_LOST, 0, "the victim could not mark");
	holder_stop(&h);
	/* The waiter is gone, armed: its bell has no reader but ours, and a
	 * mark of it must not raise SIGPIPE (which kills a program that does
	 * not ignore it). */
	atomic_store(&sc.victim_ctl->evq_want, 0xffffffffu);
	victim_sends(&sc);
	scene_close(&sc);
}

Test(hostile_evq, real_set_of_the_same_uid_marked, .timeout = 120)
{
	real_set_marked(0);
}

Test(hostile_evq, real_set_of_another_uid_marked_by_root, .timeout = 120)
{
	real_set_marked(NOBODY);
}
