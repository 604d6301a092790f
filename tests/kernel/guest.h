/* guest.h — what the guest test programs (sltest, sl2test, devtest) share:
 * "TEST name PASS|FAIL detail" result lines the host runner parses, timing,
 * a reproducible byte stream, sysfs/debugfs writes and errno checks.
 */
#ifndef SCILAN_GUEST_H
#define SCILAN_GUEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Failed tests, for the exit code.  A program of several files (sltest)
 * defines GUEST_MULTI_FILE before including this and `int failures;` in one
 * file, so that all of them count into one number. */
#ifdef GUEST_MULTI_FILE
extern int failures;
#else
static int failures;
#endif

/* One result line, flushed at once: the console is all the host sees of a
 * guest that hangs or panics later. */
__attribute__((format(printf, 3, 4))) static inline void result(const char *name, int ok, const char *fmt, ...)
{
	char detail[300] = "";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	printf("TEST %s %s %s\n", name, ok ? "PASS" : "FAIL", detail);
	fflush(stdout);
	if (!ok)
		failures++;
}

static inline double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static inline uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Write s into a sysfs/debugfs file (e.g. the mock's link switch); 0 or -1. */
static inline int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok ? 0 : -1;
}

/* The value of key in link's debugfs state file (scilan.ko), or -1. */
static inline long dbg_value(int link, const char *key)
{
	char path[128], line[256];
	long v = -1;
	size_t kl = strlen(key);
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/scilan/scilan%d/state", link);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ' ')
			v = strtol(line + kl + 1, NULL, 10);
	fclose(f);
	return v;
}

/* Has key come to want within ms milliseconds?  1 or 0. */
static inline int settle_for(int link, const char *key, long want, int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		if (dbg_value(link, key) == want)
			return 1;
		usleep(10000);
	}
	return 0;
}

/* n bytes whole through read (wr 0) or write (wr 1), retried on EINTR: 0,
 * or -1 at an error or the end of the stream. */
static inline int full_io(int fd, void *buf, size_t n, int wr)
{
	uint8_t *p = buf;

	while (n) {
		ssize_t k = wr ? write(fd, p, n) : read(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Are links scilan0 .. scilan<links - 1> all up (their debugfs state)? */
static inline int first_links_up(int links)
{
	char line[64];
	int up = 1;

	for (int l = 0; l < links; l++) {
		char path[64];
		int seen = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/sys/kernel/debug/scilan/scilan%d/state", l);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			seen |= !strcmp(line, "link up\n");
		if (f)
			fclose(f);
		up &= seen;
	}
	return up;
}

/* Are both links of the one-guest mock pair up? */
static inline int links_up(void)
{
	return first_links_up(2);
}

/* In a hostile-arguments test: cond must hold with errno err (0: success);
 * counts into the caller's `checks` and `bad`. */
#define EXPECT(cond, err)                                                                                  \
	do {                                                                                               \
		errno = 0;                                                                                 \
		if (!(cond) || errno != (err)) {                                                           \
			printf("  hostile: line %d: expected errno %d, got %d (%s)\n", __LINE__, err, errno, \
			       strerror(errno));                                                           \
			bad++;                                                                             \
		}                                                                                          \
		checks++;                                                                                  \
	} while (0)

#endif
