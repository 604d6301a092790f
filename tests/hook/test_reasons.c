/* test_reasons.c — why a connection is kernel TCP, for the situations only an
 * unmodified program under the hook creates (a plain or starved acceptor,
 * io_uring on either side, seccomp, exec of a static image): the
 * scenario's SCILAN_STATS lines count the reason, and SCILAN_LOG=info names
 * it in one line per fallback.  (The native-API situations: tests/integration/
 * test_fallback.c, which also checks scilan_ctl stat --all.) */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner.h"

/* Sum over the stats lines of `name N` after "fallback reasons: ". */
static long reason_sum(const char *err, const char *name)
{
	size_t len = strlen(name);
	long sum = 0;

	for (const char *line = err; line && *line;) {
		const char *nl = strchr(line, '\n'), *at = strstr(line, "; fallback reasons: ");

		if (strncmp(line, "scilan: pid ", 12) == 0 && at && (!nl || at < nl)) {
			for (at += strlen("; fallback reasons: "); at && (!nl || at < nl);) {
				if (strncmp(at, name, len) == 0 && at[len] == ' ')
					sum += strtol(at + len + 1, NULL, 10);
				at = strstr(at, ", ");
				at = at ? at + 2 : NULL;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return sum;
}

/* Run prog scenario under the hook with SCILAN_LOG=info; each reason of the
 * NULL-terminated list must be logged, and counted (when counted: a process
 * that execs prints no stats line, its image is gone) at least once. */
static void expect_reasons_counted(bool counted, const char *prog, const char *scenario, va_list ap)
{
	const char *argv[] = { hk_prog(prog), scenario, NULL };
	struct hk_env pre = { .preload = true, .log = "info" };
	char *rundir, *conf, *tmp = hk_tmpdir(&rundir, &conf), logged[96];
	struct hk_out got;

	pre.rundir = rundir;
	pre.conf = conf;
	hk_run(&pre, argv, &got, 30);
	hk_rmtree(tmp);
	cr_expect_eq(got.rc, 0, "%s %s under the hook: rc %d; stderr:\n%s", prog, scenario, got.rc, got.err);
	for (const char *r = va_arg(ap, const char *); r; r = va_arg(ap, const char *)) {
		if (counted)
			cr_expect_gt(reason_sum(got.err, r), 0, "%s %s: no fallback counted as %s; stderr:\n%s", prog, scenario,
			     r, got.err);
		snprintf(logged, sizeof(logged), "kernel TCP, %s: ", r);
		cr_expect(strstr(got.err, logged), "%s %s: no log line for %s; stderr:\n%s", prog, scenario, r,
			  got.err);
	}
	hk_out_free(&got);
	free(rundir);
	free(conf);
	free(tmp);
}

static void expect_reasons(const char *prog, const char *scenario, ...)
{
	va_list ap;

	va_start(ap, scenario);
	expect_reasons_counted(true, prog, scenario, ap);
	va_end(ap);
}

static void expect_logged(const char *prog, const char *scenario, ...)
{
	va_list ap;

	va_start(ap, scenario);
	expect_reasons_counted(false, prog, scenario, ap);
	va_end(ap);
}

/* io_uring accept: the client's offer is never confirmed. */
Test(reasons, plain_acceptor_unconfirmed, .timeout = 120) { expect_reasons("agree", "uring_server", "unconfirmed", NULL); }
/* EMFILE in the acceptor's accept: it cannot open the offer. */
Test(reasons, starved_acceptor_resource, .timeout = 120)
{
	expect_reasons("agree", "starved_acceptor", "resource", "unconfirmed", NULL);
}
/* EMFILE for what the rendezvous passes: the offer is lost to the
 * acceptor, which says why; the client moves after its bound. */
Test(reasons, starved_acceptor_cannot_take_the_offer, .timeout = 120)
{
	expect_reasons("agree", "starved_offer_file", "resource", "unconfirmed", NULL);
}
/* EMFILE once the acceptor holds the segment, or less than an eighth of
 * its limit left: it refuses the offer, and the client says why it moved
 * (it guessed, after 1 s, before). */
Test(reasons, starved_acceptor_near_its_limit_refuses, .timeout = 120)
{
	expect_reasons("agree", "starved_rdv_bell", "resource", "refused", NULL);
}
Test(reasons, starved_acceptor_refuses_passed_segment, .timeout = 120)
{
	expect_reasons("agree", "starved_rdv_segment", "resource", "refused", NULL);
}
/* An undumpable client is no longer refused: its segment travels over the
 * listener's rendezvous socket (agree/undumpable_client_accelerated); the
 * other-user path, for a listener without one, is test_fallback's. */
/* exec while the offer is out: decided by the exec, not by the acceptor. */
Test(reasons, exec_while_offered_undecided, .timeout = 120)
{
	expect_logged("agree", "exec_while_offered", "undecided", NULL);
}
/* The client sends with io_uring after a hooked connect: the server leads. */
Test(reasons, uring_client_bypass, .timeout = 120) { expect_reasons("agree", "uring_client", "bypass", NULL); }
/* The acceptor reads through io_uring and never frees the ring: the client,
 * blocked on space, moves the connection after its stall shows (stall.c). */
Test(reasons, uring_reader_stalled, .timeout = 120) { expect_reasons("agree", "uring_reader", "stalled", NULL); }
/* A forked holder confines itself with seccomp; its peer follows. */
Test(reasons, seccomp_sandbox_and_peer_moved, .timeout = 120)
{
	expect_reasons("sandbox", "seccomp_child", "sandbox", "peer-moved", NULL);
}
/* The connection's holder execs a static image. */
Test(reasons, exec_static_image, .timeout = 120)
{
	expect_logged("procs", "exec_static", "exec", "peer-moved", NULL);
}
/* ... or a Go program, which makes its own system calls. */
Test(reasons, exec_go_image, .timeout = 120)
{
	expect_logged("procs", "exec_go", "exec", "peer-moved", NULL);
}
