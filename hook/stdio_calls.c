/* stdio_calls.c — fdopen on a scilan connection: glibc's FILE reads and
 * writes with internal calls no preload can see, so the stream is built on
 * cookie functions that go through the rings; fileno() still gives the fd.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hook.h"
#include "scilan.h"
#include "sock.h"

static ssize_t cookie_read(void *cookie, char *buf, size_t len)
{
	int fd = (int)(intptr_t)cookie;
	struct sl_sock *s = sl_sock_connected(fd);
	struct iovec iov = { buf, len };

	return s ? sl_recvv(s, &iov, 1, 0) : sl_sys.read(fd, buf, len);
}

static ssize_t cookie_write(void *cookie, const char *buf, size_t len)
{
	int fd = (int)(intptr_t)cookie;
	struct sl_sock *s = sl_sock_connected(fd);
	struct iovec iov = { (void *)buf, len };
	ssize_t n = s ? sl_sendv(s, &iov, 1, 0) : sl_sys.write(fd, buf, len);

	return n < 0 ? 0 : n; /* stdio takes 0 as the error */
}

static int cookie_close(void *cookie)
{
	int fd = (int)(intptr_t)cookie;

	hk_epoll_forget_fd(fd);
	return scilan_close(fd);
}

HK_EXPORT FILE *fdopen(int fd, const char *mode)
{
	cookie_io_functions_t io = { .read = cookie_read, .write = cookie_write, .close = cookie_close };
	FILE *f;

	hk_enter();
	if (!sl_sock_connected(fd))
		return HK_NEXT(fdopen)(fd, mode);
	/* Mode and descriptor errors as the real fdopen reports them. */
	if (sl_sys.fcntl(fd, F_GETFL) < 0)
		return NULL;
	if (!mode || !strchr("rwa", mode[0])) {
		errno = EINVAL;
		return NULL;
	}
	f = fopencookie((void *)(intptr_t)fd, mode, io);
	if (f)
		f->_fileno = fd;
	return f;
}
