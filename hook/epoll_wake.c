/* epoll_wake.c — how a change to an emulated epoll set reaches the threads
 * asleep on it: each waiter counts itself as a sleeper while it reads the
 * member list, and a change made while any sleeps signals the set's eventfd.
 */
#include <errno.h>
#include <sys/eventfd.h>

#include "epoll_set.h"
#include "preload_api.h"

/* Register as sleeping (set->lock held), in the same critical section that
 * reads the member list: epoll_ctl changes the list under that lock too, so
 * either this waiter reads the change or the change sees the waiter and
 * signals it, the sleep protocol's publish-then-re-check done by the lock. */
void hk_epoll_sleep_begin(struct epset *set, struct ticket *t)
{
	set->sleeping++;
	*t = (struct ticket){ .on = true, .epoch = set->epoch, .incarnation = set->incarnation };
}

/* Awake (set->lock held); true if the list changed meanwhile.  The count
 * stays until every waiter that slept on an older list has woken: draining
 * earlier could send one of them back to sleep on its stale plan, as its
 * kernel wait re-checks readiness. */
bool hk_epoll_sleep_end(struct epset *set, struct ticket *t)
{
	uint64_t count;
	bool changed;

	if (!t->on)
		return false;
	t->on = false;
	if (t->incarnation != set->incarnation)
		return false;
	set->sleeping--;
	changed = t->epoch != set->epoch;
	if (changed)
		set->stale--;
	if (set->signaled && set->stale == 0) {
		if (set->wake_fd >= 0 && sl_sys.read(set->wake_fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
			sl_warn("epoll wake-up descriptor: read: %m");
		set->signaled = false;
	}
	return changed;
}

/* A descriptor signaled before it enters the kernel set wakes the kernel
 * set's waiters at the insertion, so the waiters need not create it. */
static int make_wake_fd(int epfd, struct epset *set)
{
	uint64_t one = 1;
	int fd = sl_own_fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = WAKE_TAG };

	if (fd < 0)
		return -1;
	if (sl_sys.write(fd, &one, sizeof(one)) != sizeof(one) || sl_sys.epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		sl_own_fd_close(fd);
		return -1;
	}
	set->wake_fd = fd;
	return 0;
}

/* The emulated members changed (set->lock held): waiters asleep on the old
 * list must read it again.  Nobody sleeping: no system call. */
void hk_epoll_wake_sleepers(int epfd, struct epset *set)
{
	uint64_t one = 1;
	int r = 0;

	if (!set->sleeping || !set->open)
		return;
	set->epoch++;
	set->stale = set->sleeping;
	if (set->signaled)
		return;
	if (set->wake_fd < 0)
		r = make_wake_fd(epfd, set);
	else if (sl_sys.write(set->wake_fd, &one, sizeof(one)) != sizeof(one))
		r = -1;
	if (r < 0) {
		/* Only the waiters' own events wake them now. */
		sl_warn("epoll %d: cannot wake its waiters (%m): a change made by another thread may "
			"be seen late",
			epfd);
		return;
	}
	set->signaled = true;
}
