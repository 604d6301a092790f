/* threads.c — a process that makes a thread before its first connection: it
 * prints the kernel's descriptor table size and its membarrier
 * registrations after the thread is made, and the table size again after a
 * connection.  A plain POSIX program; the test (test_threads.c) compares the
 * lines, since the kernel grows a table, and registers a process, behind an
 * RCU grace period once threads share them.
 */
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "scen.h"

#ifndef MEMBARRIER_CMD_GET_REGISTRATIONS
#define MEMBARRIER_CMD_GET_REGISTRATIONS (1 << 9)
#endif

static long fd_table_size(void)
{
	char line[256];
	long size = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		fatal("open /proc/self/status");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "FDSize: %ld", &size) == 1)
			break;
	fclose(f);
	return size;
}

static void *idle(void *arg)
{
	(void)arg;
	pause();
	return NULL;
}

static int sc_table_before_threads(void)
{
	pthread_t t;
	long regs;
	int c, s;
	char b;

	if (pthread_create(&t, NULL, idle, NULL) != 0)
		fatal("pthread_create");
	say("FDSize after the thread: %ld", fd_table_size());
	regs = syscall(SYS_membarrier, MEMBARRIER_CMD_GET_REGISTRATIONS, 0, 0);
	say("global expedited registered: %s",
	    regs < 0 ? "unknown" : (regs & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) ? "yes" : "no");
	tcp_pair(&c, &s);
	MUST(write(c, "x", 1));
	if (read(s, &b, 1) != 1)
		fatal("read");
	say("FDSize after a connection: %ld", fd_table_size());
	close(c);
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct scenario table[] = {
		{ "table_before_threads", sc_table_before_threads },
		{ NULL, NULL },
	};

	return scen_main(argc, argv, table);
}
