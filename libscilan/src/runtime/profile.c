/* profile.c — the profiles' values; README.md ("Profiles") says how they
 * were chosen with scilan-bench pollsweep.  A setting given by its own
 * variable wins over the profile's (config.c).
 */
#include "runtime/profile.h"

#include <string.h>

#include "runtime/config.h"

static const struct sl_profile profiles[] = {
	/* Spin through replies up to ~200 us: a wake-up (~10-30 us) never
	 * lands on a round trip that short, for up to 200 us of CPU per miss. */
	{ "latency", 200, SL_DEFAULT_RING_KB },
	/* The defaults: a spin learnt per connection, at most 25 us. */
	{ "balanced", SL_DEFAULT_POLL_US, SL_DEFAULT_RING_KB },
	/* Never spin: every wait sleeps at once (interrupt mode). */
	{ "low-cpu", 0, SL_DEFAULT_RING_KB },
};

const struct sl_profile *sl_profile_find(const char *name)
{
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
		if (strcmp(profiles[i].name, name) == 0)
			return &profiles[i];
	return NULL;
}

const struct sl_profile *sl_profile_default(void)
{
	return &profiles[1];
}

const char *sl_profile_names(void)
{
	return "latency|balanced|low-cpu";
}
