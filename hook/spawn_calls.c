/* spawn_calls.c — posix_spawn and posix_spawnp, run as fork + attributes +
 * file actions + an exec through the hook's wrappers while the process has
 * scilan sockets, and the file-action calls, recorded for that.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "hook.h"
#include "preload_api.h"

enum act_kind { ACT_CLOSE, ACT_DUP2, ACT_OPEN, ACT_CHDIR, ACT_FCHDIR, ACT_CLOSEFROM, ACT_TCSETPGRP };

struct act {
	enum act_kind kind;
	int fd, newfd, oflag;
	mode_t mode;
	char *path;
};

/* One posix_spawn_file_actions_t, by address. */
struct fa_rec {
	const void *key;
	struct act *a;
	int n, cap;
	bool broken; /* an action could not be recorded: spawn the plain way */
	struct fa_rec *next;
};

static struct fa_rec *recs;
static pthread_mutex_t recs_lock = PTHREAD_MUTEX_INITIALIZER;

static struct fa_rec *find_locked(const void *key)
{
	for (struct fa_rec *r = recs; r; r = r->next)
		if (r->key == key)
			return r;
	return NULL;
}

static void forget(const void *key)
{
	struct fa_rec **pp, *r;

	pthread_mutex_lock(&recs_lock);
	for (pp = &recs; (r = *pp); pp = &r->next)
		if (r->key == key) {
			*pp = r->next;
			for (int i = 0; i < r->n; i++)
				free(r->a[i].path);
			free(r->a);
			free(r);
			break;
		}
	pthread_mutex_unlock(&recs_lock);
}

/* Append one action to the record of fa (made by its init; none if the
 * object was initialised where the hook could not see it). */
static void record(const void *fa, struct act act, const char *path)
{
	struct fa_rec *r;

	pthread_mutex_lock(&recs_lock);
	r = find_locked(fa);
	if (r && !r->broken) {
		if (r->n == r->cap) {
			int cap = r->cap ? 2 * r->cap : 8;
			struct act *a = realloc(r->a, (size_t)cap * sizeof(*a));

			if (a) {
				r->a = a;
				r->cap = cap;
			}
		}
		act.path = path ? strdup(path) : NULL;
		if (r->n < r->cap && (!path || act.path))
			r->a[r->n++] = act;
		else
			r->broken = true;
	}
	pthread_mutex_unlock(&recs_lock);
}

HK_EXPORT int posix_spawn_file_actions_init(posix_spawn_file_actions_t *fa)
{
	int r = HK_NEXT(posix_spawn_file_actions_init)(fa);

	if (r == 0) {
		struct fa_rec *rec = calloc(1, sizeof(*rec));

		forget(fa); /* an earlier object at this address */
		if (rec) {
			/* Without a record, a spawn with these actions cannot be
			 * run by the hook (spawn_forked falls back). */
			rec->key = fa;
			pthread_mutex_lock(&recs_lock);
			rec->next = recs;
			recs = rec;
			pthread_mutex_unlock(&recs_lock);
		}
	}
	return r;
}

HK_EXPORT int posix_spawn_file_actions_destroy(posix_spawn_file_actions_t *fa)
{
	forget(fa);
	return HK_NEXT(posix_spawn_file_actions_destroy)(fa);
}

HK_EXPORT int posix_spawn_file_actions_addclose(posix_spawn_file_actions_t *fa, int fd)
{
	int r = HK_NEXT(posix_spawn_file_actions_addclose)(fa, fd);

	if (r == 0)
		record(fa, (struct act){ .kind = ACT_CLOSE, .fd = fd }, NULL);
	return r;
}

HK_EXPORT int posix_spawn_file_actions_adddup2(posix_spawn_file_actions_t *fa, int fd, int newfd)
{
	int r = HK_NEXT(posix_spawn_file_actions_adddup2)(fa, fd, newfd);

	if (r == 0)
		record(fa, (struct act){ .kind = ACT_DUP2, .fd = fd, .newfd = newfd }, NULL);
	return r;
}

HK_EXPORT int posix_spawn_file_actions_addopen(posix_spawn_file_actions_t *fa, int fd, const char *path, int oflag,
					       mode_t mode)
{
	int r = HK_NEXT(posix_spawn_file_actions_addopen)(fa, fd, path, oflag, mode);

	if (r == 0)
		record(fa, (struct act){ .kind = ACT_OPEN, .fd = fd, .oflag = oflag, .mode = mode }, path);
	return r;
}

