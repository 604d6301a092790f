/* shm_linger.c — keeps the segments of closed, not yet accepted connections
 * alive for the accepting side, and releases them once it attached, after a
 * time limit, or at process exit (waiting briefly for late acceptors).
 */
#include "shm_linger.h"

#include <pthread.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "layout.h"
#include "log.h"
#include "own_fd.h"
#include "sys.h"

#define LINGER_LIMIT_S 60

struct held_segment {
	struct held_segment *next;
	void *seg;
	size_t len;
	int fds[SL_SHM_FDS];
	char offer_path[256];
	const _Atomic uint32_t *peer_state;
	time_t since;
	pid_t owner; /* a fork child only drops its copies, never the parent's files */
};

static pthread_mutex_t linger_lock = PTHREAD_MUTEX_INITIALIZER;
static struct held_segment *lingering;
static _Atomic bool any_lingering;

void sl_shm_unmap(void *seg, size_t len, const int fds[SL_SHM_FDS], const char *offer_path)
{
	if (seg)
		munmap(seg, len);
	for (int i = 0; i < SL_SHM_FDS; i++)
		sl_own_fd_close(fds[i]);
	if (offer_path && *offer_path)
		sl_shm_unlink_offer(offer_path);
}

void sl_shm_bell_path(const char *offer_path, int which, char *buf, size_t size)
{
	snprintf(buf, size, "%s.bell%d", offer_path, which);
}

void sl_shm_unlink_offer(const char *offer_path)
{
	char path[4300];

	unlink(offer_path);
	for (int i = 0; i < 2; i++) {
		sl_shm_bell_path(offer_path, i, path, sizeof(path));
		unlink(path);
	}
}

void sl_shm_linger_add(void *seg, size_t len, const int fds[SL_SHM_FDS], const char *offer_path,
		       const _Atomic uint32_t *peer_state)
{
	struct held_segment *l = calloc(1, sizeof(*l));

	if (!l) {
		sl_warn("no memory to keep a closed connection for its peer; its unread data is dropped");
		sl_shm_unmap(seg, len, fds, offer_path);
		return;
	}
	l->seg = seg;
	l->len = len;
	memcpy(l->fds, fds, sizeof(l->fds));
	snprintf(l->offer_path, sizeof(l->offer_path), "%s", offer_path);
	l->peer_state = peer_state;
	l->since = time(NULL);
	l->owner = getpid();
	pthread_mutex_lock(&linger_lock);
	l->next = lingering;
	lingering = l;
	atomic_store(&any_lingering, true);
	pthread_mutex_unlock(&linger_lock);
}

static bool settled(const struct held_segment *l, time_t now)
{
	/* Not "the offer file is gone": the acceptor removes it before it has
	 * opened our memfd, which must stay open until ATTACHED. */
	return (atomic_load(l->peer_state) & SL_PEER_ATTACHED) || now - l->since >= LINGER_LIMIT_S;
}

/* Returns true if entries remain. */
static bool sweep(bool everything)
{
	struct held_segment **pp, *l;
	time_t now = time(NULL);
	bool left;

	pthread_mutex_lock(&linger_lock);
	for (pp = &lingering; (l = *pp);) {
		if (everything || settled(l, now)) {
			*pp = l->next;
			/* An attached peer removed the offer itself. */
			sl_shm_unmap(l->seg, l->len, l->fds,
				     (atomic_load(l->peer_state) & SL_PEER_ATTACHED) || l->owner != getpid() ?
					     NULL :
					     l->offer_path);
			free(l);
		} else {
			pp = &l->next;
		}
	}
	left = lingering != NULL;
	atomic_store(&any_lingering, left);
	pthread_mutex_unlock(&linger_lock);
	return left;
}

void sl_shm_linger_sweep(void)
{
	if (atomic_load_explicit(&any_lingering, memory_order_relaxed))
		sweep(false);
}

void sl_shm_linger_renumber(int from, int to)
{
	pthread_mutex_lock(&linger_lock);
	for (struct held_segment *l = lingering; l; l = l->next)
		for (int i = 0; i < SL_SHM_FDS; i++)
			if (l->fds[i] == from)
				l->fds[i] = to;
	pthread_mutex_unlock(&linger_lock);
}

bool sl_shm_linger_pending(void)
{
	return atomic_load(&any_lingering);
}

void sl_shm_linger_drop_all(void)
{
	if (!atomic_load(&any_lingering))
		return;
	sl_warn("exiting with connections whose peer never accepted them; their data is dropped");
	sweep(true);
}

void sl_shm_linger_fork_lock(void)
{
	pthread_mutex_lock(&linger_lock);
}

void sl_shm_linger_fork_unlock(bool child)
{
	if (child) /* the locking thread is this one, under another tid */
		pthread_mutex_init(&linger_lock, NULL);
	else
		pthread_mutex_unlock(&linger_lock);
}
