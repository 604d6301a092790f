/* sl2test.h — what the files of sl2test (tests/kernel/sl2test*.c, one
 * static binary run in each of two QEMU guests) share: the guests'
 * addresses, the role, the control connection's steps, and running hooked
 * programs.
 */
#ifndef SL2TEST_H
#define SL2TEST_H

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* One failure count and one table of listeners for all of sl2test's files:
 * guest.h and slring.h declare them extern, sl2test.c defines them. */
#define GUEST_MULTI_FILE
#include "slring.h"

#define NODE "/dev/scilan0"
#define ADDR_A "10.78.0.1"
#define ADDR_B "10.78.0.2"
#define CTL_PORT 7800
#define TCP_PORT 7801
#define IVSHMEM_CUT "/sys/module/scilan/parameters/ivshmem_cut"

extern int is_a, ctl;

/* A step both programs reach: each sends the step's name and a value, then
 * reads the other's (-1: the control connection is gone). */
int64_t sync_peer(const char *step, int64_t mine);
int dbg_has(const char *text);
/* argv under the preload hook, stdout and stderr into files; poll_us:
 * SCILAN_POLL_US, or NULL for the default. */
pid_t run_hooked(char *const argv[], const char *out, const char *err, const char *poll_us);
/* Waits up to seconds (wait_ok: 60) for pid, killing it after that: 1 if
 * it exited 0. */
int wait_ok_within(pid_t pid, int seconds);
int wait_ok(pid_t pid);
int file_has(const char *path, const char *text);
void show_file(const char *path);
/* b's half of a test: a hooked server started, and the port it printed (0:
 * none) sent to a under sync. */
int serve_hooked(char *const argv[], const char *out, const char *err, const char *poll_us, const char *sync,
		 pid_t *pid);

/* sl2test_moves.c: the device fabric's agreement with acceptors past the
 * hook, and connections that change transport (fail-over, return, power
 * off). */
void test_plain_acceptor(const char *mode);
void test_uring_bypass(void);
void test_cut(const char *name, const char *poll_us);
void test_epoll_cut(void);
void test_cut_cycles(void);
void test_poweroff(void);

#endif
