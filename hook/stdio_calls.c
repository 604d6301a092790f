/* stdio_calls.c — stdio on scilan connections: glibc's FILE reads and writes
 * with internal calls no preload can see, so fdopen on a connection, and the
 * standard streams while fds 0-2 are connections, are cookie streams whose
 * functions go through the rings; fileno() still gives the fd.  dprintf and
 * vdprintf (a FILE inside glibc as well) are formatted here and sent.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hook.h"
#include "scilan.h"
#include "preload_api.h"

/* A cookie stream's state: its descriptor, and its place in the list of
 * our streams that exit flushes early (below). */
struct cookie {
	int fd;
	FILE *f;
	struct cookie *next;
};

static struct cookie *cookies;
static pthread_mutex_t cookies_lock = PTHREAD_MUTEX_INITIALIZER;

/* glibc flushes streams at exit after the shared objects' destructors, and
 * the library's end the connections (fabric_shm.c's shm_at_exit: the peer
 * sees the FIN): what a ring stream still held then would land after the end
 * of the stream, or nowhere.  So ours are flushed by a destructor of the
 * hook, which runs first: the preload is linked with the library's objects
 * before the hook's, and a .fini_array runs backwards.  (An atexit handler
 * would not do: registered from our constructor, where the streams of
 * handed-over connections are made, it runs after the destructors.) */
__attribute__((destructor)) static void flush_at_exit(void)
{
	pthread_mutex_lock(&cookies_lock);
	for (struct cookie *c = cookies; c; c = c->next) {
		/* fclose holds the stream's lock while it takes cookies_lock
		 * (cookie_forget): never wait for a stream here. */
		if (ftrylockfile(c->f) == 0) {
			fflush_unlocked(c->f);
			funlockfile(c->f);
		}
	}
	pthread_mutex_unlock(&cookies_lock);
}

static FILE *cookie_open(int fd, const char *mode, cookie_io_functions_t io)
{
	struct cookie *c = malloc(sizeof(*c));
	FILE *f;

	if (!c)
		return NULL;
	c->fd = fd;
	f = fopencookie(c, mode, io);
	if (!f) {
		free(c);
		return NULL;
	}
	f->_fileno = fd;
	c->f = f;
	pthread_mutex_lock(&cookies_lock);
	c->next = cookies;
	cookies = c;
	pthread_mutex_unlock(&cookies_lock);
	return f;
}