HK_EXPORT int posix_spawn_file_actions_addchdir_np(posix_spawn_file_actions_t *fa, const char *path)
{
	int r = HK_NEXT(posix_spawn_file_actions_addchdir_np)(fa, path);

	if (r == 0)
		record(fa, (struct act){ .kind = ACT_CHDIR }, path);
	return r;
}

HK_EXPORT int posix_spawn_file_actions_addfchdir_np(posix_spawn_file_actions_t *fa, int fd)
{
	int r = HK_NEXT(posix_spawn_file_actions_addfchdir_np)(fa, fd);

	if (r == 0)
		record(fa, (struct act){ .kind = ACT_FCHDIR, .fd = fd }, NULL);
	return r;
}

HK_EXPORT int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *fa, int from)
{
	int r = HK_NEXT(posix_spawn_file_actions_addclosefrom_np)(fa, from);

	if (r == 0)
		record(fa, (struct act){ .kind = ACT_CLOSEFROM, .fd = from }, NULL);
	return r;
}

HK_EXPORT int posix_spawn_file_actions_addtcsetpgrp_np(posix_spawn_file_actions_t *fa, int fd)
{
	int r = HK_NEXT(posix_spawn_file_actions_addtcsetpgrp_np)(fa, fd);

	if (r == 0)
		record(fa, (struct act){ .kind = ACT_TCSETPGRP, .fd = fd }, NULL);
	return r;
}

/* ---- the spawn ------------------------------------------------------------ */

/* glibc's spawn runs the new image with internal calls (clone, dup2,
 * execve) the hook never sees: the child would get no hand-over (it would
 * read and write the bare kernel socket) and would not count as a holder
 * (our close would end the connection under it).  glibc's list of file
 * actions is private, hence the record above. */

static bool worth_handing_over(struct sl_sock *s)
{
	enum sl_state st = sl_sock_state(s);

	return st == SL_CONNECTED || st == SL_LISTENING || st == SL_CONNECTING;
}

/* The child's side of the attributes, as glibc's spawn applies them. */
static int apply_attr(const posix_spawnattr_t *attr)
{
	short flags = 0;

	if (!attr)
		return 0;
	posix_spawnattr_getflags(attr, &flags);
	if (flags & POSIX_SPAWN_SETSIGDEF) {
		sigset_t def;
		struct sigaction dfl = { .sa_handler = SIG_DFL };

		posix_spawnattr_getsigdefault(attr, &def);
		for (int sig = 1; sig < NSIG; sig++)
			if (sigismember(&def, sig) == 1)
				sigaction(sig, &dfl, NULL);
	}
	if (flags & POSIX_SPAWN_SETSIGMASK) {
		sigset_t mask;

		posix_spawnattr_getsigmask(attr, &mask);
		sigprocmask(SIG_SETMASK, &mask, NULL);
	}
	if ((flags & POSIX_SPAWN_SETSID) && setsid() < 0)
		return -1;
	if (flags & POSIX_SPAWN_SETPGROUP) {
		pid_t pg;

		posix_spawnattr_getpgroup(attr, &pg);
		if (setpgid(0, pg) < 0)
			return -1;
	}
	if (flags & (POSIX_SPAWN_SETSCHEDULER | POSIX_SPAWN_SETSCHEDPARAM)) {
		struct sched_param param;
		int policy;

		posix_spawnattr_getschedparam(attr, &param);
		posix_spawnattr_getschedpolicy(attr, &policy);
		if ((flags & POSIX_SPAWN_SETSCHEDULER) ? sched_setscheduler(0, policy, &param) < 0
						       : sched_setparam(0, &param) < 0)
			return -1;
	}
	if ((flags & POSIX_SPAWN_RESETIDS) && (setegid(getgid()) < 0 || seteuid(getuid()) < 0))
		return -1;
	return 0;
}

/* The file actions, through the hook's own close/dup2/open, so that the
 * table follows them and exec hands over what the child is left with. */
