/* offer.c — checking a connect offer record read from the runtime
 * directory, before its pid and descriptor number are used to open
 * /proc/PID/fd/FD.
 */
#include "fabric/shm/offer.h"

#include <string.h>

bool sl_offer_parse(const void *buf, size_t len, struct offer *out)
{
	struct offer o = { 0 };

	if (len == sizeof(o))
		memcpy(&o, buf, sizeof(o));
	else if (len == OFFER_V1_SIZE)
		memcpy(&o, buf, OFFER_V1_SIZE);
	if (!((o.magic == OFFER_MAGIC && len == sizeof(o)) || (o.magic == OFFER_MAGIC_V1 && len == OFFER_V1_SIZE)) ||
	    o.pid <= 0 || o.memfd < 0)
		return false;
	*out = o;
	return true;
}
