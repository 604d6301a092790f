/* sys.c — the table of kernel-facing calls (see sys.h): libc's functions by
 * default, the next definitions after the preload hook when it asks.
 */
#include "runtime/sys.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include "runtime/own_fd.h"

#define SL_SYS_INIT(name, ret, params) .name = name,
struct sl_sys sl_sys = { SL_SYS_CALLS(SL_SYS_INIT) };

/* Every close the library (or the hook, for the program) makes through
 * the table first forgets the number as one of the library's own
 * (own_fd.c): the kernel may hand it to the program next, which must not
 * find it hidden (close() was EBADF, the socket leaked).  Forgotten before
 * the close, so no other thread's fresh mark on the number is undone. */
static int (*close_real)(int) = close;

static int close_forgetting(int fd)
{
	sl_own_fd_forget(fd);
	return close_real(fd);
}

static void wrap_close(void)
{
	if (sl_sys.close != close_forgetting) {
		close_real = sl_sys.close;
		sl_sys.close = close_forgetting;
	}
}

__attribute__((constructor)) static void sys_init(void)
{
	wrap_close();
}

#define SL_SYS_NEXT(name, ret, params)                    \
	do {                                              \
		void *fn = dlsym(RTLD_NEXT, #name);       \
		if (fn)                                   \
			*(void **)&sl_sys.name = fn;      \
	} while (0);

void sl_sys_use_next(void)
{
	SL_SYS_CALLS(SL_SYS_NEXT)
	wrap_close();
}

void sl_sys_reset_tcp(int fd)
{
	struct sockaddr unspec = { .sa_family = AF_UNSPEC };

	sl_sys.connect(fd, &unspec, sizeof(unspec));
}

int sl_sys_is_tcp(int fd, int domain)
{
	int d = 0, type = 0, proto = 0;
	socklen_t len = sizeof(d);

	return sl_sys.getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &d, &len) == 0 && d == domain &&
	       (len = sizeof(type), sl_sys.getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len)) == 0 &&
	       type == SOCK_STREAM &&
	       (len = sizeof(proto), sl_sys.getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len)) == 0 &&
	       proto == IPPROTO_TCP;
}
