/* fuzz_scm.c — the SCM_RIGHTS manifest a receiver reads from the last
 * descriptor of a message (scm.c, sl_scm_manifest_valid): an accepted one
 * only names descriptors of the message, as sl_scm_recvmsg indexes them. */
#include <stdbool.h>

#include "fuzz.h"
#include "process/scm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct manifest m;
	uint32_t nfds = fuzz_u8(&in); /* the message's descriptor count (at most SCM_MAX_FDS) */
	size_t got = in.left < sizeof(m) ? in.left : sizeof(m);
	int *fds, sum = 0;

	memset(&m, 0, sizeof(m));
	fuzz_take(&in, &m, got);
	if (nfds > SCM_MAX_FDS || !sl_scm_manifest_valid(&m, got, nfds))
		return 0;
	/* Exactly nfds descriptors: an index outside is an ASan report. */
	fds = malloc(nfds * sizeof(int));
	if (!fds)
		return 0;
	for (uint32_t i = 0; i < nfds; i++)
		fds[i] = (int)i;
	for (uint32_t i = 0; i < m.count; i++) {
		const int *copies = fds + m.app_fds + 3 * i;

		sum += fds[m.e[i].index] + copies[0] + copies[1] + copies[2];
		FUZZ_CHECK(m.e[i].own == 0 || m.e[i].own == 1 || m.e[i].own == SCM_OWN_LISTENER, "own %d", m.e[i].own);
	}
	sum += fds[nfds - 1];
	FUZZ_CHECK(m.app_fds < nfds && sum >= 0, "app_fds %u of %u", m.app_fds, nfds);
	free(fds);
	return 0;
}
