/* epoll_stall.c — the stall watch (libscilan stall.c) for an epoll set's
 * queued members: those with our bytes unread in the peer's ring are watched
 * from the set's sleeps, so a peer that reads the kernel socket past the hook
 * moves the connection to kernel TCP here as it does in a poll or a recv.
 */
#include "preload_api.h"
#include "epoll_set.h"

/* The member behind bit q, if it is still queued there. */
static struct member *queued_at(struct epset *set, uint32_t q)
{
	int i;

	if ((int)q >= set->slot_hi || (i = set->slot_member[q]) < 0 || i >= set->n || set->m[i].q != (int)q)
		return NULL;
	return &set->m[i];
}

static void forget(uint32_t *list, int *n, uint32_t q)
{
	for (int i = 0; i < *n; i++)
		if (list[i] == q) {
			list[i] = list[--*n];
			return;
		}
}

void hk_evq_stall_forget(struct epset *set, struct member *m)
{
	if (m->on_drop)
		forget(set->drop, &set->ndrop, (uint32_t)m->q);
	if (m->on_stall)
		forget(set->stall, &set->nstall, (uint32_t)m->q);
	m->on_drop = m->on_stall = false;
}

void hk_evq_stall_reset(struct epset *set)
{
	for (int i = 0; i < set->n; i++)
		set->m[i].on_drop = set->m[i].on_stall = false;
	set->ndrop = set->nstall = 0;
}

int hk_evq_stall_cap(struct epset *set, int sleep_ms)
{
	int kept = 0;

	if (!set->ndrop && !set->nstall)
		return sleep_ms;
	for (int i = 0; i < set->ndrop; i++) {
		struct member *m = queued_at(set, set->drop[i]);

		if (!m)
			continue;
		m->on_drop = false;
		if (!m->on_stall && sl_stall_watch(m->q_sock)) {
			m->on_stall = true;
			set->stall[set->nstall++] = (uint32_t)m->q;
		}
	}
	set->ndrop = 0;
	for (int i = 0; i < set->nstall; i++) {
		struct member *m = queued_at(set, set->stall[i]);

		if (m && sl_stall_watch(m->q_sock))
			set->stall[kept++] = set->stall[i];
		else if (m)
			m->on_stall = false;
	}
	set->nstall = kept;
	/* The watch must see the bound on time (as wait.c's sleeps). */
	if (kept && (sleep_ms < 0 || sleep_ms > SL_STALL_CHECK_MS))
		sleep_ms = SL_STALL_CHECK_MS;
	return sleep_ms;
}

void hk_evq_stall_after_sleep(struct epset *set)
{
	int64_t now;
	int kept = 0;

	if (!set->nstall)
		return;
	now = sl_mono_ns();
	for (int i = 0; i < set->nstall; i++) {
		struct member *m = queued_at(set, set->stall[i]);

		if (!m)
			continue;
		/* Whatever woke the sleep: in a busy loop other members' events
		 * end every sleep, and the peer's silence still adds up. */
		if (sl_stall_note(m->q_sock, now)) {
			sl_stall_move(m->q_sock);
			/* Kernel TCP now: the next wait gives it its kernel place. */
			m->q_stale = true;
			hk_ep_unsettle(set);
		}
		if (sl_stall_watch(m->q_sock)) {
			set->stall[kept++] = set->stall[i];
		} else {
			m->on_stall = false;
		}
	}
	set->nstall = kept;
}
