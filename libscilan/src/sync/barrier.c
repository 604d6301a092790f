/* barrier.c — registers the process for membarrier(GLOBAL_EXPEDITED) once and
 * issues it for sleepers; without kernel support every send fences instead.
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
