/* sys.c — the table of kernel-facing calls (see sys.h): libc's functions by
 * default, the next definitions after the preload hook when it asks.
 */
#include "sys.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

struct sl_sys sl_sys = {
	.socket = socket,
	.bind = bind,
	.listen = listen,
	.accept4 = accept4,
	.connect = connect,
	.shutdown = shutdown,
	.close = close,
	.send = send,
	.recv = recv,
	.poll = poll,
	.getsockopt = getsockopt,
	.setsockopt = setsockopt,
	.getsockname = getsockname,
	.getpeername = getpeername,
	.fcntl = fcntl,
	.read = read,
	.write = write,
};

#define NEXT(name)                                                \
	do {                                                      \
		void *fn = dlsym(RTLD_NEXT, #name);               \
		if (fn)                                           \
			*(void **)&sl_sys.name = fn;              \
	} while (0)

void sl_sys_use_next(void)
{
	NEXT(socket);
	NEXT(bind);
	NEXT(listen);
	NEXT(accept4);
	NEXT(connect);
	NEXT(shutdown);
	NEXT(close);
	NEXT(send);
	NEXT(recv);
	NEXT(poll);
	NEXT(getsockopt);
	NEXT(setsockopt);
	NEXT(getsockname);
	NEXT(getpeername);
	NEXT(fcntl);
	NEXT(read);
	NEXT(write);
}
