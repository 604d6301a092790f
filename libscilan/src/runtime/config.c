/* config.c — reads scilan's environment settings once per process (their
 * defaults from SCILAN_PROFILE), rejects bad values with a message naming
 * the variable, and resolves the runtime dir.
 */
#include "runtime/config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ring/layout.h"
#include "runtime/log.h"
#include "runtime/profile.h"
#include "ring/ring.h"
#include "runtime/rundir.h"
#include "socket/sock_state.h"

static struct sl_config config;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

int sl_parse_int(const char *text, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	if (!text || !*text)
		return -1;
	errno = 0;
	v = strtoll(text, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static void read_log_level(void)
{
	const char *v = getenv("SCILAN_LOG");

	if (!v || !*v)
		return;
	for (int i = 0; i <= SL_LOG_DEBUG; i++) {
		if (strcmp(v, sl_log_level_names[i]) == 0) {
			sl_log_set_level((enum sl_log_level)i);
			return;
		}
	}
	sl_err("SCILAN_LOG=%s is not one of error|warn|notice|info|debug; using notice", v);
}

static long long read_int_setting(const char *name, long long min, long long max, long long fallback)
{
	const char *v = getenv(name);
	long long out;

	if (!v)
		return fallback;
	if (sl_parse_int(v, min, max, &out) < 0) {
		sl_err("%s=%s is not an integer in [%lld, %lld]; using %lld", name, v, min, max, fallback);
		return fallback;
	}
	return out;
}

/* SCILAN_PROFILE: the defaults of the settings below (profile.c). */
static const struct sl_profile *read_profile(void)
{
	const char *v = getenv("SCILAN_PROFILE");
	const struct sl_profile *p;

	if (!v || !*v)
		return sl_profile_default();
	p = sl_profile_find(v);
	if (!p)
		sl_err("SCILAN_PROFILE=%s is not one of %s; using %s", v, sl_profile_names(),
		       sl_profile_default()->name);
	return p ? p : sl_profile_default();
}

/* SCILAN_POLL_US: a forced spin in microseconds (0 = interrupt mode), or
 * "auto" for the learnt one; unset, the profile's. */
static int read_poll_us(int dflt)
{
	const char *v = getenv("SCILAN_POLL_US");

	if (v && strcmp(v, "auto") == 0)
		return SL_POLL_ADAPTIVE;
	return (int)read_int_setting("SCILAN_POLL_US", 0, SL_MAX_POLL_US, dflt);
}

/* A setting of two words: true for yes (also unset), false for no; any
 * other value is reported and taken as yes. */
static bool read_choice(const char *name, const char *yes, const char *no)
{
	const char *v = getenv(name);

	if (!v || !*v || strcmp(v, yes) == 0)
		return true;
	if (strcmp(v, no) == 0)
		return false;
	sl_err("%s=%s is not one of %s|%s; using %s", name, v, yes, no, yes);
	return true;
}

/* A bad map must never break the application: it is reported naming file
 * and line, and the process then runs entirely over the kernel, as without
 * scilan (no runtime directory: no listener is published, none is looked up). */
static void load_map(void)
{
	char err[512];

	if (sl_cluster_map_load(sl_cluster_map_path(), &config.map, err, sizeof(err)) < 0) {
		sl_err("%s; scilan is off in this process: every connection uses kernel TCP", err);
		config.rundir[0] = '\0';
		config.off = true;
	}
}

static void load_config(void)
{
	const struct sl_profile *profile;

	sl_lock_init_bias();
	read_log_level();
	profile = read_profile();
	config.poll_us = read_poll_us(profile->poll_us);
	config.ring_bytes = sl_ring_cap_for(
		(uint64_t)read_int_setting("SCILAN_RING_KB", SL_RING_MIN >> 10, SL_RING_MAX >> 10, profile->ring_kb)
		<< 10);
	/* SCILAN_SHORT_CONNS: learn (default) or accelerate (offer rings on
	 * every connect, however little the connections to that destination
	 * carry).  SCILAN_FAIL_OVER: on (default) or off (a device link that
	 * goes down resets its connections; sends skip the mirror's copy). */
	config.learn_short_conns = read_choice("SCILAN_SHORT_CONNS", "learn", "accelerate");
	config.fail_over = read_choice("SCILAN_FAIL_OVER", "on", "off");
	/* SCILAN_PROMOTE: on (default) or off (a connection that started on
	 * kernel TCP stays there). */
	config.promote = read_choice("SCILAN_PROMOTE", "on", "off");
	if (sl_rundir_prepare(config.rundir, sizeof(config.rundir)) < 0)
		config.rundir[0] = '\0';
	load_map();
}

const struct sl_config *sl_config(void)
{
	pthread_once(&config_once, load_config);
	return &config;
}
