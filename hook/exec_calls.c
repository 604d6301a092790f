/* exec_calls.c — the exec family: connected scilan sockets that survive exec
 * are described in SCILAN_HANDOVER (with inheritable copies of their segment
 * and bells) and the new image's hook adopts them at start-up.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload_api.h"
#include "hook.h"

#define HANDOVER_MAX 16384
#define MAX_ARGS (1 << 20) /* more cannot fit in ARG_MAX */

extern char **environ;

/* Our own path, so a new image given an environment without the preload
 * still loads the hook that must read its handed-over rings. */
static const char *preload_path(void)
{
	static char path[4096 + 16];
	Dl_info info;

	if (!path[0] && dladdr((void *)preload_path, &info) && info.dli_fname)
		snprintf(path, sizeof(path), "LD_PRELOAD=%s", info.dli_fname);
	return path;
}

/* An LD_PRELOAD that names other libraries but not ours (a launcher's own
 * preload): ours goes first in it, or the new image would not adopt the
 * rings handed over and the peer's bytes would wait in them unread.  NULL
 * if it names ours already or the list is too long to extend. */
static char *preload_joined(const char *entry)
{
	static char joined[8192];
	const char *ours = preload_path() + 11; /* after "LD_PRELOAD=" */
	const char *list = entry + 11;

	if (!ours[0] || strstr(list, ours))
		return NULL;
	if (snprintf(joined, sizeof(joined), "LD_PRELOAD=%s:%s", ours, list) >= (int)sizeof(joined))
		return NULL;
	return joined;
}

/* envp plus (replacing any earlier) SCILAN_HANDOVER=list and, when it lacks
 * one, LD_PRELOAD (or ours joins the one it has); NULL (errno set) if it
 * cannot be built. */
static char **env_with(char *const envp[], const char *var)
{
	size_t n = 0, k = 0;
	bool has_preload = false;
	char **out;

	while (envp && envp[n])
		n++;
	out = malloc((n + 3) * sizeof(*out));
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (strncmp(envp[i], SL_HANDOVER_ENV "=", sizeof(SL_HANDOVER_ENV)) == 0)
			continue;
		if (strncmp(envp[i], "LD_PRELOAD=", 11) == 0) {
			char *joined = preload_joined(envp[i]);

			has_preload = true;
			out[k++] = joined ? joined : envp[i];
			continue;
		}
		out[k++] = envp[i];
	}
	out[k++] = (char *)var;
	if (!has_preload && preload_path()[0])
		out[k++] = (char *)preload_path();
	out[k] = NULL;
	return out;
}

/* The variable handed to the new image: on the heap, not on the caller's
 * stack (a thread may run on 16 KiB). */
struct prepared {
	char var[HANDOVER_MAX];
	int count;
};

static struct prepared *prepare(void)
{
	size_t prefix = sizeof(SL_HANDOVER_ENV);
	struct prepared *p;

	hk_enter();
	p = malloc(sizeof(*p));
	if (!p)
		return NULL;
	memcpy(p->var, SL_HANDOVER_ENV "=", prefix);
	p->count = sl_handover_export(p->var + prefix, sizeof(p->var) - prefix);
	if (p->count < 0) {
		free(p);
		return NULL;
	}
	return p;
}

static void abandon(struct prepared *p)
{
	int saved = errno;

	/* Also with nothing handed over: the holder counts export dropped for
	 * close-on-exec connections are given back. */
	sl_handover_abandon(p->count ? p->var + sizeof(SL_HANDOVER_ENV) : NULL);
	free(p);
	errno = saved;
}

/* One exec-family call: with connections to hand over, the environment
 * gains SCILAN_HANDOVER (and the preload); if the exec fails, the copies made
 * for the new image are closed again.  call() is the real exec with envp. */
struct exec_args {
	const char *path;
	int fd;
	char *const *argv;
	bool search; /* execvp: path is looked up on PATH */
};

/* The new image will not load the hook (static, set-ID): it would never
 * adopt a hand-over, and the peer's bytes would wait in rings nobody reads.
 * Each connection it inherits moves to kernel TCP first (bypass.c). */
