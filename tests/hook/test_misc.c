/* test_misc.c — signals, threads, UDP, AF_UNIX and a TCP connection passed
 * over SCM_RIGHTS (progs/misc.c) under the hook against kernel TCP.  UDP and
 * AF_UNIX must fall through to the kernel: no accelerated connection. */
#include <criterion/criterion.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runner.h"

Test(misc, signals_eintr_and_sa_restart, .timeout = 120) { hk_scenario("misc", "signals", 1, -1, 30); }
Test(misc, many_threads_own_sockets, .timeout = 180) { hk_scenario("misc", "threads_many", 1, -1, 60); }
Test(misc, two_threads_one_socket, .timeout = 180) { hk_scenario("misc", "threads_shared", 1, -1, 60); }
Test(misc, udp_untouched, .timeout = 120) { hk_scenario("misc", "udp", 0, 0, 30); }
Test(misc, af_unix_untouched, .timeout = 120) { hk_scenario("misc", "unix", 0, 0, 30); }
/* Beyond the list: a dispatcher hands an accepted connection to a
 * worker process over SCM_RIGHTS (as pre-forking servers do). */
Test(misc, tcp_connection_passed_with_scm_rights, .timeout = 120) { hk_scenario("misc", "scm_tcp", 1, -1, 30); }
/* Issue 8: threads on 16 KiB and 64 KiB stacks start and do socket work. */
Test(misc, small_stack_threads, .timeout = 120) { hk_scenario("misc", "small_stacks", 2, -1, 30); }
/* Issue 9: listen/accept and connect/send/poll/recv/close each on a thread
 * with a 16 KiB stack, accelerated (connection set-up frames stay small). */
Test(misc, small_stack_connection_setup, .timeout = 120) { hk_scenario("misc", "small_stack_setup", 1, -1, 30); }

/* Static TLS is taken from every thread's stack in every program the hook is
 * preloaded into: the preload's own must stay a few hundred bytes (large
 * per-thread buffers are allocated on first use). */
Test(misc, preload_static_tls_is_small)
{
	const char *lib = hk_hook_lib();
	int fd = open(lib, O_RDONLY);
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	Elf64_Xword tls = 0;

	cr_assert(fd >= 0, "%s", lib);
	cr_assert(pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh));
	cr_assert(memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64, "%s: not ELF64", lib);
	cr_assert(eh.e_phentsize == sizeof(ph));
	for (int i = 0; i < eh.e_phnum; i++) {
		cr_assert(pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (Elf64_Off)i * sizeof(ph))) == (ssize_t)sizeof(ph));
		if (ph.p_type == PT_TLS)
			tls += ph.p_memsz;
	}
	close(fd);
	cr_expect(tls < 1024, "%s: PT_TLS memsz %#lx bytes, want < 1 KiB", lib, (unsigned long)tls);
}
