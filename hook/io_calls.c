/* io_calls.c — the data calls the hook interposes (read/write, the send and
 * recv families, the vector forms, sendfile, and glibc's _chk fortify
 * variants): rings for connected scilan sockets, the kernel for every other fd.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hook.h"
#include "scilan.h"
#include "preload_api.h"

HK_EXPORT ssize_t read(int fd, void *buf, size_t len)
{
	struct sl_sock *s, *k;

	hk_enter();
	s = sl_sock_route(fd, &k);
	return s ? sl_recv(s, buf, len, 0) : SL_KERNEL_CALL(k, sl_sys.read(fd, buf, len));
}

HK_EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	struct sl_sock *s, *k;

	hk_enter();
	s = sl_sock_route(fd, &k);
	return s ? sl_send(s, buf, len, 0) : SL_KERNEL_CALL(k, sl_sys.write(fd, buf, len));
}

HK_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	struct sl_sock *s, *k;

	hk_enter();
	s = sl_sock_route(fd, &k);
	return s ? sl_recvv(s, iov, cnt, 0) : SL_KERNEL_CALL(k, sl_sys.readv(fd, iov, cnt));
}

HK_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	struct sl_sock *s, *k;

	hk_enter();
	s = sl_sock_route(fd, &k);
	return s ? sl_sendv(s, iov, cnt, 0) : SL_KERNEL_CALL(k, sl_sys.writev(fd, iov, cnt));
}

HK_EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	hk_enter();
	return scilan_send(fd, buf, len, flags);
}

HK_EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	hk_enter();
	return scilan_recv(fd, buf, len, flags);
}

HK_EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to, socklen_t tolen)
{
	struct sl_sock *s, *k;

	hk_enter();
	s = sl_sock_route(fd, &k);
	/* TCP ignores the address on a connected socket. */
	if (s)
		return sl_send(s, buf, len, flags);
	if (k && (flags & MSG_OOB))
		sl_promote_forbid(k);
	return SL_KERNEL_CALL(k, sl_sys.sendto(fd, buf, len, flags, to, tolen));
}

HK_EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from, socklen_t *fromlen)
{
	struct sl_sock *s, *k;
	ssize_t n;

	hk_enter();
	s = sl_sock_route(fd, &k);
	if (!s) {
		if (k && (flags & MSG_OOB))
			sl_promote_forbid(k);
		return SL_KERNEL_CALL(k, sl_sys.recvfrom(fd, buf, len, flags, from, fromlen));
	}
	n = sl_recv(s, buf, len, flags);
	if (n >= 0 && from && fromlen)
		*fromlen = 0; /* TCP reports no source address */
	return n;
}

HK_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	hk_enter();
	return scilan_sendmsg(fd, msg, flags);
}

HK_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	hk_enter();
	return scilan_recvmsg(fd, msg, flags);
}

/* sendfile of a regular file reads it straight into the peer's ring: the
 * kernel copies page cache -> ring, as its own sendfile copies page cache ->
 * socket buffer, with no copy in between.  A file truncated meanwhile just
 * reads short, and the call returns a short count, as the kernel's does
 * (a mapping of the file would raise SIGBUS instead). */
struct file_src {
	int fd;
	off_t pos; /* next offset for pread; -1: read() at the file position */
	int err;   /* errno of a read that failed, else 0 */
};

static ssize_t file_read(struct file_src *f, void *dst, size_t n)
{
	ssize_t r;

	do
		r = f->pos >= 0 ? pread(f->fd, dst, n, f->pos) : sl_sys.read(f->fd, dst, n);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		f->err = errno;
	else if (f->pos >= 0)
		f->pos += r;
	return r;
}

/* sl_send_fill's source, under tx_lock: a regular file's read does not wait
 * on anyone (a pipe's could, so those go through a buffer below). */
