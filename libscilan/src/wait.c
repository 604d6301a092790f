/* wait.c — the sleep side of the interrupt-flag protocol and scilan_poll:
 * spin for the socket's poll time, then arm the peer-visible wake words,
 * flush, re-check, and sleep in the kernel on the companion sockets.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "conn.h"
#include "fabric.h"
#include "log.h"
#include "scilan.h"
#include "sys.h"

#define STACK_FDS 32

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct sl_sock *accelerated(int fd)
{
	struct sl_sock *s = sl_sock_get(fd);

	return s && sl_sock_state(s) == SL_CONNECTED ? s : NULL;
}

/* revents of every accelerated entry; kernel entries are left alone. */
static int scan(struct pollfd *fds, nfds_t n, struct sl_sock **socks)
{
	int ready = 0;

	for (nfds_t i = 0; i < n; i++) {
		if (!socks[i])
			continue;
		fds[i].revents = sl_conn_ready(socks[i], fds[i].events);
		ready += fds[i].revents != 0;
	}
	return ready;
}

/* Steps 2-3 of the sleep protocol for one socket: drain stale wake-ups, give
 * the sender our read index, then ask the peer to wake us. */
static void arm(struct sl_sock *s, short events)
{
	const struct sl_fabric_ops *fabric = sl_fabric();

	fabric->drain(s);
	pthread_mutex_lock(&s->ctl_lock);
	fabric->offer_settle(s);
	pthread_mutex_unlock(&s->ctl_lock);
	if (events & (POLLIN | POLLRDNORM)) {
		sl_lock(&s->rx_lock);
		sl_ring_rx_publish(&s->rx);
		sl_unlock(&s->rx_lock);
		atomic_store_explicit(&s->peer_ctl->wake_on_data, 1, memory_order_relaxed);
	}
	if (events & (POLLOUT | POLLWRNORM))
		atomic_store_explicit(&s->peer_ctl->wake_on_space, 1, memory_order_relaxed);
}

static void disarm(struct sl_sock *s, short events)
{
	if (events & (POLLIN | POLLRDNORM))
		atomic_store_explicit(&s->peer_ctl->wake_on_data, 0, memory_order_relaxed);
	if (events & (POLLOUT | POLLWRNORM))
		atomic_store_explicit(&s->peer_ctl->wake_on_space, 0, memory_order_relaxed);
}

static int remaining_ms(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - now_ns();
	if (left <= 0)
		return 0;
	return (int)((left + 999999) / 1000000);
}

/* Kernel-side readiness of the non-accelerated entries, merged into fds. */
static int poll_kernel_now(struct pollfd *fds, nfds_t n, struct sl_sock **socks, struct pollfd *kfds)
{
	nfds_t m = 0;
	int ready = 0;

	for (nfds_t i = 0; i < n; i++)
		if (!socks[i])
			kfds[m++] = fds[i];
	if (m == 0 || sl_sys.poll(kfds, m, 0) <= 0)
		return 0;
	m = 0;
	for (nfds_t i = 0; i < n; i++) {
		if (socks[i])
			continue;
		fds[i].revents = kfds[m++].revents;
		ready += fds[i].revents != 0;
	}
	return ready;
}

static int sleep_in_kernel(struct pollfd *fds, nfds_t n, struct sl_sock **socks, struct pollfd *kfds,
			   int timeout_ms)
{
	nfds_t m = 0;
	int r, ready = 0;

	for (nfds_t i = 0; i < n; i++) {
		if (!socks[i]) {
			kfds[m++] = fds[i];
			continue;
		}
		kfds[m++] = (struct pollfd){ .fd = socks[i]->bell_rx, .events = POLLIN };
		kfds[m++] = (struct pollfd){ .fd = socks[i]->fd, .events = POLLIN };
		atomic_fetch_add_explicit(&socks[i]->sleeps, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&sl_totals.sleeps, 1, memory_order_relaxed);
	}
	r = sl_sys.poll(kfds, m, timeout_ms);
	if (r < 0)
		return -1;
	m = 0;
	for (nfds_t i = 0; i < n; i++) {
		if (!socks[i]) {
			fds[i].revents = kfds[m++].revents;
			ready += fds[i].revents != 0;
			continue;
		}
		if (kfds[m].revents) {
			atomic_fetch_add_explicit(&socks[i]->wakeups, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&sl_totals.wakeups, 1, memory_order_relaxed);
		}
		/* The kernel connection only ever becomes readable at the end:
		 * the peer closed it or its process died. */
		if (kfds[m + 1].revents && sl_fabric()->peer_gone(socks[i]))
			atomic_store(&socks[i]->peer_gone, true);
		m += 2;
	}
	return ready;
}

