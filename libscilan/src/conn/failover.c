/* failover.c — a device link that went down under an agreed connection:
 * both ends continue on the companion kernel TCP connection, each re-sending
 * from its mirror what the other may not have seen and dropping what it had
 * read already, so the stream stays whole (ARCHITECTURE.md, "Fail-over").
 */
#include "conn/failover.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "conn/agree.h"
#include "conn/promotion.h"
#include "conn/promotion_trigger.h"
#include "runtime/log.h"
#include "runtime/sys.h"
#include "sync/ring_lock.h"

/* While the move is under way a peer host that died must not leave us
 * waiting for TCP's retransmissions (minutes): our header and re-sent
 * bytes unacknowledged for this long end the connection (ETIMEDOUT). */
#define FAIL_OVER_USER_TIMEOUT_MS 5000

/* The strip's state, in a page of its own mapped shared: the processes a
 * fork makes after the move share one strip, so that the first to read
 * strips the peer's header for all of them (a second strip would take the
 * program's bytes for a header).  An exec or SCM_RIGHTS hands its text on
 * (sl_fail_over_describe) into a record of the receiving process. */
struct sl_strip {
	pthread_mutex_t lock; /* process-shared and robust: a holder may die mid-strip */
	bool shared;          /* mapped (else allocated: a fork copies it) */
	bool pending;
	unsigned got;         /* bytes of hdr taken */
	int user_timeout;     /* the socket's TCP_USER_TIMEOUT before the move, restored after it */
	int error;            /* a reset a strip for a poll or FIONREAD took off the socket: the program's next
			       * receive reports it */
	uint64_t read;        /* our read index of the peer's stream; after the header, the bytes to drop */
	uint64_t cap;         /* our ring's size, the header's bound */
	unsigned char hdr[sizeof(struct sl_fail_over_hdr)];
};

static struct sl_strip *strip_new(void)
{
	struct sl_strip *st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pthread_mutexattr_t a;
	bool shared = st != MAP_FAILED;

	if (!shared && !(st = calloc(1, sizeof(*st))))
		return NULL;
	pthread_mutexattr_init(&a);
	if (shared) {
		pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
		pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	}
	pthread_mutex_init(&st->lock, &a);
	pthread_mutexattr_destroy(&a);
	st->shared = shared;
	return st;
}

/* true if a process sharing the record died holding it: what it took off
 * the stream may not be counted, so the strip cannot go on (the caller
 * resets). */
static bool strip_lock(struct sl_strip *st)
{
	if (pthread_mutex_lock(&st->lock) != EOWNERDEAD)
		return false;
	pthread_mutex_consistent(&st->lock);
	return true;
}

#define HOLDER_DIED "a process sharing the connection died in the middle of stripping the peer's fail-over header"

static void strip_free(struct sl_strip *st)
{
	if (st->shared) {
		munmap(st, sizeof(*st)); /* ours only: the other processes keep theirs */
	} else {
		pthread_mutex_destroy(&st->lock);
		free(st);
	}
}

void sl_fail_over_forget(struct sl_sock *s)
{
	struct sl_strip *st = s->strip;

	s->strip = NULL;
	if (st)
		strip_free(st);
}

int sl_fail_over_strip_begin(struct sl_sock *s, uint64_t read, int user_timeout)
{
	sl_fail_over_forget(s);
	s->strip = strip_new();
	if (!s->strip)
		return -1;
	s->strip->read = read;
	s->strip->cap = s->rx.cap;
	s->strip->user_timeout = user_timeout;
	s->strip->pending = true;
	atomic_store(&s->strip_pending, true);
	return 0;
}

const char *sl_fail_over(struct sl_sock *s)
{
	/* The read index the peer last published of our ring, as sl_dev_link_lost
	 * kept it: everything before it the peer read; what follows it may
	 * not have landed at all. */
	uint64_t from = atomic_load_explicit(s->tx.read_copy, memory_order_acquire), to = s->tx.write;
	struct sl_fail_over_hdr h = { SL_FAIL_OVER_MAGIC, SL_FAIL_OVER_VERSION, from };
	int timeout = 0, ours = FAIL_OVER_USER_TIMEOUT_MS;
	socklen_t len = sizeof(timeout);

	if (to < from || to - from > s->tx.cap)
		return "the device link went down and the peer had published an impossible read index";
	if (sl_sys.getsockopt(s->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &timeout, &len) < 0)
		timeout = 0;
	/* What we read of the peer's stream: its re-send starts at or before
	 * it (at the index we last published), and the difference we drop. */
	if (sl_fail_over_strip_begin(s, s->rx.read, timeout) < 0)
		return "the device link went down and there was no memory to move the connection to kernel TCP";
	if (timeout == 0 || timeout > ours)
		sl_sys.setsockopt(s->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ours, sizeof(ours));
	if (!sl_move_resend(s, &h, sizeof(h), s->tx.mirror, from, to)) {
		if (errno == ETIMEDOUT) {
			s->strip->pending = false;
			atomic_store(&s->strip_pending, false);
			return "the device link went down and the peer does not read the kernel socket the connection "
			       "moved to";
		}
		/* The kernel connection's own end: the program sees it there. */
		sl_debug("fd %d: fail-over: the kernel socket took only part of the re-sent bytes: %s", s->fd,
			 strerror(errno));
	}
	sl_debug("fd %d: the device link went down; %llu bytes re-sent from index %llu, the connection continues "
		 "on kernel TCP",
		 s->fd, (unsigned long long)(to - from), (unsigned long long)from);
	return NULL;
}

