/* test_seg_pool.c — the segment a connecting process makes ahead of its
 * next connect (seg_pool.c): made while it waits, taken by that connect,
 * never handed out by a fork child that inherited it, never one a live
 * connection maps.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scilan.h"
#include "socket/sock_state.h"
#include "testutil.h"

#define MAX_SEGS 16

/* Inodes of this process's mapped segments (/proc/self/maps). */
static int segment_inodes(unsigned long *ino, int max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long i;
		bool seen = false;

		if (!strstr(line, "memfd:scilan-segment") || sscanf(line, "%*s %*s %*s %*s %lu", &i) != 1)
			continue;
		for (int k = 0; k < n; k++)
			seen = seen || ino[k] == i;
		if (!seen && n < max)
			ino[n++] = i;
	}
	fclose(f);
	return n;
}

/* The inode of the segment an accelerated connection maps. */
static unsigned long seg_inode(int fd)
{
	struct sl_sock *s = sl_sock_get(fd);
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long ino = 0;

	cr_assert(s && s->seg, "fd %d has no segment", fd);
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, i;

		if (sscanf(line, "%lx-%*x %*s %*s %*s %lu", &start, &i) == 2 && start == (unsigned long)s->seg) {
			ino = i;
			break;
		}
	}
	fclose(f);
	cr_assert_neq(ino, 0, "fd %d: segment not in /proc/self/maps", fd);
	return ino;
}

static void pair(int l, uint16_t port, int *c, int *s)
{
	*c = tu_connect(AF_INET, port);
	cr_assert_geq(*c, 0, "connect: %s", strerror(errno));
	*s = tu_accept(l);
	cr_assert_geq(*s, 0, "accept: %s", strerror(errno));
	cr_assert_eq(tu_accelerated(*c), 1, "client end not accelerated");
	cr_assert_eq(tu_accelerated(*s), 1, "server end not accelerated");
}

static void echo(int c, int s)
{
	char buf[4];

	cr_assert_eq(scilan_send(c, "ping", 4, 0), 4);
	cr_assert_eq(tu_recv_all(s, buf, 4), 4);
	cr_assert_eq(memcmp(buf, "ping", 4), 0, "bytes went to another connection");
}

/* The one segment mapped now that no connection maps: made ahead. */
static unsigned long premade_inode(const unsigned long *live, int nlive)
{
	unsigned long ino[MAX_SEGS], found = 0;
	int n = segment_inodes(ino, MAX_SEGS), extra = 0;

	for (int i = 0; i < n; i++) {
		bool used = false;

		for (int k = 0; k < nlive; k++)
			used = used || live[k] == ino[i];
		if (!used) {
			found = ino[i];
			extra++;
		}
	}
	cr_assert_eq(extra, 1, "%d mapped segments belong to no connection (expected the one made ahead)", extra);
	return found;
}

/* A process that connected twice makes its next segment while it waits
 * (here: a recv that finds the ring empty), and its next connect takes
 * that one.  A fork child inherits the mapping and the descriptor but
 * throws them away: its own connect makes another, so the parent's next
 * connection and the child's never share a segment. */
