/* native_pair.c — a program written for scilan: both ends of one connection
 * through the native API of libscilan.so (scilan.h), one message each way.
 * test_preload runs it under the hook too, which must then be the only
 * copy of the library the program uses (hook/preload.map).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include <scilan.h>

int main(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a), vlen = sizeof(int);
	int l = scilan_socket(AF_INET, SOCK_STREAM, 0), c = scilan_socket(AF_INET, SOCK_STREAM, 0), s, acc = -1;
	char ping[6] = "", pong[6] = "";

	if (l < 0 || c < 0 || scilan_bind(l, (struct sockaddr *)&a, len) || scilan_listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &len) || scilan_connect(c, (struct sockaddr *)&a, len) ||
	    (s = scilan_accept(l, NULL, NULL)) < 0)
		return perror("set-up"), 1;
	if (scilan_send(c, "ping", 4, 0) != 4 || scilan_recv(s, ping, 4, MSG_WAITALL) != 4 ||
	    scilan_send(s, "pong", 4, 0) != 4 || scilan_recv(c, pong, 4, MSG_WAITALL) != 4 ||
	    scilan_getsockopt(c, SOL_SCILAN, SCILAN_SO_ACCELERATED, &acc, &vlen))
		return perror("exchange"), 1;
	printf("%s %s accelerated %d\n", ping, pong, acc);
	return scilan_close(s) | scilan_close(c) | scilan_close(l);
}
