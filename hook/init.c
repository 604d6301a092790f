/* init.c — the hook's start and end: fills the table of libc's definitions
 * before the first interposed call, adopts connections handed over by exec,
 * and writes the SCILAN_STATS line where it was asked for (stats_sink.c)
 * when the process exits.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload_api.h"
#include "hook.h"

_Atomic bool hk_ready;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static bool print_stats;
/* Calls made while initialising (sl_config may close a descriptor) reach
 * the wrappers too: they must go straight through, not wait for the once. */
static __thread bool initialising;

/* Connections an earlier image of this process handed over across exec. */
static void adopt_handed_over(void)
{
	const char *list = getenv(SL_HANDOVER_ENV);

	if (!list)
		return;
	sl_handover_adopt(list);
	for (int fd = 0; fd <= 2; fd++)
		hk_std_stream_after_change(fd);
	/* Our own children must not adopt descriptors they do not have. */
	unsetenv(SL_HANDOVER_ENV);
}

static void init(void)
{
	const char *v = getenv("SCILAN_STATS");

	initialising = true;
	sl_sys_use_next();
	(void)sl_config();
	sl_self_at_load();
	/* After the settings: the log level, and the runtime directory the
	 * line may go to, are known. */
	print_stats = sl_stats_sink_init(v);
	/* fcntl, ioctl and syscall are ours: O_NONBLOCK hints are exact. */
	atomic_store_explicit(&sl_nonblock_changes_seen, true, memory_order_relaxed);
	atomic_store_explicit(&hk_ready, true, memory_order_release);
	adopt_handed_over();
	initialising = false;
}

void hk_init_slow(void)
{
	if (initialising)
		return;
	pthread_once(&init_once, init);
}

__attribute__((constructor)) static void hook_start(void)
{
	hk_enter();
}

__attribute__((destructor)) static void hook_end(void)
{
	if (print_stats)
		sl_stats_report();
}
