/* test_fallback_log.c — what the default log level says about fallbacks: one
 * line per reason per process, the first time it happens (a server with
 * 2,000 plain clients prints one `no-offer` line, not 2,000), while each
 * other reason still gets its own; SCILAN_LOG=warn silences them, and
 * SCILAN_LOG=info names every connection.  (The reasons: test_fallback.c.) */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/stats.h"
#include "scilan.h"
#include "testutil.h"
#include "fallback_helpers.h"

#define PLAIN_CLIENTS 20

TestSuite(fallback_log, .timeout = 60);

/* Lines of text holding both needles. */
static int lines_with(const char *text, const char *a, const char *b)
{
	int n = 0;

	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n'), *end = nl ? nl : line + strlen(line);
		const char *at = strstr(line, a), *bt = strstr(line, b);

		n += at && at < end && bt && bt < end;
		line = nl ? nl + 1 : NULL;
	}
	return n;
}

/* PLAIN_CLIENTS plain clients of a listener (`no-offer` each), and two
 * connections to a plain listener (`no-listener` each), at SCILAN_LOG=level
 * (NULL: unset, the default); what stderr got. */
static char *fallbacks_logged(const char *level)
{
	struct sl_stats st;
	uint16_t port, plain_port;
	int capture, l, pl;
	char *err;

	if (level)
		setenv("SCILAN_LOG", level, 1);
	else
		unsetenv("SCILAN_LOG");
	cr_assert_not_null(tu_isolated_rundir());
	capture = tu_capture_begin();
	cr_assert_geq(capture, 0);
	l = tu_listen(AF_INET, PLAIN_CLIENTS, &port);
	for (int i = 0; i < PLAIN_CLIENTS; i++) {
		int c = tu_plain_connect(AF_INET, port), s = tu_accept(l);

		cr_assert(c >= 0 && s >= 0, "plain client %d", i);
		cr_assert_eq(tu_accelerated(s), 0);
		scilan_close(s);
		close(c);
	}
	pl = tu_plain_listen(AF_INET, 4, &plain_port);
	for (int i = 0; i < 2; i++) {
		int c = tu_connect(AF_INET, plain_port);

		cr_assert_geq(c, 0);
		scilan_close(c);
	}
	err = tu_capture_end(capture);
	sl_stats_read(&st);
	cr_assert_eq(st.fb[reason_of("no-offer")], PLAIN_CLIENTS, "no-offer counted %llu times; stderr:\n%s",
		     (unsigned long long)st.fb[reason_of("no-offer")], err);
	cr_assert_eq(st.fb[reason_of("no-listener")], 2, "no-listener counted %llu times; stderr:\n%s",
		     (unsigned long long)st.fb[reason_of("no-listener")], err);
	close(pl);
	scilan_close(l);
	return err;
}

Test(fallback_log, each_reason_once_at_the_default_level)
{
	char *err = fallbacks_logged(NULL);

	cr_expect_eq(lines_with(err, "kernel TCP, no-offer: ", "scilan: pid "), 1,
		     "not one line for no-offer at the default level:\n%s", err);
	cr_expect_eq(lines_with(err, "kernel TCP, no-listener: ", "scilan: pid "), 1,
		     "not one line for no-listener at the default level:\n%s", err);
	/* What it means, and how to change it. */
	cr_expect_eq(lines_with(err, "kernel TCP, no-offer: the client made no offer", "scilan_run"), 1,
		     "the no-offer line does not say what to do:\n%s", err);
	cr_expect_eq(lines_with(err, "scilan: pid ", "kernel TCP, "), 2, "other fallback lines:\n%s", err);
	free(err);
}

Test(fallback_log, warn_level_is_silent_about_fallbacks)
{
	char *err = fallbacks_logged("warn");

	cr_expect_eq(lines_with(err, "scilan: pid ", "kernel TCP, "), 0, "fallback lines at SCILAN_LOG=warn:\n%s", err);
	free(err);
}

Test(fallback_log, info_level_names_every_connection)
{
	char *err = fallbacks_logged("info");

	cr_expect_eq(lines_with(err, "kernel TCP, no-offer: ", "scilan: pid "), PLAIN_CLIENTS, "%s", err);
	cr_expect_eq(lines_with(err, "kernel TCP, no-listener: ", "scilan: pid "), 2, "%s", err);
	free(err);
}
