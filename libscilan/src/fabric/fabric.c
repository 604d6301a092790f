/* fabric.c — which fabric this process uses, chosen once: SCILAN_FABRIC=shm|dev
 * forces one; unset, the device fabric when a /dev/scilanN exists, else the
 * shared-memory fabric.
 */
#include "fabric/fabric.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/config.h"
#include "runtime/log.h"

static const struct sl_fabric_ops *_Atomic chosen;
static pthread_once_t choose_once = PTHREAD_ONCE_INIT;

static void choose(void)
{
	const char *v = getenv("SCILAN_FABRIC");
	bool dev = sl_dev_present();
	const struct sl_fabric_ops *f = dev ? &sl_fabric_dev : &sl_fabric_shm;

	sl_config(); /* the log level, before anything is reported */
	if (v && *v) {
		if (strcmp(v, "dev") == 0) {
			f = &sl_fabric_dev;
			/* The device fabric without a device accelerates nothing:
			 * every connection stays kernel TCP (said once, here). */
			if (!dev)
				sl_err("SCILAN_FABRIC=dev but no /dev/scilanN exists; every connection uses kernel TCP");
		} else if (strcmp(v, "shm") == 0) {
			f = &sl_fabric_shm;
		} else {
			sl_err("SCILAN_FABRIC=%s is not one of shm|dev; using %s", v, f->name);
		}
	}
	sl_debug("fabric: %s", f->name);
	atomic_store_explicit(&chosen, f, memory_order_release);
}

const struct sl_fabric_ops *sl_fabric(void)
{
	const struct sl_fabric_ops *f = atomic_load_explicit(&chosen, memory_order_acquire);

	if (__builtin_expect(f != NULL, 1))
		return f;
	pthread_once(&choose_once, choose);
	return atomic_load_explicit(&chosen, memory_order_acquire);
}
