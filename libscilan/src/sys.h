/* sys.h — the kernel-facing calls libscilan makes, through a table: in the
 * LD_PRELOAD hook these names are the hook's own, so the table is filled with
 * the next definitions (libc's) and the library never intercepts itself.
 */
#ifndef SCILAN_SYS_H
#define SCILAN_SYS_H

#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>

struct sl_sys {
	int (*socket)(int, int, int);
	int (*bind)(int, const struct sockaddr *, socklen_t);
	int (*listen)(int, int);
	int (*accept4)(int, struct sockaddr *, socklen_t *, int);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	int (*shutdown)(int, int);
	int (*close)(int);
	ssize_t (*send)(int, const void *, size_t, int);
	ssize_t (*recv)(int, void *, size_t, int);
	int (*poll)(struct pollfd *, nfds_t, int);
	int (*getsockopt)(int, int, int, void *, socklen_t *);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
	int (*getsockname)(int, struct sockaddr *, socklen_t *);
	int (*getpeername)(int, struct sockaddr *, socklen_t *);
	int (*fcntl)(int, int, ...);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*write)(int, const void *, size_t);
};

extern struct sl_sys sl_sys;

/* Point every entry at the next definition in link order (dlsym RTLD_NEXT):
 * called by the preload hook before anything else. */
void sl_sys_use_next(void);

#endif
