/* epoll_set.h — an emulated epoll set as hook/epoll.c keeps it, and the
 * wake-up protocol (epoll_wake.c) that lets a change made by one thread
 * reach another thread already asleep on the set.
 */
#ifndef SCILAN_HOOK_EPOLL_SET_H
#define SCILAN_HOOK_EPOLL_SET_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

/* data of the wake-up descriptor's kernel entry: a non-canonical address,
 * which no member's pointer and no small number can be. */
#define WAKE_TAG 0xfffe5c11a4e0d0feull

struct member {
	int fd;
	uint32_t events; /* as the application registered them, flags included */
	epoll_data_t data;
	bool in_kernel;  /* registered in the kernel set */
	bool disarmed;   /* EPOLLONESHOT fired: silent until EPOLL_CTL_MOD */
	/* EPOLLET: what was reported, and the words whose change is the next edge. */
	uint32_t et_reported;
	uint64_t et_rx_mark;
	uint32_t et_tx_mark;
	uint32_t et_state_mark;
};

struct epset {
	pthread_mutex_t lock;
	bool open;
	struct member *m;
	int n, cap;
	unsigned rotate; /* first emulated member reported, so none starves */
	/* Waiters that read the member list and may sleep on it: a change to
	 * the emulated members signals wake_fd (created on first need) while
	 * any sleeps, and the last waiter that saw the older list drains it. */
	int wake_fd;          /* -1: none yet */
	int sleeping;         /* waiters between reading the list and waking */
	int stale;            /* of those, how many read it before the last change */
	unsigned epoch;       /* bumped by a change made while waiters sleep */
	unsigned incarnation; /* bumped when the set closes: its old waiters leave it alone */
	bool signaled;        /* wake_fd holds a count */
};

/* One waiter's place among a set's sleepers. */
struct ticket {
	bool on;
	unsigned epoch, incarnation;
};

/* All with set->lock held. */
void hk_epoll_sleep_begin(struct epset *set, struct ticket *t);
/* true if the emulated members changed since sleep_begin. */
bool hk_epoll_sleep_end(struct epset *set, struct ticket *t);
/* After a change to the emulated members of set (epoll fd epfd). */
void hk_epoll_wake_sleepers(int epfd, struct epset *set);
/* Drop the wake-up descriptor's events from a kernel answer; *woken if any. */
int hk_epoll_strip_wake(struct epoll_event *evs, int n, bool *woken);

#endif
