/* fuzz_offer.c — the connect offer record the accepting side reads from the
 * runtime directory (offer.c, sl_offer_parse): any bytes accepted name a
 * /proc/PID/fd/FD path that fits the buffer shm_attach formats it into. */
#include <stdbool.h>

#include "fuzz.h"
#include "fabric/shm/offer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct offer o;
	char path[64];
	int n;

	if (!sl_offer_parse(data, size, &o))
		return 0;
	FUZZ_CHECK(size == sizeof(o) && o.magic == OFFER_MAGIC && o.pid > 0 && o.memfd >= 0, "accepted %zu bytes",
		   size);
	n = snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)o.pid, (int)o.memfd);
	FUZZ_CHECK(n > 0 && (size_t)n < sizeof(path), "path of %d bytes", n);
	return 0;
}
