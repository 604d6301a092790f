/* barrier.c — the one caller of membarrier: registers the process for
 * GLOBAL_EXPEDITED once and issues it for sleepers (without kernel support
 * every send fences instead), and PRIVATE_EXPEDITED for the ring locks.
 */
#include "sync/barrier.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/log.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool registered;

static long membarrier(int cmd)
{
	return syscall(SYS_membarrier, cmd, 0, 0);
}

static void probe(void)
{
	long cmds = membarrier(MEMBARRIER_CMD_QUERY);

	registered = cmds >= 0 && (cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) &&
		     membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0;
	if (!registered)
		sl_info("membarrier(GLOBAL_EXPEDITED) unavailable: every send fences");
}

bool sl_barrier_unfenced_ok(void)
{
	pthread_once(&once, probe);
	return registered;
}

int sl_barrier_remote(void)
{
	return membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0 ? 0 : -1;
}

bool sl_barrier_private_register(void)
{
	return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

void sl_barrier_private(void)
{
	membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
}
