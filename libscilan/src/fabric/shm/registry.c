/* registry.c — the listener registry of the shm fabric.  An entry is a file
 * under <rundir>/listen named after the endpoint; every listener holds an OFD
 * read lock on it, so the kernel drops a dead process's claim by itself and a
 * lookup that finds no lock holder removes the stale entry.
 */
#include "fabric/shm/registry.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fabric/shm/offer_names.h"
#include "runtime/config.h"
#include "runtime/log.h"
#include "runtime/own_fd.h"
#include "runtime/self_ns.h"
#include "runtime/sys.h"
#include "sync/clock.h"

#define REG_MAGIC 0x3247455220434c53ull /* "SLC REG2" */

struct reg_entry {
	uint64_t magic;
	int32_t pid;
	uint32_t flags; /* SL_REG_NAMED */
	uint64_t ring_bytes;
	/* The monotonic second, mod 256, at which a connector last found the
	 * entry asking for named offers (and so named one): one byte, which a
	 * pwrite cannot tear for a reader of the mapping. */
	uint8_t named_tick;
	/* The same for an offer made only as files: its connector could not
	 * pass it through the rendezvous (refused, its queue full).  What a
	 * holder of the rendezvous looks at: every other offer reached its
	 * queue before the TCP connect. */
	uint8_t file_only_tick;
	uint8_t pad[2];
	/* The listener's pid namespace (inode; 0 unknown, as an older
	 * version's entry reads): an offer file names its connector by pid,
	 * which another pid namespace's /proc does not show. */
	uint32_t pidns;
};

/* A note this many seconds old or younger may be an offer still waiting
 * for its acceptor.  Not the agreement's 1 s: a connector waits on while
 * its connection is queued for a busy acceptor (agree.c), and a window of
 * 5 s sent a connection accepted 7 s after its offer to kernel TCP.  One
 * queued longer than this is told plain, and its connector moves to kernel
 * TCP at its next look, with every byte.  Below half the tick's wrap. */
#define NAMED_RECENT_S 120

static uint8_t tick_now(void)
{
	return (uint8_t)(sl_mono_ns() / 1000000000);
}

/* A tick wraps every 256 s, so a note 256 s old reads as new: one
 * needless look for an offer file, never a missed one. */
static bool tick_recent(uint8_t tick)
{
	return (uint8_t)(tick_now() - tick) <= NAMED_RECENT_S;
}

static int entry_path(const struct sl_key *key, char *path, size_t size)
{
	return sl_key_path("listen", key, "", path, size);
}

/* The entry at key, opened for a connector's note (path: SL_PATH_SIZE,
 * filled); -1 if there is none. */
static int open_entry(const struct sl_key *key, char *path)
{
	if (entry_path(key, path, SL_PATH_SIZE) < 0)
		return -1;
	return open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
}

/* Registration and removal are serialized so a remover cannot unlink an entry
 * that a new listener has just opened. */
static int lock_registry(void)
{
	char *path = malloc(SL_PATH_SIZE); /* not on the stack: set-up runs on application threads */
	int fd = -1;

	if (path && snprintf(path, SL_PATH_SIZE, "%s/listen/.lock", sl_config()->rundir) < SL_PATH_SIZE)
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	free(path);
	if (fd < 0)
		return -1;
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			sl_sys.close(fd);
			return -1;
		}
	}
	return fd;
}

static int ofd_lock(int fd, short type, int cmd)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };

	if (sl_sys.fcntl(fd, cmd, &fl) < 0)
		return -1;
	return cmd == F_OFD_GETLK ? fl.l_type : 0;
}

/* With the registry lock held: unlink path if no listener holds it. */
static void remove_if_unclaimed(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return;
	if (ofd_lock(fd, F_WRLCK, F_OFD_SETLK) == 0)
		unlink(path);
	sl_sys.close(fd);
}

int sl_registry_add(const struct sl_key *key, uint64_t ring_bytes, bool no_rdv, char *path, size_t path_size)
{
	/* Noted long ago: no connector has named an offer for it yet. */
	uint8_t long_ago = (uint8_t)(tick_now() - NAMED_RECENT_S - 1);
	struct reg_entry entry = { .magic = REG_MAGIC, .pid = getpid(), .ring_bytes = ring_bytes,
				   .flags = no_rdv ? SL_REG_NAMED : 0,
				   .named_tick = long_ago,
				   .file_only_tick = long_ago,
				   .pidns = sl_self_pidns() };
	int lock, fd, saved;

	if (entry_path(key, path, path_size) < 0)
		return -1;
	lock = lock_registry();
	if (lock < 0)
		return -1;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || ofd_lock(fd, F_RDLCK, F_OFD_SETLK) < 0)
		goto fail;
	/* Our own read lock does not conflict with this probe: F_UNLCK means we
	 * are the only listener, so the content is ours to (re)write. */
	if (ofd_lock(fd, F_WRLCK, F_OFD_GETLK) == F_UNLCK) {
		if (pwrite(fd, &entry, sizeof(entry), 0) != (ssize_t)sizeof(entry))
			goto fail;
	} else if (no_rdv &&
		   pwrite(fd, &entry.flags, sizeof(entry.flags), offsetof(struct reg_entry, flags)) !=
			   (ssize_t)sizeof(entry.flags)) {
		/* Others hold the entry (and maybe the rendezvous): their
		 * connectors must still name offers, or we would see none. */
		goto fail;
	}
	sl_sys.close(lock);
	return sl_own_fd_lasting(fd);
fail:
	saved = errno;
	if (fd >= 0) {
		sl_sys.close(fd);
		remove_if_unclaimed(path);
	}
	sl_sys.close(lock);
	errno = saved;
	return -1;
}

