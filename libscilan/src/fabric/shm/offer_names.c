/* offer_names.c — the names and descriptors of a shm connection's offer:
 * the wake-up FIFOs beside the offer file, and unmapping a segment with its
 * descriptors.  (Nothing lingers any more: an offer still out at close is
 * revoked and its bytes go onto the kernel socket, agree.c.)
 */
#include "fabric/shm/offer_names.h"

#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/own_fd.h"

void sl_shm_unmap(void *seg, size_t len, const int fds[SL_SHM_FDS], const char *offer_path)
{
	if (seg)
		munmap(seg, len);
	for (int i = 0; i < SL_SHM_FDS; i++)
		sl_own_fd_close(fds[i]);
	if (offer_path && *offer_path)
		sl_shm_unlink_offer(offer_path);
}

int sl_shm_bell_path(const char *offer_path, int which, char *buf, size_t size)
{
	if (snprintf(buf, size, "%s.bell%d", offer_path, which) >= (int)size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

void sl_shm_unlink_offer(const char *offer_path)
{
	char path[SL_BELL_PATH_SIZE];

	unlink(offer_path);
	for (int i = 0; i < 2; i++)
		if (sl_shm_bell_path(offer_path, i, path, sizeof(path)) == 0)
			unlink(path);
}
