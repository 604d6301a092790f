/* leftovers.c — what a process leaves in scilan's runtime directory: forked
 * workers that end with _exit (as Python's multiprocessing does) and a
 * program that reuses the number of the hook's statistics-file lock; a
 * statistics file kept from the first connection to exit.  Checks
 * print only when something is wrong, so plain and preloaded transcripts match. */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scen.h"

#define WORKERS 20

/* <SCILAN_RUNDIR>/stats/<pid>, or NULL when not under the hook. */
static const char *stats_path(pid_t pid, char *path, size_t size)
{
	const char *rundir = getenv("SCILAN_RUNDIR");

	if (!rundir)
		return NULL;
	snprintf(path, size, "%s/stats/%d", rundir, (int)pid);
	return path;
}

/* A process lists its accelerated connections in its statistics file once
 * it is 10 ms past its first one, at its next wait (runtime/young.h): a
 * wait with nothing to read.  Plain, the same wait times out the same. */
static void grow_up(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	usleep(15000);
	MUST(poll(&p, 1, 1));
}

/* Workers connect, exchange a little and _exit with the connection open: no
 * destructor runs.  Later set-ups (a listen here) sweep their files. */
static int sc_workers_exit(void)
{
	pid_t pids[WORKERS];
	uint16_t port;
	int l = tcp_listener(&port), left = 0;
	char path[4200], b;

	for (int i = 0; i < WORKERS; i++) {
		int s, st;

		pids[i] = MUST(fork());
		if (pids[i] == 0) {
			int c = tcp_connect(port);

			if (send_all(c, "w", 1) != 1 || recv_all(c, &b, 1) != 1)
				_exit(1);
			_exit(0);
		}
		s = MUST(accept(l, NULL, NULL));
		MUST(recv_all(s, &b, 1));
		MUST(send_all(s, "k", 1));
		MUST(waitpid(pids[i], &st, 0));
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			say("worker %d failed", i);
		close(s);
	}
	say("%d workers served and gone", WORKERS);
	/* Each listen sweeps a few dozen entries. */
	for (int i = 0; i < 2 * WORKERS; i++) {
		uint16_t p;

		close(tcp_listener(&p));
	}
	for (int i = 0; i < WORKERS; i++)
		if (stats_path(pids[i], path, sizeof(path)) && access(path, F_OK) == 0)
			left++;
	if (left)
		say("statistics files of %d dead workers remain", left);
	close(l);
	return 0;
}

/* The hook keeps its statistics file locked through a descriptor of its
 * own; a program that dup2s onto that number gets the number, the hook
 * keeps the lock on another, and closing the last connection must close
 * the hook's descriptor, never the program's. */
static int sc_lock_number_reused(void)
{
	enum { TOP = 2100 };
	static bool mine[TOP];
	char tmp[] = "/tmp/hookscen-lo-XXXXXX", path[4200];
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct rlimit rl;
	int c, s, f, fill, taken = 0, lost = 0;

	for (int fd = 0; fd < TOP; fd++)
		mine[fd] = fcntl(fd, F_GETFD) >= 0;
	tcp_pair(&c, &s);
	mine[c] = mine[s] = true;
	grow_up(c);
	f = MUST(mkstemp(tmp));
	unlink(tmp);
	mine[f] = true;
	MUST(getrlimit(RLIMIT_NOFILE, &rl));
	fill = rl.rlim_cur > TOP ? TOP : (int)rl.rlim_cur - 64;
	for (int fd = 3; fd < fill; fd++)
		if (!mine[fd])
			taken += dup2(f, fd) == fd;
	say("dup2 onto most free numbers: %d", taken > 100);
	if (stats_path(getpid(), path, sizeof(path))) {
		int sf = open(path, O_RDONLY | O_CLOEXEC);

		if (sf < 0 || fcntl(sf, F_OFD_GETLK, &fl) < 0 || fl.l_type == F_UNLCK)
			say("the statistics file is not held any more");
		if (sf >= 0)
			close(sf);
	}
	close(c);
	close(s);
	for (int fd = 3; fd < fill; fd++)
		if (!mine[fd] && fcntl(fd, F_GETFD) < 0)
			lost++;
	say("descriptors closed behind the program's back: %d", lost);
	for (int fd = 3; fd < fill; fd++)
		if (!mine[fd])
			close(fd);
	close(f);
	return 0;
}

/* A connection-per-request server: the statistics file is made once and
 * stays through connections and the gaps between them, then goes when the
 * process exits normally. */
static int sc_kept_until_exit(void)
{
	char path[4200];
	pid_t pid = MUST(fork());
	int st;

	if (pid == 0) {
		int c0, s0;

		tcp_pair(&c0, &s0);
		grow_up(c0);
		close(c0);
		close(s0);
		for (int i = 0; i < 5; i++) {
			int c, s;

			tcp_pair(&c, &s);
			close(c);
			close(s);
			if (stats_path(getpid(), path, sizeof(path)) && access(path, F_OK) != 0)
				say("round %d: the statistics file went with the last connection", i);
		}
		exit(0);
	}
	MUST(waitpid(pid, &st, 0));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		say("the child failed");
	if (stats_path(pid, path, sizeof(path)) && access(path, F_OK) == 0)
		say("the statistics file outlived its process's exit");
	say("five short connections");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "workers_exit", sc_workers_exit },
		{ "lock_number_reused", sc_lock_number_reused },
		{ "kept_until_exit", sc_kept_until_exit },
		{ NULL, NULL },
	};

	return scen_main(argc, argv, t);
}