static int apply_actions(const struct act *a, int n)
{
	for (int i = 0; i < n; i++) {
		int fd;

		switch (a[i].kind) {
		case ACT_CLOSE:
			close(a[i].fd); /* glibc ignores its result too */
			break;
		case ACT_DUP2:
			if (a[i].fd == a[i].newfd) {
				/* POSIX: the descriptor then survives the exec. */
				int fl = fcntl(a[i].fd, F_GETFD);

				if (fl < 0 || fcntl(a[i].fd, F_SETFD, fl & ~FD_CLOEXEC) < 0)
					return -1;
			} else if (dup2(a[i].fd, a[i].newfd) < 0) {
				return -1;
			}
			break;
		case ACT_OPEN:
			fd = open(a[i].path, a[i].oflag, a[i].mode);
			if (fd < 0)
				return -1;
			hk_fd_reused(fd); /* our own open is not checked by the wrapper */
			if (fd != a[i].fd) {
				if (dup2(fd, a[i].fd) < 0)
					return -1;
				close(fd);
			}
			break;
		case ACT_CHDIR:
			if (chdir(a[i].path) < 0)
				return -1;
			break;
		case ACT_FCHDIR:
			if (fchdir(a[i].fd) < 0)
				return -1;
			break;
		case ACT_CLOSEFROM:
			closefrom(a[i].fd);
			break;
		case ACT_TCSETPGRP:
			if (tcsetpgrp(a[i].fd, getpgrp()) < 0)
				return -1;
			break;
		}
	}
	return 0;
}

/* fork, attributes, actions, exec; the exec's errno comes back through a
 * close-on-exec pipe, and a child that failed is reaped here, as glibc
 * does.  Returns the spawn's result, or -1 when it could not be tried this
 * way (the caller spawns the plain way). */
static int spawn_forked(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			const posix_spawnattr_t *attr, char *const argv[], char *const envp[], bool search)
{
	struct act *acts = NULL;
	int nacts = 0, p[2], err = 0;
	pid_t child;
	ssize_t got;

	if (fa) {
		struct fa_rec *r;

		pthread_mutex_lock(&recs_lock);
		r = find_locked(fa);
		if (r && !r->broken && r->n) {
			acts = malloc((size_t)r->n * sizeof(*acts));
			if (acts) {
				memcpy(acts, r->a, (size_t)r->n * sizeof(*acts));
				nacts = r->n;
			}
		}
		/* Not initialised through us, or unrecorded: glibc's list
		 * could hold anything. */
		if (!r || r->broken || (r->n && !acts)) {
			pthread_mutex_unlock(&recs_lock);
			free(acts);
			return -1;
		}
		pthread_mutex_unlock(&recs_lock);
	}
	if (pipe2(p, O_CLOEXEC) < 0) {
		free(acts);
		return errno;
	}
	hk_fd_reused(p[0]);
	hk_fd_reused(p[1]);
	child = fork();
	if (child == 0) {
		close(p[0]);
		if (apply_attr(attr) == 0 && apply_actions(acts, nacts) == 0) {
			if (search)
				execvpe(path, argv, envp);
			else
				execve(path, argv, envp);
		}
		err = errno;
		if (write(p[1], &err, sizeof(err)) < 0) {
			/* the parent then sees a spawn that worked and a 127 */
		}
		_exit(127);
	}
	err = child < 0 ? errno : 0;
	close(p[1]);
	free(acts); /* the child has its own copy; the paths are the record's */
	if (child < 0) {
		close(p[0]);
		return err;
	}
	do
		got = read(p[0], &err, sizeof(err));
	while (got < 0 && errno == EINTR);
	close(p[0]);
	if (got == (ssize_t)sizeof(err)) {
		while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
			;
		return err;
	}
	if (pid)
		*pid = child;
	return 0;
}

static int spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
		 char *const argv[], char *const envp[], bool search)
{
	int r;

	hk_enter();
	if (sl_sock_any(worth_handing_over)) {
		r = spawn_forked(pid, path, fa, attr, argv, envp, search);
		if (r >= 0)
			return r;
		sl_warn("posix_spawn%s %s: file actions the hook did not see; connections the child inherits are "
			"not handed over to it",
			search ? "p" : "", path);
	}
	return search ? HK_NEXT(posix_spawnp)(pid, path, fa, attr, argv, envp)
		      : HK_NEXT(posix_spawn)(pid, path, fa, attr, argv, envp);
}

HK_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			  const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return spawn(pid, path, fa, attr, argv, envp, false);
}

HK_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			   const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return spawn(pid, file, fa, attr, argv, envp, true);
}
