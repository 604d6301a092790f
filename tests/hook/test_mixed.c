/* test_mixed.c — one end preloaded, the other plain (progs/peer.c as two
 * programs): both mixes work over kernel TCP with kernel TCP's transcripts
 * (accelerated 0, one fallback); both preloaded is accelerated. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "runner.h"

#define BYTES 3000000L

static void check(bool server_preload, bool client_preload)
{
	struct hk_env plain = { 0 }, se = { 0 }, ce = { 0 };
	struct hk_out rs, rc, s, c;
	char *rundir, *conf, *tmp = hk_tmpdir(&rundir, &conf);
	bool both = server_preload && client_preload;

	hk_run_pair(&plain, &plain, "127.0.0.1", "127.0.0.1", BYTES, &rs, &rc, 60);
	cr_assert_eq(rs.rc, 0, "plain server: %s%s", rs.out, rs.err);
	cr_assert_eq(rc.rc, 0, "plain client: %s%s", rc.out, rc.err);
	se = (struct hk_env){ .preload = server_preload, .rundir = rundir, .conf = conf };
	ce = (struct hk_env){ .preload = client_preload, .rundir = rundir, .conf = conf };
	hk_run_pair(&se, &ce, "127.0.0.1", "127.0.0.1", BYTES, &s, &c, 60);
	hk_rmtree(tmp);
	/* Both preloaded: one accelerated connection on each side.  One side
	 * preloaded: it falls back to kernel TCP (one fallback, none accelerated). */
	hk_check_run("server", &rs, &s, server_preload, both ? 1 : 0, both ? 0 : 1);
	hk_check_run("client", &rc, &c, client_preload, both ? 1 : 0, both ? 0 : 1);
	if (both) {
		cr_expect_eq(hk_stat_sum(c.err, "tx"), BYTES, "client tx: %s", c.err);
		cr_expect_eq(hk_stat_sum(c.err, "rx"), BYTES, "client rx: %s", c.err);
	}
	hk_out_free(&rs);
	hk_out_free(&rc);
	hk_out_free(&s);
	hk_out_free(&c);
	free(tmp);
	free(rundir);
	free(conf);
}

Test(mixed, preloaded_client_plain_server, .timeout = 120) { check(false, true); }
Test(mixed, plain_client_preloaded_server, .timeout = 120) { check(true, false); }
Test(mixed, both_preloaded, .timeout = 120) { check(true, true); }