/* The stream is being closed (fclose holds its lock). */
static int cookie_forget(struct cookie *c)
{
	int fd = c->fd;

	pthread_mutex_lock(&cookies_lock);
	for (struct cookie **pp = &cookies; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	pthread_mutex_unlock(&cookies_lock);
	free(c);
	return fd;
}

static ssize_t cookie_read(void *cookie, char *buf, size_t len)
{
	int fd = ((struct cookie *)cookie)->fd;
	struct sl_sock *k, *s = sl_sock_route(fd, &k);
	struct iovec iov = { buf, len };

	return s ? sl_recvv(s, &iov, 1, 0) : SL_KERNEL_CALL(k, sl_sys.read(fd, buf, len));
}

static ssize_t cookie_write(void *cookie, const char *buf, size_t len)
{
	int fd = ((struct cookie *)cookie)->fd;
	struct sl_sock *k, *s = sl_sock_route(fd, &k);
	struct iovec iov = { (void *)buf, len };
	ssize_t n = s ? sl_sendv(s, &iov, 1, 0) : SL_KERNEL_CALL(k, sl_sys.write(fd, buf, len));

	return n < 0 ? 0 : n; /* stdio takes 0 as the error */
}

static int cookie_close(void *cookie)
{
	int fd = cookie_forget(cookie);

	hk_epoll_forget_fd(fd);
	return scilan_close(fd);
}

/* The standard streams keep their descriptor: closing one is the program's
 * business, through close() on the fd. */
static int cookie_keep_fd(void *cookie)
{
	cookie_forget(cookie);
	return 0;
}

/* stdin, stdout and stderr while fds 0, 1, 2 are connections: an inetd-style
 * child (the connection handed over on 0 and 1) or bash's `printf ... >&5`
 * (dup2 onto 1 around a builtin) would otherwise write into the kernel socket,
 * which the peer does not read, and read from it while the data is in the
 * ring.  The swap follows every dup2, dup3 and close of those numbers. */
static FILE *std_saved[3], *std_cookie[3];

static FILE **std_var(int fd)
{
	return fd == 0 ? &stdin : fd == 1 ? &stdout : &stderr;
}

void hk_std_stream_before_change(int fd)
{
	/* Only our own stream: what it holds was written for the connection.
	 * The program's streams keep glibc's behaviour (no flush at close). */
	if ((fd == 1 || fd == 2) && std_cookie[fd])
		fflush(std_cookie[fd]);
}

void hk_std_stream_after_change(int fd)
{
	cookie_io_functions_t io = { .read = cookie_read, .write = cookie_write, .close = cookie_keep_fd };
	FILE **var, *f;

	if (fd < 0 || fd > 2)
		return;
	var = std_var(fd);
	if (sl_sock_get(fd) && !std_cookie[fd]) {
		f = cookie_open(fd, fd == 0 ? "r" : "w", io);
		if (!f)
			return;
		if (fd == 2)
			setvbuf(f, NULL, _IONBF, 0);
		std_saved[fd] = *var;
		std_cookie[fd] = *var = f;
	} else if (!sl_sock_get(fd) && std_cookie[fd]) {
		f = std_cookie[fd];
		*var = std_saved[fd];
		std_cookie[fd] = NULL;
		fclose(f);
	}
}

HK_EXPORT FILE *fdopen(int fd, const char *mode)
{
	cookie_io_functions_t io = { .read = cookie_read, .write = cookie_write, .close = cookie_close };

	hk_enter();
	if (!sl_sock_connected(fd)) {
		/* glibc reads ahead into the stream's buffer where no hook sees
		 * it: a plain connection read that way never moves. */
		hk_promote_forbid_fd(fd);
		return HK_NEXT(fdopen)(fd, mode);
	}
	/* Mode and descriptor errors as the real fdopen reports them. */
	if (sl_sys.fcntl(fd, F_GETFL) < 0)
		return NULL;
	if (!mode || !strchr("rwa", mode[0])) {
		errno = EINVAL;
		return NULL;
	}
	return cookie_open(fd, mode, io);
}

/* glibc's vdprintf writes through a FILE of its own with internal calls:
 * on a connection the text would go into the kernel socket, which the peer
 * never reads.  Formatted here (a small buffer, else the heap: a thread
 * stack may be small) and sent whole, as the FILE's flush would. */
static int vdprintf_ring(struct sl_sock *s, const char *fmt, va_list ap)
{
	char small[512], *buf = small;
	size_t done = 0;
	va_list again;
	int n;

	va_copy(again, ap);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	if (n >= (int)sizeof(small)) {
		buf = malloc((size_t)n + 1);
		if (!buf) {
			va_end(again);
			errno = ENOMEM;
			return -1;
		}
		vsnprintf(buf, (size_t)n + 1, fmt, again);
	}
	va_end(again);
	while (n > 0 && done < (size_t)n) {
		struct iovec iov = { buf + done, (size_t)n - done };
		ssize_t w = sl_sendv(s, &iov, 1, 0);

		if (w < 0) {
			n = -1;
			break;
		}
		done += (size_t)w;
	}
	if (buf != small) {
		int err = errno;

		free(buf);
		errno = err;
	}
	return n;
}

HK_EXPORT int vdprintf(int fd, const char *fmt, va_list ap)
{
	struct sl_sock *s, *k;

	hk_enter();
	s = sl_sock_route(fd, &k);
	return s ? vdprintf_ring(s, fmt, ap) : SL_KERNEL_CALL(k, HK_NEXT(vdprintf)(fd, fmt, ap));
}

HK_EXPORT int dprintf(int fd, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vdprintf(fd, fmt, ap);
	va_end(ap);
	return n;
}

/* Fortified builds (-D_FORTIFY_SOURCE=2) call these instead. */
int __vdprintf_chk(int fd, int flag, const char *fmt, va_list ap);
int __dprintf_chk(int fd, int flag, const char *fmt, ...);

HK_EXPORT int __vdprintf_chk(int fd, int flag, const char *fmt, va_list ap)
{
	struct sl_sock *s, *k;

	hk_enter();
	s = sl_sock_route(fd, &k);
	return s ? vdprintf_ring(s, fmt, ap) : SL_KERNEL_CALL(k, HK_NEXT(__vdprintf_chk)(fd, flag, fmt, ap));
}

HK_EXPORT int __dprintf_chk(int fd, int flag, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = __vdprintf_chk(fd, flag, fmt, ap);
	va_end(ap);
	return n;
}
