/* io.c — the data path: scilan_send copies into the peer's ring and stimulates
 * only a sleeping peer; scilan_recv copies out of our ring and hands the read
 * index back when the sender needs it.  No syscall unless a side must sleep.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>

#include "conn.h"
#include "fabric.h"
#include "scilan.h"

static bool nonblocking(const struct sl_sock *s, int flags)
{
	int fl;

	if (flags & MSG_DONTWAIT)
		return true;
	/* Asked only when the call would block, so the fast path makes no syscall. */
	fl = fcntl(s->fd, F_GETFL);
	return fl >= 0 && (fl & O_NONBLOCK);
}

static ssize_t fail(int err)
{
	errno = err;
	return -1;
}

static ssize_t broken_pipe(int flags)
{
	if (!(flags & MSG_NOSIGNAL))
		raise(SIGPIPE);
	return fail(EPIPE);
}

/* Why a send cannot proceed, or 0. */
static int send_blocker(struct sl_sock *s)
{
	int err;

	if (atomic_load(&s->shut_wr))
		return EPIPE;
	if (atomic_load(&s->reset) || sl_conn_peer_died(s)) {
		err = atomic_exchange(&s->pending_error, 0);
		return err ? err : EPIPE;
	}
	if (atomic_load_explicit(&s->own_ctl->peer_state, memory_order_acquire) & SL_PEER_CLOSED)
		return EPIPE;
	return 0;
}

static ssize_t send_accelerated(struct sl_sock *s, const void *buf, size_t len, int flags)
{
	const unsigned char *p = buf;
	size_t sent = 0;
	int64_t space;
	int err;

	for (;;) {
		err = send_blocker(s);
		if (err) {
			if (sent)
				break;
			return err == EPIPE ? broken_pipe(flags) : fail(err);
		}
		sl_lock(&s->tx_lock);
		space = sl_ring_tx_space(&s->tx);
		if (space > 0) {
			size_t n = len - sent < (uint64_t)space ? len - sent : (size_t)space;

			sl_ring_tx_put(&s->tx, p + sent, n);
			sent += n;
		}
		sl_unlock(&s->tx_lock);
		if (space < 0) {
			sl_conn_reset(s, "peer published an impossible read index");
			continue;
		}
		if (space > 0)
			sl_conn_after_produce(s);
		if (sent == len || (sent && nonblocking(s, flags)))
			break;
		if (space > 0)
			continue;
		if (nonblocking(s, flags))
			return fail(EAGAIN);
		if (sl_wait(s, POLLOUT) < 0) {
			if (sent)
				break;
			return -1;
		}
	}
	atomic_fetch_add_explicit(&s->tx_bytes, sent, memory_order_relaxed);
	atomic_fetch_add_explicit(&sl_totals.tx_bytes, sent, memory_order_relaxed);
	return (ssize_t)sent;
}

enum peer_end { END_NONE, END_EOF, END_RESET };

/* Has the stream ended for us?  Read before the final look at the ring:
 * the peer's data is visible once its FIN is. */
static enum peer_end stream_end(struct sl_sock *s)
{
	uint32_t ps = atomic_load_explicit(&s->own_ctl->peer_state, memory_order_acquire);

	if (atomic_load(&s->reset) || sl_conn_peer_died(s))
		return END_RESET;
	if (atomic_load(&s->shut_rd) || (ps & (SL_PEER_SHUT_WR | SL_PEER_CLOSED)) || atomic_load(&s->peer_gone))
		return END_EOF;
	return END_NONE;
}

/* The result of a recv at the end of the stream: 0, or ECONNRESET once. */
static ssize_t end_result(struct sl_sock *s, enum peer_end end)
{
	int err;

	if (end == END_EOF)
		return 0;
	if (!atomic_exchange(&s->reset, true))
		err = ECONNRESET; /* the peer died or reset: report it once, then EOF */
	else
		err = atomic_exchange(&s->pending_error, 0);
	return err ? fail(err) : 0;
}

static ssize_t recv_accelerated(struct sl_sock *s, void *buf, size_t len, int flags)
{
	unsigned char *p = buf;
	size_t got = 0;
	int64_t avail;
	enum peer_end end;

	if (len == 0)
		return 0;
	for (;;) {
		sl_lock(&s->rx_lock);
		avail = atomic_load(&s->reset) ? 0 : sl_ring_rx_avail(&s->rx);
		if (avail > 0) {
			size_t n = len - got < (uint64_t)avail ? len - got : (size_t)avail;

			sl_ring_rx_peek(&s->rx, p + got, n, 0);
			if (flags & MSG_PEEK) {
				got = n;
			} else {
				sl_ring_rx_consume(&s->rx, n, false);
				got += n;
			}
		}
		sl_unlock(&s->rx_lock);
		if (avail < 0) {
			sl_conn_reset(s, "peer wrote an impossible write index");
			continue;
		}
		if (avail > 0 && !(flags & MSG_PEEK))
			sl_conn_after_consume(s);
		if (got == len || (got && (!(flags & MSG_WAITALL) || (flags & MSG_PEEK))))
			break;
		if (avail > 0)
			continue;
		end = stream_end(s);
		if (end != END_NONE) {
			if (!atomic_load(&s->reset) && sl_ring_rx_avail(&s->rx) != 0)
				continue;
			if (got)
				break;
			return end_result(s, end);
		}
		if (nonblocking(s, flags)) {
			if (got)
				break;
			return fail(EAGAIN);
		}
		if (sl_wait(s, POLLIN) < 0) {
			if (got)
				break;
			return -1;
		}
	}
	if (!(flags & MSG_PEEK)) {
		atomic_fetch_add_explicit(&s->rx_bytes, got, memory_order_relaxed);
		atomic_fetch_add_explicit(&sl_totals.rx_bytes, got, memory_order_relaxed);
	}
	return (ssize_t)got;
}

static struct sl_sock *connected(int fd);

ssize_t scilan_send(int fd, const void *buf, size_t len, int flags)
{
	struct sl_sock *s = connected(fd);

	if (!s)
		return send(fd, buf, len, flags);
	if (len && !buf)
		return fail(EFAULT);
	return send_accelerated(s, buf, len, flags);
}

ssize_t scilan_recv(int fd, void *buf, size_t len, int flags)
{
	struct sl_sock *s = connected(fd);

	if (!s)
		return recv(fd, buf, len, flags);
	if (len && !buf)
		return fail(EFAULT);
	if (flags & ~(MSG_PEEK | MSG_DONTWAIT | MSG_WAITALL | MSG_NOSIGNAL | MSG_CMSG_CLOEXEC))
		return fail(EOPNOTSUPP);
	return recv_accelerated(s, buf, len, flags);
}

/* The state of fd if its data goes through rings, completing a pending
 * non-blocking connect first; NULL means "let the kernel handle it". */
static struct sl_sock *connected(int fd)
{
	struct sl_sock *s = sl_sock_get(fd);

	if (!s)
		return NULL;
	if (sl_sock_state(s) == SL_CONNECTING)
		sl_connect_progress(s);
	return sl_sock_state(s) == SL_CONNECTED ? s : NULL;
}
