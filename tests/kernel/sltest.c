/* sltest.c — the in-guest tests of scilan.ko through ntb_mock (static binary
 * run by tests/kernel/init): the command line ("state", "all" or one group),
 * the tests' order, the final leftovers check, the state sltest's files share.
 */
#include "sltest.h"

/* Declared extern by guest.h and slring.h under GUEST_MULTI_FILE. */
int failures;
int slring_lsock[1024];
const char *slring_dst = "127.0.0.1";

sigjmp_buf sigbus_jmp;

void sigbus_handler(int sig)
{
	(void)sig;
	siglongjmp(sigbus_jmp, 1);
}

/* The driver's state with a listener on port 13 registered, as "STATE
 * <link> <line>" for the host's scilan_ctl status check (run.sh). */
static int dump_state(void)
{
	char path[128], line[256];
	int lfd;

	if (!wait_link(NODE_A, 10000) || !wait_link(NODE_B, 10000))
		return 1;
	lfd = listen_on(NODE_B, 13);
	for (int l = 0; l < 2; l++) {
		FILE *f;

		snprintf(path, sizeof(path), "/sys/kernel/debug/scilan/scilan%d/state", l);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			printf("STATE scilan%d %s", l, line);
		if (f)
			fclose(f);
	}
	listen_close(lfd);
	return lfd < 0;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "all";
	int all = !strcmp(what, "all");

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(what, "state"))
		return dump_state();
	if (!wait_link(NODE_A, 10000) || !wait_link(NODE_B, 10000)) {
		result("link_up", 0, "the mock link did not come up");
		return 1;
	}
	result("link_up", 1, "both links up");
	if (all || !strcmp(what, "pingpong")) {
		test_pingpong("pingpong_interrupt", 0, 500);
		test_pingpong("pingpong_polling", 1L << 30, 20000);
	}
	if (all || !strcmp(what, "stream"))
		test_stream(1L << 16, 16u << 20);
	if (all || !strcmp(what, "killed"))
		test_killed();
	if (all || !strcmp(what, "hostile"))
		test_hostile();
	if (all || !strcmp(what, "exhaust"))
		test_exhaustion();
	if (all || !strcmp(what, "linkdown"))
		test_linkdown();
	if (all || !strcmp(what, "churn"))
		test_churn(5000);
	if (all || !strcmp(what, "backlog"))
		test_backlog();
	if (all || !strcmp(what, "zap"))
		test_zap_inodes();
	if (all || !strcmp(what, "unload"))
		test_unload_busy_mapped();
	if (all || !strcmp(what, "abandon"))
		test_abandon();
	if (all || !strcmp(what, "sets")) {
		test_sets();
		test_sets_linkdown();
		test_sets_per_uid();
		test_sets_per_uid_userns();
	}
	if (all || !strcmp(what, "sink"))
		test_sink_private();
	if (all || !strcmp(what, "flap"))
		test_flap(100);
	if (all) {
		int clean = settle(0, "endpoints", 0) && settle(1, "endpoints", 0) &&
			    settle(0, "slices_busy", 0) && settle(1, "slices_busy", 0) &&
			    settle(0, "sets_busy", 0) && settle(1, "sets_busy", 0);

		result("no_leftovers", clean, "endpoints %ld/%ld, busy slices %ld/%ld, busy sets %ld/%ld",
		       dbg_value(0, "endpoints"), dbg_value(1, "endpoints"), dbg_value(0, "slices_busy"),
		       dbg_value(1, "slices_busy"), dbg_value(0, "sets_busy"), dbg_value(1, "sets_busy"));
	}
	return failures ? 1 : 0;
}
