/* log.c — formats scilan's diagnostics as one write(2) per line on stderr, so
 * lines from several threads or processes never interleave; never when
 * stderr is a network socket (diagnostics must not join a connection's data).
 */
#include "runtime/log.h"
#include "runtime/sys.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static _Atomic int current_level = SL_LOG_NOTICE;
static _Atomic bool stderr_muted;
static _Atomic bool sandboxed;

void sl_log_before_sandbox(void)
{
	struct rlimit rl;
	struct stat st;

	atomic_store(&sandboxed, true);
	/* A regular file the process may not grow (OpenSSH's pre-auth child
	 * sets RLIMIT_FSIZE 0): a write there is SIGXFSZ, which kills.  Asked
	 * now, since the sandbox may refuse (or kill for) fstat and getrlimit. */
	if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (fstat(STDERR_FILENO, &st) < 0 || S_ISREG(st.st_mode)))
		atomic_store(&stderr_muted, true);
}

bool sl_log_sandboxed(void)
{
	return atomic_load_explicit(&sandboxed, memory_order_relaxed);
}

bool sl_log_stderr_muted(void)
{
	return atomic_load_explicit(&stderr_muted, memory_order_relaxed);
}

const char *const sl_log_level_names[SL_LOG_DEBUG + 1] = { "error", "warn", "notice", "info", "debug" };
/* As each line says it. */
static const char *const level_words[SL_LOG_DEBUG + 1] = { "error", "warning", "notice", "info", "debug" };

void sl_log_set_level(enum sl_log_level level)
{
	atomic_store(&current_level, (int)level);
}

bool sl_log_fd_is_network(int fd)
{
	int domain;
	socklen_t len = sizeof(domain);

	return sl_sys.getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 &&
	       (domain == AF_INET || domain == AF_INET6);
}

void sl_log(enum sl_log_level level, const char *fmt, ...)
{
	char line[1024];
	int saved_errno = errno;
	int n;
	va_list ap;

	if ((int)level > atomic_load(&current_level) || sl_log_stderr_muted())
		return;
	n = snprintf(line, sizeof(line), "scilan: pid %d: %s: ", (int)getpid(), level_words[level]);
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	/* An inetd-style child's stderr may be its connection: a line there
	 * would join the data (a kernel TCP stream's, or the companion socket
	 * of a ring connection, which its peer takes for the end). */
	if (sl_log_fd_is_network(STDERR_FILENO))
		goto out;
	if (sl_sys.write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* Nowhere left to report it. */
	}
out:
	errno = saved_errno;
}
