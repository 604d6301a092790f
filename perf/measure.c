/* measure.c — one measurement = two forked processes pinned to two CPUs and
 * watched by the parent: the pingpong and stream loops (or a caller's own,
 * measure_job), their watchdog, and the statistics (median, p99).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

enum test_kind { TEST_PINGPONG, TEST_STREAM, TEST_JOB };

/* Filled by the measuring child; lives in a MAP_SHARED page so it survives the child. */
struct shared_result {
	int ok;
	long n;         /* pingpong: samples written */
	double bytes;   /* stream: bytes after the first chunk */
	double secs;    /* stream: first to last byte */
};

struct run {
	const struct bench_opts *o;
	const struct transport_desc *t;
	enum test_kind kind;
	size_t size;
	double seconds;     /* this round's budget */
	uint32_t *samples;  /* pingpong: shared, cap entries */
	long cap;
	uint64_t ring_cap;  /* 0: defaults; else the bare ring and both scilan rings */
	const struct pair_job *job; /* TEST_JOB: the caller's loops */
	struct tp_link link;
	struct shared_result *res;
};

double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A stuck transport must cost a bounded time: both children are killed after this. */
static double watchdog_seconds(const struct run *r)
{
	return 2.0 * r->seconds + 5.0;
}

void *bench_alloc_buf(size_t size)
{
	void *p = NULL;
	/* Page-aligned like a real application buffer; memset faults it in before timing. */
	if (posix_memalign(&p, 4096, size ? size : 1) != 0)
		return NULL;
	memset(p, 0x5a, size);
	return p;
}

/* ---- child side ---- */

static void child_init(const struct run *r, int cpu_index, pid_t parent)
{
	sigset_t all;
	/* Never outlive the bench: a killed parent must not leave two spinning children. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
		bench_err("prctl(PR_SET_PDEATHSIG): %s", strerror(errno));
	if (getppid() != parent)
		_exit(1);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	signal(SIGPIPE, SIG_IGN);
	alarm((unsigned)watchdog_seconds(r) + 2);
	if (r->o->pin) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(r->o->cpu[cpu_index], &set);
		if (sched_setaffinity(0, sizeof set, &set) != 0) {
			bench_err("%s: sched_setaffinity(cpu %d): %s", r->t->name, r->o->cpu[cpu_index],
				  strerror(errno));
			_exit(1);
		}
	}
}

int bench_round_trip(struct tp_end *e, unsigned char *buf, size_t size, uint64_t seq)
{
	/* Stamp each message so a ring that loses, repeats or reorders data is caught. */
	if (size >= sizeof seq)
		memcpy(buf, &seq, sizeof seq);
	else
		buf[0] = (unsigned char)seq;
	if (tp_send_all(e, buf, size) != 0)
		return -1;
	int rc = tp_recv_all(e, buf, size);
	if (rc != 0) {
		if (rc == 1)
			bench_err("%s: unexpected EOF from the echo side", e->t->name);
		return -1;
	}
	uint64_t back = 0;
	if (size >= sizeof back)
		memcpy(&back, buf, sizeof back);
	else
		back = buf[0], seq &= 0xff;
	if (back != seq) {
		bench_err("%s: echo carried message %llu, expected %llu: data corrupted", e->t->name,
			  (unsigned long long)back, (unsigned long long)seq);
		return -1;
	}
	return 0;
}

static int pingpong_client(struct run *r, struct tp_end *e)
{
	unsigned char *buf = bench_alloc_buf(r->size);
	if (!buf)
		return bench_err("%s: out of memory", r->t->name), -1;
	/* The shared sample pages are new to this process: fault them in now, not
	 * inside one timed round trip in every thousand. */
	memset(r->samples, 0, (size_t)r->cap * sizeof *r->samples);
	/* Warm-up: fault in rings and buffers, let the wake-up paths settle. */
	uint64_t seq = 0;
	uint64_t start = bench_now_ns();
	uint64_t warm_end = start + (uint64_t)(0.1 * r->seconds * 1e9);
	uint64_t end = start + (uint64_t)(r->seconds * 1e9);
	do {
		if (bench_round_trip(e, buf, r->size, seq++) != 0)
			return -1;
	} while (seq < 10 || bench_now_ns() < warm_end);

	long n = 0;
	uint64_t t0 = bench_now_ns();
	while (n < r->cap) {
		if (bench_round_trip(e, buf, r->size, seq++) != 0)
			return -1;
		uint64_t t1 = bench_now_ns();
		uint64_t d = t1 - t0;
		r->samples[n++] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
		t0 = t1;
		if (t1 >= end)
			break;
	}
	r->res->n = n;
	free(buf);
	return 0;
}

