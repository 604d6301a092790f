/* urgent.c — TCP urgent data (MSG_OOB) over the rings: the sender's queue of
 * urgent marks in the receiver's area, and the receiver's one urgent byte, with
 * Linux's rules (tcp_check_urg, tcp_recvmsg, tcp_recv_urg, tcp_poll). */
#include "ring/urgent.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include "runtime/sys.h"

void sl_urg_publish(struct sl_sock *s, uint64_t mark)
{
	/* The count is read back from the peer's area (urgent sends are rare):
	 * every process of our side (fork, exec) then continues the same queue. */
	uint64_t n = atomic_load_explicit(&s->peer_ctl->urg_count, memory_order_relaxed);

	atomic_store_explicit(&s->peer_ctl->urg_mark[n % SL_URG_MARKS], mark, memory_order_relaxed);
	if (s->tx.write_combining)
		__builtin_ia32_sfence(); /* WC stores may pass each other */
	atomic_store_explicit(&s->peer_ctl->urg_count, n + 1, memory_order_release);
	/* The commit's release store (sfence on write-combining memory) orders
	 * both before the write index. */
}

void sl_urg_signal(struct sl_sock *s)
{
	/* After the commit: a SIGURG handler finds the mark in place. */
	char carrier = SL_URG_CARRIER;

	sl_sys.send(s->fd, &carrier, 1, MSG_OOB | MSG_DONTWAIT | MSG_NOSIGNAL);
}

void sl_urg_drain_kernel(struct sl_sock *s)
{
	char junk[64];
	ssize_t n;

	/* A normal read skips an urgent byte (or reads it, SO_OOBINLINE). */
	do
		n = sl_sys.recv(s->fd, junk, sizeof(junk), MSG_DONTWAIT);
	while (n > 0 || (n < 0 && errno == EINTR));
}

