/* test_segment.c — test-only: the shared segment behind a live connection,
 * for tests that play a hostile peer.  Linked into the test binaries only,
 * never into libscilan.so, libscilan.a or the preload library.
 */
#include "test_segment.h"

#include <errno.h>

#include "socket/sock_state.h"

int sl_test_segment(int fd, void **base, size_t *len, int *own_area)
{
	struct sl_sock *s = sl_sock_get(fd);

	if (!s || sl_sock_state(s) != SL_CONNECTED || !s->seg) {
		errno = ENOTCONN;
		return -1;
	}
	*base = s->seg;
	*len = s->seg_len;
	*own_area = s->own_area;
	return 0;
}
