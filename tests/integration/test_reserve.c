/* test_reserve.c — the memory of a segment is reserved as the senders need
 * it: a short connection allocates a few pages, a stream the whole ring, and
 * a reservation that fails resets the connection (never SIGBUS).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/testing.h"
#include "test_segment.h"
#include "testutil.h"

/* Pages the memfd behind fd's segment has allocated (reserved by fallocate
 * or written), from its block count: mincore sees only written pages. */
static size_t resident_pages(int fd, size_t *total)
{
	void *base;
	size_t len;
	int own, mfd;
	char path[128];
	struct stat st;

	cr_assert_eq(sl_test_segment(fd, &base, &len, &own), 0, "segment: %s", strerror(errno));
	snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx", (unsigned long)base,
		 (unsigned long)base + (unsigned long)len);
	mfd = open(path, O_RDONLY | O_CLOEXEC);
	if (mfd < 0)
		cr_skip_test("cannot open %s (needs CAP_SYS_ADMIN): %s", path, strerror(errno));
	cr_assert_eq(fstat(mfd, &st), 0);
	close(mfd);
	*total = (len + 4095) / 4096;
	return (size_t)st.st_blocks * 512 / 4096;
}

static void exchange(int a, int b, size_t size)
{
	char *buf = malloc(size), *got = malloc(size);

	cr_assert(buf && got);
	for (size_t i = 0; i < size; i++)
		buf[i] = (char)(i * 7 + 3);
	/* Both ways, in pieces the receiver takes as they come. */
	for (int dir = 0; dir < 2; dir++) {
		int tx = dir ? b : a, rx = dir ? a : b;
		size_t sent = 0, recvd = 0;

		while (recvd < size) {
			if (sent < size) {
				ssize_t n = scilan_send(tx, buf + sent, size - sent, MSG_DONTWAIT);

				cr_assert(n > 0 || errno == EAGAIN, "send: %s", strerror(errno));
				if (n > 0)
					sent += (size_t)n;
			}
			ssize_t m = scilan_recv(rx, got + recvd, size - recvd, MSG_DONTWAIT);

			cr_assert(m > 0 || (m < 0 && errno == EAGAIN), "recv: %zd %s", m, strerror(errno));
			if (m > 0)
				recvd += (size_t)m;
		}
		cr_assert_arr_eq(got, buf, size, "data corrupted");
	}
	free(buf);
	free(got);
}

/* How many pages of fd's segment mapping our page tables map
 * (/proc/self/pagemap's present bit), each page's bit into map. */
static size_t mapped_pages(int fd, unsigned char *map, size_t max)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len, n = 0;
	void *base;
	int own, pm;

	cr_assert_eq(sl_test_segment(fd, &base, &len, &own), 0, "segment: %s", strerror(errno));
	pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	cr_assert_geq(pm, 0, "pagemap: %s", strerror(errno));
	for (size_t i = 0; i < len / page && i < max; i++) {
		uint64_t e = 0;

		cr_assert_eq(pread(pm, &e, sizeof(e), (off_t)(((uintptr_t)base / page + i) * sizeof(e))),
			     (ssize_t)sizeof(e));
		map[i] = (unsigned char)(e >> 63);
		n += map[i];
	}
	close(pm);
	return n;
}

/* Set-up maps in the pages a first exchange uses (sl_segment_touch): a
 * fault there cost the first request on each pooled connection 4-11 us a
 * page in a virtual machine, some 100 us per exchange in all. */
Test(reserve, first_exchange_maps_no_page_in, .timeout = 60)
{
	static unsigned char before[2][1024], after[2][1024];
	int fds[2]; /* connector, acceptor */

	cr_assert_eq(tu_pair_rcvbuf(AF_INET, 256 << 10, 256 << 10, &fds[0], &fds[1]), 0);
	for (int k = 0; k < 2; k++) {
		cr_assert_eq(tu_accelerated(fds[k]), 1);
		cr_assert_gt(mapped_pages(fds[k], before[k], sizeof(before[k])), 0);
	}
	exchange(fds[0], fds[1], 64);
	for (int k = 0; k < 2; k++) {
		mapped_pages(fds[k], after[k], sizeof(after[k]));
		/* Newly present only: the kernel may take a page away. */
		for (size_t i = 0; i < sizeof(after[k]); i++)
			cr_assert(!after[k][i] || before[k][i], "%s: page %zu of the segment was mapped in by the exchange",
				  k ? "acceptor" : "connector", i);
		close(fds[k]);
	}
}

Test(reserve, short_connection_allocates_little, .timeout = 60)
{
	int c, s;
	size_t total, used;

	cr_assert_eq(tu_pair_rcvbuf(AF_INET, 256 << 10, 256 << 10, &c, &s), 0);
	cr_assert_eq(tu_accelerated(c), 1);
	exchange(c, s, 64);
	used = resident_pages(c, &total);
	cr_expect_leq(used, total / 4, "a 64 B exchange allocated %zu of the segment's %zu pages", used, total);
	scilan_close(c);
	scilan_close(s);
}

Test(reserve, stream_reserves_the_whole_ring, .timeout = 60)
{
	int c, s;
	size_t total, used;

	cr_assert_eq(tu_pair_rcvbuf(AF_INET, 256 << 10, 256 << 10, &c, &s), 0);
	cr_assert_eq(tu_accelerated(c), 1);
	exchange(c, s, 3 << 20);
	used = resident_pages(c, &total);
	cr_expect_eq(used, total, "after a stream both ways %zu of %zu pages are allocated", used, total);
	scilan_close(c);
	scilan_close(s);
}

/* The memory cgroup or the machine is out of memory: the send that needs
 * more of the ring resets the connection, loudly; the bytes already sent
 * arrived. */
Test(reserve, failed_reservation_resets, .timeout = 60)
{
	int c, s;
	char buf[64 << 10] = { 1 }, got[64 << 10];
	ssize_t n;
	char *log;
	int tok;

	cr_assert_eq(tu_pair_rcvbuf(AF_INET, 256 << 10, 256 << 10, &c, &s), 0);
	cr_assert_eq(tu_accelerated(c), 1);
	cr_assert_eq(tu_send_all(c, "abc", 3, 0), 3);
	cr_assert_eq(tu_recv_all(s, got, 3), 3);
	tok = tu_capture_begin();
	sl_test_reserve_fail = 1;
	do
		n = scilan_send(c, buf, sizeof(buf), 0);
	while (n > 0);
	sl_test_reserve_fail = 0;
	cr_expect_eq(n, -1);
	cr_expect_eq(errno, ECONNRESET, "send after a failed reservation: %s", strerror(errno));
	log = tu_capture_end(tok);
	cr_expect(log && strstr(log, "reserve"), "no log line about the reservation");
	free(log);
	do
		n = scilan_recv(s, got, sizeof(got), 0);
	while (n > 0);
	cr_expect_eq(n, -1, "the peer saw an orderly end, not a reset");
	cr_expect_eq(errno, ECONNRESET);
	scilan_close(c);
	scilan_close(s);
}
