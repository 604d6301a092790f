/* urgent.c — TCP urgent data over the rings.  The sender stores the urgent
 * mark (stream index just past its urgent byte) into the receiver's area; the
 * receiver keeps TCP's one urgent byte: a normal read stops at the mark and
 * skips the byte (unless SO_OOBINLINE), recv(MSG_OOB) takes it, POLLPRI and
 * SIOCATMARK report it.  Each rule mirrors Linux's tcp_check_urg/tcp_recvmsg.
 */
#include "urgent.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include "sys.h"

void sl_urg_publish(struct sl_sock *s, uint64_t mark)
{
	/* The commit's release store (or sfence on write-combining memory)
	 * orders this before the write index. */
	atomic_store_explicit(&s->peer_ctl->urg_mark, mark, memory_order_relaxed);
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

/* Returns the bytes dropped from the stream (0 or 1). */
static int refresh(struct sl_sock *s)
{
	struct sl_urg *u = &s->urg;
	uint64_t mark, read;
	int64_t avail;
	int dropped = 0;

	if (atomic_load_explicit(&s->users[SL_USE_RX], memory_order_relaxed) != sl_self_pid)
		return 0; /* another process of our side reads: its view, not ours */
	sl_urg_passed(s);
	mark = atomic_load_explicit(&s->own_ctl->urg_mark, memory_order_relaxed);
	if (mark == u->mark_seen)
		return 0;
	/* The untrusted mark must name a byte we hold: the write index is read
	 * after it, and the sender stores the mark first. */
	avail = sl_ring_rx_avail_fresh(&s->rx);
	if (avail < 0)
		return 0; /* the data path resets the connection */
	read = s->rx.read;
	if (mark <= read) { /* a byte already read: TCP does not replay it */
		u->mark_seen = mark;
		return 0;
	}
	if (mark - read > (uint64_t)avail)
		return 0; /* not visible yet (or garbage): looked at again later */
	if (!oob_inline(s) && u->state != SL_URG_NONE && u->seq == read && mark - 1 != read) {
		/* The reader sits at the old urgent byte: a new urgent pointer
		 * drops it from the stream (tcp_check_urg). */
		sl_ring_rx_consume(&s->rx, 1, sl_side_shared(s));
		dropped = 1;
	}
	u->mark_seen = mark;
	u->seq = mark - 1;
	u->state = SL_URG_VALID;
	sl_ring_rx_peek(&s->rx, &u->byte, 1, u->seq - s->rx.read);
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