static bool leave_inherited(int fd, struct sl_sock *s)
{
	int fdflags = sl_sys.fcntl(fd, F_GETFD);

	if (fdflags >= 0 && !(fdflags & FD_CLOEXEC) && s->seg && !sl_fell_back(s) &&
	    !atomic_load(&s->reset) && (sl_sock_on_rings(s) || sl_agree_pending(s)))
		sl_bypass_leave(s, SL_FB_EXEC);
	return false;
}

static int exec_with_handover(int (*call)(const struct exec_args *a, char *const envp[]), const struct exec_args *a,
			      char *const envp[])
{
	struct prepared *p;
	char **env;

	if (!hk_image_loads_hook(a->path, a->fd, a->search)) {
		hk_enter();
		sl_sock_any_fd(leave_inherited);
	}
	hk_epoll_before_exec();
	p = prepare();
	if (!p) {
		/* Exec without describing the connections would leave their
		 * peers writing into rings nobody reads. */
		errno = ENOMEM;
		return -1;
	}
	if (!p->count) {
		call(a, envp);
		abandon(p);
		return -1;
	}
	env = env_with(envp, p->var);
	if (!env) {
		abandon(p);
		errno = ENOMEM;
		return -1;
	}
	call(a, env);
	free(env);
	abandon(p);
	return -1;
}

static int call_execve(const struct exec_args *a, char *const envp[])
{
	return sl_sys.execve(a->path, a->argv, envp);
}

static int call_execvpe(const struct exec_args *a, char *const envp[])
{
	return HK_NEXT(execvpe)(a->path, a->argv, envp);
}

static int call_fexecve(const struct exec_args *a, char *const envp[])
{
	return HK_NEXT(fexecve)(a->fd, a->argv, envp);
}

HK_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	struct exec_args a = { .path = path, .argv = argv };

	return exec_with_handover(call_execve, &a, envp);
}

HK_EXPORT int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

HK_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	struct exec_args a = { .path = file, .argv = argv, .search = true };

	return exec_with_handover(call_execvpe, &a, envp);
}

HK_EXPORT int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

HK_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	struct exec_args a = { .fd = fd, .argv = argv };

	return exec_with_handover(call_fexecve, &a, envp);
}

/* The list forms gather their arguments into a heap array (glibc's own sit
 * on the stack at their exact size; ours must not cost a small thread stack
 * more) and use the vector forms above.  After the loop, ap is at what
 * follows the terminating NULL (execle's envp). */
#define GATHER(first, ap, argv)                                                \
	do {                                                                   \
		va_list count_;                                                \
		size_t n_ = 1;                                                 \
		va_copy(count_, ap);                                           \
		while (va_arg(count_, char *) && n_ < MAX_ARGS)                \
			n_++;                                                  \
		va_end(count_);                                                \
		if (n_ == MAX_ARGS || !(argv = malloc((n_ + 1) * sizeof(*argv)))) { \
			va_end(ap);                                            \
			errno = n_ == MAX_ARGS ? E2BIG : ENOMEM;              \
			return -1;                                             \
		}                                                              \
		argv[0] = (char *)(first);                                     \
		for (size_t i_ = 1; i_ <= n_; i_++)                            \
			argv[i_] = va_arg(ap, char *);                         \
	} while (0)

HK_EXPORT int execl(const char *path, const char *arg, ...)
{
	char **argv;
	va_list ap;
	int r;

	va_start(ap, arg);
	GATHER(arg, ap, argv);
	va_end(ap);
	r = execve(path, argv, environ);
	free(argv);
	return r;
}

HK_EXPORT int execlp(const char *file, const char *arg, ...)
{
	char **argv;
	va_list ap;
	int r;

	va_start(ap, arg);
	GATHER(arg, ap, argv);
	va_end(ap);
	r = execvpe(file, argv, environ);
	free(argv);
	return r;
}

HK_EXPORT int execle(const char *path, const char *arg, ...)
{
	char **argv, *const *envp;
	va_list ap;
	int r;

	va_start(ap, arg);
	GATHER(arg, ap, argv);
	envp = va_arg(ap, char *const *);
	va_end(ap);
	r = execve(path, argv, envp);
	free(argv);
	return r;
}