static size_t fill_from_file(const struct sl_ring_tx *tx, size_t n, void *arg)
{
	size_t done = 0;

	while (done < n) {
		uint64_t at = (tx->write + done) & (tx->cap - 1);
		size_t k = n - done < tx->cap - at ? n - done : (size_t)(tx->cap - at);
		ssize_t r = file_read(arg, tx->data + at, k);

		if (r <= 0)
			break;
		done += (size_t)r;
	}
	return done;
}

static ssize_t sendfile_direct(struct sl_sock *s, int in_fd, off_t *offset, size_t count)
{
	struct file_src f = { in_fd, offset ? *offset : -1, 0 };
	ssize_t n;

	if (offset && *offset < 0) {
		errno = EINVAL;
		return -1;
	}
	n = sl_send_fill(s, count, 0, fill_from_file, &f);
	if (n < 0 && errno == EXDEV) { /* the connection moved to kernel TCP */
		struct sl_sock *k = NULL;

		/* Counted, as the hook's other kernel calls on a connection that
		 * may move onto the rings (promotion): if it started to, the
		 * call goes the library's way again. */
		if (sl_promote_armed(atomic_load(&s->promote_role))) {
			if (!sl_promote_kernel_enter(s))
				return sendfile_direct(s, in_fd, offset, count);
			k = s;
		}
		return SL_KERNEL_CALL(k, sl_sys.sendfile(s->fd, in_fd, offset, count));
	}
	if (n == 0 && f.err) {
		errno = f.err;
		return -1;
	}
	if (n > 0 && offset)
		*offset += n;
	return n;
}

/* Anything else (a pipe, a character device) is read outside the ring lock
 * into a buffer of this call's own. */
#define SENDFILE_COPY_CHUNK (64u << 10)

static ssize_t sendfile_copied(struct sl_sock *s, int in_fd, off_t *offset, size_t count)
{
	size_t done = 0, size = count < SENDFILE_COPY_CHUNK ? count : SENDFILE_COPY_CHUNK;
	char *buf = malloc(size ? size : 1);

	if (!buf) {
		errno = ENOMEM;
		return -1;
	}
	while (done < count) {
		size_t want = count - done < size ? count - done : size;
		ssize_t got = offset ? pread(in_fd, buf, want, *offset + (off_t)done) : sl_sys.read(in_fd, buf, want);
		ssize_t n;

		if (got <= 0) {
			if (got < 0 && !done) {
				free(buf);
				return -1;
			}
			break;
		}
		n = sl_send(s, buf, (size_t)got, MSG_NOSIGNAL);
		if (n > 0)
			done += (size_t)n;
		if (n < got) {
			/* Give back what was read but not sent, as the kernel's
			 * sendfile consumes only what it sent. */
			if (!offset)
				lseek(in_fd, -(off_t)(got - (n > 0 ? n : 0)), SEEK_CUR);
			if (n < 0 && !done) {
				int err = errno;

				free(buf);
				if (err == EPIPE)
					raise(SIGPIPE);
				errno = err;
				return -1;
			}
			break;
		}
	}
	free(buf);
	if (offset)
		*offset += (off_t)done;
	return (ssize_t)done;
}

HK_EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t *offset, size_t count)
{
	struct sl_sock *s, *k;
	struct stat st;

	hk_enter();
	s = sl_sock_route(out_fd, &k);
	if (!s)
		return SL_KERNEL_CALL(k, sl_sys.sendfile(out_fd, in_fd, offset, count));
	if (count > 0x7ffff000)
		count = 0x7ffff000; /* the kernel's cap on one transfer */
	if (fstat(in_fd, &st) < 0)
		return -1;
	if (S_ISREG(st.st_mode))
		return sendfile_direct(s, in_fd, offset, count);
	return sendfile_copied(s, in_fd, offset, count);
}

HK_EXPORT ssize_t sendfile64(int out_fd, int in_fd, off_t *offset, size_t count)
{
	return sendfile(out_fd, in_fd, offset, count);
}

