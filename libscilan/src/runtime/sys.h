/* sys.h — the kernel-facing calls libscilan and the hook make, through a
 * table: in the LD_PRELOAD hook these names are the hook's own, so the table
 * is filled with the next definitions (libc's) and nothing intercepts itself.
 */
#ifndef SCILAN_SYS_H
#define SCILAN_SYS_H

#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

/* X(name, return type, parameter types) for every call in the table. */
#define SL_SYS_CALLS(X)                                                                            \
	X(socket, int, (int, int, int))                                                            \
	X(bind, int, (int, const struct sockaddr *, socklen_t))                                    \
	X(listen, int, (int, int))                                                                 \
	X(accept, int, (int, struct sockaddr *, socklen_t *))                                      \
	X(accept4, int, (int, struct sockaddr *, socklen_t *, int))                                \
	X(connect, int, (int, const struct sockaddr *, socklen_t))                                 \
	X(shutdown, int, (int, int))                                                               \
	X(close, int, (int))                                                                       \
	X(send, ssize_t, (int, const void *, size_t, int))                                         \
	X(recv, ssize_t, (int, void *, size_t, int))                                               \
	X(sendto, ssize_t, (int, const void *, size_t, int, const struct sockaddr *, socklen_t))   \
	X(recvfrom, ssize_t, (int, void *, size_t, int, struct sockaddr *, socklen_t *))           \
	X(sendmsg, ssize_t, (int, const struct msghdr *, int))                                     \
	X(recvmsg, ssize_t, (int, struct msghdr *, int))                                           \
	X(read, ssize_t, (int, void *, size_t))                                                    \
	X(write, ssize_t, (int, const void *, size_t))                                             \
	X(readv, ssize_t, (int, const struct iovec *, int))                                        \
	X(writev, ssize_t, (int, const struct iovec *, int))                                       \
	X(sendfile, ssize_t, (int, int, off_t *, size_t))                                          \
	X(poll, int, (struct pollfd *, nfds_t, int))                                               \
	X(ppoll, int, (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *))        \
	X(select, int, (int, fd_set *, fd_set *, fd_set *, struct timeval *))                      \
	X(pselect, int, (int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *)) \
	X(epoll_create, int, (int))                                                                \
	X(epoll_create1, int, (int))                                                               \
	X(epoll_ctl, int, (int, int, int, struct epoll_event *))                                   \
	X(epoll_wait, int, (int, struct epoll_event *, int, int))                                  \
	X(epoll_pwait, int, (int, struct epoll_event *, int, int, const sigset_t *))               \
	X(getsockopt, int, (int, int, int, void *, socklen_t *))                                   \
	X(setsockopt, int, (int, int, int, const void *, socklen_t))                               \
	X(getsockname, int, (int, struct sockaddr *, socklen_t *))                                 \
	X(getpeername, int, (int, struct sockaddr *, socklen_t *))                                 \
	X(fcntl, int, (int, int, ...))                                                             \
	X(ioctl, int, (int, unsigned long, ...))                                                   \
	X(dup, int, (int))                                                                         \
	X(dup2, int, (int, int))                                                                   \
	X(dup3, int, (int, int, int))                                                              \
	X(fork, pid_t, (void))                                                                     \
	X(execve, int, (const char *, char *const[], char *const[]))

#define SL_SYS_FIELD(name, ret, params) ret(*name) params;
struct sl_sys {
	SL_SYS_CALLS(SL_SYS_FIELD)
};
#undef SL_SYS_FIELD

extern struct sl_sys sl_sys;

/* Point every entry at the next definition in link order (dlsym RTLD_NEXT):
 * called by the preload hook before anything else. */
void sl_sys_use_next(void);

/* Reset a kernel TCP connection from our end without closing the number: a
 * connect to AF_UNSPEC disconnects the socket, which sends an RST for an
 * established (or half-closed) connection and leaves ECONNRESET for our
 * next call on it, as a peer's reset would. */
void sl_sys_reset_tcp(int fd);

/* Is fd a TCP socket of that domain?  Asked of the socket, never of a file
 * system: a descriptor another process names to us may be anything. */
int sl_sys_is_tcp(int fd, int domain);

#endif
