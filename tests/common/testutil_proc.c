/* testutil_proc.c — the process helpers of testutil.h: forked children with captured
 * output, TU_CHECK/tu_log for children, parent/child sync channels, shared memory,
 * the SIGALRM watchdog and the progress watchdog thread. */
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- children ---------------------------------------------------------------- */

#define MAX_CHILDREN 64
static volatile pid_t children[MAX_CHILDREN];
static volatile int children_out[MAX_CHILDREN];

static void child_register(pid_t pid, int out_fd)
{
	for (int i = 0; i < MAX_CHILDREN; i++) {
		if (children[i] == 0) {
			children_out[i] = out_fd;
			children[i] = pid;
			return;
		}
	}
}

static void child_unregister(pid_t pid)
{
	for (int i = 0; i < MAX_CHILDREN; i++)
		if (children[i] == pid)
			children[i] = 0;
}

static void put_str(const char *s);
static void put_uint(unsigned long long v);
static void syncs_split(bool in_child);

/* Async-signal-safe: copy what each live child printed to our stderr. */
static void dump_children_output(void)
{
	static char buf[8192];

	for (int i = 0; i < MAX_CHILDREN; i++) {
		ssize_t n;

		if (children[i] <= 0)
			continue;
		put_str("---- output of child ");
		put_uint((unsigned long long)children[i]);
		put_str(":\n");
		n = pread(children_out[i], buf, sizeof(buf), 0);
		if (n > 0 && write(STDERR_FILENO, buf, (size_t)n) < 0) {
			/* nothing to do */
		}
		put_str("---- end\n");
	}
}

static void kill_all_children(void)
{
	for (int i = 0; i < MAX_CHILDREN; i++)
		if (children[i] > 0)
			kill(children[i], SIGKILL);
}

void tu_log(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDOUT_FILENO, line, (size_t)n) < 0) {
		/* nothing to do */
	}
}

void tu_child_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
	int err = errno;
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	tu_log("[child %d] %s:%d: CHECK(%s) failed: %s [errno %d: %s]", (int)getpid(), file, line, cond, msg, err,
	       strerror(err));
	_exit(1);
}

int tu_spawn(struct tu_child *c, int (*fn)(void *), void *arg)
{
	pid_t parent = getpid();

	memset(c, 0, sizeof(*c));
	c->out_fd = memfd_create("tu-child-output", MFD_CLOEXEC);
	if (c->out_fd < 0)
		return -1;
	fflush(NULL);
	c->pid = fork();
	if (c->pid < 0) {
		close(c->out_fd);
		return -1;
	}
	if (c->pid == 0) {
		int rc;

		/* Die with the test process (a failed assertion ends it at once). */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(99);
		syncs_split(true);
		for (int i = 0; i < MAX_CHILDREN; i++)
			children[i] = 0;
		alarm(0);
		signal(SIGALRM, SIG_DFL);
		dup2(c->out_fd, STDOUT_FILENO);
		dup2(c->out_fd, STDERR_FILENO);
		rc = fn(arg);
		_exit(rc);
	}
	syncs_split(false);
	child_register(c->pid, c->out_fd);
	return 0;
}

int tu_reap(struct tu_child *c)
{
	ssize_t n;

	if (c->reaped)
		return c->status;
	while (waitpid(c->pid, &c->status, 0) < 0) {
		if (errno != EINTR) {
			c->status = -1;
			break;
		}
	}
	c->reaped = true;
	child_unregister(c->pid);
	n = pread(c->out_fd, c->output, sizeof(c->output) - 1, 0);
	c->output[n > 0 ? n : 0] = '\0';
	close(c->out_fd);
	c->out_fd = -1;
	return c->status;
}

void tu_kill(struct tu_child *c)
{
	if (!c->reaped && c->pid > 0)
		kill(c->pid, SIGKILL);
}

bool tu_exited_with(const struct tu_child *c, int code)
{
	return c->reaped && c->status != -1 && WIFEXITED(c->status) && WEXITSTATUS(c->status) == code;
}

const char *tu_status_str(const struct tu_child *c, char *buf, size_t size)
{
	if (!c->reaped)
		snprintf(buf, size, "not reaped");
	else if (c->status == -1)
		snprintf(buf, size, "waitpid failed");
	else if (WIFEXITED(c->status))
		snprintf(buf, size, "exited with %d", WEXITSTATUS(c->status));
	else if (WIFSIGNALED(c->status))
		snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(c->status), strsignal(WTERMSIG(c->status)));
	else
		snprintf(buf, size, "status 0x%x", c->status);
	return buf;
}

/* Sync channels made in this process and not yet split between a parent and
 * its child: after the next tu_spawn each side closes the other side's end,
 * so that a side that exits shows up as EOF instead of a hang. */
#define MAX_SYNCS 16
static struct {
	int parent_fd, child_fd;
	bool used;
} syncs[MAX_SYNCS];

