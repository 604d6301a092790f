/* fuzz_config.c — the settings (config.c): the integer parser every numeric
 * variable goes through, with the bounds config.c gives it, the ring size
 * it derives, and the DEVICE and ADDRESS words of the cluster map. */
#include <stdbool.h>

#include "runtime/cluster_map.h"
#include "runtime/config.h"
#include "fuzz.h"
#include "ring/layout.h"
#include "ring/ring.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const long long bounds[][2] = {
		{ 0, SL_MAX_POLL_US },                   /* SCILAN_POLL_US */
		{ SL_RING_MIN >> 10, SL_RING_MAX >> 10 }, /* SCILAN_RING_KB */
		{ 1, 65535 },                             /* a map's node id */
	};
	struct fuzz_in in = { data, size };
	unsigned which = fuzz_u8(&in) % 3;
	char *text = malloc(in.left + 1);
	long long v = -12345;
	struct sl_key key;

	if (!text)
		return 0;
	memcpy(text, in.p, in.left);
	text[in.left] = '\0';
	if (sl_parse_int(text, bounds[which][0], bounds[which][1], &v) == 0) {
		FUZZ_CHECK(v >= bounds[which][0] && v <= bounds[which][1], "'%s' gave %lld", text, v);
		if (which == 1) {
			uint64_t cap = sl_ring_cap_for((uint64_t)v << 10);

			FUZZ_CHECK(cap >= SL_RING_MIN && cap <= SL_RING_MAX && !(cap & (cap - 1)) &&
					   cap >= (uint64_t)v << 10,
				   "ring %lld KiB gave capacity %llu", v, (unsigned long long)cap);
		}
	} else {
		FUZZ_CHECK(v == -12345, "a refused '%s' wrote %lld", text, v);
	}
	if (sl_map_device_valid(text))
		FUZZ_CHECK(strlen(text) < 32 && !strchr(text, '/') && strcmp(text, ".") && strcmp(text, ".."),
			   "device '%s'", text);
	if (sl_map_parse_addr(text, &key) == 0)
		FUZZ_CHECK(key.family == AF_INET || key.family == AF_INET6, "family %d", key.family);
	free(text);
	return 0;
}
