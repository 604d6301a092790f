/* scm.c — ring connections passed to another process with SCM_RIGHTS: the
 * sender appends each connection's segment and bells and a sealed manifest
 * to the message, the receiver takes them out again and adopts the
 * connection as the exec hand-over does; the application sees the kernel's
 * message.
 */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conn/agree.h"
#include "conn/conn.h"
#include "conn/failover.h"
#include "conn/promotion.h"
#include "conn/promotion_trigger.h"
#include "process/handover.h"
#include "process/holders.h"
#include "runtime/bell_fd.h"
#include "runtime/log.h"
#include "runtime/own_fd.h"
#include "scilan.h"
#include "process/scm.h"
#include "ring/segment.h"
#include "socket/sock_state.h"
#include "runtime/sys.h"
#include "sync/lease_lock.h"

#define MANIFEST_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)

/* Room for the descriptors we may add to a received message. */
#define EXTRA_CONTROL CMSG_SPACE(sizeof(int) * SCM_MAX_FDS)

static size_t manifest_size(uint32_t count)
{
	return offsetof(struct manifest, e) + count * sizeof(struct manifest_entry);
}

/* The manifest as a sealed memfd: an application's own file sent last is
 * never mistaken for one (it carries no write seal and no magic). */
static int manifest_fd(const struct manifest *m)
{
	int fd = memfd_create("scilan-scm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	size_t len = manifest_size(m->count);

	if (fd < 0)
		return -1;
	if (pwrite(fd, m, len, 0) != (ssize_t)len || sl_sys.fcntl(fd, F_ADD_SEALS, MANIFEST_SEALS) < 0) {
		sl_sys.close(fd);
		return -1;
	}
	return fd;
}

struct passing {
	struct sl_sock *s;
	int fds[3]; /* segment, bell_rx, bell_tx copies */
};

static void close_copies(struct passing *p)
{
	for (int i = 0; i < 3; i++)
		if (p->fds[i] >= 0)
			sl_sys.close(p->fds[i]);
}

/* Make s ready to be held by one more process: our read index published (the
 * receiver starts from the shared words), the holder counted now, so a
 * close of ours before the receiver adopts it does not end the connection. */
static int prepare(struct passing *p)
{
	struct sl_sock *s = p->s;

	if (sl_sock_state(s) == SL_LISTENING) {
		/* Its rendezvous travels with it: the receiver's accepts then
		 * take the offers clients send there (the sender may never
		 * accept again: Node.js's cluster primary).  Its gate does
		 * not: the queue's acceptors take the record lock from now on
		 * (fabric/shm/rendezvous.c). */
		for (int i = 0; i < SL_MAX_REG; i++)
			if (s->rdv_gate[i])
				sl_lease_lock_mark(s->rdv_gate[i]);
		for (int i = 0; i < 3; i++)
			p->fds[i] = sl_sys.fcntl(s->rdv_fd[i] >= 0 ? s->rdv_fd[i] : s->rdv_fd[0], F_DUPFD_CLOEXEC, 3);
		if (p->fds[0] < 0 || p->fds[1] < 0 || p->fds[2] < 0) {
			close_copies(p);
			return -1;
		}
		return 0;
	}
	p->fds[0] = sl_handover_segment_fd(s);
	/* Other descriptions of our bells, not copies of ours: the receiver
	 * (maybe another user) could clear O_NONBLOCK on a shared one. */
	p->fds[1] = sl_bell_reopen(s->bell_rx, SL_BELL_OUR_USER);
	p->fds[2] = sl_bell_reopen(s->bell_tx, SL_BELL_OUR_USER);
	if (p->fds[0] < 0 || p->fds[1] < 0 || p->fds[2] < 0) {
		close_copies(p);
		return -1;
	}
	/* Counted before publishing: the side is shared from here on, so our
	 * readers publish at once and the receiver starts exactly after them. */
	sl_holders_expect(s);
	sl_rx_publish_exact(s);
	return 0;
}

/* Room for the ring connections among a message's descriptors: on the heap,
 * as sendmsg may be called on a thread with a 16 KiB stack. */
struct plan {
	struct passing pass[SCM_MAX_FDS / 3];
	struct manifest man;
};

static ssize_t send_passing(int fd, const struct msghdr *msg, int flags, struct plan *plan)
{
	struct msghdr m = *msg, *app = (struct msghdr *)msg; /* CMSG_NXTHDR takes no const */
	struct passing *pass = plan->pass;
	struct manifest *man = &plan->man;
	size_t app_len = CMSG_ALIGN(msg->msg_controllen), total = 0;
	unsigned n = 0, app_fds = 0, k = 0;
	struct cmsghdr *cm;
	unsigned char *control;
	int *extra, mfd, err, type = 0;
	socklen_t tl = sizeof(type);
	ssize_t r;

	for (cm = CMSG_FIRSTHDR(app); cm; cm = CMSG_NXTHDR(app, cm)) {
		size_t cnt;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len < CMSG_LEN(0))
			continue;
		cnt = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < cnt; i++, app_fds++) {
			int pfd;
			struct sl_sock *s;

			memcpy(&pfd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			/* Passed on, a plain connection never moves onto the
			 * rings (the receiver's calls are not counted here), and
			 * a late offer out is decided before it goes. */
			if ((s = sl_sock_get(pfd))) {
				sl_promote_forbid(s);
				if (sl_sock_promoting(s))
					sl_promote_settle(s);
			}
			s = sl_sock_connected(pfd);
			if (s && sl_sock_state(s) == SL_PLAIN) {
				/* Failed over, its header not yet stripped: the
				 * receiver gets a plain socket that must not start
				 * with it, stripped now, or reset. */
				if (sl_fail_over_strip_now(s))
					sl_fail_over_reset_unpassable(s);
				continue;
			}
			if (!s && (s = sl_sock_get(pfd)) &&
			    (sl_sock_state(s) != SL_LISTENING || s->rdv_fd[0] < 0)) {
				/* Not listening yet: whichever of us makes it
				 * listen, the other may accept without the
				 * rendezvous (registry.h, SL_REG_NAMED). */
				if (sl_sock_state(s) == SL_FRESH)
					s->maybe_shared = true;
				s = NULL;
			}
			if (s && sl_sock_state(s) == SL_LISTENING) {
				if (app_fds + 3 * (n + 1) + 1 > SCM_MAX_FDS)
					continue; /* the receiver finds the offer files instead */
				pass[n].s = s;
				man->e[n] = (struct manifest_entry){ (int32_t)app_fds, s->domain, SCM_OWN_LISTENER };
				n++;
				continue;
			}
			/* An offer still out is decided first: the receiver could
			 * not tell which transport it holds. */
			if (s && sl_agree_pending(s) && sl_agree_decide(s, SL_AGREE_FORCE))
				continue;
			if (!s || atomic_load(&s->reset))
				continue;
			if (app_fds + 3 * (n + 1) + 1 > SCM_MAX_FDS) {
				/* No room to carry its rings: the receiver could not
				 * read it, so it fails loudly rather than hang. */
				sl_conn_reset(s, "passed with SCM_RIGHTS among too many descriptors");
				continue;
			}
			pass[n].s = s;
			man->e[n] = (struct manifest_entry){ (int32_t)app_fds, s->domain, s->own_area };
			n++;
		}
	}
	if (!n)
		return sl_sys.sendmsg(fd, msg, flags);
	for (unsigned i = 0; i < n; i++)
		if (prepare(&pass[i]) < 0) {
			/* The receiver gets the kernel socket: moved there first
			 * with every byte, else reset, never left in rings that
			 * nobody would read. */
			if (man->e[i].own != SCM_OWN_LISTENER && !sl_bypass_leave(pass[i].s, SL_FB_HANDOVER))
				sl_conn_reset(pass[i].s, "its rings cannot be passed with SCM_RIGHTS");
			pass[i].s = NULL;
		}
	/* Entries whose rings could not be copied are dropped (kernel TCP now,
	 * or reset). */
	for (unsigned i = 0; i < n; i++)
		if (pass[i].s) {
			pass[k] = pass[i];
			man->e[k++] = man->e[i];
		}
	n = k;
	if (!n)
		return sl_sys.sendmsg(fd, msg, flags);
	memcpy(man->magic, MANIFEST_MAGIC, sizeof(MANIFEST_MAGIC));
	man->app_fds = app_fds;
	man->count = n;
	mfd = manifest_fd(man);
	control = calloc(1, app_len + CMSG_SPACE(sizeof(int) * (3 * n + 1)));
	r = -1;
	err = ENOMEM;
	if (mfd >= 0 && control) {
		memcpy(control, msg->msg_control, msg->msg_controllen);
		cm = (struct cmsghdr *)(control + app_len);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (3 * n + 1));
		extra = (int *)CMSG_DATA(cm);
		for (unsigned i = 0; i < n; i++)
			memcpy(extra + 3 * i, pass[i].fds, sizeof(pass[i].fds));
		extra[3 * n] = mfd;
		m.msg_control = control;
		m.msg_controllen = app_len + CMSG_SPACE(sizeof(int) * (3 * n + 1));
		r = sl_sys.sendmsg(fd, &m, flags);
		err = errno;
	} else if (mfd < 0) {
		err = errno;
	}
	for (size_t i = 0; i < m.msg_iovlen && msg->msg_iov; i++)
		total += msg->msg_iov[i].iov_len;
	/* A stream socket sends no descriptors with zero bytes. */
	if (r == 0 && total == 0 && sl_sys.getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_STREAM)
		r = -2;
	for (unsigned i = 0; i < n; i++) {
		close_copies(&pass[i]);
		if (r < 0 && man->e[i].own != SCM_OWN_LISTENER) /* not passed: the receiver will never hold it */
			sl_holders_unexpect(pass[i].s);
	}
	if (mfd >= 0)
		sl_sys.close(mfd);
	free(control);
	if (r == -2)
		return 0;
	errno = err;
	return r;
}


