/* offer.c — checking a connect offer record read from the runtime
 * directory, before its pid and descriptor number are used to open
 * /proc/PID/fd/FD.
 */
#include "fabric/shm/offer.h"

#include <string.h>

bool sl_offer_parse(const void *buf, size_t len, struct offer *out)
{
	struct offer o;

	if (len != sizeof(o))
		return false;
	memcpy(&o, buf, sizeof(o));
	if (o.magic != OFFER_MAGIC || o.pid <= 0 || o.memfd < 0)
		return false;
	*out = o;
	return true;
}
