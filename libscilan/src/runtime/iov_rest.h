/* iov_rest.h — the bytes of an iovec array from an offset on, as the
 * kernel's readv/writev take them: what a call that went part of the way
 * (a send before a promotion's decision, a MSG_WAITALL read across the
 * seam) hands on for the rest.
 */
#ifndef SCILAN_IOV_REST_H
#define SCILAN_IOV_REST_H

#include <stdlib.h>
#include <sys/uio.h>

/* rest[] (stack's room, else allocated: free it when it is not stack) and
 * its count, or -1 (no memory). */
static inline int sl_iov_rest(const struct iovec *iov, int cnt, size_t off, struct iovec *stack, int room,
			      struct iovec **rest)
{
	int i = 0, n = 0;

	while (i < cnt && off >= iov[i].iov_len)
		off -= iov[i++].iov_len;
	*rest = stack;
	if (cnt - i > room && !(*rest = malloc(sizeof(**rest) * (size_t)(cnt - i))))
		return -1;
	for (; i < cnt; i++, n++, off = 0) {
		(*rest)[n].iov_base = (char *)iov[i].iov_base + off;
		(*rest)[n].iov_len = iov[i].iov_len - off;
	}
	return n;
}

#endif