void sl_urg_drop_carriers(struct sl_sock *s)
{
	uint64_t sent = atomic_load_explicit(&s->own_ctl->urg_count, memory_order_acquire);
	char buf[64];
	ssize_t n, k;

	/* At most one carrier per urgent send of the peer, and only the byte
	 * sl_urg_signal sends: anything else on the kernel socket is the peer's
	 * stream (bypass.c).  The count is the peer's word: a hostile peer can
	 * only make us drop its own bytes. */
	if (sent <= atomic_load_explicit(&s->urg.carriers, memory_order_relaxed) ||
	    atomic_exchange(&s->urg.carriers_busy, true))
		return;
	while (sent > atomic_load_explicit(&s->urg.carriers, memory_order_relaxed)) {
		uint64_t want = sent - atomic_load_explicit(&s->urg.carriers, memory_order_relaxed);

		n = sl_sys.recv(s->fd, buf, want < sizeof(buf) ? (size_t)want : sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
		for (k = 0; k < n && buf[k] == SL_URG_CARRIER; k++)
			;
		if (k <= 0 || sl_sys.recv(s->fd, buf, (size_t)k, MSG_DONTWAIT) != k)
			break;
		atomic_fetch_add_explicit(&s->urg.carriers, (uint64_t)k, memory_order_relaxed);
		if (k < n)
			break;
	}
	atomic_store(&s->urg.carriers_busy, false);
}

void sl_urg_set_inline(struct sl_sock *s, bool on)
{
	atomic_store_explicit(&s->urg.oobinline, on, memory_order_relaxed);
}

/* SO_OOBINLINE lives on the kernel socket, which fork and exec share:
 * asked again whenever a new mark arrives (rare). */
static bool oob_inline(struct sl_sock *s)
{
	int on = 0;
	socklen_t len = sizeof(on);

	if (sl_sys.getsockopt(s->fd, SOL_SOCKET, SO_OOBINLINE, &on, &len) == 0)
		sl_urg_set_inline(s, on != 0);
	return atomic_load_explicit(&s->urg.oobinline, memory_order_relaxed);
}

void sl_urg_passed(struct sl_sock *s)
{
	/* Also after another process of our side read past it (fork). */
	if (s->urg.state != SL_URG_NONE && s->urg.seq < s->rx.read)
		s->urg.state = SL_URG_NONE;
}

/* One urgent pointer, as tcp_check_urg takes it when its segment arrives
 * (mark names a byte we hold); returns the bytes dropped (0 or 1). */
static int take_mark(struct sl_sock *s, uint64_t mark, bool oobinline)
{
	struct sl_urg *u = &s->urg;
	int dropped = 0;

	if (mark <= s->rx.read)
		return 0; /* a byte already read: not replayed */
	if (u->state != SL_URG_NONE && mark - 1 <= u->seq)
		return 0; /* not newer than the one we have */
	if (!oobinline && u->state != SL_URG_NONE && u->seq == s->rx.read) {
		/* The reader sits at the old urgent byte: it leaves the stream. */
		(void)sl_ring_rx_consume(&s->rx, 1, sl_side_shared(s));
		dropped = 1;
	}
	u->seq = mark - 1;
	u->state = SL_URG_VALID;
	sl_ring_rx_peek(&s->rx, &u->byte, 1, u->seq - s->rx.read);
	return dropped;
}

/* Takes the marks queued since the last look; returns the bytes dropped. */
static int refresh(struct sl_sock *s)
{
	struct sl_urg *u = &s->urg;
	uint64_t count, first, write;
	int64_t avail;
	bool asked = false, oobinline = false;
	int dropped = 0;

	if (atomic_load_explicit(&s->users[SL_USE_RX], memory_order_relaxed) != sl_self_pid)
		return 0; /* another process of our side reads: its view, not ours */
	sl_urg_passed(s);
	count = atomic_load_explicit(&s->own_ctl->urg_count, memory_order_acquire);
	if (count == u->count_seen)
		return 0;
	/* Marks are untrusted: each must name a byte we hold.  The write index
	 * is read after the count, and the sender queues the mark first. */
	avail = sl_ring_rx_avail_fresh(&s->rx);
	if (avail < 0)
		return 0; /* the data path resets the connection */
	write = s->rx.read + (uint64_t)avail;
	first = u->count_seen;
	if (count - first > SL_URG_MARKS) /* overwritten: taken as coalesced */
		first = count - SL_URG_MARKS;
	for (uint64_t i = first; i != count; i++) {
		/* A slot rewritten under us holds a newer mark: the older ones are
		 * then skipped as not newer, never misread. */
		uint64_t mark = atomic_load_explicit(&s->own_ctl->urg_mark[i % SL_URG_MARKS], memory_order_relaxed);

		if (mark > write)
			break; /* not visible yet (or garbage): looked at again later */
		u->count_seen = i + 1;
		if (!asked) { /* one syscall per urgent send, none per recv */
			oobinline = oob_inline(s);
			asked = true;
		}
		dropped += take_mark(s, mark, oobinline);
	}
	return dropped;
}

void sl_urg_refresh(struct sl_sock *s)
{
	refresh(s);
}

uint64_t sl_urg_clip(struct sl_sock *s, uint64_t avail, bool copied, uint64_t *skip, bool *stop)
{
	uint64_t off;

	*skip = 0;
	*stop = false;
	if (s->urg.state == SL_URG_NONE)
		return avail;
	off = s->urg.seq - s->rx.read;
	if (off >= avail)
		return avail;
	if (off > 0)
		return off; /* up to the mark */
	if (copied) {
		*stop = true;
		return 0;
	}
	if (atomic_load_explicit(&s->urg.oobinline, memory_order_relaxed))
		return avail;
	*skip = 1;
	return avail - 1;
}

short sl_urg_ready(struct sl_sock *s, int64_t *readable)
{
	if (!sl_urg_any(s))
		return 0;
	*readable -= refresh(s);
	if (s->urg.state == SL_URG_NONE)
		return 0;
	/* The urgent byte at the head is not normal data (tcp_poll's target++). */
	if (s->urg.seq == s->rx.read && !atomic_load_explicit(&s->urg.oobinline, memory_order_relaxed) &&
	    *readable > 0)
		(*readable)--;
	return s->urg.state == SL_URG_VALID ? POLLPRI : 0;
}

int sl_urg_take(struct sl_sock *s, bool peek, unsigned char *byte, bool dead)
{
	if (sl_urg_any(s))
		refresh(s);
	/* "No URG data to read": none, already taken, or in line. */
	if (atomic_load_explicit(&s->urg.oobinline, memory_order_relaxed) || s->urg.state != SL_URG_VALID)
		return EINVAL;
	if (dead)
		return ENOTCONN; /* reset without the peer's FIN (TCP_CLOSE, not SOCK_DONE) */
	*byte = s->urg.byte;
	if (!peek)
		s->urg.state = SL_URG_READ;
	return 0;
}

int sl_urg_atmark(struct sl_sock *s)
{
	if (sl_urg_any(s))
		refresh(s);
	return s->urg.state != SL_URG_NONE && s->urg.seq == s->rx.read;
}
