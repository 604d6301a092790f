/* evq_peer.c — taking another process's epoll-set queue on the word of a
 * registration any peer can forge: pidfd_getfd of descriptors the kernel
 * shows to be a memfd and an anonymous pipe, each checked before use.
 */
#include "evq/evq_peer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "evq/evq.h"
#include "runtime/bell_fd.h"
#include "runtime/fdinfo.h"
#include "runtime/sys.h"

/* The kernel's internal mounts of memfds and of pipes, as fdinfo names
 * them: a descriptor on either cannot be a file of any file system. */
static _Atomic int shm_mnt = -1, pipe_mnt = -1;

static bool know_mounts(void)
{
	struct sl_fdinfo seen;
	int m, p[2];

	if (atomic_load_explicit(&pipe_mnt, memory_order_acquire) >= 0)
		return true;
	m = memfd_create("scilan-probe", MFD_CLOEXEC);
	if (m < 0)
		return false;
	if (sl_fdinfo_of(0, m, &seen) == 0)
		atomic_store(&shm_mnt, (int)seen.mnt_id);
	sl_sys.close(m);
	if (pipe2(p, O_CLOEXEC) < 0)
		return false;
	if (sl_fdinfo_of(0, p[0], &seen) == 0 && atomic_load(&shm_mnt) >= 0)
		atomic_store_explicit(&pipe_mnt, (int)seen.mnt_id, memory_order_release);
	sl_sys.close(p[0]);
	sl_sys.close(p[1]);
	return atomic_load(&pipe_mnt) >= 0;
}

static enum sl_evq_take_verdict verdict_of(int err)
{
	if (err == ENOENT || err == ESRCH || err == EBADF)
		return SL_EVQ_GONE;
	return SL_EVQ_UNREACHABLE;
}

/* Install descriptor n of process pidfd (pid) in our table, only if the
 * kernel shows it on mount mnt (and, nonzero, inode ino) first.  Between
 * that look and pidfd_getfd the process can put another file under n, but
 * only a process the peer controls: then the checks after see it (and it
 * is the peer's own file we hold for a moment; see ARCHITECTURE.md). */
static enum sl_evq_take_verdict take_fd(int pidfd, int32_t pid, int32_t n, int mnt, unsigned long long ino,
					int *out)
{
	struct sl_fdinfo seen;
	int fd;

	if (sl_fdinfo_of(pid, n, &seen) < 0)
		return verdict_of(errno);
	if (!seen.ino)
		return SL_EVQ_UNREACHABLE; /* before Linux 5.14: nothing to check by */
	if (seen.mnt_id != mnt || (ino && seen.ino != ino))
		return SL_EVQ_NOT_A_SET;
	fd = (int)syscall(SYS_pidfd_getfd, pidfd, n, 0);
	if (fd < 0)
		return verdict_of(errno);
	*out = fd;
	return SL_EVQ_TAKEN;
}

/* What the queue says of itself, copied once: the peer may change it. */
struct queue_head {
	uint64_t magic, set_id, bell_dev, bell_ino;
};

/* Our descriptor fd of a queue: a memfd (only shmem files have seals, so
 * asking runs no file-system code) that can never change size under our
 * mapping, of exactly size bytes, naming set_id; mapped into *sh. */
static enum sl_evq_take_verdict map_queue(int fd, uint64_t magic, uint64_t set_id, size_t size,
					  struct queue_head *head, struct sl_evq_shared **sh)
{
	int seals = sl_sys.fcntl(fd, F_GET_SEALS);
	struct stat st;
	void *p;

	if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW) ||
	    (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)))
		return SL_EVQ_NOT_A_SET;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != size)
		return SL_EVQ_NOT_A_SET;
	if (pread(fd, head, sizeof(*head), 0) != (ssize_t)sizeof(*head) || head->magic != magic ||
	    head->set_id != set_id)
		return SL_EVQ_NOT_A_SET;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return SL_EVQ_NOT_A_SET; /* a description without write access */
	*sh = p;
	return SL_EVQ_TAKEN;
}

/* Our descriptor dup of the set's bell (take_fd saw it on the kernel's
 * pipe mount with the queue's inode), used through a description of our
 * own (bell_fd.c): the peer cannot clear O_NONBLOCK on it, and a pipe we
 * also read never raises SIGPIPE. */
static enum sl_evq_take_verdict own_bell(int dup, const struct queue_head *head, int *bell_w)
{
	struct stat st;
	int bw = sl_bell_reopen(dup, SL_BELL_STRANGER);

	if (bw < 0)
		return errno == EINVAL || errno == EPERM ? SL_EVQ_NOT_A_SET : verdict_of(errno);
	if (fstat(bw, &st) < 0 || !S_ISFIFO(st.st_mode) || st.st_ino != head->bell_ino || st.st_dev != head->bell_dev) {
		sl_sys.close(bw);
		return SL_EVQ_NOT_A_SET;
	}
	*bell_w = bw;
	return SL_EVQ_TAKEN;
}

enum sl_evq_take_verdict sl_evq_take_peer(int32_t pid, int32_t memfd, int32_t bell, uint64_t set_id,
					  uint64_t magic, size_t size, struct sl_evq_shared **sh, int *bell_w)
{
	struct sl_evq_shared *map = NULL;
	struct queue_head head;
	enum sl_evq_take_verdict v;
	int pidfd, fd = -1, dup = -1;

	if (pid <= 0 || memfd < 0 || bell < 0)
		return SL_EVQ_NOT_A_SET;
	if (!know_mounts())
		return SL_EVQ_UNREACHABLE;
	/* Everything below goes through this one process: a pid reused after
	 * the look at its descriptors fails pidfd_getfd. */
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return errno == EINVAL ? SL_EVQ_NOT_A_SET : verdict_of(errno);
	v = take_fd(pidfd, pid, memfd, atomic_load(&shm_mnt), 0, &fd);
	if (v == SL_EVQ_TAKEN)
		v = map_queue(fd, magic, set_id, size, &head, &map);
	if (fd >= 0)
		sl_sys.close(fd);
	if (v == SL_EVQ_TAKEN)
		v = take_fd(pidfd, pid, bell, atomic_load(&pipe_mnt), head.bell_ino, &dup);
	if (v == SL_EVQ_TAKEN)
		v = own_bell(dup, &head, bell_w);
	if (dup >= 0)
		sl_sys.close(dup);
	sl_sys.close(pidfd);
	if (v != SL_EVQ_TAKEN) {
		if (map)
			munmap(map, size);
		return v;
	}
	*sh = map;
	return v;
}

bool sl_evq_can_take(bool cap_ptrace)
{
	static _Atomic int scope = -2; /* Yama's ptrace_scope; -1: no Yama; -3: no pidfd_getfd */
	int s = atomic_load_explicit(&scope, memory_order_relaxed);

	if (s == -2) {
		char b[8] = { 0 };
		int f;

		s = -1;
		if (syscall(SYS_pidfd_getfd, -1, 0, 0) < 0 && errno == ENOSYS)
			s = -3;
		else if ((f = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC)) >= 0) {
			if (sl_sys.read(f, b, sizeof(b) - 1) > 0)
				s = atoi(b);
			sl_sys.close(f);
		}
		atomic_store_explicit(&scope, s, memory_order_relaxed);
	}
	/* Scope 1 lets us attach only to our descendants, 2 only with the
	 * capability, 3 never: then the owner's sets scan the connection. */
	return s != -3 && s < 3 && (s <= 0 || cap_ptrace);
}