static int pingpong_server(struct run *r, struct tp_end *e)
{
	unsigned char *buf = bench_alloc_buf(r->size);
	if (!buf)
		return bench_err("%s: out of memory", r->t->name), -1;
	for (;;) {
		int rc = tp_recv_all(e, buf, r->size);
		if (rc == 1)
			break; /* the measuring side is done */
		if (rc != 0 || tp_send_all(e, buf, r->size) != 0)
			return -1;
	}
	free(buf);
	return 0;
}

/* The receiver measures: first byte to last byte, the first chunk excluded
 * since its arrival time is the start mark. */
static int stream_client(struct run *r, struct tp_end *e)
{
	unsigned char *buf = bench_alloc_buf(r->size);
	if (!buf)
		return bench_err("%s: out of memory", r->t->name), -1;
	ssize_t n;
	do
		n = tp_recv(e, buf, r->size);
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		bench_err("%s: stream: %s before the first byte", r->t->name, n == 0 ? "EOF" : strerror(errno));
		return -1;
	}
	double t_first = bench_now(), t_last;
	uint64_t bytes = 0;
	for (;;) {
		n = tp_recv(e, buf, r->size);
		if (n > 0) {
			bytes += (uint64_t)n;
			continue;
		}
		if (n == 0) {
			/* EOF arrives right behind the last byte (the sender shuts down at
			 * once), so its time stands for the last byte's without a clock
			 * read per recv. */
			t_last = bench_now();
			break;
		}
		if (errno != EINTR)
			return bench_err("%s: stream recv: %s", r->t->name, strerror(errno)), -1;
	}
	unsigned char ack = 1;
	if (tp_send_all(e, &ack, 1) != 0)
		return -1;
	if (t_last <= t_first || bytes == 0)
		return bench_err("%s: stream: no data after the first chunk", r->t->name), -1;
	r->res->bytes = (double)bytes;
	r->res->secs = t_last - t_first;
	free(buf);
	return 0;
}

static int stream_server(struct run *r, struct tp_end *e)
{
	unsigned char *buf = bench_alloc_buf(r->size);
	if (!buf)
		return bench_err("%s: out of memory", r->t->name), -1;
	/* Read the clock about every 64 KiB: at 64 B a clock read per send would
	 * be a visible share of the bare ring's ~50 ns per message. */
	size_t batch = r->size >= 65536 ? 1 : 65536 / r->size;
	double end = bench_now() + r->seconds;
	do {
		for (size_t i = 0; i < batch; i++)
			if (tp_send_all(e, buf, r->size) != 0)
				return -1;
	} while (bench_now() < end);
	if (tp_shutdown_wr(e) != 0)
		return -1;
	unsigned char ack;
	int rc = tp_recv_all(e, &ack, 1);
	if (rc != 0) {
		if (rc == 1)
			bench_err("%s: stream: EOF instead of the receiver's ack", r->t->name);
		return -1;
	}
	free(buf);
	return 0;
}

static void serve(struct run *r, int port_wr)
{
	int lfd, port;
	struct tp_end e;
	if (tp_listen(&r->link, &lfd, &port) != 0)
		port = -1;
	if (write(port_wr, &port, sizeof port) != (ssize_t)sizeof port) {
		bench_err("%s: write to parent: %s", r->t->name, strerror(errno));
		_exit(1);
	}
	close(port_wr);
	if (port < 0 || tp_accept(&r->link, lfd, &e) != 0)
		_exit(1);
	int rc = r->kind == TEST_JOB	   ? r->job->server(&e, r->job->arg)
		 : r->kind == TEST_PINGPONG ? pingpong_server(r, &e)
					    : stream_server(r, &e);
	tp_close(&e);
	_exit(rc == 0 ? 0 : 1);
}

static void dial(struct run *r, int port)
{
	struct tp_end e;
	if (tp_connect(&r->link, port, &e) != 0)
		_exit(1);
	int rc = r->kind == TEST_JOB	   ? r->job->client(&e, r->job->arg)
		 : r->kind == TEST_PINGPONG ? pingpong_client(r, &e)
					    : stream_client(r, &e);
	if (rc == 0)
		r->res->ok = 1;
	if (r->kind != TEST_STREAM && tp_shutdown_wr(&e) != 0)
		rc = -1;
	tp_close(&e);
	_exit(rc == 0 ? 0 : 1);
}

