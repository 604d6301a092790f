/* handover.c — connected sockets across exec: the segment, the bells and the
 * side of each inheritable connection go into inheritable descriptors and
 * one environment variable, and the preload hook of the new image adopts
 * them, recovering the ring indices from the shared control words (device
 * connections: the endpoint and the holder page's memfd).
 * Listening sockets are passed too, to be published again.
 */
#include "process/handover.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/bell_fd.h"
#include "runtime/config.h"
#include "fabric/fabric.h"
#include "conn/agree.h"
#include "conn/promotion.h"
#include "conn/conn.h"
#include "conn/failover.h"
#include "process/holders.h"
#include "runtime/log.h"
#include "runtime/own_fd.h"
#include "ring/segment.h"
#include "runtime/stats_file.h"
#include "runtime/sys.h"

/* The segment as a descriptor: the creator may still hold its memfd; else
 * the mapping is reopened through /proc/self/map_files. */
int sl_handover_segment_fd(struct sl_sock *s)
{
	char path[128];

	if (s->memfd >= 0)
		return sl_sys.fcntl(s->memfd, F_DUPFD, 3);
	snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx", (unsigned long)s->seg,
		 (unsigned long)s->seg + (unsigned long)s->seg_len);
	return open(path, O_RDWR);
}

/* Connections seen by one export: each is described once, under its first
 * surviving descriptor; its other surviving aliases follow as alias entries
 * ("fd:domain:-2:first:-1:-1"), so an inetd-style child whose connection is
 * on both 0 and 1 keeps both.  A connection none of whose descriptors
 * survives exec ends with this image like a close: it stops counting as a
 * holder, so the last of its other holders closes it for the peer. */
#define EXPORT_MAX 256
struct export_seen {
	struct sl_sock *s;
	int first_fd;  /* -1: no surviving descriptor yet */
};

struct export_state {
	char *buf;
	size_t size, used;
	int count;
	int nseen;
	struct export_seen seen[EXPORT_MAX];
};
static _Thread_local struct export_state *exporting;

/* Connections whose holder count this exec dropped: restored if it fails. */
static struct sl_sock *dropped[EXPORT_MAX];
static int ndropped;