static void syncs_split(bool in_child)
{
	for (int i = 0; i < MAX_SYNCS; i++) {
		if (!syncs[i].used)
			continue;
		close(in_child ? syncs[i].parent_fd : syncs[i].child_fd);
		syncs[i].used = false;
	}
}

int tu_sync_init(struct tu_sync *s)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	s->parent_fd = sv[0];
	s->child_fd = sv[1];
	for (int i = 0; i < MAX_SYNCS; i++) {
		if (!syncs[i].used) {
			syncs[i].parent_fd = sv[0];
			syncs[i].child_fd = sv[1];
			syncs[i].used = true;
			break;
		}
	}
	return 0;
}

static int put_u64(int fd, uint64_t v)
{
	ssize_t n;

	do
		n = send(fd, &v, sizeof(v), MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(v) ? 0 : -1;
}

static int get_u64(int fd, uint64_t *v)
{
	unsigned char *p = (unsigned char *)v;
	size_t got = 0;

	while (got < sizeof(*v)) {
		ssize_t n = recv(fd, p + got, sizeof(*v) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

int tu_sync_put(struct tu_sync *s, uint64_t v)
{
	return put_u64(s->parent_fd, v);
}

int tu_sync_get(struct tu_sync *s, uint64_t *v)
{
	return get_u64(s->parent_fd, v);
}

int tu_sync_put_child(struct tu_sync *s, uint64_t v)
{
	return put_u64(s->child_fd, v);
}

int tu_sync_get_child(struct tu_sync *s, uint64_t *v)
{
	return get_u64(s->child_fd, v);
}

void *tu_shared_alloc(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* ---- watchdogs --------------------------------------------------------------- */

static char watchdog_what[256];
static unsigned watchdog_secs;

static void put_str(const char *s)
{
	if (write(STDERR_FILENO, s, strlen(s)) < 0) {
		/* nothing to do */
	}
}

static void put_uint(unsigned long long v)
{
	char buf[24];
	int i = (int)sizeof(buf);

	buf[--i] = '\0';
	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v && i > 0);
	put_str(buf + i);
}

static void on_alarm(int sig)
{
	(void)sig;
	put_str("watchdog: ");
	put_str(watchdog_what);
	put_str(": still blocked after ");
	put_uint(watchdog_secs);
	put_str(" s — failing the test (hang)\n");
	kill_all_children();
	dump_children_output();
	_exit(1);
}

void tu_watchdog(unsigned secs, const char *what)
{
	struct sigaction sa;

	snprintf(watchdog_what, sizeof(watchdog_what), "%s", what ? what : "test");
	watchdog_secs = secs;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	alarm(secs);
}

void tu_watchdog_cancel(void)
{
	alarm(0);
}

static struct {
	pthread_t thread;
	bool running;
	const _Atomic uint64_t *counter;
	unsigned stall_secs;
	char what[256];
	_Atomic bool stop, fired;
	_Atomic uint64_t stalled_at;
} prog;

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
	}
}

static void *progress_main(void *arg)
{
	uint64_t last = atomic_load(prog.counter);
	unsigned still = 0; /* tenths of a second without change */

	(void)arg;
	while (!atomic_load(&prog.stop)) {
		uint64_t now;

		sleep_ms(100);
		now = atomic_load(prog.counter);
		if (now != last) {
			last = now;
			still = 0;
			continue;
		}
		if (++still < prog.stall_secs * 10)
			continue;
		atomic_store(&prog.stalled_at, now);
		atomic_store(&prog.fired, true);
		fprintf(stderr, "watchdog: %s: no progress for %u s after %llu — killing the peer\n", prog.what,
			prog.stall_secs, (unsigned long long)now);
		kill_all_children();
		dump_children_output();
		for (int i = 0; i < 150 && !atomic_load(&prog.stop); i++)
			sleep_ms(100);
		if (!atomic_load(&prog.stop)) {
			fprintf(stderr, "watchdog: %s: test still blocked 15 s after the peer was killed; failing\n",
				prog.what);
			_exit(1);
		}
		break;
	}
	return NULL;
}

void tu_progress_start(const _Atomic uint64_t *counter, unsigned stall_secs, const char *what)
{
	prog.counter = counter;
	prog.stall_secs = stall_secs ? stall_secs : 10;
	snprintf(prog.what, sizeof(prog.what), "%s", what ? what : "test");
	atomic_store(&prog.stop, false);
	atomic_store(&prog.fired, false);
	atomic_store(&prog.stalled_at, 0);
	prog.running = pthread_create(&prog.thread, NULL, progress_main, NULL) == 0;
}

bool tu_progress_stop(uint64_t *stalled_at)
{
	if (prog.running) {
		atomic_store(&prog.stop, true);
		pthread_join(prog.thread, NULL);
		prog.running = false;
	}
	if (stalled_at)
		*stalled_at = atomic_load(&prog.stalled_at);
	return atomic_load(&prog.fired);
}

bool tu_progress_fired(void)
{
	return atomic_load(&prog.fired);
}