/* ---- parent side ---- */

enum { NOT_KILLED, KILLED_PEER_FAILED, KILLED_TIMEOUT };

static void describe_status(char *buf, size_t len, const char *who, int status, int killed)
{
	if (killed == KILLED_TIMEOUT)
		snprintf(buf, len, "%s killed by the watchdog", who);
	else if (killed == KILLED_PEER_FAILED)
		snprintf(buf, len, "%s stopped after its peer failed", who);
	else if (WIFEXITED(status))
		snprintf(buf, len, "%s exited with status %d", who, WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "%s killed by signal %d (%s)", who, WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "%s ended oddly", who);
}

/* Wait for both children until the deadline; a failing child gets its peer
 * killed at once so a half-dead pair never waits out the whole watchdog. */
static int reap_pair(struct run *r, pid_t pid[2], double deadline)
{
	static const char *who[2] = {"accepting process", "connecting process"};
	int status[2] = {0, 0};
	bool done[2] = {pid[0] <= 0, pid[1] <= 0}, timed_out = false;
	int killed[2] = {NOT_KILLED, NOT_KILLED};
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);

	while (!done[0] || !done[1]) {
		for (int i = 0; i < 2; i++) {
			if (done[i])
				continue;
			pid_t w = waitpid(pid[i], &status[i], WNOHANG);
			if (w < 0 && errno != EINTR) {
				bench_err("waitpid: %s", strerror(errno));
				done[i] = true;
				status[i] = 1 << 8;
			} else if (w == pid[i]) {
				done[i] = true;
				bool bad = !WIFEXITED(status[i]) || WEXITSTATUS(status[i]) != 0;
				if (bad && !done[!i] && !killed[!i]) {
					kill(pid[!i], SIGKILL);
					killed[!i] = KILLED_PEER_FAILED;
				}
			}
		}
		if (done[0] && done[1])
			break;
		double left = deadline - bench_now();
		if (left <= 0) {
			if (!timed_out) {
				timed_out = true;
				for (int i = 0; i < 2; i++)
					if (!done[i]) {
						kill(pid[i], SIGKILL);
						killed[i] = KILLED_TIMEOUT;
					}
			}
			left = 1.0; /* SIGKILL is prompt; just wait for the reap */
		}
		struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
		/* SIGCHLD is blocked in the parent, so the wait sleeps instead of polling
		 * a CPU that the measuring children need. */
		if (sigtimedwait(&chld, NULL, &ts) < 0 && errno != EAGAIN && errno != EINTR)
			bench_err("sigtimedwait: %s", strerror(errno));
	}

	bool ok = true;
	char msg[2][160];
	for (int i = 0; i < 2; i++) {
		msg[i][0] = 0;
		if (pid[i] <= 0)
			continue;
		if (killed[i] || !WIFEXITED(status[i]) || WEXITSTATUS(status[i]) != 0) {
			ok = false;
			describe_status(msg[i], sizeof msg[i], who[i], status[i], killed[i]);
		}
	}
	if (!ok) {
		char sz[32] = "";
		if (r->kind != TEST_JOB)
			fmt_size(r->size, sz, sizeof sz);
		bench_err("%s %s%s%s: FAILED%s: %s%s%s",
			  r->kind == TEST_JOB ? r->job->what : r->kind == TEST_PINGPONG ? "pingpong" : "stream",
			  r->t->name, sz[0] ? " " : "", sz, timed_out ? " (no progress within the watchdog time)" : "",
			  msg[0], msg[0][0] && msg[1][0] ? "; " : "", msg[1]);
	}
	return ok ? 0 : -1;
}

