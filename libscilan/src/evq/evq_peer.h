/* evq_peer.h — taking another process's epoll-set queue (its memfd and
 * bell) on the word of a registration in shared memory, which any peer can
 * forge (ARCHITECTURE.md, "The event queue").
 */
#ifndef SCILAN_EVQ_PEER_H
#define SCILAN_EVQ_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sl_evq_shared;

enum sl_evq_take_verdict {
	SL_EVQ_TAKEN,       /* *sh is mapped, *bell_w is our own description of the set's pipe */
	SL_EVQ_GONE,        /* the process or its descriptor is gone: no news */
	SL_EVQ_UNREACHABLE, /* the kernel does not let us take its descriptors (user changed, Yama) */
	SL_EVQ_NOT_A_SET,   /* the registration names something that is not a set's queue */
};

/* Take set set_id of process pid, whose queue the registration says is its
 * descriptor memfd (a sealed memfd of exactly size bytes starting with
 * magic and set_id) and whose bell is its descriptor bell (the anonymous
 * pipe the queue names).  Nothing is opened by path under our credentials
 * and nothing is installed in our table that the kernel did not say was a
 * memfd or pipe a moment before (see evq_peer.c). */
enum sl_evq_take_verdict sl_evq_take_peer(int32_t pid, int32_t memfd, int32_t bell, uint64_t set_id,
					  uint64_t magic, size_t size, struct sl_evq_shared **sh, int *bell_w);
/* Can this process take other processes' descriptors at all (a kernel with
 * pidfd_getfd, and no Yama scope that forbids it)? */
bool sl_evq_can_take(bool cap_ptrace);

#endif
