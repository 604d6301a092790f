/* sys.c — the table of kernel-facing calls (see sys.h): libc's functions by
 * default, the next definitions after the preload hook when it asks.
 */
#include "sys.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <unistd.h>

#define SL_SYS_INIT(name, ret, params) .name = name,
struct sl_sys sl_sys = { SL_SYS_CALLS(SL_SYS_INIT) };

#define SL_SYS_NEXT(name, ret, params)                    \
	do {                                              \
		void *fn = dlsym(RTLD_NEXT, #name);       \
		if (fn)                                   \
			*(void **)&sl_sys.name = fn;      \
	} while (0);

void sl_sys_use_next(void)
{
	SL_SYS_CALLS(SL_SYS_NEXT)
}
