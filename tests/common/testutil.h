/* testutil.h — helpers shared by the scilan tests: loopback listeners and pairs,
 * forked peers with captured output, sync channels, watchdogs, a seeded stream,
 * a streaming 64-bit checksum, sanitizer scaling.  No cr_assert (children use it).
 * Implemented in testutil.c (scaling, sockets), testutil_stream.c (data stream,
 * checksums), testutil_proc.c (forked peers, watchdogs), testutil_env.c (the rest). */
#ifndef SCILAN_TESTUTIL_H
#define SCILAN_TESTUTIL_H

#include <netinet/in.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "scilan.h"

/* ---- build flavour and scaling (testutil.c) ------------------------------ */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TU_SANITIZED 1
#else
#define TU_SANITIZED 0
#endif

/* native in a plain build, sanitized under ASan/TSan; then multiplied by
 * $SCILAN_TEST_SCALE (a positive real) if set.  Never below 1. */
uint64_t tu_scaled(uint64_t native, uint64_t sanitized);
/* An unsigned integer from the environment, or dflt if unset/invalid. */
uint64_t tu_env_u64(const char *name, uint64_t dflt);

/* ---- addresses, listeners, connections (testutil.c) ---------------------- */

/* Fill ss with the loopback address of family (127.0.0.1 or ::1) and port. */
socklen_t tu_loopback(int family, uint16_t port, struct sockaddr_storage *ss);
/* Local port of a bound socket (host order), 0 on error. */
uint16_t tu_local_port(int fd);
/* Bind fd (AF_INET) to 127.0.0.1 and a free port of the range offers
 * through a rendezvous come from (offer_port.h): a client that fixes its end
 * before its connect and still has its acceptor look for its offer, as a
 * test of what that look checks needs.  0, or -1 (errno). */
int tu_bind_offer_port(int fd);
/* 1 if ::1 can be bound here. */
bool tu_have_ipv6(void);

/* A scilan listener on loopback, port chosen by the kernel.  rcvbuf > 0 sets
 * SO_RCVBUF before listen.  Returns the fd (port in *port) or -1 (errno). */
int tu_listen(int family, int backlog, uint16_t *port);
int tu_listen_rcvbuf(int family, int backlog, int rcvbuf, uint16_t *port);
/* The same with plain libc socket/bind/listen (no scilan). */
int tu_plain_listen(int family, int backlog, uint16_t *port);

/* Blocking scilan connect to loopback:port; rcvbuf > 0 sets SO_RCVBUF first. */
int tu_connect(int family, uint16_t port);
int tu_connect_rcvbuf(int family, uint16_t port, int rcvbuf);
/* Plain libc connect. */
int tu_plain_connect(int family, uint16_t port);
/* scilan_accept, retrying EINTR. */
int tu_accept(int lfd);

/* A connected pair inside this process (through a temporary scilan listener):
 * *cfd is the connecting end, *sfd the accepted end.  crcv/srcv > 0 set
 * SO_RCVBUF of the client / of the listener.  0, or -1 (errno). */
int tu_pair(int family, int *cfd, int *sfd);
int tu_pair_rcvbuf(int family, int crcv, int srcv, int *cfd, int *sfd);

/* SCILAN_SO_ACCELERATED: 1, 0, or -1 on error. */
int tu_accelerated(int fd);
/* SCILAN_SO_POLL_US setter; 0 or -1. */
int tu_set_poll_us(int fd, int us);
/* O_NONBLOCK on/off via fcntl; 0 or -1. */
int tu_set_nonblock(int fd, bool on);

/* scilan_send until all of buf went (returns len) or an error (-1). */
ssize_t tu_send_all(int fd, const void *buf, size_t len, int flags);
/* scilan_recv until len bytes or EOF: the count, or -1 on error. */
ssize_t tu_recv_all(int fd, void *buf, size_t len);

/* ---- data stream and checksums (testutil_stream.c) ----------------------- */

#define TU_FNV_INIT 0xcbf29ce484222325ull
uint64_t tu_fnv1a(uint64_t h, const void *buf, size_t len);

/* Streaming xxh64-style checksum: the result does not depend on how the
 * bytes are split across update calls. */
struct tu_hash {
	uint64_t v[4];
	uint64_t seed;
	uint64_t total;
	unsigned char buf[32];
	size_t buflen;
};
void tu_hash_init(struct tu_hash *h, uint64_t seed);
void tu_hash_update(struct tu_hash *h, const void *data, size_t len);
uint64_t tu_hash_final(const struct tu_hash *h);
uint64_t tu_hash_buf(const void *data, size_t len);

/* A deterministic byte stream: byte i of stream seed is a function of (seed, i),
 * so any slice can be produced or checked independently. */
void tu_stream_fill(uint64_t seed, uint64_t offset, void *buf, size_t len);
/* -1 if buf equals the stream slice, else the index of the first difference. */
int64_t tu_stream_check(uint64_t seed, uint64_t offset, const void *buf, size_t len);

/* splitmix64 PRNG. */
struct tu_rng {
	uint64_t s;
};
uint64_t tu_rng_next(struct tu_rng *r);
/* Uniform in [lo, hi]. */
uint64_t tu_rng_range(struct tu_rng *r, uint64_t lo, uint64_t hi);
/* 1..max, log-uniform-ish: as many tiny as huge sizes. */
size_t tu_rng_size(struct tu_rng *r, size_t max);

