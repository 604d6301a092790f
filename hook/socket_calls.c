/* socket_calls.c — the socket-lifecycle calls the hook interposes: socket,
 * listen, accept, connect, shutdown, close and the socket options.  Each goes
 * to libscilan, which passes anything it does not accelerate to the kernel.
 */
#include <errno.h>
#include <sys/socket.h>

#include "hook.h"
#include "own_fd.h"
#include "scilan.h"
#include "sock.h"

HK_EXPORT int socket(int domain, int type, int protocol)
{
	hk_enter();
	return scilan_socket(domain, type, protocol);
}

HK_EXPORT int listen(int fd, int backlog)
{
	hk_enter();
	return scilan_listen(fd, backlog);
}

HK_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	hk_enter();
	if (!sl_sock_get(fd))
		return sl_sys.accept(fd, addr, len);
	return scilan_accept4(fd, addr, len, 0);
}

HK_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	hk_enter();
	return scilan_accept4(fd, addr, len, flags);
}

HK_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	hk_enter();
	return scilan_connect(fd, addr, len);
}

HK_EXPORT int shutdown(int fd, int how)
{
	hk_enter();
	return scilan_shutdown(fd, how);
}

int hk_close(int fd)
{
	int r;

	hk_enter();
	/* A daemon closing every descriptor it did not open must not take the
	 * library's: to the program they do not exist. */
	if (sl_own_fd_is(fd)) {
		errno = EBADF;
		return -1;
	}
	hk_epoll_forget_fd(fd);
	hk_std_stream_before_change(fd);
	r = scilan_close(fd);
	hk_std_stream_after_change(fd);
	return r;
}

HK_EXPORT int close(int fd)
{
	return hk_close(fd);
}

HK_EXPORT int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	hk_enter();
	return scilan_getsockopt(fd, level, name, val, len);
}

HK_EXPORT int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	hk_enter();
	return scilan_setsockopt(fd, level, name, val, len);
}
