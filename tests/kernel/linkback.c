/* linkback.c — the device link cut and restored under a plain POSIX program
 * under the preload hook (tests/kernel/init, "linkcut" group): one
 * connection exchanging checked requests and replies fails over to kernel
 * TCP at the cut, and once the link is back the same connection (the same
 * descriptors) is on the rings again at both ends, every byte of both
 * streams intact.  `linkback once`, or `linkback cycles N`: N cuts and
 * returns in a row.  Each return is bounded in exchanges (a millisecond's
 * sleep after each), never in time; the time it took is printed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "guest.h"
#include "scilan.h"

#define MOCK_LINK "/sys/kernel/debug/ntb_mock/link"
#define PORT 7410
#define MAX_EXCHANGES 5000 /* per move; one every millisecond or so */

static uint64_t off; /* bytes of each stream so far */

static unsigned char stream_byte(int which, uint64_t i)
{
	return (unsigned char)((i * (which == 1 ? 131 : 197) + (i >> 9)) % 251);
}

/* A request of n bytes from c to a and its reply, both checked. */
static int exchange(int c, int a, size_t n)
{
	unsigned char out[4096], in[4096];

	for (int dir = 1; dir <= 2; dir++) {
		for (size_t i = 0; i < n; i++)
			out[i] = stream_byte(dir, off + i);
		if (full_io(dir == 1 ? c : a, out, n, 1) < 0 || full_io(dir == 1 ? a : c, in, n, 0) < 0 ||
		    memcmp(out, in, n) != 0)
			return -1;
	}
	off += n;
	return 0;
}

static int accelerated(int fd)
{
	int acc = -1;
	socklen_t len = sizeof(acc);

	return getsockopt(fd, SOL_SCILAN, SCILAN_SO_ACCELERATED, &acc, &len) == 0 ? acc : -1;
}

/* Exchanges until both ends are (want 1) or are not (want 0) accelerated:
 * how many it took, or -1 (a broken exchange, or MAX_EXCHANGES). */
static int exchange_until(int c, int a, int want)
{
	for (int i = 0; i < MAX_EXCHANGES; i++) {
		if (accelerated(c) == want && accelerated(a) == want)
			return i;
		if (exchange(c, a, 1 + (size_t)(i * 977 % 4000)) < 0)
			return -1;
		usleep(1000);
	}
	return -1;
}

/* One cut and return: 0, or -1 after a FAIL line's detail in why. */
static int cycle(int c, int a, int k, char *why, size_t size)
{
	double t_up;
	int moved, back;

	write_file(MOCK_LINK, "0");
	moved = exchange_until(c, a, 0);
	write_file(MOCK_LINK, "1");
	for (int i = 0; i < 300 && !links_up(); i++)
		usleep(20000);
	t_up = now_us();
	back = moved >= 0 && links_up() ? exchange_until(c, a, 1) : -1;
	if (back < 0) {
		snprintf(why, size, "cycle %d: left the rings after %d exchanges, links up %d, accelerated %d/%d, %s", k,
			 moved, links_up(), accelerated(c), accelerated(a), strerror(errno));
		return -1;
	}
	printf("linkback: cycle %d: failed over after %d exchanges, back on the rings %.0f ms after the link (%d exchanges)\n",
	       k, moved, (now_us() - t_up) / 1000, back);
	for (int i = 0; i < 50; i++)
		if (exchange(c, a, 3000) < 0) {
			snprintf(why, size, "cycle %d: an exchange on the rings again failed: %s", k, strerror(errno));
			return -1;
		}
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons(PORT) };
	int cycles = argc > 2 && !strcmp(argv[1], "cycles") ? atoi(argv[2]) : 1, l, c = -1, a = -1, one = 1, done = 0;
	const char *name = cycles > 1 ? "linkback_cycles" : "linkback_once";
	char why[200] = "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(l, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(l, 4) < 0 ||
	    (c = socket(AF_INET, SOCK_STREAM, 0)) < 0 || connect(c, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    (a = accept(l, NULL, NULL)) < 0) {
		result(name, 0, "set-up: %s", strerror(errno));
		return 1;
	}
	if (accelerated(c) != 1 || accelerated(a) != 1) {
		result(name, 0, "not accelerated at the start (%d/%d)", accelerated(c), accelerated(a));
		return 1;
	}
	for (int i = 0; i < 50 && !why[0]; i++)
		if (exchange(c, a, 3000) < 0)
			snprintf(why, sizeof(why), "before the first cut: %s", strerror(errno));
	while (!why[0] && done < cycles && cycle(c, a, done + 1, why, sizeof(why)) == 0)
		done++;
	result(name, done == cycles,
	       "%d of %d cuts: each failed over to kernel TCP and came back onto the rings, the same descriptors, %llu bytes each way checked%s%s",
	       done, cycles, (unsigned long long)off, why[0] ? "; " : "", why);
	close(c);
	close(a);
	close(l);
	return done == cycles ? 0 : 1;
}
