/* testutil_env.c — the process-environment helpers of testutil.h: counting SIGPIPE,
 * capturing stderr into memory, and temporary /dev/shm directories (an isolated
 * SCILAN_RUNDIR) removed at exit. */
#include "testutil.h"

#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* ---- signals, capture, directories -------------------------------------------- */

static volatile sig_atomic_t sigpipes;

static void on_sigpipe(int sig)
{
	(void)sig;
	sigpipes++;
}

void tu_count_sigpipe(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigpipe;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPIPE, &sa, NULL);
	sigpipes = 0;
}

int tu_sigpipe_count(void)
{
	return (int)sigpipes;
}

static int capture_fd = -1;

int tu_capture_begin(void)
{
	int saved;

	fflush(stderr);
	capture_fd = memfd_create("tu-stderr", MFD_CLOEXEC);
	if (capture_fd < 0)
		return -1;
	saved = dup(STDERR_FILENO);
	dup2(capture_fd, STDERR_FILENO);
	return saved;
}

char *tu_capture_end(int token)
{
	off_t size;
	char *out;
	ssize_t n;

	fflush(stderr);
	if (token >= 0) {
		dup2(token, STDERR_FILENO);
		close(token);
	}
	if (capture_fd < 0)
		return strdup("");
	size = lseek(capture_fd, 0, SEEK_END);
	out = malloc((size_t)(size > 0 ? size : 0) + 1);
	if (!out)
		return NULL;
	n = size > 0 ? pread(capture_fd, out, (size_t)size, 0) : 0;
	out[n > 0 ? n : 0] = '\0';
	close(capture_fd);
	capture_fd = -1;
	return out;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void tu_rmtree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

#define MAX_TMPDIRS 8
static char tmpdirs[MAX_TMPDIRS][64];
static pid_t tmpdir_owner;
static int ntmpdirs;

static void tmpdir_cleanup(void)
{
	if (getpid() != tmpdir_owner)
		return;
	for (int i = 0; i < ntmpdirs; i++)
		tu_rmtree(tmpdirs[i]);
}

const char *tu_tmpdir(void)
{
	char *d;

	if (ntmpdirs >= MAX_TMPDIRS)
		return NULL;
	d = tmpdirs[ntmpdirs];
	snprintf(d, sizeof(tmpdirs[0]), "/dev/shm/scilan-test-XXXXXX");
	if (!mkdtemp(d))
		return NULL;
	if (ntmpdirs++ == 0) {
		tmpdir_owner = getpid();
		atexit(tmpdir_cleanup);
	}
	return d;
}

const char *tu_isolated_rundir(void)
{
	static char path[128];
	const char *d = tu_tmpdir();

	if (!d)
		return NULL;
	snprintf(path, sizeof(path), "%s/run", d);
	setenv("SCILAN_RUNDIR", path, 1);
	return path;
}

void tu_offer_always(void)
{
	setenv("SCILAN_SHORT_CONNS", "accelerate", 1);
}

int tu_cluster_map(const char *lines)
{
	char path[256];
	const char *d = tu_tmpdir();
	FILE *f;

	if (!d)
		return -1;
	snprintf(path, sizeof(path), "%s/cluster.conf", d);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(lines, f);
	if (fclose(f) != 0)
		return -1;
	return setenv("SCILAN_CONF", path, 1);
}

void tu_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
	}
}
