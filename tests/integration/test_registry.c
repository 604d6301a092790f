/* test_registry.c — the listener registry's word to acceptors (registry.c):
 * an entry that asks connectors for named offers makes its acceptors look
 * for offer files only while a connector found it so lately, which every
 * connector that names one does first; a holder of the rendezvous only
 * after an offer that could not go through it. */
#include <criterion/criterion.h>
#include <limits.h>
#include <unistd.h>

#include "fabric/shm/registry.h"
#include "testutil.h"

static void expect_named(bool want, const char *when)
{
	struct sl_key key = { .family = AF_INET, .addr = { 127, 0, 0, 1 }, .port = 4321 };
	char path[PATH_MAX];
	const _Atomic uint32_t *flags;
	uint64_t ring = 0;
	uint32_t found = 0;
	int fd;

	cr_assert_not_null(tu_isolated_rundir());
	fd = sl_registry_add(&key, 65536, want, path, sizeof(path));
	cr_assert_geq(fd, 0);
	flags = sl_registry_map_flags(fd);
	cr_assert_not_null(flags);
	for (int holder = 0; holder <= 1; holder++) {
		cr_expect_not(sl_registry_named_at(flags, fd, holder),
			      "%s: looked for offer files before any connector came (rendezvous holder %d)", when, holder);
		cr_expect_not(sl_registry_named(fd, holder), "%s: the same, read with pread", when);
	}
	cr_assert_eq(sl_registry_find(&key, &ring, &found), 1);
	cr_expect_eq(ring, 65536);
	cr_expect_eq(sl_registry_named_at(flags, fd, false), want, "%s: after a connector found the entry", when);
	cr_expect_eq(sl_registry_named(fd, false), want, "%s: the same, read with pread", when);
	/* Its offer went through the rendezvous too: the holder of that finds
	 * it there, and looks for no file. */
	cr_expect_not(sl_registry_named_at(flags, fd, true), "%s: a rendezvous holder looked for files", when);
	cr_expect_not(sl_registry_named(fd, true), "%s: the same, read with pread", when);
	/* One that could not go through the rendezvous. */
	sl_registry_note_file_only(&key);
	cr_expect_eq(sl_registry_named_at(flags, fd, true), want, "%s: after an offer made only as files", when);
	cr_expect_eq(sl_registry_named(fd, true), want, "%s: the same, read with pread", when);
	sl_registry_unmap_flags(flags);
	sl_registry_remove(fd, path);
}

/* A listener another process may accept for (SL_REG_NAMED): a plain
 * client's accept looked for an offer file every time (a sock_diag query
 * and a failed open, 4 system calls: `make bench-syscalls`,
 * late-listen-server, +5.0), though no connector had named one; and the
 * holder of its rendezvous did while connectors named offers they had also
 * passed it through the rendezvous (+5.2 with hooked clients under the
 * offer policy's `short`, whose probes named one every so often). */
Test(registry, named_offers_looked_for_only_after_a_connector_came)
{
	expect_named(true, "an entry asking for named offers");
}

Test(registry, entry_without_named_offers_is_never_looked_in)
{
	expect_named(false, "an entry not asking for them");
}
