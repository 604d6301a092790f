/* shell_calls.c — system, popen and pclose.  glibc starts their shell with
 * its internal spawn, which the hook's posix_spawn (spawn_calls.c) never
 * sees: a shell using an inherited connection by number (`>&5`) would read
 * and write the bare kernel socket.  While the process has scilan sockets
 * they are run here through posix_spawn, i.e. the hook's.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hook.h"
#include "preload_api.h"

extern char **environ;

static bool worth_handing_over(struct sl_sock *s)
{
	enum sl_state st = sl_sock_state(s);

	return st == SL_CONNECTED || st == SL_LISTENING || st == SL_CONNECTING;
}

static bool have_sockets(void)
{
	return sl_sock_any(worth_handing_over);
}

/* system(): SIGINT and SIGQUIT are ignored by the caller while any system()
 * of its runs (counted: threads may overlap), SIGCHLD is blocked, and the
 * shell starts with both at their default and the caller's mask, as
 * glibc's does. */
static pthread_mutex_t sys_lock = PTHREAD_MUTEX_INITIALIZER;
static int sys_running;
static struct sigaction saved_int, saved_quit;

HK_EXPORT int system(const char *cmd)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	sigset_t chld, omask, dfl;
	posix_spawnattr_t attr;
	int status = -1, r;
	pid_t pid;

	hk_enter();
	if (!cmd || !have_sockets())
		return HK_NEXT(system)(cmd);
	sigemptyset(&ign.sa_mask);
	pthread_mutex_lock(&sys_lock);
	if (sys_running++ == 0) {
		sigaction(SIGINT, &ign, &saved_int);
		sigaction(SIGQUIT, &ign, &saved_quit);
	}
	pthread_mutex_unlock(&sys_lock);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &omask);

	sigemptyset(&dfl);
	if (saved_int.sa_handler != SIG_IGN)
		sigaddset(&dfl, SIGINT);
	if (saved_quit.sa_handler != SIG_IGN)
		sigaddset(&dfl, SIGQUIT);
	r = posix_spawnattr_init(&attr);
	if (r == 0) {
		posix_spawnattr_setsigmask(&attr, &omask);
		posix_spawnattr_setsigdefault(&attr, &dfl);
		posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
		r = posix_spawn(&pid, "/bin/sh", NULL, &attr, argv, environ);
		posix_spawnattr_destroy(&attr);
	}
	if (r == 0) {
		while (waitpid(pid, &status, 0) < 0)
			if (errno != EINTR) {
				status = -1;
				break;
			}
	} else {
		status = 127 << 8; /* as the shell's "could not run" */
	}

	pthread_mutex_lock(&sys_lock);
	if (--sys_running == 0) {
		sigaction(SIGINT, &saved_int, NULL);
		sigaction(SIGQUIT, &saved_quit, NULL);
	}
	pthread_mutex_unlock(&sys_lock);
	sigprocmask(SIG_SETMASK, &omask, NULL);
	return status;
}

/* The streams popen returned here, with their shells, for pclose. */
struct piped {
	FILE *f;
	pid_t pid;
	struct piped *next;
};
static struct piped *pipes;
static pthread_mutex_t pipes_lock = PTHREAD_MUTEX_INITIALIZER;

HK_EXPORT FILE *popen(const char *cmd, const char *mode)
{
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	posix_spawn_file_actions_t fa;
	struct piped *pp;
	int p[2], mine, theirs, target, r;
	bool reading;
	pid_t pid;
	FILE *f;

	hk_enter();
	if (!mode || !have_sockets())
		return HK_NEXT(popen)(cmd, mode);
	if ((mode[0] != 'r' && mode[0] != 'w') || strspn(mode + 1, "e") != strlen(mode + 1)) {
		errno = EINVAL;
		return NULL;
	}
	reading = mode[0] == 'r';
	pp = malloc(sizeof(*pp));
	if (!pp || pipe2(p, O_CLOEXEC) < 0) {
		free(pp);
		return NULL;
	}
	/* The wrapper does not check the hook's own calls: the stream must not
	 * land on a stale connection (fdopen would make it a ring stream). */
	hk_fd_reused(p[0]);
	hk_fd_reused(p[1]);
	mine = reading ? p[0] : p[1];
	theirs = reading ? p[1] : p[0];
	target = reading ? STDOUT_FILENO : STDIN_FILENO;
	r = posix_spawn_file_actions_init(&fa);
	if (r == 0) {
		/* dup2 onto itself clears close-on-exec, as dup2 elsewhere does. */
		r = posix_spawn_file_actions_adddup2(&fa, theirs, target);
		if (r == 0)
			r = posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ);
		posix_spawn_file_actions_destroy(&fa);
	}
	close(theirs);
	if (r != 0 || (!strchr(mode, 'e') && fcntl(mine, F_SETFD, 0) < 0) || !(f = fdopen(mine, reading ? "r" : "w"))) {
		/* fdopen failing leaves a shell behind: its pipe end closes now. */
		int err = r ? r : errno;

		close(mine);
		if (r == 0)
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
		free(pp);
		errno = err;
		return NULL;
	}
	pp->f = f;
	pp->pid = pid;
	pthread_mutex_lock(&pipes_lock);
	pp->next = pipes;
	pipes = pp;
	pthread_mutex_unlock(&pipes_lock);
	return f;
}

HK_EXPORT int pclose(FILE *f)
{
	struct piped **at, *pp = NULL;
	int status;

	hk_enter();
	pthread_mutex_lock(&pipes_lock);
	for (at = &pipes; *at; at = &(*at)->next)
		if ((*at)->f == f) {
			pp = *at;
			*at = pp->next;
			break;
		}
	pthread_mutex_unlock(&pipes_lock);
	if (!pp)
		return HK_NEXT(pclose)(f);
	fclose(f);
	while (waitpid(pp->pid, &status, 0) < 0)
		if (errno != EINTR) {
			status = -1;
			break;
		}
	free(pp);
	return status;
}
