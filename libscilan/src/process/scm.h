/* scm.h — passing ring connections between processes with SCM_RIGHTS (the
 * sendmsg/recvmsg paths of descriptors that are not ring connections).
 */
#ifndef SCILAN_SCM_H
#define SCILAN_SCM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#define SCM_MAX_FDS 253 /* the kernel's SCM_MAX_FD: more in one message is EINVAL */
#define MANIFEST_MAGIC "scilan-scm-1"

/* One passed connection: the application's descriptor at index `index` of
 * the message's list; its segment and bells follow the application's
 * descriptors at app_fds + 3 * k (segment, our bell, the peer's bell).
 * own SCM_OWN_LISTENER: a listener, followed by its first three rendezvous
 * sockets (rendezvous.c; the first repeated where it has fewer). */
#define SCM_OWN_LISTENER 2
struct manifest_entry {
	int32_t index, domain, own;
};

/* The manifest sent last in the list, in a sealed memfd. */
struct manifest {
	char magic[16];
	uint32_t app_fds, count;
	struct manifest_entry e[SCM_MAX_FDS / 3];
};

/* sendmsg on a socket that is not a ring connection: ring connections among
 * the SCM_RIGHTS descriptors travel with their segment and bells. */
ssize_t sl_scm_sendmsg(int fd, const struct msghdr *msg, int flags);
/* recvmsg with control data on a socket that is not a ring connection:
 * connections that arrive with their rings are adopted, and the application
 * gets the control data the kernel would have given it. */
ssize_t sl_scm_recvmsg(int fd, struct msghdr *msg, int flags);

/* Is m (got bytes read from a received manifest, the rest zero) a manifest
 * for a message of nfds descriptors?  Only then do its indices name
 * descriptors of that message. */
bool sl_scm_manifest_valid(const struct manifest *m, size_t got, uint32_t nfds);

#endif
