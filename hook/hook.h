/* hook.h — what the LD_PRELOAD hook's files share: lazy initialisation (the
 * table of next definitions must be filled before any interposed call runs,
 * even one made by another library's constructor) and the epoll emulation.
 */
#ifndef SCILAN_HOOK_H
#define SCILAN_HOOK_H

#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/epoll.h>

#include "preload_api.h"

#define HK_EXPORT __attribute__((visibility("default")))

/* The next definition of name after the hook (libc's), looked up once.
 * Calls the library itself makes use the sys.c table instead. */
#define HK_NEXT(name)                                                  \
	({                                                             \
		static __typeof__(&name) next_;                        \
		if (!next_)                                            \
			*(void **)&next_ = dlsym(RTLD_NEXT, #name);    \
		next_;                                                 \
	})

extern _Atomic bool hk_ready;
void hk_init_slow(void);

static inline void hk_enter(void)
{
	if (__builtin_expect(!__atomic_load_n((bool *)&hk_ready, __ATOMIC_ACQUIRE), 0))
		hk_init_slow();
}

/* A plain connection given to something the hook cannot follow across a
 * move onto the rings (a kernel epoll set, a stdio stream, splice): it
 * stays on kernel TCP, and a late offer of its already out is decided
 * first (promotion.h). */
static inline void hk_promote_forbid_fd(int fd)
{
	struct sl_sock *s = sl_sock_get(fd);

	if (s)
		sl_promote_stop(s);
}

/* socket_calls.c: close(2) as the hook does it, for syscall(SYS_close) too. */
int hk_close(int fd);

/* epoll.c: does fd name an epoll set the hook emulates (one with scilan
 * members, or any set created through the hook)? */
bool hk_epoll_known(int fd);
/* Forget fd everywhere the emulation remembers it (it is being closed). */
void hk_epoll_forget_fd(int fd);
/* An exec is coming: connections leave the sets' event queues. */
void hk_epoll_before_exec(void);
/* Expand poll entries that are emulated epoll sets into their scilan members
 * and wait (poll_calls.c uses it for poll/ppoll/select/pselect). */
int hk_poll(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask);
/* Before a seccomp filter: connections leave the rings (sandbox_calls.c). */
void hk_before_seccomp(void);
/* Will the image exec runs (file, searched on PATH if search; else fd) load
 * the hook?  false for a static or privilege-gaining one (exec_image.c). */
bool hk_image_loads_hook(const char *file, int fd, bool search);

/* stdio_calls.c: fds 0-2 are about to name something else (flush our
 * ring-backed standard stream), or just did (swap it for a ring-backed stream while the
 * fd is a scilan socket, and back). */
void hk_std_stream_before_change(int fd);
void hk_std_stream_after_change(int fd);

/* new_fd_calls.c: a call that creates descriptors returned fd; if our
 * tables still describe that number, it was closed behind our back (a raw
 * close): release that stale state as close() would have. */
void hk_fd_reused(int fd);

#endif