static int run_pair(struct run *r)
{
	int rc = -1, pfd[2] = {-1, -1};
	pid_t pid[2] = {-1, -1};
	pid_t self = getpid();
	sigset_t chld, old;

	r->res = mmap(NULL, sizeof *r->res, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r->res == MAP_FAILED) {
		bench_err("mmap: %s", strerror(errno));
		return -1;
	}
	if (tp_prepare(&r->link, r->t, r->ring_cap ? r->ring_cap : r->o->ring_bytes) != 0)
		goto out_res;
	r->link.scilan_ring = r->ring_cap;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old);
	if (pipe2(pfd, O_CLOEXEC) != 0) {
		bench_err("pipe2: %s", strerror(errno));
		goto out_link;
	}
	double deadline = bench_now() + watchdog_seconds(r);

	/* The listener exists before the connecting process is forked, so its
	 * connect can never race the bind. */
	pid[0] = fork();
	if (pid[0] < 0) {
		bench_err("fork: %s", strerror(errno));
		goto out_pipe;
	}
	if (pid[0] == 0) {
		close(pfd[0]);
		child_init(r, 0, self);
		serve(r, pfd[1]);
	}
	close(pfd[1]);
	pfd[1] = -1;

	int port = -1;
	struct pollfd p = {.fd = pfd[0], .events = POLLIN};
	int pr;
	do
		pr = poll(&p, 1, (int)(watchdog_seconds(r) * 1000));
	while (pr < 0 && errno == EINTR);
	if (pr < 0)
		bench_err("poll: %s", strerror(errno));
	else if (pr == 0)
		bench_err("%s: the accepting process did not set up its listener in time", r->t->name);
	else if (read(pfd[0], &port, sizeof port) != (ssize_t)sizeof port)
		port = -1; /* it already said why on stderr */

	if (port >= 0) {
		pid[1] = fork();
		if (pid[1] < 0)
			bench_err("fork: %s", strerror(errno));
		if (pid[1] == 0) {
			close(pfd[0]);
			child_init(r, 1, self);
			dial(r, port);
		}
	}
	if (port < 0 || pid[1] < 0)
		kill(pid[0], SIGKILL);
	rc = reap_pair(r, pid, deadline);
	if (port < 0 || pid[1] < 0)
		rc = -1;
	if (rc == 0 && !r->res->ok) {
		bench_err("%s: the measuring process exited without a result", r->t->name);
		rc = -1;
	}
out_pipe:
	close(pfd[0]);
	if (pfd[1] >= 0)
		close(pfd[1]);
out_link:
	sigprocmask(SIG_SETMASK, &old, NULL);
	tp_release(&r->link);
out_res:
	if (rc != 0)
		r->res->ok = 0;
	return rc;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples. */
static uint32_t percentile(const uint32_t *s, long n, double p)
{
	long k = (long)(p * (double)n + 0.999999) - 1;
	if (k < 0)
		k = 0;
	if (k >= n)
		k = n - 1;
	return s[k];
}

void pp_stats(uint32_t *samples, long n, struct pp_result *out)
{
	qsort(samples, (size_t)n, sizeof *samples, cmp_u32);
	out->median_us = (double)percentile(samples, n, 0.50) / 1e3;
	out->p99_us = (double)percentile(samples, n, 0.99) / 1e3;
	out->iters = n;
}

int measure_pingpong(const struct bench_opts *o, enum tp_id t, size_t size, double seconds, uint32_t *samples,
		     long cap, long *n)
{
	struct run r = {.o = o, .t = &bench_transports[t], .kind = TEST_PINGPONG, .size = size,
			.seconds = seconds, .samples = samples, .cap = cap};
	*n = 0;
	int rc = run_pair(&r);
	if (r.res != MAP_FAILED) {
		*n = r.res->n;
		munmap(r.res, sizeof *r.res);
	}
	return rc;
}

int measure_stream(const struct bench_opts *o, enum tp_id t, size_t size, double seconds, double *bytes,
		   double *secs)
{
	return measure_stream_on(o, &bench_transports[t], 0, size, seconds, bytes, secs);
}

int measure_stream_on(const struct bench_opts *o, const struct transport_desc *t, uint64_t ring_cap, size_t size,
		      double seconds, double *bytes, double *secs)
{
	struct run r = {.o = o, .t = t, .kind = TEST_STREAM, .size = size, .seconds = seconds, .ring_cap = ring_cap};
	*bytes = *secs = 0;
	int rc = run_pair(&r);
	if (r.res != MAP_FAILED) {
		*bytes = r.res->bytes;
		*secs = r.res->secs;
		munmap(r.res, sizeof *r.res);
	}
	return rc;
}

int measure_job(const struct bench_opts *o, const struct pair_job *j)
{
	struct run r = {.o = o, .t = j->t, .kind = TEST_JOB, .seconds = j->seconds, .ring_cap = j->ring_cap,
			.job = j};
	int rc = run_pair(&r);
	if (r.res != MAP_FAILED)
		munmap(r.res, sizeof *r.res);
	return rc;
}
