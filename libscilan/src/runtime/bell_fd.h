/* bell_fd.h — a wake-up pipe another process handed us (the rendezvous,
 * SCM_RIGHTS, exec), checked and made ours (bell_fd.c).
 */
#ifndef SCILAN_BELL_FD_H
#define SCILAN_BELL_FD_H

/* Who handed the descriptor over: only our own user's FIFOs may be named
 * anywhere (a stranger's may sit on a file system that never answers). */
enum sl_bell_from {
	SL_BELL_STRANGER, /* anyone: an anonymous pipe, or a FIFO on our runtime directory's mount */
	SL_BELL_OUR_USER, /* our own user (kernel's word), or this very process before exec */
};

/* fd, if it is a pipe we may use, reopened into an open file description
 * of our own, O_RDWR | O_NONBLOCK | O_CLOEXEC; fd is left as it is.
 * -1 with errno: EINVAL not a pipe, EPERM a FIFO we do not take from this
 * sender, or why the reopen failed. */
int sl_bell_reopen(int fd, enum sl_bell_from from);

/* The same for a received descriptor, which is closed whatever happens:
 * one of the library's own descriptors (own_fd.h), or -1 with errno. */
int sl_bell_adopt(int fd, enum sl_bell_from from);

#endif