int sl_fail_over_seen(struct sl_sock *s)
{
	struct sl_fail_over_hdr h = { SL_FAIL_OVER_MAGIC, SL_FAIL_OVER_VERSION, 0 };
	unsigned char got[offsetof(struct sl_fail_over_hdr, from)];
	ssize_t n;

	do
		n = sl_sys.recv(s->fd, got, sizeof(got), MSG_PEEK | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n <= 0 || memcmp(got, &h, (size_t)n))
		return 0;
	return n == (ssize_t)sizeof(got) ? 1 : -1;
}

/* With both locks held: the strip ended, for every process sharing it. */
static void strip_done(struct sl_sock *s)
{
	int ours = FAIL_OVER_USER_TIMEOUT_MS, theirs = s->strip->user_timeout;

	s->strip->pending = false;
	atomic_store(&s->strip_pending, false);
	if (theirs == 0 || theirs > ours)
		sl_sys.setsockopt(s->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &theirs, sizeof(theirs));
	sl_promote_strip_ended(s);
}

/* The stream after the move is not the one the peer's header promised:
 * the order of the bytes is lost, so both ends are told (an RST). */
static int strip_reset(struct sl_sock *s, const char *why)
{
	sl_warn("fd %d: connection reset: %s", s->fd, why);
	if (s->strip)
		s->strip->pending = false;
	atomic_store(&s->strip_pending, false);
	sl_sys_reset_tcp(s->fd);
	errno = ECONNRESET;
	return -1;
}

/* take(): the peer reset the connection and nothing is queued before the
 * reset, so nothing more of the header or the bytes to drop will come. */
#define TAKE_RESET (-2)

/* Read up to n bytes into buf (NULL: drop them) without waiting.  The
 * count read; 0 at the end of the stream; -1 (errno); TAKE_RESET.  A
 * receive that finds the queue empty takes the socket's pending error
 * (sk_err) with it, which must stay the program's: a strip for a poll or a
 * FIONREAD would swallow a reset and leave the program a clean EOF.  So an
 * empty queue with an error pending is not read. */
static ssize_t take(struct sl_sock *s, void *buf, size_t n)
{
	char sink[1024]; /* small: the caller may be on a small thread stack */
	struct pollfd p = { .fd = s->fd, .events = POLLIN };
	int queued = 0;
	ssize_t got;

	if (sl_sys.ioctl(s->fd, FIONREAD, &queued) == 0 && queued == 0 && sl_sys.poll(&p, 1, 0) == 1 &&
	    (p.revents & POLLERR))
		return TAKE_RESET;
	do
		got = sl_sys.recv(s->fd, buf ? buf : sink, buf || n < sizeof(sink) ? n : sizeof(sink), MSG_DONTWAIT);
	while (got < 0 && errno == EINTR);
	return got;
}

/* probe: the strip runs for a call that does not receive (a poll, FIONREAD,
 * a hand-over), which must leave a reset it meets to the program. */
