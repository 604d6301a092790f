/* scen.h — what the hook scenario programs share: transcript lines, errno and
 * mask names, loopback TCP helpers, forked kids whose output joins the transcript
 * at a fixed place, a deterministic stream.  Plain POSIX: no scilan headers. */
#ifndef HOOK_SCEN_H
#define HOOK_SCEN_H

#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One transcript line on stdout, flushed at once (so forks never duplicate it). */
__attribute__((format(printf, 1, 2))) void say(const char *fmt, ...);
/* "FATAL: <msg> (errno NAME)" as a transcript line, then exit(2): a broken
 * set-up shows in the transcript diff rather than on stderr. */
__attribute__((noreturn, format(printf, 1, 2))) void fatal(const char *fmt, ...);
/* errno name ("EAGAIN"), or "0". */
const char *en(int e);

/* Print "what -> rc" or "what -> -1 ENAME" (errno as left by the call). */
void show(const char *what, long rc);
#define SHOW(expr)                               \
	({                                       \
		errno = 0;                       \
		long r_ = (long)(expr);          \
		show(#expr, r_);                 \
		r_;                              \
	})
/* The same for calls returning a descriptor: fd numbers are not part of the
 * transcript (the hook may hold descriptors of its own), only "fd" or errno. */
void showfd(const char *what, long rc);
#define SHOWFD(expr)                             \
	({                                       \
		errno = 0;                       \
		long r_ = (long)(expr);          \
		showfd(#expr, r_);               \
		(int)r_;                         \
	})
/* Die unless expr >= 0 (set-up calls whose success is not under test). */
#define MUST(expr)                                                          \
	({                                                                  \
		long r_ = (long)(expr);                                     \
		if (r_ < 0)                                                 \
			fatal("%s:%d: %s", __FILE__, __LINE__, #expr);      \
		r_;                                                         \
	})

/* poll(2) / epoll event masks as "IN|OUT|RDHUP" ("0" when empty). */
const char *pollmask(int revents);
const char *epmask(uint32_t events);

/* ---- TCP over 127.0.0.1 ---------------------------------------------------- */

/* A listener on 127.0.0.1, port chosen by the kernel (returned in *port). */
int tcp_listener(uint16_t *port);
/* Blocking connect to 127.0.0.1:port (dies on failure). */
int tcp_connect(uint16_t port);
/* 127.0.0.1:port in *a. */
void loop_addr(uint16_t port, void *sockaddr_in);
/* A connected pair inside this process: *c connected to *s (accepted). */
void tcp_pair(int *c, int *s);
/* A port nobody listens on (bound, then closed): connect gets ECONNREFUSED. */
uint16_t dead_port(void);

/* Send / receive exactly len bytes (blocking); returns len, or the count
 * reached when an error or EOF stopped it (errno kept). */
ssize_t send_all(int fd, const void *buf, size_t len);
ssize_t recv_all(int fd, void *buf, size_t len);

/* Echo from fd_in to fd_out until EOF; the byte count (dies on errors). */
uint64_t echo_fd(int fd_in, int fd_out);
/* Send len bytes of stream seed on c while reading its echo back (both at
 * once: len may exceed the buffers); true if all of it came back intact. */
bool exchange(int c, uint64_t seed, size_t len, size_t *sent, size_t *got);

/* ---- forked helpers -------------------------------------------------------- */

/* A forked child running fn(arg); its stdout goes to a private file that
 * kid_join prints, each line prefixed with "[name] ", followed by its exit
 * status — so the transcript does not depend on how the processes interleave.
 * The child ends with exit() (not _exit), so atexit/destructors run. */
struct kid {
	pid_t pid;
	int out;
	const char *name;
};
void kid_start(struct kid *k, const char *name, int (*fn)(void *), void *arg);
/* Wait, print its lines and "[name] exit N" / "[name] killed by SIGX"; the status. */
int kid_join(struct kid *k);

/* A synchronisation channel (AF_UNIX socketpair, which the hook leaves to the
 * kernel): after a fork the parent uses sv[0], the child sv[1]. */
void chan_open(int sv[2]);
void chan_put(int fd, char c);
/* The next byte, or -1 at EOF. */
int chan_get(int fd);

/* ---- data ------------------------------------------------------------------ */

/* Byte i of stream seed is a function of (seed, i): any slice can be made or
 * checked on its own. */
void stream_fill(uint64_t seed, uint64_t off, void *buf, size_t len);
bool stream_check(uint64_t seed, uint64_t off, const void *buf, size_t len);
/* One message what, a -> b, sent and received whole (blocking), printed. */
void carry(const char *what, int a, int b);
/* FNV-1a, 64-bit; feed h = FNV_INIT first.  Split-independent. */
#define FNV_INIT 0xcbf29ce484222325ull
uint64_t fnv(uint64_t h, const void *buf, size_t len);

/* ---- dispatch -------------------------------------------------------------- */

struct scenario {
	const char *name;
	int (*fn)(void);
};
/* argv[1] names the scenario; alarm(limit) so nothing hangs; returns its status.
 * The limit is $SCEN_LIMIT seconds (the runner sets it below its own), else 50. */
int scen_main(int argc, char **argv, const struct scenario *table);
/* Arm the hang limit again (after a scenario used SIGALRM itself); kids get
 * a shorter one so that a hung kid still shows in the parent's transcript. */
void scen_alarm(void);
void scen_kid_alarm(void);
/* The program's own path (argv[0], for exec scenarios) and the arguments
 * after the scenario name. */
/* Pass a descriptor over an AF_UNIX socket with SCM_RIGHTS (sendmsg's
 * result); receive one as libuv does (a control buffer for many descriptors,
 * MSG_CMSG_CLOEXEC), -1 when none came. */
int scen_send_fd(int via, int fd);
/* n connected pairs over one listener (client ends *cs, server ends *ss,
 * allocated), the descriptor limit raised to the hard one first: room for
 * the accelerator's own descriptors too.  scen_unpairs closes and frees. */
void scen_pairs(int n, int **cs, int **ss);
void scen_unpairs(int n, int *cs, int *ss);
/* Read whatever fd holds now. */
void scen_drain(int fd);
int scen_recv_fd(int via);

extern const char *scen_self;
/* In a forked child: this program again without the hook (LD_PRELOAD
 * unset), running scenario with the descriptor chan as its argument. */
_Noreturn void scen_exec_unhooked(int chan, const char *scenario);
extern int scen_argc;
extern char **scen_argv;

#endif
