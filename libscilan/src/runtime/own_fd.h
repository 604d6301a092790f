/* own_fd.h — the descriptors libscilan keeps for itself (wake-up bells,
 * segment memfds, registry entries, device endpoints): kept out of the
 * application's way at high numbers, and moved when the application claims
 * one of their numbers anyway (dup2 onto it).
 */
#ifndef SCILAN_OWN_FD_H
#define SCILAN_OWN_FD_H

#include <stdbool.h>

/* Take fd (just opened by the library) as one of ours: it is moved above the
 * program's soft limit (or to the top of its range) and marked.  Returns the descriptor to keep
 * (fd itself when it cannot be moved).  A negative fd is returned as is, so
 * calls can be wrapped: s->bell = sl_own_fd(open(...)). */
int sl_own_fd(int fd);
/* The same for one that lasts as long as a listener, an epoll set or the
 * process: placed where it never stands among the program's numbers. */
int sl_own_fd_lasting(int fd);
/* Close one of ours (unmarks it first). */
void sl_own_fd_close(int fd);
/* Descriptors a connection on the rings holds besides its socket (segment,
 * two bells), at most. */
#define SL_FDS_PER_CONN 3
/* May a new connection (socket newfd) ride the rings without eating into
 * the eighth of RLIMIT_NOFILE kept for the program's own descriptors? */
bool sl_own_fd_room(int newfd);

/* The process is about to make a thread: make the kernel's descriptor table
 * big enough for ours now, while one thread shares it (own_fd.c).  Once per
 * process and fork. */
void sl_own_fd_before_threads(void);
/* fd is being closed, whoever's it was: no longer one of ours (sys.c's
 * close does it for every close through the table). */
void sl_own_fd_forget(int fd);
/* Is fd a descriptor the library keeps for itself? */
bool sl_own_fd_is(int fd);
/* The application is about to reuse fd's number (dup2/dup3 onto it): move
 * ours to another number and repoint every holder.  0, or -1 with errno. */
int sl_own_fd_evict(int fd);
/* Holders outside libscilan (the hook's epoll wake-up descriptors) learn of
 * a move through one callback, called under the eviction lock. */
void sl_own_fd_on_move(void (*fn)(int from, int to));
/* fork: held across it, so a child never inherits a half-done move. */
void sl_own_fd_fork_lock(void);
void sl_own_fd_fork_unlock(bool child);
/* The lowest of our numbers in [first, last], or -1. */
int sl_own_fd_next(unsigned first, unsigned last);

#endif