static int strip_run(struct sl_sock *s, int flags, bool probe)
{
	bool nonblock = (flags & MSG_DONTWAIT) || (sl_sys.fcntl(s->fd, F_GETFL) & O_NONBLOCK);
	struct pollfd p = { .fd = s->fd, .events = POLLIN };
	struct sl_fail_over_hdr h;
	struct sl_strip *st;
	int r = 0;

	/* Promoted, and the link went down before the peer's marker was
	 * read: the peer's header follows its marker, so the seam is crossed
	 * first.  A marker already due is taken here (a program that only
	 * sends ends the strip too); bytes before it are the program's, read
	 * across the seam by its receives (promotion.c), never waited for
	 * here. */
	if (atomic_load(&s->seam_pending)) {
		if (!sl_promote_cross_due(s)) {
			errno = ECONNRESET; /* not the marker: reset */
			return -1;
		}
		if (atomic_load(&s->seam_pending)) {
			errno = EAGAIN;
			return -1;
		}
	}
	sl_lock(&s->rx_lock);
	st = s->strip;
	if (!st) {
		atomic_store(&s->strip_pending, false);
		sl_unlock(&s->rx_lock);
		return 0;
	}
	if (strip_lock(st) && st->pending)
		r = strip_reset(s, HOLDER_DIED);
	while (st->pending) {
		ssize_t got;

		if (st->error) {
			/* Taken by a probe (a reset that came between take()'s
			 * look and its read): the first receive reports it. */
			int err = st->error;

			if (!probe) {
				st->error = 0;
				strip_done(s);
			}
			errno = err;
			r = -1;
			break;
		}
		if (st->got < sizeof(st->hdr)) {
			got = take(s, st->hdr + st->got, sizeof(st->hdr) - st->got);
			if (got > 0) {
				st->got += (unsigned)got;
				if (st->got < sizeof(st->hdr))
					continue;
				memcpy(&h, st->hdr, sizeof(h));
				/* The peer's re-send starts at the read index we
				 * published, never beyond what we read, nor more
				 * than a ring before it. */
				if (h.magic != SL_FAIL_OVER_MAGIC || h.version != SL_FAIL_OVER_VERSION ||
				    h.from > st->read || st->read - h.from > st->cap) {
					r = strip_reset(s, "after the device link went down, the peer's kernel stream did "
							   "not start with a valid fail-over header");
					break;
				}
				sl_debug("fd %d: the peer's stream on kernel TCP starts at its index %llu; we had read "
					 "%llu: %llu to drop",
					 s->fd, (unsigned long long)h.from, (unsigned long long)st->read,
					 (unsigned long long)(st->read - h.from));
				st->read -= h.from; /* from here on: the bytes still to drop */
				continue;
			}
		} else if (st->read) {
			got = take(s, NULL, (size_t)st->read);
			if (got > 0) {
				st->read -= (uint64_t)got;
				continue;
			}
		} else {
			strip_done(s);
			break;
		}
		if (got == TAKE_RESET) {
			/* Left pending on the socket: the program's next call on
			 * it reports the reset, as the kernel would. */
			sl_debug("fd %d: the peer reset the connection before its fail-over header was stripped",
				 s->fd);
			strip_done(s);
			break;
		}
		if (got == 0) {
			r = strip_reset(s, "after the device link went down, the peer's kernel stream ended before the "
					   "bytes it owed us (it had closed)");
			break;
		}
		if (!nonblock && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			/* Waited for without the locks: another thread's (or
			 * process's) receive must not spin on them meanwhile. */
			pthread_mutex_unlock(&st->lock);
			sl_unlock(&s->rx_lock);
			if (sl_sys.poll(&p, 1, -1) < 0 && errno == EINTR)
				return -1;
			sl_lock(&s->rx_lock);
			if (s->strip != st) {
				/* Another thread of ours ended it meanwhile, and let
				 * the record go: the kernel stream is the program's. */
				sl_unlock(&s->rx_lock);
				return 0;
			}
			if (strip_lock(st) && st->pending) {
				r = strip_reset(s, HOLDER_DIED);
				break;
			}
			continue;
		}
		r = -1; /* EAGAIN, or the connection's error: the program's */
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			int err = errno;

			if (probe)
				st->error = err; /* kept for the program's receive */
			else
				strip_done(s); /* the stream ended here: nothing more to strip */
			errno = err;
		}
		break;
	}
	/* Ended here or in another process that shares the record. */
	if (!st->pending)
		atomic_store(&s->strip_pending, false);
	pthread_mutex_unlock(&st->lock);
	if (!atomic_load(&s->strip_pending))
		sl_fail_over_forget(s);
	sl_unlock(&s->rx_lock);
	return r;
}

int sl_fail_over_strip(struct sl_sock *s, int flags)
{
	return strip_run(s, flags, false);
}