/* ---- forked peers (testutil_proc.c) ----------------------------------------- */

/* A forked child whose stdout+stderr go to a private memfd (collected by
 * tu_reap).  The child runs fn(arg) and _exit()s with its return value. */
struct tu_child {
	pid_t pid;
	int out_fd;
	int status;          /* waitpid status once reaped */
	bool reaped;
	char output[16384];  /* the child's output (truncated), NUL-terminated */
};
/* 0 in the parent (child started), -1 if fork failed. */
int tu_spawn(struct tu_child *c, int (*fn)(void *), void *arg);
/* Wait for the child (retrying EINTR) and collect its output; returns status. */
int tu_reap(struct tu_child *c);
/* SIGKILL it (if still running). */
void tu_kill(struct tu_child *c);
/* Exited normally with code? */
bool tu_exited_with(const struct tu_child *c, int code);
/* "exited with 3" / "killed by signal 11 (Segmentation fault)". */
const char *tu_status_str(const struct tu_child *c, char *buf, size_t size);

/* In a child: check a condition; on failure print where, the message and
 * errno to stdout (captured) and _exit(1). */
#define TU_CHECK(cond, ...)                                                    \
	do {                                                                   \
		if (!(cond))                                                   \
			tu_child_fail(__FILE__, __LINE__, #cond, __VA_ARGS__); \
	} while (0)
__attribute__((noreturn, format(printf, 4, 5))) void tu_child_fail(const char *file, int line, const char *cond,
								    const char *fmt, ...);
/* Print to stdout (captured in children), one write per line. */
__attribute__((format(printf, 1, 2))) void tu_log(const char *fmt, ...);

/* Socketpairs used as synchronisation channels between a parent and the child it
 * spawns next (tu_sync_init before tu_spawn; one child per sync).  After the
 * spawn each side closes the other's ends, so a side that exits is seen as
 * EOF (-1) rather than a hang.  Children die with the test process. */
struct tu_sync {
	int parent_fd; /* the parent's end of a Unix stream socketpair */
	int child_fd;  /* the child's end */
};
int tu_sync_init(struct tu_sync *s);
/* Send / wait for one tagged value (returns -1 on EOF/error).  Call the
 * _child variants in the child and the plain ones in the parent. */
int tu_sync_put(struct tu_sync *s, uint64_t v);
int tu_sync_get(struct tu_sync *s, uint64_t *v);
int tu_sync_put_child(struct tu_sync *s, uint64_t v);
int tu_sync_get_child(struct tu_sync *s, uint64_t *v);

/* MAP_SHARED anonymous memory, visible to forked children. */
void *tu_shared_alloc(size_t size);

/* ---- watchdogs (testutil_proc.c) ------------------------------------------ */

/* SIGALRM after secs: prints "watchdog: <what> still blocked after N s",
 * SIGKILLs every child spawned by tu_spawn and _exit(1)s (Criterion reports
 * the test as failed).  Not a timing assertion: a hang limit. */
void tu_watchdog(unsigned secs, const char *what);
void tu_watchdog_cancel(void);

/* A thread that fails the test if *counter stops changing for stall_secs:
 * it records the value, prints "<what>: no progress for N s after V", kills
 * spawned children (so blocked calls return) and sets the fired flag; if the
 * test still has not called tu_progress_stop 15 s later it _exit(1)s. */
void tu_progress_start(const _Atomic uint64_t *counter, unsigned stall_secs, const char *what);
/* Stop it; true if it fired (value at the stall in *stalled_at). */
bool tu_progress_stop(uint64_t *stalled_at);
bool tu_progress_fired(void);

/* ---- signals, stderr, runtime dir (testutil_env.c) --------------------------- */

/* Install a SIGPIPE handler that counts. */
void tu_count_sigpipe(void);
int tu_sigpipe_count(void);

/* Redirect fd 2 into a memfd; returns a token for tu_capture_end. */
int tu_capture_begin(void);
/* Restore fd 2 and return what was written (malloc'ed, NUL-terminated). */
char *tu_capture_end(int token);

/* mkdtemp a fresh 0700 directory under /dev/shm (removed at exit of the
 * process that made it) and return its path (static storage per call slot). */
const char *tu_tmpdir(void);
/* tu_tmpdir + setenv SCILAN_RUNDIR=<it>/run (not yet created). */
const char *tu_isolated_rundir(void);
/* Write a cluster map of these lines under tu_tmpdir and point
 * SCILAN_CONF at it (before the library first reads its settings): 0 or -1. */
int tu_cluster_map(const char *lines);
/* Offer rings on every connect, however short the connections to the
 * destination (SCILAN_SHORT_CONNS=accelerate; before the library first
 * reads its settings): for tests that make many short connections to one
 * listener to test something else than the offer policy. */
void tu_offer_always(void);
/* Bring lo up (in a network namespace the test just made): 0, or -1 with errno. */
int tu_loopback_up(void);
/* rm -rf path (best effort). */
void tu_rmtree(const char *path);

/* Sleep ms milliseconds, resuming after signals (testutil_env.c). */
void tu_sleep_ms(unsigned ms);

#endif