Test(seg_pool, made_ahead_taken_by_next_connect_never_by_a_fork_child, .timeout = 60)
{
	unsigned long live[2], premade, child_ino = 0;
	int l, c1, s1, c2, s2, c4, s4, report[2], status;
	uint16_t port;
	char b;
	pid_t child;

	cr_assert_not_null(tu_isolated_rundir());
	l = tu_listen(AF_INET, 8, &port);
	cr_assert_geq(l, 0);
	pair(l, port, &c1, &s1);
	pair(l, port, &c2, &s2);
	live[0] = seg_inode(c1);
	live[1] = seg_inode(c2);
	cr_assert_eq(seg_inode(s1), live[0]);
	cr_assert_eq(seg_inode(s2), live[1]);
	/* Nothing to read: the wait that makes the next segment. */
	cr_assert_eq(scilan_recv(c2, &b, 1, MSG_DONTWAIT), -1);
	cr_assert_eq(errno, EAGAIN);
	premade = premade_inode(live, 2);

	cr_assert_eq(pipe(report), 0);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		int c3 = tu_connect(AF_INET, port), s3;
		unsigned long ino;

		if (c3 < 0 || (s3 = scilan_accept(l, NULL, NULL)) < 0 || tu_accelerated(c3) != 1 ||
		    tu_accelerated(s3) != 1)
			_exit(2);
		ino = seg_inode(c3);
		if (scilan_send(c3, "kid!", 4, 0) != 4 || tu_recv_all(s3, &b, 1) != 1 || b != 'k')
			_exit(3);
		if (write(report[1], &ino, sizeof(ino)) != (ssize_t)sizeof(ino))
			_exit(4);
		_exit(0);
	}
	cr_assert_eq(read(report[0], &child_ino, sizeof(child_ino)), (ssize_t)sizeof(child_ino), "child reported nothing");
	waitpid(child, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed (%d)",
		  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	cr_assert_neq(child_ino, premade, "the fork child handed out its parent's segment made ahead");
	cr_assert(child_ino != live[0] && child_ino != live[1], "the child's connection shares a live segment");

	pair(l, port, &c4, &s4);
	cr_assert_eq(seg_inode(c4), premade, "the next connect did not take the segment made ahead");
	cr_assert_eq(seg_inode(s4), premade);
	echo(c4, s4);
	echo(c1, s1);
	echo(c2, s2);
	scilan_close(c1);
	scilan_close(s1);
	scilan_close(c2);
	scilan_close(s2);
	scilan_close(c4);
	scilan_close(s4);
	scilan_close(l);
}

/* A process that connects once makes nothing ahead (a command-line client
 * would only pay for it). */
Test(seg_pool, one_connect_makes_nothing_ahead, .timeout = 30)
{
	unsigned long ino[MAX_SEGS];
	int l, c, s;
	uint16_t port;
	char b;

	cr_assert_not_null(tu_isolated_rundir());
	l = tu_listen(AF_INET, 4, &port);
	cr_assert_geq(l, 0);
	pair(l, port, &c, &s);
	cr_assert_eq(scilan_recv(c, &b, 1, MSG_DONTWAIT), -1);
	cr_assert_eq(segment_inodes(ino, MAX_SEGS), 1, "a segment was made ahead after one connect");
	scilan_close(c);
	scilan_close(s);
	scilan_close(l);
}

static bool mapped(unsigned long ino)
{
	unsigned long all[MAX_SEGS];
	int n = segment_inodes(all, MAX_SEGS);

	for (int i = 0; i < n; i++)
		if (all[i] == ino)
			return true;
	return false;
}

/* A closed connection's segment is unmapped (and its descriptors closed)
 * at the process's next wait, not in the close: the last unmap frees the
 * pages.  The peer still reads every byte and the end.  A fork child lets
 * go of its copies at once. */
Test(seg_pool, closed_segment_let_go_at_next_wait_and_in_a_fork_child, .timeout = 60)
{
	unsigned long gone;
	int l, c1, s1, c2, s2, status;
	uint16_t port;
	char buf[4];
	pid_t child;

	cr_assert_not_null(tu_isolated_rundir());
	l = tu_listen(AF_INET, 8, &port);
	cr_assert_geq(l, 0);
	pair(l, port, &c1, &s1);
	pair(l, port, &c2, &s2);
	gone = seg_inode(c1);
	cr_assert_eq(scilan_send(c1, "last", 4, 0), 4);
	scilan_close(c1);
	scilan_close(s2);
	cr_assert_eq(tu_recv_all(s1, buf, 4), 4, "the peer lost bytes sent before the close");
	cr_assert_eq(memcmp(buf, "last", 4), 0);
	cr_assert_eq(scilan_recv(s1, buf, 1, 0), 0, "no EOF after the close");
	scilan_close(s1);
	cr_assert(mapped(gone), "the closed segment was unmapped in the close (expected: at the next wait)");

	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0)
		_exit(mapped(gone) ? 1 : 0);
	waitpid(child, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a fork child kept its copy of a closed segment");

	/* c2's peer closed: EOF, not a wait.  A wait on an empty ring: */
	pair(l, port, &c1, &s1);
	cr_assert_eq(scilan_recv(c1, buf, 1, MSG_DONTWAIT), -1);
	cr_assert_eq(errno, EAGAIN);
	cr_assert(!mapped(gone), "the closed segment is still mapped after a wait");
	scilan_close(c1);
	scilan_close(s1);
	scilan_close(c2);
	scilan_close(l);
}