static int poll_accelerated(struct pollfd *fds, nfds_t n, int timeout_ms, struct sl_sock **socks,
			    struct pollfd *kfds, bool spin)
{
	int64_t start = now_ns(), deadline = timeout_ms < 0 ? -1 : start + (int64_t)timeout_ms * 1000000;
	int64_t spin_end;
	int poll_us = 0, ready, kready;

	for (nfds_t i = 0; i < n; i++) {
		fds[i].revents = 0;
		if (spin && socks[i] && atomic_load(&socks[i]->poll_us) > poll_us)
			poll_us = atomic_load(&socks[i]->poll_us);
	}
	ready = scan(fds, n, socks);
	if (ready || timeout_ms == 0)
		return ready + poll_kernel_now(fds, n, socks, kfds);
	spin_end = start + (int64_t)poll_us * 1000;
	if (deadline >= 0 && deadline < spin_end)
		spin_end = deadline;
	for (unsigned iter = 1; poll_us > 0; iter++) {
		ready = scan(fds, n, socks);
		if (ready)
			return ready + poll_kernel_now(fds, n, socks, kfds);
		__builtin_ia32_pause();
		if ((iter & 15) == 0 && now_ns() >= spin_end)
			break;
	}
	for (;;) {
		for (nfds_t i = 0; i < n; i++)
			if (socks[i])
				arm(socks[i], fds[i].events);
		for (nfds_t i = 0; i < n; i++)
			if (socks[i])
				sl_fabric()->flush_remote(socks[i]);
		ready = scan(fds, n, socks);
		kready = 0;
		if (!ready) {
			kready = sleep_in_kernel(fds, n, socks, kfds, remaining_ms(deadline));
			if (kready < 0) {
				int err = errno;

				for (nfds_t i = 0; i < n; i++)
					if (socks[i])
						disarm(socks[i], fds[i].events);
				errno = err;
				return -1;
			}
		}
		for (nfds_t i = 0; i < n; i++)
			if (socks[i])
				disarm(socks[i], fds[i].events);
		ready = scan(fds, n, socks) + kready;
		if (ready || remaining_ms(deadline) == 0)
			return ready;
	}
}

int scilan_poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	struct sl_sock *stack_socks[STACK_FDS], **socks = stack_socks;
	struct pollfd stack_kfds[2 * STACK_FDS], *kfds = stack_kfds;
	int any = 0, r;

	if (n > 0 && !fds) {
		errno = EFAULT;
		return -1;
	}
	for (nfds_t i = 0; i < n && !any; i++)
		any = accelerated(fds[i].fd) != NULL;
	if (!any)
		return sl_sys.poll(fds, n, timeout_ms);
	if (n > STACK_FDS) {
		socks = calloc(n, sizeof(*socks));
		kfds = calloc(2 * n, sizeof(*kfds));
		if (!socks || !kfds) {
			free(socks);
			free(kfds);
			errno = ENOMEM;
			return -1;
		}
	}
	for (nfds_t i = 0; i < n; i++)
		socks[i] = accelerated(fds[i].fd);
	r = poll_accelerated(fds, n, timeout_ms, socks, kfds, true);
	if (socks != stack_socks) {
		free(socks);
		free(kfds);
	}
	return r;
}

static int timeout_for(struct sl_sock *s, short events)
{
	struct timeval tv;
	socklen_t len = sizeof(tv);
	int opt = (events & POLLOUT) ? SO_SNDTIMEO : SO_RCVTIMEO;

	/* The kernel keeps SO_RCVTIMEO/SO_SNDTIMEO for us; asked only when we block. */
	if (sl_sys.getsockopt(s->fd, SOL_SOCKET, opt, &tv, &len) < 0 || (tv.tv_sec == 0 && tv.tv_usec == 0))
		return -1;
	return (int)(tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000);
}

int sl_wait(struct sl_sock *s, short events, bool spin_first)
{
	struct pollfd pfd = { .fd = s->fd, .events = events };
	struct sl_sock *socks[1] = { s };
	struct pollfd kfds[2];
	int r = poll_accelerated(&pfd, 1, timeout_for(s, events), socks, kfds, spin_first);

	if (r == 0) {
		errno = EAGAIN;
		return -1;
	}
	return r < 0 ? -1 : 0;
}
