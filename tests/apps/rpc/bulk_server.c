/* tests/apps/rpc/bulk_server.c — the rpc test server's procedures (bulk.x);
 * rpcgen generates the rest (main, rpcbind registration, svc_run). */
#include <stdlib.h>
#include <string.h>

#include "bulk.h"

/* FNV-1a: the checksum both sides compute. */
static u_int fnv1a(const block *b)
{
	u_int h = 2166136261u;

	for (u_int i = 0; i < b->block_len; i++)
		h = (h ^ (unsigned char)b->block_val[i]) * 16777619u;
	return h;
}

bool_t bulk_echo_1_svc(block *arg, block *res, struct svc_req *req)
{
	(void)req;
	res->block_len = arg->block_len;
	res->block_val = malloc(arg->block_len ? arg->block_len : 1);
	if (!res->block_val)
		return FALSE;
	memcpy(res->block_val, arg->block_val, arg->block_len);
	return TRUE;
}

bool_t bulk_sum_1_svc(block *arg, u_int *res, struct svc_req *req)
{
	(void)req;
	*res = fnv1a(arg);
	return TRUE;
}

/* svc_exit() makes svc_run return once this call's reply is sent: the
 * generated main then exits through exit(), so exit handlers (the preload
 * library's statistics line) run. */
bool_t bulk_bye_1_svc(void *arg, void *res, struct svc_req *req)
{
	(void)arg;
	(void)res;
	(void)req;
	svc_exit();
	return TRUE;
}

int bulkprog_1_freeresult(SVCXPRT *transp, xdrproc_t xdr_result, caddr_t result)
{
	(void)transp;
	xdr_free(xdr_result, result);
	return 1;
}