bool sl_fail_over_strip_now(struct sl_sock *s)
{
	if (strip_run(s, MSG_DONTWAIT, true) == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
		return false; /* stripped, or ended with the connection's own error */
	return atomic_load(&s->strip_pending);
}

void sl_fail_over_reset_unpassable(struct sl_sock *s)
{
	sl_lock(&s->rx_lock);
	if (s->strip) {
		(void)strip_lock(s->strip); /* a reset either way */
		if (s->strip->pending)
			strip_reset(s, "passed with SCM_RIGHTS before the peer's fail-over header arrived: the "
				       "receiving process could not tell the header from the program's bytes");
		pthread_mutex_unlock(&s->strip->lock);
	}
	sl_unlock(&s->rx_lock);
}

short sl_fail_over_ready(struct sl_sock *s, short events)
{
	short rev;

	/* The peer's bytes before its switch point first (its header follows
	 * its marker): their readiness is the seam's, which takes a marker
	 * that is due; our sends are the kernel socket's already. */
	if (atomic_load(&s->seam_pending)) {
		short in = sl_promote_ready(s, events);

		if (atomic_load(&s->seam_pending))
			return (short)((sl_agree_kernel_ready(s, events) & ~(POLLIN | POLLRDNORM | POLLRDHUP)) |
				       (in > 0 ? in : 0));
	}

	if ((events & (POLLIN | POLLRDNORM)) && strip_run(s, MSG_DONTWAIT, true) < 0 && errno != EAGAIN &&
	    errno != EWOULDBLOCK)
		return (short)(sl_agree_kernel_ready(s, events) | POLLERR); /* the strip took the error */
	rev = sl_agree_kernel_ready(s, events);
	if (atomic_load(&s->strip_pending))
		rev &= (short)~(POLLIN | POLLRDNORM); /* only the header so far, or bytes to drop */
	return rev;
}

/* The kernel's name of the socket behind fd (any number, any process),
 * never reused while the host runs; 0 if it has none. */
static uint64_t socket_cookie(int fd)
{
	uint64_t cookie = 0;
	socklen_t len = sizeof(cookie);

	if (sl_sys.getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &len) < 0 || len != sizeof(cookie))
		return 0;
	return cookie;
}

bool sl_fail_over_describe(struct sl_sock *s, char *out, size_t size)
{
	struct sl_strip *st;
	char hex[2 * sizeof(st->hdr) + 1] = "";
	uint64_t cookie = socket_cookie(s->fd);
	bool ok = false;
	int n;

	/* The seam before the strip (strip_run) is not handed over: the new
	 * image has no peer point to read up to. */
	if (!cookie || atomic_load(&s->seam_pending))
		return false;
	sl_lock(&s->rx_lock);
	st = s->strip;
	if (st) {
		if (strip_lock(st) && st->pending)
			strip_reset(s, HOLDER_DIED);
		if (st->pending) {
			for (unsigned i = 0; i < st->got && i < sizeof(st->hdr); i++)
				snprintf(hex + 2 * i, 3, "%02x", st->hdr[i]);
			n = snprintf(out, size, "%llx:%llu:%llu:%u:%d:%s", (unsigned long long)cookie,
				     (unsigned long long)st->read,
				     (unsigned long long)st->cap, st->got, st->user_timeout, hex);
			ok = n > 0 && (size_t)n < size;
		}
		pthread_mutex_unlock(&st->lock);
	}
	sl_unlock(&s->rx_lock);
	return ok;
}

int sl_fail_over_adopt(int fd, int domain, const char *desc)
{
	unsigned long long cookie, read, cap;
	unsigned got, k;
	int timeout, used = 0;
	struct sl_strip *st;
	unsigned char hdr[sizeof(st->hdr)];
	struct sl_sock *s;

	/* The socket described, and no other: a stale variable may name a
	 * number that now holds another connection, whose bytes are not to be
	 * stripped.  Asked of the socket itself (its cookie), which its
	 * holders cannot change. */
	if (sscanf(desc, "%llx:%n", &cookie, &used) != 1 || !used || !cookie || !sl_sys_is_tcp(fd, domain) ||
	    socket_cookie(fd) != cookie)
		goto invalid;
	desc += used;
	used = 0;
	/* It is: its stream starts with the peer's header, which a
	 * description we cannot read would hand the program as data. */
	if (sscanf(desc, "%llu:%llu:%u:%d:%n", &read, &cap, &got, &timeout, &used) != 4 || !used ||
	    got > sizeof(hdr) || timeout < 0 || cap == 0 || cap > (1ull << 40))
		goto garbled;
	desc += used;
	for (k = 0; k < got; k++) {
		char two[3] = { desc[2 * k], desc[2 * k] ? desc[2 * k + 1] : '\0', '\0' };
		char *end;

		hdr[k] = (unsigned char)strtoul(two, &end, 16);
		if (end != two + 2)
			goto garbled;
	}
	st = strip_new();
	s = st ? sl_sock_new(fd, domain, SL_PLAIN) : NULL;
	if (!s) {
		if (st)
			strip_free(st);
		errno = ENOMEM;
		return -1;
	}
	memcpy(st->hdr, hdr, got);
	st->got = got;
	st->read = read;
	st->cap = cap;
	st->user_timeout = timeout;
	st->pending = true;
	s->strip = st;
	sl_agree_mark_plain(s); /* moved: every call past the strip is the kernel's */
	atomic_store(&s->strip_pending, true);
	return 0;
invalid:
	errno = EINVAL;
	return -1;
garbled:
	errno = EPROTO;
	return -1;
}
