/* sln_bar.c — the N-guest suite's barrier (tests/kernel/init-n), a static
 * program outside the hook, over kernel TCP on the guests' virtio-net:
 * `sln_bar serve PORT` (guest 0, in the background) lets a step's waiters
 * go once COUNT of them arrived; `sln_bar wait ADDR PORT STEP COUNT SECONDS`
 * blocks until then: exit 0, or 1 when SECONDS passed first.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_WAITERS 64

static int serve(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct { int fd, count; char step[64]; } w[MAX_WAITERS];
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1, n = 0;

	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 64) < 0) {
		perror("sln_bar: listen");
		return 1;
	}
	for (;;) {
		char line[96] = "";
		int fd = accept(l, NULL, NULL), got = 0, count = 0;
		ssize_t k;

		if (fd < 0)
			continue;
		/* One short line; a waiter sends it at once. */
		while (got < (int)sizeof(line) - 1 && (k = read(fd, line + got, 1)) == 1 && line[got] != '\n')
			got++;
		line[got] = '\0';
		if (n == MAX_WAITERS || sscanf(line, "%63s %d", w[n].step, &count) != 2 || count < 1) {
			close(fd);
			continue;
		}
		w[n].fd = fd;
		w[n].count = count;
		n++;
		int here = 0;

		for (int i = 0; i < n; i++)
			here += !strcmp(w[i].step, w[n - 1].step);
		if (here < count)
			continue;
		char step[64];

		strcpy(step, w[n - 1].step);
		for (int i = 0; i < n;) {
			if (strcmp(w[i].step, step)) {
				i++;
				continue;
			}
			if (write(w[i].fd, "go\n", 3) != 3)
				perror("sln_bar: write");
			close(w[i].fd);
			w[i] = w[--n];
		}
	}
}

static int wait_step(const char *addr, int port, const char *step, int count, int seconds)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	time_t end = time(NULL) + seconds;
	char line[96], ans[4] = "";

	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1)
		return 2;
	snprintf(line, sizeof(line), "%s %d\n", step, count);
	while (time(NULL) < end) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
			close(fd);
			usleep(200000);
			continue;
		}
		if (write(fd, line, strlen(line)) != (ssize_t)strlen(line)) {
			close(fd);
			continue;
		}
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = (int)(end - time(NULL));

		if (poll(&p, 1, left > 0 ? left * 1000 : 0) == 1 && read(fd, ans, 3) == 3 && !memcmp(ans, "go\n", 3)) {
			close(fd);
			return 0;
		}
		close(fd);
		break;
	}
	fprintf(stderr, "sln_bar: step %s: not all %d came within %d s\n", step, count, seconds);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "serve"))
		return serve(atoi(argv[2]));
	if (argc == 7 && !strcmp(argv[1], "wait"))
		return wait_step(argv[2], atoi(argv[3]), argv[4], atoi(argv[5]), atoi(argv[6]));
	fprintf(stderr, "usage: sln_bar serve PORT | sln_bar wait ADDR PORT STEP COUNT SECONDS\n");
	return 2;
}
