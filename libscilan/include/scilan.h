/* scilan.h — the native scilan API: BSD-socket calls over shared-memory rings.
 * Every call mirrors its libc namesake (same arguments, same return values,
 * errno as kernel TCP sets it); a socket is a real kernel file descriptor.
 */
#ifndef SCILAN_H
#define SCILAN_H

#include <poll.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SCILAN_API __attribute__((visibility("default")))

/* Socket-option level of scilan's own options (the value is unused by the kernel). */
#define SOL_SCILAN 0x5c1a

/* SOL_SCILAN options. */
#define SCILAN_SO_POLL_US 1     /* int: microseconds to spin before sleeping; 0 = interrupt mode; -1 = learnt (the default) */
#define SCILAN_SO_ACCELERATED 2 /* int, read-only: 1 if the connection runs over scilan rings */
#define SCILAN_SO_RING_FILL 3   /* int, read-only: bytes waiting in the receive ring */
#define SCILAN_SO_RING_SIZE 4   /* int, read-only: the receive ring's capacity (in use once connected, else what SO_RCVBUF asked) */

SCILAN_API int scilan_socket(int domain, int type, int protocol);
SCILAN_API int scilan_bind(int fd, const struct sockaddr *addr, socklen_t len);
SCILAN_API int scilan_listen(int fd, int backlog);
SCILAN_API int scilan_accept(int fd, struct sockaddr *addr, socklen_t *len);
SCILAN_API int scilan_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags);
SCILAN_API int scilan_connect(int fd, const struct sockaddr *addr, socklen_t len);
SCILAN_API ssize_t scilan_send(int fd, const void *buf, size_t len, int flags);
SCILAN_API ssize_t scilan_recv(int fd, void *buf, size_t len, int flags);
SCILAN_API ssize_t scilan_sendmsg(int fd, const struct msghdr *msg, int flags);
SCILAN_API ssize_t scilan_recvmsg(int fd, struct msghdr *msg, int flags);
SCILAN_API int scilan_shutdown(int fd, int how);
SCILAN_API int scilan_close(int fd);
/* Like poll(2); fds that are not scilan sockets are polled by the kernel. */
SCILAN_API int scilan_poll(struct pollfd *fds, nfds_t nfds, int timeout_ms);
SCILAN_API int scilan_setsockopt(int fd, int level, int name, const void *val, socklen_t len);
SCILAN_API int scilan_getsockopt(int fd, int level, int name, void *val, socklen_t *len);

/* 1 if fd is a socket that scilan manages (accelerated or not), else 0. */
SCILAN_API int scilan_is_socket(int fd);

#ifdef __cplusplus
}
#endif
#endif
