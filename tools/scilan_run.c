/* scilan_run.c — the launcher: runs an unmodified program with the scilan
 * preload hook and the settings given as options, and exits with its status
 * (it execs the program, so the status is the program's own).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef SCILAN_VERSION
#define SCILAN_VERSION "(development build)"
#endif

static void usage(FILE *out)
{
	fprintf(out,
		"usage: scilan_run [options] [--] CMD [ARGS...]\n"
		"Run CMD with its TCP connections to cluster peers over scilan.\n\n"
		"  -p, --poll-us N    spin N microseconds before sleeping (0: interrupt mode;\n"
		"                     default: learnt per connection, at most 25)\n"
		"  -r, --ring-kb N    receive ring size in KiB\n"
		"  -P, --profile P    latency|balanced|low-cpu: a set of the settings above\n"
		"                     (SCILAN_PROFILE; an option given with it wins)\n"
		"  -s, --stats[=DEST] a statistics line per process at exit: to stderr when it\n"
		"                     is a terminal, else to the runtime directory's log\n"
		"                     (scilan_ctl stat --exited); DEST: stderr (always the\n"
		"                     program's stderr), rundir, or a FILE to append to\n"
		"  -l, --log LEVEL    log to stderr: error|warn|notice|info|debug (notice)\n"
		"  -c, --conf FILE    cluster map (default $SCILAN_CONF or /etc/scilan/cluster.conf)\n"
		"  -V, --version      print the version and exit\n"
		"  -h, --help         this help\n");
}

static int check_uint(const char *opt, const char *v, long max)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || *end || !*v || n < 0 || n > max) {
		fprintf(stderr, "scilan_run: %s wants an integer in [0, %ld], not '%s'\n", opt, max, v);
		return -1;
	}
	return 0;
}

/* SCILAN_STATS for --stats[=DEST]: a file named relative to here is made
 * absolute, since the program may change its directory before it exits. */
static int set_stats(const char *dest)
{
	char cwd[PATH_MAX], path[2 * PATH_MAX + 2];

	if (!dest || !*dest) {
		setenv("SCILAN_STATS", "1", 1);
		return 0;
	}
	if (strcmp(dest, "stderr") == 0 || strcmp(dest, "rundir") == 0 || dest[0] == '/') {
		setenv("SCILAN_STATS", dest, 1);
		return 0;
	}
	if (!getcwd(cwd, sizeof(cwd))) {
		fprintf(stderr, "scilan_run: --stats=%s: cannot tell the current directory: %s\n", dest,
			strerror(errno));
		return -1;
	}
	if (snprintf(path, sizeof(path), "%s/%s", cwd, dest) >= (int)sizeof(path)) {
		fprintf(stderr, "scilan_run: --stats=%s: name too long\n", dest);
		return -1;
	}
	setenv("SCILAN_STATS", path, 1);
	return 0;
}

/* Where the hook is, first found wins: $SCILAN_PRELOAD_LIB; the build tree
 * (build/bin/scilan_run, build/lib/libscilan_preload.so); the installed layout
 * relative to this program (BINDIR/SCILAN_PRELOAD_REL, so a tree installed with
 * DESTDIR or moved as a whole still finds its own hook); the installed path
 * compiled in by `make install`.  Relative before absolute: an installed tree
 * never picks up another installation's hook.
 */
static int find_preload(char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;
	const char *env = getenv("SCILAN_PRELOAD_LIB");

	if (env && *env) {
		snprintf(out, len, "%s", env);
		return access(out, R_OK);
	}
	out[0] = '\0';
	if (n >= 0) {
		self[n] = '\0';
		if ((slash = strrchr(self, '/')))
			*slash = '\0';
		if ((size_t)snprintf(out, len, "%s/../lib/libscilan_preload.so", self) < len && access(out, R_OK) == 0)
			return 0;
#ifdef SCILAN_PRELOAD_REL
		if ((size_t)snprintf(out, len, "%s/%s", self, SCILAN_PRELOAD_REL) < len && access(out, R_OK) == 0)
			return 0;
#endif
	}
#ifdef SCILAN_PRELOAD_PATH
	snprintf(out, len, "%s", SCILAN_PRELOAD_PATH);
	return access(out, R_OK);
#else
	return -1;
#endif
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "poll-us", required_argument, NULL, 'p' }, { "ring-kb", required_argument, NULL, 'r' },
		{ "stats", optional_argument, NULL, 's' },        { "log", required_argument, NULL, 'l' },
		{ "conf", required_argument, NULL, 'c' },    { "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },      { "profile", required_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	char lib[PATH_MAX], preload[2 * PATH_MAX];
	const char *old;
	int c;

	while ((c = getopt_long(argc, argv, "+p:r:sl:c:hVP:", opts, NULL)) != -1) {
		switch (c) {
		case 'P':
			/* The names of libscilan/src/runtime/profile.c, which holds the values. */
			if (strcmp(optarg, "latency") && strcmp(optarg, "balanced") && strcmp(optarg, "low-cpu")) {
				fprintf(stderr, "scilan_run: --profile wants latency|balanced|low-cpu, not '%s'\n",
					optarg);
				return 2;
			}
			setenv("SCILAN_PROFILE", optarg, 1);
			break;
		case 'p':
			if (check_uint("--poll-us", optarg, 1000000) < 0)
				return 2;
			setenv("SCILAN_POLL_US", optarg, 1);
			break;
		case 'r':
			if (check_uint("--ring-kb", optarg, 1 << 20) < 0)
				return 2;
			setenv("SCILAN_RING_KB", optarg, 1);
			break;
		case 's':
			if (set_stats(optarg) < 0)
				return 2;
			break;
		case 'l':
			if (strcmp(optarg, "error") && strcmp(optarg, "warn") && strcmp(optarg, "notice") &&
			    strcmp(optarg, "info") && strcmp(optarg, "debug")) {
				fprintf(stderr, "scilan_run: --log wants error|warn|notice|info|debug, not '%s'\n",
					optarg);
				return 2;
			}
			setenv("SCILAN_LOG", optarg, 1);
			break;
		case 'c':
			setenv("SCILAN_CONF", optarg, 1);
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("scilan_run %s\n", SCILAN_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "scilan_run: no command given\n");
		usage(stderr);
		return 2;
	}
	if (find_preload(lib, sizeof(lib)) < 0) {
		fprintf(stderr, "scilan_run: cannot find libscilan_preload.so (last tried: %s; set SCILAN_PRELOAD_LIB)\n",
			lib[0] ? lib : "nothing");
		return 127;
	}
	old = getenv("LD_PRELOAD");
	snprintf(preload, sizeof(preload), "%s%s%s", lib, old && *old ? " " : "", old && *old ? old : "");
	setenv("LD_PRELOAD", preload, 1);
	execvp(argv[optind], argv + optind);
	fprintf(stderr, "scilan_run: %s: %s\n", argv[optind], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
