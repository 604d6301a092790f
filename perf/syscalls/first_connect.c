/* first_connect.c — a plain POSIX client for perf/syscalls/first_connect.sh:
 * the time of its first and second connection (socket, connect, one byte
 * each way, close) in microseconds, from a fresh process, optionally with a
 * second thread alive (a threaded program grows its descriptor table the
 * expensive way).  scilan reaches it only through the preload hook.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static long long one_connection(const struct sockaddr_in *a)
{
	long long t0 = now_ns();
	int s = socket(AF_INET, SOCK_STREAM, 0);
	char b;

	if (s < 0 || connect(s, (const struct sockaddr *)a, sizeof(*a)) < 0 || write(s, "x", 1) != 1 ||
	    read(s, &b, 1) != 1) {
		perror("first_connect");
		exit(1);
	}
	close(s);
	return (now_ns() - t0) / 1000;
}

static void *idle_thread(void *arg)
{
	(void)arg;
	pause();
	return NULL;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	pthread_t t;
	long long first, second;

	if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "threaded") != 0)) {
		fprintf(stderr, "usage: first_connect PORT [threaded]\n");
		return 2;
	}
	a.sin_port = htons((unsigned short)atoi(argv[1]));
	if (argc == 3 && pthread_create(&t, NULL, idle_thread, NULL) != 0)
		return 1;
	first = one_connection(&a);
	second = one_connection(&a);
	printf("%lld %lld\n", first, second);
	return 0;
}
