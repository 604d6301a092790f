/* profile.h — named sets of settings (SCILAN_PROFILE, scilan_run --profile),
 * as Onload's profiles: latency, balanced (the defaults), low-cpu.
 */
#ifndef SCILAN_PROFILE_H
#define SCILAN_PROFILE_H

struct sl_profile {
	const char *name;
	int poll_us;     /* SCILAN_POLL_US unless set: a forced spin, 0, or SL_POLL_ADAPTIVE */
	unsigned ring_kb; /* SCILAN_RING_KB unless set */
};

/* The profile called name, or NULL. */
const struct sl_profile *sl_profile_find(const char *name);
/* The defaults (balanced). */
const struct sl_profile *sl_profile_default(void);
/* "latency|balanced|low-cpu", for messages. */
const char *sl_profile_names(void);

#endif
