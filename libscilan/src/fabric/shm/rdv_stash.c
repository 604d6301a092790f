/* rdv_stash.c — the stash: offers for other connections kept by a process
 * that accepts alone on a listener, each looked at once by its later
 * accepts, sent back to their queues when it forks or lets them go.
 */
#include "fabric/shm/rdv_stash.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/own_fd.h"
#include "runtime/sys.h"
#include "sync/clock.h"

/* A late offer another connection's look kept is dropped after this: its
 * connector revokes it after SL_PROMOTE_WAIT_MS (2 s). */
#define RDV_LATE_KEEP_NS (4 * 1000000000LL)

/* A listener no other process holds (sl_sock_maybe_shared) has one
 * acceptor: every offer in its queue is for a connection this process will
 * accept, or for none.  Sending the others back costs four system calls
 * each and a hop, at every accept that passes them: a burst of connections
 * whose accepts come in another order than their offers (a backlog that
 * overflowed completes handshakes out of order) made each accept pay
 * O(queue), and offers were dropped after their hop limit or lay beyond
 * one scan's look (rendezvous.c), their connections falling back to kernel
 * TCP (2 of 5 clients of a 5,000-connection burst on redis).  Kept here instead, each
 * offer is looked at once.  The oldest gives way when full (its client, if
 * alive, revokes); at a fork, after which a child may accept, they go back
 * into their queues, where every acceptor looks. */
struct stashed {
	int e;                  /* the offer's Unix connection (one of ours) */
	uint32_t hops;
	bool late;              /* a late offer: for a look, never an accept */
	int64_t expires_ns;     /* a late one's: dropped after (CLOCK_MONOTONIC) */
	uint64_t seq;           /* age: the oldest gives way */
	struct sl_key dst, src; /* as its message says */
	uint64_t cookie;
	struct sockaddr_un at;  /* the queue it came from */
	socklen_t at_len;
};

static pthread_mutex_t stash_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stashed *stash;
static _Atomic int nstash; /* read unlocked only to skip an empty stash */
static uint64_t stash_seq;

static void stash_drop_locked(int i)
{
	sl_sys.close(stash[i].e);
	stash[i] = stash[--nstash];
}

bool sl_rdv_stash_put(int l, int e, uint32_t hops, const struct rdv_msg *m)
{
	bool late = (m->hops & RDV_LATE) != 0;
	struct stashed st = { .hops = hops,
			      .late = late,
			      .expires_ns = late ? sl_mono_ns() + RDV_LATE_KEEP_NS : 0,
			      .dst = m->dst,
			      .src = m->src,
			      .cookie = m->cookie,
			      .at_len = sizeof(st.at) };

	if (sl_sys.getsockname(l, (struct sockaddr *)&st.at, &st.at_len) < 0)
		return false;
	pthread_mutex_lock(&stash_lock);
	if (!stash)
		stash = calloc(SL_RDV_STASH, sizeof(*stash));
	pthread_mutex_unlock(&stash_lock);
	if (!stash)
		return false;
	st.e = sl_own_fd(e); /* many may be kept: above the program's numbers */
	pthread_mutex_lock(&stash_lock);
	if (nstash == SL_RDV_STASH) {
		int oldest = 0;

		for (int i = 1; i < nstash; i++)
			if (stash[i].seq < stash[oldest].seq)
				oldest = i;
		stash_drop_locked(oldest);
	}
	st.seq = ++stash_seq;
	stash[nstash++] = st;
	pthread_mutex_unlock(&stash_lock);
	return true;
}

bool sl_rdv_stash_any(void)
{
	return atomic_load_explicit(&nstash, memory_order_relaxed) != 0;
}

bool sl_rdv_stash_names_socket(bool late)
{
	int64_t now = sl_mono_ns();
	bool needs = false;

	pthread_mutex_lock(&stash_lock);
	for (int i = 0; i < nstash;) {
		if (stash[i].late && now > stash[i].expires_ns) {
			stash_drop_locked(i);
			continue;
		}
		needs |= stash[i].late == late && !stash[i].src.port;
		i++;
	}
	pthread_mutex_unlock(&stash_lock);
	return needs;
}

int sl_rdv_stash_take(bool late, sl_rdv_stash_match_fn *match, void *ctx, uint32_t *hops)
{
	int e = -1;

	pthread_mutex_lock(&stash_lock);
	for (int i = 0; i < nstash; i++)
		if (stash[i].late == late && match(ctx, &stash[i].dst, &stash[i].src, stash[i].cookie)) {
			e = stash[i].e;
			*hops = stash[i].hops;
			stash[i] = stash[--nstash];
			break;
		}
	pthread_mutex_unlock(&stash_lock);
	return e;
}

void sl_rdv_stash_release(int l, bool to_queue)
{
	struct sockaddr_un at;
	socklen_t at_len = sizeof(at);

	if (!atomic_load_explicit(&nstash, memory_order_relaxed) ||
	    sl_sys.getsockname(l, (struct sockaddr *)&at, &at_len) < 0)
		return;
	pthread_mutex_lock(&stash_lock);
	for (int i = 0; i < nstash;) {
		if (stash[i].at_len != at_len || memcmp(&stash[i].at, &at, at_len)) {
			i++;
			continue;
		}
		if (to_queue)
			sl_rdv_requeue(&at, at_len, stash[i].e, stash[i].hops);
		else
			sl_sys.close(stash[i].e);
		stash[i] = stash[--nstash];
	}
	pthread_mutex_unlock(&stash_lock);
}

void sl_rdv_stash_fork_lock(void)
{
	pthread_mutex_lock(&stash_lock);
	/* Every listener is shared from the fork on, and a child may accept
	 * before we do: what we kept goes back to its queue now, not at our
	 * next accept, or the child that accepts one of those connections
	 * finds no offer and its client waits out its second. */
	for (int i = 0; i < nstash; i++)
		sl_rdv_requeue(&stash[i].at, stash[i].at_len, stash[i].e, stash[i].hops);
	nstash = 0;
}

void sl_rdv_stash_fork_unlock(bool child)
{
	if (child)
		pthread_mutex_init(&stash_lock, NULL);
	else
		pthread_mutex_unlock(&stash_lock);
}
