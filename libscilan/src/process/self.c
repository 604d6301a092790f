/* self.c — this process as the library names it: its pid and the forks
 * since the library was loaded, kept current by fork handlers registered at
 * load (before any configuration), so that no child goes on as its parent.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "process/self.h"
#include "process/holders.h"
#include "evq/evq_peer.h"
#include "runtime/log.h"
#include "runtime/own_fd.h"
#include "socket/sock_state.h"
#include "sync/barrier.h"

pid_t sl_self_pid;
_Atomic unsigned sl_forks;

static void learn_pid(void)
{
	sl_self_pid = getpid();
}

/* In the parent, before the fork: both sides then see the count moved. */
static void count_fork(void)
{
	atomic_fetch_add(&sl_forks, 1);
}

/* From the start, not from configuration: a child forked before the
 * library's first use must not go on with its parent's pid (ring owners,
 * holders, the statistics file's name).  First of the library's fork
 * handlers (fd_table.c registers the socket table's next). */
__attribute__((constructor(101))) static void learn_pid_at_load(void)
{
	learn_pid();
	pthread_atfork(count_fork, NULL, learn_pid);
}

/* A threaded client's first connect took 21-53 ms for these two (each
 * waited for a grace period), one thread's 0.5 ms.  The registration is
 * made for a process that may never send on a ring: a registered process
 * takes the IPIs of other processes' GLOBAL_EXPEDITED barriers while one of
 * its threads runs, which scilan issues only to wake a sleeping peer. */
void sl_before_threads(void)
{
	/* A filter may kill for either (membarrier in OpenSSH's sandbox):
	 * set-up is over there, and what follows is the program's. */
	if (sl_log_sandboxed())
		return;
	sl_own_fd_before_threads();
	(void)sl_barrier_unfenced_ok();
}

void sl_self_at_load(void)
{
	sl_holders_learn_self();
	/* The same for what else a first connection asks once per process:
	 * whether pidfd_getfd may take a peer's descriptors (Yama's sysctl).
	 * Not the fabric: a device fabric asked for and missing is said once
	 * by a process that uses sockets, not by every program it runs. */
	(void)sl_evq_can_take(false);
}
