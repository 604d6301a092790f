/* runner.h — what the hook's Criterion tests share: run a program plain or
 * preloaded (optionally in a network namespace) with captured output and a hang
 * limit, read SCILAN_STATS, and compare transcripts against kernel TCP. */
#ifndef HOOK_RUNNER_H
#define HOOK_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* How to run a program. */
struct hk_env {
	bool preload;        /* LD_PRELOAD the hook, SCILAN_STATS=stats */
	const char *stats;   /* SCILAN_STATS (with preload); NULL: stderr, which the runner reads */
	const char *rundir;  /* SCILAN_RUNDIR (with preload) */
	const char *conf;    /* SCILAN_CONF (with preload); NULL: an empty map */
	const char *netns;   /* run through `ip netns exec NETNS` */
	const char *const *wrap; /* run inside this command (NULL-ended, an absolute path first; after
				   `ip netns exec`): unshare(1) for a container's namespaces */
	const char *log;     /* SCILAN_LOG (with preload); NULL: unset */
};

/* A running program. */
struct hk_proc {
	pid_t pid;
	int out, err;        /* pipes, -1 once at EOF */
	char *obuf, *ebuf;   /* everything read so far, NUL-terminated */
	size_t olen, elen, ocons; /* ocons: stdout bytes hk_read_line consumed */
	bool timed_out;
};

/* What it did. */
struct hk_out {
	int rc;      /* exit code, 128+signal, or -1 when killed at the hang limit */
	char *out;   /* stdout (malloc'ed) */
	char *err;   /* stderr (malloc'ed) */
};

/* Absolute path of build/hookprogs/<name> (static storage, one per call slot). */
const char *hk_prog(const char *name);
/* Absolute path of build/lib/libscilan_preload.so. */
const char *hk_hook_lib(void);
/* A fresh 0700 directory under /dev/shm holding run/ (0700) and an empty
 * cluster.conf; *rundir and *conf point into it.  Remove with hk_rmtree. */
char *hk_tmpdir(char **rundir, char **conf);
void hk_rmtree(const char *path);
/* system(3) of a formatted command line (ip netns ..., in the tests that
 * make their own network namespaces): its status. */
int hk_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Start argv[0] (an absolute path) with argv, in its own process group. */
void hk_start(struct hk_proc *p, const struct hk_env *e, const char *const argv[]);
/* Next stdout line (without '\n') within limit_s seconds; false at EOF/limit. */
bool hk_read_line(struct hk_proc *p, char *line, size_t size, unsigned limit_s);
/* Collect the rest and wait; at the limit the process group is killed. */
void hk_finish(struct hk_proc *p, struct hk_out *o, unsigned limit_s);
void hk_run(const struct hk_env *e, const char *const argv[], struct hk_out *o, unsigned limit_s);
/* hk_run under the hook, in a runtime directory of its own with an empty
 * cluster map, both removed afterwards. */
void hk_run_hooked(const char *const argv[], struct hk_out *o, unsigned limit_s);
void hk_out_free(struct hk_out *o);

/* Sum of one SCILAN_STATS field ("accelerated", "tx", ...) over every stats
 * line in err; -1 when there is no stats line. */
long hk_stat_sum(const char *err, const char *field);
int hk_stat_lines(const char *err);
/* The lines of err that are neither stats lines nor the once-per-reason
 * fallback notices (malloc'ed, "" if none). */
char *hk_non_stats(const char *err);
/* `diff -u` of two texts (malloc'ed). */
char *hk_diff(const char *a, const char *b);

/* One connection between two separately started programs (progs/peer.c):
 * the server listens on listen_addr, the client connects to connect_addr and
 * exchanges bytes.  The server's first line (its port) is dropped from srv->out. */
void hk_run_pair(const struct hk_env *server_env, const struct hk_env *client_env, const char *listen_addr,
		 const char *connect_addr, long bytes, struct hk_out *srv, struct hk_out *cli, unsigned limit_s);
/* Assert a run exited 0 with the reference transcript and, when preloaded,
 * only stats lines and fallback notices on stderr with the given accelerated and fallback sums
 * (-1: not checked); `what` names the case in messages. */
void hk_check_run(const char *what, const struct hk_out *ref, const struct hk_out *got, bool preloaded,
		  long accelerated, long fallback);

/* The core check: run `prog scenario` plain and preloaded (fresh rundir) and
 * assert both exit 0, the transcripts are identical, stderr under preload holds
 * only stats lines and fallback notices, and the summed `accelerated` lies in [min_accel, max_accel]
 * (max < 0: no upper bound). */
void hk_scenario(const char *prog, const char *scenario, long min_accel, long max_accel, unsigned limit_s);
/* The scenario under the hook alone (a private runtime directory), which must
 * exit 0: the sum of one SCILAN_STATS field over its processes; *err gets
 * their stderr (the caller frees it). */
long hk_scenario_stat(const char *prog, const char *scenario, const char *field, unsigned limit_s, char **err);

#endif
