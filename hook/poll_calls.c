/* poll_calls.c — poll, ppoll, select and pselect: sets without a scilan
 * connection (or an emulated epoll set) go to the kernel unchanged; others
 * wait through libscilan's poll, which spins on the rings and then sleeps.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

#include "preload_api.h"
#include "hook.h"
#include "scilan.h"

/* Does this fd need the emulation: a connection whose data is in a ring (or
 * being set up), or an epoll set that may hold one? */
static bool emulated(int fd)
{
	struct sl_sock *s = sl_sock_get(fd);

	return s ? sl_sock_rings_or_deciding(s) : hk_epoll_known(fd);
}

static bool any_emulated(const struct pollfd *fds, nfds_t n)
{
	for (nfds_t i = 0; i < n; i++)
		if (emulated(fds[i].fd))
			return true;
	return false;
}

static int timespec_ms(const struct timespec *ts)
{
	long long ms;

	if (!ts)
		return -1;
	if (ts->tv_sec < 0 || ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000) {
		errno = EINVAL;
		return -2;
	}
	ms = (long long)ts->tv_sec * 1000 + (ts->tv_nsec + 999999) / 1000000;
	return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

HK_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	hk_enter();
	if (!fds || !any_emulated(fds, n))
		return sl_sys.poll(fds, n, timeout_ms);
	return hk_poll(fds, n, timeout_ms, NULL);
}

HK_EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout_ms, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < n)
		abort();
	return poll(fds, n, timeout_ms);
}

HK_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
	int ms;

	hk_enter();
	if (!fds || !any_emulated(fds, n))
		return sl_sys.ppoll(fds, n, ts, mask);
	ms = timespec_ms(ts);
	if (ms == -2)
		return -1;
	return hk_poll(fds, n, ms, mask);
}

HK_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask,
			  size_t fdslen)
{
	if (fdslen / sizeof(*fds) < n)
		abort();
	return ppoll(fds, n, ts, mask);
}

/* select through poll: the sets become pollfds and back, with select's own
 * errors (EBADF for a closed fd in a set, EINVAL for a bad nfds). */
static int select_via_poll(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, int timeout_ms, const sigset_t *mask)
{
	struct pollfd stack[64], *pfds = stack;
	int n = 0, r, count = 0;

	for (int fd = 0; fd < nfds; fd++)
		n += (rd && FD_ISSET(fd, rd)) || (wr && FD_ISSET(fd, wr)) || (ex && FD_ISSET(fd, ex));
	if (n > 64 && !(pfds = calloc((size_t)n, sizeof(*pfds)))) {
		errno = ENOMEM;
		return -1;
	}
	n = 0;
	for (int fd = 0; fd < nfds; fd++) {
		short ev = 0;

		if (rd && FD_ISSET(fd, rd))
			ev |= POLLIN;
		if (wr && FD_ISSET(fd, wr))
			ev |= POLLOUT;
		if (ex && FD_ISSET(fd, ex))
			ev |= POLLPRI;
		if (ev)
			pfds[n++] = (struct pollfd){ .fd = fd, .events = ev };
	}
	r = hk_poll(pfds, (nfds_t)n, timeout_ms, mask);
	if (r >= 0) {
		for (int i = 0; i < n; i++)
			if (pfds[i].revents & POLLNVAL) {
				errno = EBADF;
				r = -1;
				break;
			}
	}
	if (r >= 0) {
		if (rd)
			FD_ZERO(rd);
		if (wr)
			FD_ZERO(wr);
		if (ex)
			FD_ZERO(ex);
		for (int i = 0; i < n; i++) {
			short re = pfds[i].revents, ev = pfds[i].events;

			/* As the kernel's select: hang-up and error count as readable/writable. */
			if ((ev & POLLIN) && (re & (POLLIN | POLLHUP | POLLERR)))
				FD_SET(pfds[i].fd, rd), count++;
			if ((ev & POLLOUT) && (re & (POLLOUT | POLLERR)))
				FD_SET(pfds[i].fd, wr), count++;
			if ((ev & POLLPRI) && (re & POLLPRI))
				FD_SET(pfds[i].fd, ex), count++;
		}
		r = count;
	}
	if (pfds != stack)
		free(pfds);
	return r;
}

static bool sets_emulated(int nfds, fd_set *rd, fd_set *wr, fd_set *ex)
{
	for (int fd = 0; fd < nfds; fd++)
		if (((rd && FD_ISSET(fd, rd)) || (wr && FD_ISSET(fd, wr)) || (ex && FD_ISSET(fd, ex))) && emulated(fd))
			return true;
	return false;
}

HK_EXPORT int select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv)
{
	int ms = -1, r;
	int64_t start;

	hk_enter();
	if (nfds < 0 || nfds > FD_SETSIZE || !sets_emulated(nfds, rd, wr, ex))
		return sl_sys.select(nfds, rd, wr, ex, tv);
	if (tv) {
		if (tv->tv_sec < 0 || tv->tv_usec < 0) {
			errno = EINVAL;
			return -1;
		}
		ms = (int)(tv->tv_sec * 1000 + (tv->tv_usec + 999) / 1000);
	}
	start = sl_mono_ms();
	r = select_via_poll(nfds, rd, wr, ex, ms, NULL);
	if (tv) {
		/* Linux writes back the time left. */
		int64_t left = ms - (sl_mono_ms() - start);

		if (left < 0)
			left = 0;
		tv->tv_sec = left / 1000;
		tv->tv_usec = (left % 1000) * 1000;
	}
	return r;
}

HK_EXPORT int pselect(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *ts, const sigset_t *mask)
{
	int ms;

	hk_enter();
	if (nfds < 0 || nfds > FD_SETSIZE || !sets_emulated(nfds, rd, wr, ex))
		return sl_sys.pselect(nfds, rd, wr, ex, ts, mask);
	ms = timespec_ms(ts);
	if (ms == -2)
		return -1;
	return select_via_poll(nfds, rd, wr, ex, ms, mask);
}
