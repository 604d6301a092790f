/* goimage.c — a dynamically linked program that exec sees as a Go program: it
 * carries Go's build-id note (built with -DGO_BUILDINFO_ONLY: only the
 * .go.buildinfo section every Go linker writes, as `-ldflags=-buildid=`
 * leaves it) and, like Go's runtime, does its socket I/O in raw system calls
 * that the preloaded hook, though loaded, never sees.
 * `goimage serve_fd FD OUTFD`: greets on FD, then echoes it until EOF. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>

#include "scen.h"

#ifndef GO_BUILDINFO_ONLY
/* An ELF note as Go's linker writes it: owner "Go", type 4 (build id). */
static const struct {
	uint32_t namesz, descsz, type;
	char name[4];
	char desc[16];
} go_buildid __attribute__((section(".note.go.buildid"), used, aligned(4))) = { 4, 16, 4, "Go", "fake-go-build-id" };
#else
static const char go_buildinfo[32] __attribute__((section(".go.buildinfo"), used)) = "\xff Go buildinf:";
#endif

/* A system call made directly, not through libc (where the hook would
 * see it): Go's syscall.Syscall. */
static long raw3(long nr, long a, long b, long c)
{
#if defined(__x86_64__)
	long r;

	__asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return r;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = nr, x0 __asm__("x0") = a, x1 __asm__("x1") = b, x2 __asm__("x2") = c;

	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
	return x0;
#else
#error "goimage.c: raw system calls for this architecture"
#endif
}

static void write_all(int fd, const char *buf, long len)
{
	for (long off = 0; off < len;) {
		long w = raw3(SYS_write, fd, (long)(buf + off), len - off);

		if (w == -4) /* -EINTR */
			continue;
		if (w <= 0)
			fatal("raw write: %ld", w);
		off += w;
	}
}

static int sc_serve_fd(void)
{
	int fd = scen_argc > 1 ? atoi(scen_argv[0]) : -1, out = scen_argc > 1 ? atoi(scen_argv[1]) : -1;
	static char buf[65536];
	uint64_t total = 0;
	long n;

	if (fd < 0 || out < 0)
		fatal("serve_fd FD OUTFD");
	write_all(fd, "go-hi", 5);
	while ((n = raw3(SYS_read, fd, (long)buf, sizeof(buf))) > 0 || n == -4) {
		if (n > 0) {
			write_all(fd, buf, n);
			total += (uint64_t)n;
		}
	}
	dprintf(out, "raw read ended with %ld; served %llu bytes\n", n, (unsigned long long)total);
	raw3(SYS_close, fd, 0, 0);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = { { "serve_fd", sc_serve_fd }, { NULL, NULL } };

	return scen_main(argc, argv, t);
}