ssize_t sl_scm_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct msghdr *app = (struct msghdr *)msg; /* CMSG_NXTHDR takes no const */
	struct plan *plan;
	struct cmsghdr *cm;
	ssize_t r;
	int err;

	for (cm = CMSG_FIRSTHDR(app); cm; cm = CMSG_NXTHDR(app, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			break;
	if (!cm)
		return sl_sys.sendmsg(fd, msg, flags);
	plan = calloc(1, sizeof(*plan));
	if (!plan) {
		errno = ENOMEM;
		return -1;
	}
	r = send_passing(fd, msg, flags, plan);
	err = errno;
	free(plan);
	errno = err;
	return r;
}

/* The manifest, if fd is one (a sealed memfd with our magic); else false. */
static bool read_manifest(int fd, struct manifest *m, uint32_t nfds)
{
	struct stat st;
	ssize_t got;

	memset(m, 0, sizeof(*m));
	/* Seals first: only memory file systems have them, and the last
	 * descriptor of any message may be a file on a mount that never
	 * answers an fstat. */
	if ((sl_sys.fcntl(fd, F_GET_SEALS) & MANIFEST_SEALS) != MANIFEST_SEALS || fstat(fd, &st) < 0 ||
	    !S_ISREG(st.st_mode) || st.st_size > (off_t)sizeof(*m))
		return false;
	got = pread(fd, m, sizeof(*m), 0);
	return got >= 0 && sl_scm_manifest_valid(m, (size_t)got, nfds);
}

bool sl_scm_manifest_valid(const struct manifest *m, size_t got, uint32_t nfds)
{
	if (got < offsetof(struct manifest, e) || memcmp(m->magic, MANIFEST_MAGIC, sizeof(MANIFEST_MAGIC)) ||
	    m->count == 0 || m->count > SCM_MAX_FDS / 3 || got != manifest_size(m->count) ||
	    (uint64_t)m->app_fds + 3ull * m->count + 1 != nfds)
		return false;
	for (uint32_t i = 0; i < m->count; i++)
		if (m->e[i].index < 0 || (uint32_t)m->e[i].index >= m->app_fds ||
		    (m->e[i].own != 0 && m->e[i].own != 1 && m->e[i].own != SCM_OWN_LISTENER) ||
		    (m->e[i].domain != AF_INET && m->e[i].domain != AF_INET6))
			return false;
	return true;
}

/* Another descriptor of this process already naming the same kernel socket
 * (the message came from ourselves, or from a process we forked from). */
static _Thread_local ino_t same_ino;
static _Thread_local struct sl_sock *same_found;

static bool same_socket(struct sl_sock *s)
{
	struct stat st;

	if (sl_sock_on_rings(s) && s->seg && fstat(s->fd, &st) == 0 && st.st_ino == same_ino) {
		same_found = s;
		return true;
	}
	return false;
}

/* Take over the connection on fd, described by e and the three copies. */
static void adopt(int fd, const struct manifest_entry *e, const int copies[3])
{
	struct stat st;

	if (!sl_sys_is_tcp(fd, e->domain)) {
		sl_warn("fd %d: received with SCM_RIGHTS as a scilan connection but not a TCP socket; left as it is",
			fd);
		for (int i = 0; i < 3; i++)
			sl_sys.close(copies[i]);
		return;
	}
	same_found = NULL;
	if (fstat(fd, &st) == 0) {
		same_ino = st.st_ino;
		sl_sock_any(same_socket);
	}
	if (same_found) {
		/* The sender counted one more holder; this process holds it once. */
		if (sl_sock_alias(fd, same_found) == 0)
			sl_holders_unexpect(same_found);
		sl_sys.close(copies[1]);
		sl_sys.close(copies[2]);
	} else if (sl_handover_adopt_one(fd, e->domain, copies[0], copies[1], copies[2], e->own, true) < 0) {
		/* Nobody in this process can read its ring: the peer would wait
		 * forever.  There is no mapping to reset it through, so the
		 * kernel connection ends it (the peer sees the holder die). */
		sl_err("fd %d: connection received with SCM_RIGHTS cannot be adopted (%s); it is shut down", fd,
		       strerror(errno));
		sl_sys.close(copies[1]);
		sl_sys.close(copies[2]);
		sl_sys.shutdown(fd, SHUT_RDWR);
	}
	sl_sys.close(copies[0]);
}

/* The kernel has just given these numbers out: state still under one is
 * that of a descriptor closed where no hook saw it (a raw system call,
 * io_uring), which is released now as the close it was.  Left there, it
 * would be taken for the received socket (same_socket's fstat names the new
 * one) and the new connection's ring would never be read. */
static void forget_stale(const int *fds, unsigned nfds)
{
	for (unsigned i = 0; i < nfds; i++)
		if (sl_sock_get(fds[i])) {
			sl_debug("fd %d: received over a descriptor closed behind our back; its old state is released",
				 fds[i]);
			sl_sock_release_stale(fds[i]);
		}
}

/* A listening TCP socket received (Node.js's cluster hands its workers one)
 * becomes one of ours, registered for this process: its accepts must attach
 * the offers that clients make to whichever registered process they found. */
static void adopt_listener(int fd)
{
	int domain = 0;
	socklen_t len = sizeof(domain);

	if (sl_sys.getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 &&
	    (domain == AF_INET || domain == AF_INET6) && sl_listener_adopt(fd, domain) == 0)
		sl_debug("fd %d: listener received with SCM_RIGHTS, registered", fd);
}

/* A listener received with its rendezvous sockets (copies, ours to close):
 * registered here, and taking the offers from the sender's rendezvous where
 * its own could not be made (the name is the sender's while it lives). */
static void adopt_listener_rdv(int fd, const int copies[3])
{
	struct sl_sock *s;
	int listening = 0;
	socklen_t len;
	bool sock[3];

	adopt_listener(fd);
	s = sl_sock_get(fd);
	/* Only what really is a listening socket (asked of the socket: an
	 * fstat of anything else could wait on its file system), once each. */
	for (int i = 0; i < 3; i++) {
		len = sizeof(listening);
		sock[i] = sl_sys.getsockopt(copies[i], SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening;
	}
	for (int i = 0; i < 3; i++) {
		bool again = false;
		struct stat a, b;

		for (int j = 0; j < i && !again && sock[i]; j++)
			again = sock[j] && fstat(copies[i], &a) == 0 && fstat(copies[j], &b) == 0 && a.st_ino == b.st_ino;
		if (s && sl_sock_state(s) == SL_LISTENING && s->rdv_fd[i] < 0 && !again && sock[i]) {
			pthread_mutex_lock(&s->ctl_lock);
			s->rdv_fd[i] = sl_own_fd_lasting(copies[i]);
			pthread_mutex_unlock(&s->ctl_lock);
		} else {
			sl_sys.close(copies[i]);
		}
	}
}

/* Copy the received control data into the application's buffer as the
 * kernel would have written it there (put_cmsg, scm_detach_fds): what does
 * not fit is cut, descriptors that do not fit are closed, MSG_CTRUNC. */
static void deliver_control(struct msghdr *app, struct msghdr *got, int *fds, unsigned nfds)
{
	unsigned char *out = app->msg_control;
	size_t left = app->msg_controllen, used = 0, step;
	struct cmsghdr *cm, hdr;
	bool rights_done = false;

	for (cm = CMSG_FIRSTHDR(got); cm; cm = CMSG_NXTHDR(got, cm)) {
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
			unsigned fit = left <= sizeof(struct cmsghdr) ? 0 : (unsigned)((left - sizeof(struct cmsghdr)) / sizeof(int));

			if (rights_done)
				continue; /* the kernel gives one list; ours was its tail */
			rights_done = true;
			if (fit > nfds)
				fit = nfds;
			for (unsigned i = fit; i < nfds; i++)
				scilan_close(fds[i]);
			if (fit < nfds || (nfds && !fit))
				app->msg_flags |= MSG_CTRUNC;
			if (!fit)
				continue;
			hdr = (struct cmsghdr){ .cmsg_len = CMSG_LEN(fit * sizeof(int)), .cmsg_level = SOL_SOCKET, .cmsg_type = SCM_RIGHTS };
			memcpy(out + used, &hdr, sizeof(hdr));
			memcpy(out + used + CMSG_LEN(0), fds, fit * sizeof(int));
			step = CMSG_SPACE(fit * sizeof(int));
		} else {
			size_t len = cm->cmsg_len;

			if (left < sizeof(struct cmsghdr)) {
				app->msg_flags |= MSG_CTRUNC;
				continue;
			}
			if (len > left) {
				app->msg_flags |= MSG_CTRUNC;
				len = left;
			}
			memcpy(out + used, cm, len);
			((struct cmsghdr *)(void *)(out + used))->cmsg_len = len;
			step = CMSG_ALIGN(cm->cmsg_len);
		}
		if (step > left)
			step = left;
		used += step;
		left -= step;
	}
	app->msg_controllen = used;
}

ssize_t sl_scm_recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct msghdr m = *msg;
	size_t len = msg->msg_controllen + EXTRA_CONTROL, at = (len + 7) & ~(size_t)7;
	/* The manifest is read into the same allocation: not on the stack of
	 * a thread that may have 16 KiB. */
	unsigned char *control = malloc(at + sizeof(struct manifest));
	struct manifest *man = (struct manifest *)(control + at);
	struct cmsghdr *cm;
	int *fds = NULL;
	unsigned nfds = 0;
	ssize_t r;

	if (!control)
		return sl_sys.recvmsg(fd, msg, flags);
	m.msg_control = control;
	m.msg_controllen = len;
	r = sl_sys.recvmsg(fd, &m, flags);
	if (r < 0) {
		free(control);
		return r;
	}
	for (cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len >= CMSG_LEN(0)) {
			fds = (int *)CMSG_DATA(cm);
			nfds = (unsigned)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			break;
		}
	forget_stale(fds, nfds);
	if (nfds && read_manifest(fds[nfds - 1], man, nfds)) {
		/* A peek hands out descriptors the application will close; only
		 * the real receive takes the connection over. */
		for (uint32_t i = 0; i < man->count && !(flags & MSG_PEEK); i++) {
			if (man->e[i].own == SCM_OWN_LISTENER)
				adopt_listener_rdv(fds[man->e[i].index], fds + man->app_fds + 3 * i);
			else
				adopt(fds[man->e[i].index], &man->e[i], fds + man->app_fds + 3 * i);
		}
		if (flags & MSG_PEEK)
			for (unsigned i = man->app_fds; i < nfds - 1; i++)
				sl_sys.close(fds[i]);
		sl_sys.close(fds[nfds - 1]);
		nfds = man->app_fds;
	}
	for (unsigned i = 0; i < nfds && !(flags & MSG_PEEK); i++)
		if (!sl_sock_get(fds[i]))
			adopt_listener(fds[i]);
	msg->msg_namelen = m.msg_namelen;
	msg->msg_flags = m.msg_flags;
	deliver_control(msg, &m, fds, nfds);
	free(control);
	return r;
}