static bool append(struct export_state *ex, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool append(struct export_state *ex, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (ex->used)
		n = snprintf(ex->buf + ex->used, ex->size - ex->used, ";");
	else
		n = 0;
	if (n < 0 || (size_t)n >= ex->size - ex->used)
		return false;
	va_start(ap, fmt);
	n += vsnprintf(ex->buf + ex->used + n, ex->size - ex->used - (size_t)n, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= ex->size - ex->used) {
		ex->buf[ex->used] = '\0';
		return false;
	}
	ex->used += (size_t)n;
	ex->count++;
	return true;
}

static struct export_seen *seen_entry(struct export_state *ex, struct sl_sock *s)
{
	for (int i = 0; i < ex->nseen; i++)
		if (ex->seen[i].s == s)
			return &ex->seen[i];
	if (ex->nseen == EXPORT_MAX)
		return NULL;
	ex->seen[ex->nseen] = (struct export_seen){ s, -1 };
	return &ex->seen[ex->nseen++];
}

/* A device connection: the new image maps the slices again from the
 * endpoint (any holder of it may) and the holder page from its memfd. */
static void export_device(struct export_state *ex, int fd, struct sl_sock *s)
{
	int seg = -1, ep = -1;

	if (!atomic_load(&s->dev_lost)) {
		sl_rx_publish_exact(s); /* the new image starts from the shared index */
		seg = s->memfd >= 0 ? sl_sys.fcntl(s->memfd, F_DUPFD, 3) : -1;
		ep = seg >= 0 ? sl_sys.fcntl(s->bell_rx, F_DUPFD, 3) : -1;
		if (ep >= 0 && append(ex, "%d:%d:%d:%d:%d:%d", fd, s->domain, seg, ep, SL_HANDOVER_DEV, s->own_area))
			return;
	}
	if (seg >= 0)
		sl_sys.close(seg);
	if (ep >= 0)
		sl_sys.close(ep);
	/* Never reset what another process still uses (a CGI-style parent):
	 * this image just stops holding it. */
	if (sl_holders_others(s)) {
		sl_warn("fd %d: device connection not handed over across exec; the other processes holding it keep it",
			fd);
		return;
	}
	sl_conn_reset(s, "the device connection cannot be handed over across exec");
}

static void export_connection(struct export_state *ex, int fd, struct sl_sock *s)
{
	int seg, brx, btx, err;

	if (s->dev_map[0]) {
		export_device(ex, fd, s);
		return;
	}
	sl_rx_publish_exact(s); /* the new image starts from the shared index */
	seg = sl_handover_segment_fd(s);
	brx = sl_sys.fcntl(s->bell_rx, F_DUPFD, 3);
	btx = sl_sys.fcntl(s->bell_tx, F_DUPFD, 3);
	if (seg >= 0 && brx >= 0 && btx >= 0 &&
	    append(ex, "%d:%d:%d:%d:%d:%d", fd, s->domain, seg, brx, btx, s->own_area))
		return;
	/* A connection the new image cannot read continues on kernel TCP
	 * (every byte moved first), else fails loudly: never a peer writing
	 * into a ring nobody drains. */
	err = errno;
	if (seg >= 0)
		sl_sys.close(seg);
	if (brx >= 0)
		sl_sys.close(brx);
	if (btx >= 0)
		sl_sys.close(btx);
	if (sl_bypass_leave(s, SL_FB_HANDOVER))
		return;
	sl_warn("fd %d: cannot hand the connection over across exec (%s); resetting it", fd,
		seg < 0 ? strerror(err) : "too many connections");
	sl_conn_reset(s, "not handed over across exec");
}

/* Failed over, the peer's header not yet stripped: the new image must
 * strip it, or it would read the header as the program's bytes. */
static void export_strip(struct export_state *ex, int fd, struct sl_sock *s)
{
	char desc[SL_FAIL_OVER_DESC_MAX];

	if (!sl_fail_over_describe(s, desc, sizeof(desc))) {
		if (!sl_sock_strip_pending(s))
			return; /* stripped meanwhile: a plain socket like any other */
	} else if (append(ex, "%d:%d:%d:0:0:0:%s", fd, s->domain, SL_HANDOVER_STRIP, desc)) {
		return;
	}
	/* Never the header as data: an end the program sees. */
	sl_warn("fd %d: cannot hand over across exec a connection that moved to kernel TCP (too many "
		"connections, or no socket cookie); resetting it",
		fd);
	sl_sys_reset_tcp(fd);
}

static bool export_one(int fd, struct sl_sock *s)
{
	struct export_state *ex = exporting;
	struct export_seen *seen;
	int fdflags;

	/* An offer still out is decided now (revoked unless the acceptor
	 * attached): the new image could not tell which transport it holds.
	 * A late one (promotion) too: revoked, or followed. */
	if (sl_agree_pending(s) && sl_agree_decide(s, SL_AGREE_FORCE))
		return false;
	if (sl_sock_promoting(s))
		sl_promote_settle(s);
	if ((!sl_sock_on_rings(s) && sl_sock_state(s) != SL_LISTENING && !sl_sock_strip_pending(s)) ||
	    atomic_load(&s->reset))
		return false;
	seen = seen_entry(ex, s);
	fdflags = sl_sys.fcntl(fd, F_GETFD);
	if (fdflags < 0 || (fdflags & FD_CLOEXEC))
		return false; /* this descriptor ends with this image */
	if (seen && seen->first_fd >= 0) {
		append(ex, "%d:%d:-2:%d:-1:-1", fd, s->domain, seen->first_fd);
		return false;
	}
	if (seen)
		seen->first_fd = fd;
	if (sl_sock_state(s) == SL_PLAIN)
		export_strip(ex, fd, s);
	else if (sl_sock_state(s) == SL_LISTENING)
		/* The new image publishes it again (our registry entries close
		 * with this image), so its accepts keep taking scilan peers. */
		append(ex, "%d:%d:-1:-1:-1:-1", fd, s->domain);
	else
		export_connection(ex, fd, s);
	return false;
}

int sl_handover_export(char *buf, size_t size)
{
	/* 4 KiB: neither on the exec caller's stack (a thread may have a 16 KiB
	 * one) nor in static TLS (which every thread's stack pays for). */
	struct export_state *ex = malloc(sizeof(*ex));
	int count;

	if (size)
		buf[0] = '\0';
	ndropped = 0;
	if (!ex) {
		errno = ENOMEM;
		return -1;
	}
	*ex = (struct export_state){ .buf = buf, .size = size };
	/* Our other threads run until the exec: from here on what they read is
	 * published at once, so the new image starts exactly after it. */
	atomic_store(&sl_publish_at_once, true);
	exporting = ex;
	sl_sock_any_fd(export_one);
	exporting = NULL;
	for (int i = 0; i < ex->nseen; i++) {
		struct sl_sock *s = ex->seen[i].s;

		/* Only while others hold it: the last holder's exec is its
		 * kernel socket's close, which the peer sees. */
		if (ex->seen[i].first_fd < 0 && sl_sock_on_rings(s) && s->seg && sl_holders_others(s)) {
			sl_holders_release(s);
			dropped[ndropped++] = s;
		}
	}
	count = ex->count;
	free(ex);
	return count;
}

/* One decimal int field as sscanf("%d") took it (leading blanks, a sign),
 * but out-of-range numbers are refused rather than clamped. */
static const char *parse_field(const char *p, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(p, &end, 10);
	if (end == p || errno || v < INT_MIN || v > INT_MAX)
		return NULL;
	*out = (int)v;
	return end;
}

const char *sl_handover_parse(const char *list, struct sl_handover_entry *e)
{
	int *fields[6] = { &e->fd, &e->domain, &e->seg, &e->brx, &e->btx, &e->own };
	const char *p = list;
	int err = errno;

	for (int i = 0; i < 6; i++) {
		if (i && *p++ != ':')
			return NULL;
		p = parse_field(p, fields[i]);
		if (!p) {
			errno = err;
			return NULL;
		}
	}
	errno = err;
	/* Whatever follows the six numbers, up to the separator, is the tail. */
	e->tail = p;
	p = strchr(p, ';');
	return p ? p + 1 : list + strlen(list);
}

/* Undo an export whose exec failed: the inherited copies are closed. */
void sl_handover_abandon(const char *list)
{
	struct sl_handover_entry e;

	for (int i = 0; i < ndropped; i++)
		sl_holders_hold(dropped[i]);
	ndropped = 0;
	atomic_store(&sl_publish_at_once, false);

	while (list && (list = sl_handover_parse(list, &e))) {
		if (e.seg >= 0) {
			sl_sys.close(e.seg);
			sl_sys.close(e.brx);
			sl_sys.close(e.btx);
		}
	}
}

/* What every adopted connection needs once its areas are mapped: the
 * holder count, the indices, the counters; connected. */
static void adopt_finish(struct sl_sock *s, bool expected)
{
	bool sane;

	if (expected)
		sl_holders_arrive(s);
	else
		sl_holders_adopt_self(s); /* this process was, and stays, one holder */
	sane = sl_segment_recover_indices(s);
	s->state_to_peer = atomic_load(&s->peer_ctl->peer_state);
	s->tx.unfenced = false; /* fenced publication is always safe */
	sl_stats_conn_open(s);
	atomic_store(&s->poll_us, sl_config()->poll_us);
	s->ring_bytes = sl_config()->ring_bytes;
	atomic_store_explicit(&s->state, SL_CONNECTED, memory_order_release);
	atomic_fetch_add_explicit(&sl_totals.accelerated, 1, memory_order_relaxed);
	if (!sane)
		sl_conn_reset(s, "the ring indices handed over are impossible");
}

int sl_handover_adopt_one(int fd, int domain, int seg, int brx, int btx, int own, bool expected)
{
	/* From SCM_RIGHTS, anyone may have sent them; from exec, this
	 * process did. */
	enum sl_bell_from from = expected ? SL_BELL_STRANGER : SL_BELL_OUR_USER;
	struct sl_seg_header hdr;
	struct sl_sock *s;
	struct stat st;
	int rx, tx, err;
	void *base;

	/* Sealed against resizing before anything else: only memory file
	 * systems have seals, where an fstat of a file elsewhere may wait on
	 * a mount that never answers.  Then its header against its size. */
	if ((own != 0 && own != 1) ||
	    (sl_sys.fcntl(seg, F_GET_SEALS) & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW) ||
	    fstat(seg, &st) < 0 || !S_ISREG(st.st_mode) || pread(seg, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) ||
	    !sl_segment_valid(&hdr, (uint64_t)st.st_size)) {
		errno = EINVAL;
		return -1;
	}
	/* Pipes, used through descriptions of our own (runtime/bell_fd.c):
	 * whoever passed them keeps theirs, and could make them block.  The
	 * passed ones stay the caller's to close on failure. */
	rx = sl_bell_reopen(brx, from);
	tx = rx < 0 ? -1 : sl_bell_reopen(btx, from);
	if (tx < 0) {
		err = errno;
		if (rx >= 0)
			sl_sys.close(rx);
		sl_warn("fd %d: the wake-up bells handed over with the connection are not pipes we can use (%s)", fd,
			strerror(err));
		errno = EBADF;
		return -1;
	}
	base = mmap(NULL, hdr.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, seg, 0);
	s = base == MAP_FAILED ? NULL : sl_sock_new(fd, domain, SL_FRESH);
	if (!s) {
		err = base == MAP_FAILED ? errno : ENOMEM;
		if (base != MAP_FAILED)
			munmap(base, hdr.total_size);
		sl_sys.close(rx);
		sl_sys.close(tx);
		errno = err;
		return -1;
	}
	sl_segment_adopt(s, base, hdr.total_size, own, &hdr);
	{
		/* The word a later move to kernel TCP is agreed on (bypass.c):
		 * without it this image would not see the move another holder
		 * of ours, or the peer, led, and would keep using the rings. */
		_Atomic uint32_t *word = (_Atomic uint32_t *)((unsigned char *)base + SL_SEG_OFFER_OFF);
		uint32_t w = atomic_load(word);

		if (sl_offer_agreed(w))
			s->offer_word = word;
	}
	/* Ours now: non-blocking, close-on-exec, out of the program's way. */
	sl_sys.close(brx);
	sl_sys.close(btx);
	s->bell_rx = sl_own_fd(rx);
	s->bell_tx = sl_own_fd(tx);
	adopt_finish(s, expected);
	return 0;
}

/* A device connection handed over by exec (export_device); the endpoint
 * is kept (or closed on failure), the memfd is not. */
static int adopt_device(int fd, int domain, int seg, int ep, int own)
{
	struct sl_sock *s;
	int err;

	if (own != 0 && own != 1) {
		errno = EINVAL;
		return -1;
	}
	s = sl_sock_new(fd, domain, SL_FRESH);
	ep = sl_own_fd(ep);
	if (!s || sl_dev_adopt(s, seg, ep, own) < 0) {
		err = s ? errno : ENOMEM;
		if (s)
			sl_sock_forget(s);
		sl_own_fd_close(ep);
		errno = err;
		return -1;
	}
	adopt_finish(s, false);
	return 0;
}

int sl_handover_adopt(const char *list)
{
	struct sl_handover_entry e;
	int adopted = 0;

	while (list && (list = sl_handover_parse(list, &e))) {
		int fd = e.fd, domain = e.domain, seg = e.seg, brx = e.brx, btx = e.btx, own = e.own;

		if (seg == -2) {
			struct sl_sock *first = sl_sock_get(brx);

			/* Another name of a connection adopted just before. */
			adopted += first && (sl_sock_on_rings(first) || sl_sock_strip_pending(first)) &&
				   sl_sock_alias(fd, first) == 0;
		} else if (seg == SL_HANDOVER_STRIP) {
			errno = EINVAL;
			if (*e.tail == ':' && sl_fail_over_adopt(fd, domain, e.tail + 1) == 0) {
				adopted++;
			} else if (errno == EINVAL) {
				sl_err("%s names fd %d as a connection that moved to kernel TCP, which it is not (a "
				       "stale description, or another socket now); ignored",
				       SL_HANDOVER_ENV, fd);
			} else {
				/* Its stream starts with the peer's header: never
				 * the program's bytes, so an end it sees. */
				sl_err("fd %d: a connection that moved to kernel TCP, handed over by exec, cannot be "
				       "taken over (%s); resetting it",
				       fd, strerror(errno));
				sl_sys_reset_tcp(fd);
			}
		} else if (seg < 0) {
			adopted += sl_listener_adopt(fd, domain) == 0;
		} else if (btx == SL_HANDOVER_DEV) {
			if (adopt_device(fd, domain, seg, brx, own) == 0) {
				adopted++;
			} else {
				sl_err("fd %d: device connection handed over by exec cannot be adopted (%s); it is closed",
				       fd, strerror(errno));
				sl_sys.close(fd);
			}
		} else if (sl_handover_adopt_one(fd, domain, seg, brx, btx, own, false) == 0) {
			adopted++;
		} else if (errno == EINVAL) {
			/* Not a segment of ours: a stale variable from an image that
			 * did not adopt it.  The numbers may be anything now. */
			sl_err("%s names fd %d, which carries no scilan connection; ignored", SL_HANDOVER_ENV, fd);
			break;
		} else {
			sl_err("fd %d: connection handed over by exec cannot be adopted (%s); it is closed", fd,
			       strerror(errno));
			sl_sys.close(brx);
			sl_sys.close(btx);
			sl_sys.close(fd);
		}
		if (seg >= 0)
			sl_sys.close(seg);
	}
	return adopted;
}
