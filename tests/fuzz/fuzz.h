/* fuzz.h — what every libFuzzer target of tests/fuzz shares: a loud stop
 * when an invariant the library's callers rely on is broken (libFuzzer
 * records the input as a crash), a cursor over the fuzz input, and for the
 * targets that play a hostile process: a hang watch and a descriptor count.
 */
#ifndef SCILAN_FUZZ_H
#define SCILAN_FUZZ_H

#include <dirent.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FUZZ_CHECK(cond, ...)                                                       \
	do {                                                                        \
		if (!(cond)) {                                                      \
			fprintf(stderr, "%s:%d: invariant broken: %s: ", __FILE__,  \
				__LINE__, #cond);                                   \
			fprintf(stderr, __VA_ARGS__);                               \
			fputc('\n', stderr);                                        \
			abort();                                                    \
		}                                                                   \
	} while (0)

/* Bytes taken from the front of the input; zeros once it is used up. */
struct fuzz_in {
	const uint8_t *p;
	size_t left;
};

static inline void fuzz_take(struct fuzz_in *in, void *out, size_t n)
{
	size_t k = n < in->left ? n : in->left;

	memcpy(out, in->p, k);
	memset((uint8_t *)out + k, 0, n - k);
	in->p += k;
	in->left -= k;
}

static inline uint8_t fuzz_u8(struct fuzz_in *in)
{
	uint8_t v;

	fuzz_take(in, &v, 1);
	return v;
}

static inline uint16_t fuzz_u16(struct fuzz_in *in)
{
	uint16_t v;

	fuzz_take(in, &v, 2);
	return v;
}

static inline uint32_t fuzz_u32(struct fuzz_in *in)
{
	uint32_t v;

	fuzz_take(in, &v, 4);
	return v;
}

static inline uint64_t fuzz_u64(struct fuzz_in *in)
{
	uint64_t v;

	fuzz_take(in, &v, 8);
	return v;
}

/* A hang or a SIGPIPE is a crash with its input kept: the watch's signal
 * and SIGPIPE abort, which libFuzzer reports as it reports any crash (its
 * own -timeout is coarser and names no step).  SIGALRM and SIGUSR1/2 are
 * libFuzzer's: the watch is a timer of its own on a real-time signal. */
#define FUZZ_HANG_SECONDS 5
#define FUZZ_HANG_SIGNAL (SIGRTMIN + 3)

static inline const char *volatile *fuzz_step(void)
{
	static const char *volatile step = "set-up";

	return &step;
}

static inline void fuzz_fatal_signal(int sig)
{
	const char *what = sig == SIGPIPE ? "SIGPIPE: the library wrote to a pipe or socket nobody reads, "
					    "and the signal would kill the process: "
					  : "hang: an input ran longer than the watch allows, in step: ";
	const char *step = *fuzz_step();

	(void)!write(2, what, strlen(what));
	(void)!write(2, step, strlen(step));
	(void)!write(2, "\n", 1);
	abort();
}

static inline timer_t *fuzz_watch(void)
{
	static timer_t t;

	return &t;
}

static inline void fuzz_watch_init(void)
{
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = FUZZ_HANG_SIGNAL };
	struct sigaction sa = { .sa_handler = fuzz_fatal_signal };

	sigaction(FUZZ_HANG_SIGNAL, &sa, NULL);
	sigaction(SIGPIPE, &sa, NULL);
	if (timer_create(CLOCK_MONOTONIC, &ev, fuzz_watch()) < 0)
		abort();
}

/* Arm (seconds > 0) or stop (0) the watch; step names what runs now. */
static inline void fuzz_watch_set(int seconds, const char *step)
{
	struct itimerspec its = { .it_value = { .tv_sec = seconds } };

	*fuzz_step() = step;
	timer_settime(*fuzz_watch(), 0, &its, NULL);
}

/* This process's open descriptors: what an input must leave as it found. */
static inline int fuzz_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		abort();
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

#endif
