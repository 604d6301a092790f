/* tests/apps/rpc/bulk_client.c — the rpc test's client: echoes and checksums
 * random blocks through the server (bulk.x), comparing every reply. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bulk.h"

static u_int fnv1a(const char *p, u_int n)
{
	u_int h = 2166136261u;

	for (u_int i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 16777619u;
	return h;
}

/* bulk_client HOST CALLS MAX [bye]: CALLS blocks of random sizes up to MAX
 * bytes, each echoed (compared byte for byte) and checksummed (compared with
 * our own) over clnt_create(.., "tcp"), then BULK_BYE when asked.  Exit 0
 * when every reply matched. */
int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s HOST CALLS MAX [bye]\n", argv[0]);
		return 2;
	}
	const char *host = argv[1];
	long calls = atol(argv[2]), max = atol(argv[3]);
	int bye = argc > 4 && strcmp(argv[4], "bye") == 0;
	if (calls < 1 || max < 1) {
		fprintf(stderr, "bulk_client: CALLS and MAX must be positive\n");
		return 2;
	}

	CLIENT *cl = clnt_create(host, BULKPROG, BULKVERS, "tcp");
	if (!cl) {
		clnt_pcreateerror(host);
		return 1;
	}
	char *buf = malloc(max);
	if (!buf)
		return 1;
	srandom(12345);
	unsigned long long sent = 0, received = 0;
	long bad = 0;
	for (long i = 0; i < calls; i++) {
		u_int len = 1 + random() % max;
		for (u_int j = 0; j < len; j++)
			buf[j] = (char)random();
		block arg = { .block_len = len, .block_val = buf }, echo = { 0, NULL };
		u_int sum = 0;

		if (bulk_echo_1(&arg, &echo, cl) != RPC_SUCCESS) {
			clnt_perror(cl, "BULK_ECHO");
			return 1;
		}
		if (echo.block_len != len || memcmp(echo.block_val, buf, len) != 0)
			bad++;
		xdr_free((xdrproc_t)xdr_block, (char *)&echo);
		if (bulk_sum_1(&arg, &sum, cl) != RPC_SUCCESS) {
			clnt_perror(cl, "BULK_SUM");
			return 1;
		}
		if (sum != fnv1a(buf, len))
			bad++;
		sent += 2ull * len;
		received += len;
	}
	if (bye && bulk_bye_1(NULL, NULL, cl) != RPC_SUCCESS) {
		clnt_perror(cl, "BULK_BYE");
		return 1;
	}
	clnt_destroy(cl);
	free(buf);
	printf("bulk_client: %ld calls, %llu bytes sent, %llu bytes received, %ld mismatched replies\n",
	       2 * calls, sent, received, bad);
	return bad ? 1 : 0;
}
