/* socket_calls.c — the socket-lifecycle calls the hook interposes: socket,
 * bind, listen, accept, connect, shutdown, close and the socket options.  Each goes
 * to libscilan, which passes anything it does not accelerate to the kernel.
 */
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "hook.h"
#include "preload_api.h"
#include "scilan.h"

/* A descriptor the library gives state of its own (a TCP socket, one
 * accepted from a scilan listener) replaces whatever was stale on that
 * number; any other may still find stale state there (hk_fd_reused).  On
 * 0-2, the standard stream follows either way. */
static int created(int fd, bool library_state)
{
	if (fd < 0)
		return fd;
	if (!library_state)
		hk_fd_reused(fd);
	hk_std_stream_after_change(fd);
	return fd;
}

/* The sockets scilan_socket keeps state for. */
static bool tcp_type(int domain, int type, int protocol)
{
	return (domain == AF_INET || domain == AF_INET6) && (type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) == SOCK_STREAM &&
	       (protocol == 0 || protocol == IPPROTO_TCP);
}

/* Out of descriptors: agreed offers give back the segment descriptors they
 * still held (sl_reclaim_descriptors) and the call is made once more. */
#define RETRY_EMFILE(expr)                                                             \
	({                                                                             \
		int r_ = (expr);                                                       \
		if (r_ < 0 && errno == EMFILE && sl_reclaim_descriptors()) \
			r_ = (expr);                                                   \
		r_;                                                                    \
	})

HK_EXPORT int socket(int domain, int type, int protocol)
{
	hk_enter();
	return created(RETRY_EMFILE(scilan_socket(domain, type, protocol)), tcp_type(domain, type, protocol));
}

HK_EXPORT int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	hk_enter();
	return scilan_bind(fd, addr, len);
}

HK_EXPORT int listen(int fd, int backlog)
{
	hk_enter();
	return scilan_listen(fd, backlog);
}

static bool scilan_listener(int fd)
{
	struct sl_sock *s = sl_sock_get(fd);

	return s && sl_sock_state(s) == SL_LISTENING;
}

HK_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	bool ours;
	int r;

	hk_enter();
	if (!sl_sock_get(fd))
		return created(RETRY_EMFILE(sl_sys.accept(fd, addr, len)), false);
	r = RETRY_EMFILE(scilan_accept4(fd, addr, len, 0));
	/* Asked after the accept: a socket this process only bound, which
	 * another process made listen, becomes our listener inside it. */
	ours = scilan_listener(fd);
	return created(r, ours);
}

HK_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	bool ours;
	int r;

	hk_enter();
	r = RETRY_EMFILE(scilan_accept4(fd, addr, len, flags));
	ours = scilan_listener(fd); /* after the accept, as above */
	return created(r, ours);
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

	/* Before the hook started, no descriptor carries state of ours, and
	 * starting it here could re-enter an allocator that closes a
	 * descriptor under its own lock (jemalloc's initialisation does, with
	 * syscall(SYS_close): redis-server hung at start). */
	if (!__atomic_load_n((bool *)&hk_ready, __ATOMIC_ACQUIRE))
		return HK_NEXT(close)(fd);
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