bool sl_registry_named(int fd, bool rdv_holder)
{
	struct reg_entry entry;

	/* Unreadable: assume named, which costs a lookup and loses nothing. */
	if (pread(fd, &entry, sizeof(entry), 0) != (ssize_t)sizeof(entry))
		return true;
	return (entry.flags & SL_REG_NAMED) && tick_recent(rdv_holder ? entry.file_only_tick : entry.named_tick);
}

/* Only our user's processes write the entry (the runtime directory is
 * ours), whole and never shorter: once it is whole, the mapped page stays
 * backed.  One that is not (an older version's, a holder that died between
 * its create and its write) is read with pread instead: a page past the end
 * of the file would be SIGBUS. */
const _Atomic uint32_t *sl_registry_map_flags(int fd)
{
	struct stat st;
	void *page;

	if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(struct reg_entry))
		return NULL;
	page = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, fd, 0);
	if (page == MAP_FAILED)
		return NULL;
	return (const _Atomic uint32_t *)((const char *)page + offsetof(struct reg_entry, flags));
}

void sl_registry_unmap_flags(const _Atomic uint32_t *flags)
{
	if (flags)
		munmap((char *)(uintptr_t)flags - offsetof(struct reg_entry, flags), (size_t)sysconf(_SC_PAGESIZE));
}

bool sl_registry_named_at(const _Atomic uint32_t *flags, int fd, bool rdv_holder)
{
	size_t tick = rdv_holder ? offsetof(struct reg_entry, file_only_tick) : offsetof(struct reg_entry, named_tick);

	if (!flags)
		return sl_registry_named(fd, rdv_holder);
	if (!(atomic_load_explicit(flags, memory_order_relaxed) & SL_REG_NAMED))
		return false;
	return tick_recent(atomic_load_explicit(
		(const _Atomic uint8_t *)((const char *)flags + tick - offsetof(struct reg_entry, flags)),
		memory_order_relaxed));
}

void sl_registry_note_file_only(const struct sl_key *key)
{
	char *path = malloc(SL_PATH_SIZE); /* not on the stack: set-up runs on application threads */
	uint8_t tick = tick_now();
	int fd;

	if (!path)
		return;
	if ((fd = open_entry(key, path)) >= 0) {
		(void)!pwrite(fd, &tick, sizeof(tick), offsetof(struct reg_entry, file_only_tick));
		sl_sys.close(fd);
	}
	free(path);
}

void sl_registry_remove(int fd, const char *path)
{
	int lock = lock_registry();

	sl_own_fd_close(fd);
	if (lock < 0)
		return;
	remove_if_unclaimed(path);
	sl_sys.close(lock);
}

void sl_registry_withdraw(int fd, const char *path)
{
	int lock = lock_registry();

	sl_own_fd_close(fd);
	unlink(path);
	if (lock >= 0)
		sl_sys.close(lock);
}

static int find_at(const struct sl_key *key, uint64_t *ring_bytes, uint32_t *flags, char *path);

int sl_registry_find(const struct sl_key *key, uint64_t *ring_bytes, uint32_t *flags)
{
	char *path = malloc(SL_PATH_SIZE); /* not on the stack: set-up runs on application threads */
	int r;

	if (!path)
		return 0;
	r = find_at(key, ring_bytes, flags, path);
	free(path);
	return r;
}

static int find_at(const struct sl_key *key, uint64_t *ring_bytes, uint32_t *flags, char *path)
{
	struct reg_entry entry;
	int fd, holder, lock;
	uint32_t pidns;
	bool other_pidns;

	/* Writable: an entry that asks for named offers is told we name one. */
	fd = open_entry(key, path);
	if (fd < 0)
		return 0;
	holder = ofd_lock(fd, F_WRLCK, F_OFD_GETLK);
	if (holder == F_UNLCK) {
		sl_sys.close(fd);
		sl_debug("removing stale listener entry %s", path);
		lock = lock_registry();
		if (lock >= 0) {
			remove_if_unclaimed(path);
			sl_sys.close(lock);
		}
		return 0;
	}
	if (holder < 0 || pread(fd, &entry, sizeof(entry), 0) != (ssize_t)sizeof(entry) || entry.magic != REG_MAGIC) {
		sl_sys.close(fd);
		return 0;
	}
	pidns = sl_self_pidns();
	other_pidns = entry.pidns && pidns && entry.pidns != pidns;
	/* No offer of ours is named for a listener of another pid namespace
	 * (fabric_shm.c): its acceptors are not sent looking for one. */
	if ((entry.flags & SL_REG_NAMED) && !other_pidns) {
		uint8_t tick = tick_now();

		/* Before our offer is named, and so before our TCP connect: an
		 * acceptor that accepts our connection sees the note and looks
		 * for the file.  Unnoted, it might not: no named offer then. */
		if (entry.named_tick != tick &&
		    pwrite(fd, &tick, sizeof(tick), offsetof(struct reg_entry, named_tick)) != (ssize_t)sizeof(tick)) {
			sl_sys.close(fd);
			return 0;
		}
	}
	sl_sys.close(fd);
	*ring_bytes = entry.ring_bytes;
	*flags = entry.flags | (other_pidns ? SL_REG_OTHER_PIDNS : 0);
	return 1;
}

void sl_registry_reap(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), lock;
	bool unclaimed;

	if (fd < 0)
		return;
	/* Looked at without the registry lock: live entries cost no flock. */
	unclaimed = ofd_lock(fd, F_WRLCK, F_OFD_GETLK) == F_UNLCK;
	sl_sys.close(fd);
	if (!unclaimed)
		return;
	lock = lock_registry();
	if (lock < 0)
		return;
	sl_debug("removing stale listener entry %s", path);
	remove_if_unclaimed(path);
	sl_sys.close(lock);
}