/* Fortified builds (-D_FORTIFY_SOURCE) call these instead of read/recv. */
HK_EXPORT ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	if (len > buflen)
		abort();
	return read(fd, buf, len);
}

HK_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
	if (len > buflen)
		abort();
	return recv(fd, buf, len, flags);
}

HK_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags, struct sockaddr *from,
				 socklen_t *fromlen)
{
	if (len > buflen)
		abort();
	return recvfrom(fd, buf, len, flags, from, fromlen);
}

/* The batch forms: TCP takes each message as a stream write or read. */
HK_EXPORT int sendmmsg(int fd, struct mmsghdr *vec, unsigned int n, int flags)
{
	struct sl_sock *s, *k;
	unsigned int i;

	hk_enter();
	s = sl_sock_route(fd, &k);
	if (!s)
		return SL_KERNEL_CALL(k, HK_NEXT(sendmmsg)(fd, vec, n, flags));
	if (n > UIO_MAXIOV)
		n = UIO_MAXIOV;
	for (i = 0; i < n; i++) {
		ssize_t r = sl_sendv(s, vec[i].msg_hdr.msg_iov, (int)vec[i].msg_hdr.msg_iovlen, flags);

		if (r < 0)
			return i ? (int)i : -1;
		vec[i].msg_len = (unsigned int)r;
	}
	return (int)i;
}

HK_EXPORT int recvmmsg(int fd, struct mmsghdr *vec, unsigned int n, int flags, struct timespec *timeout)
{
	struct sl_sock *s, *k;
	unsigned int i;

	hk_enter();
	s = sl_sock_route(fd, &k);
	if (!s)
		return SL_KERNEL_CALL(k, HK_NEXT(recvmmsg)(fd, vec, n, flags, timeout));
	for (i = 0; i < n; i++) {
		/* After the first message, take only what is already there, as
		 * the kernel's MSG_WAITFORONE does for a stream. */
		int f = (flags & ~MSG_WAITFORONE) | (i && (flags & MSG_WAITFORONE) ? MSG_DONTWAIT : 0);
		ssize_t r = sl_recvv(s, vec[i].msg_hdr.msg_iov, (int)vec[i].msg_hdr.msg_iovlen, f);

		if (r < 0)
			return i ? (int)i : -1;
		vec[i].msg_len = (unsigned int)r;
		vec[i].msg_hdr.msg_namelen = 0;
		vec[i].msg_hdr.msg_controllen = 0;
		vec[i].msg_hdr.msg_flags = 0;
		if (r == 0)
			return (int)i + 1;
	}
	return (int)i;
}

/* splice and tee move kernel buffers; a ring has none: refuse, as the kernel
 * does for descriptors it cannot splice, and programs fall back to recv/send.
 * A connection that failed over has its kernel buffers again, once the peer's
 * fail-over header is stripped from what it reads. */
HK_EXPORT ssize_t splice(int in, loff_t *in_off, int out, loff_t *out_off, size_t len, unsigned int flags)
{
	struct sl_sock *from, *to;

	hk_enter();
	/* Kernel buffers moved past the hook: a plain connection spliced never
	 * moves onto the rings. */
	hk_promote_forbid_fd(in);
	hk_promote_forbid_fd(out);
	from = sl_sock_connected(in);
	to = sl_sock_connected(out);
	/* A connection moving onto the rings (promotion) is refused as well:
	 * its stream carries the peer's switch marker. */
	if (from && !sl_sock_on_rings(from) && !sl_sock_promoting(from) && !atomic_load(&from->seam_pending)) {
		if (sl_fail_over_strip(from, flags & SPLICE_F_NONBLOCK ? MSG_DONTWAIT : 0) < 0)
			return -1;
		from = NULL;
	}
	if (to && !sl_sock_on_rings(to) && !sl_sock_promoting(to))
		to = NULL;
	if (from || to) {
		errno = EINVAL;
		return -1;
	}
	return HK_NEXT(splice)(in, in_off, out, out_off, len, flags);
}
