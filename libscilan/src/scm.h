/* scm.h — passing ring connections between processes with SCM_RIGHTS (the
 * sendmsg/recvmsg paths of descriptors that are not ring connections).
 */
#ifndef SCILAN_SCM_H
#define SCILAN_SCM_H

#include <sys/socket.h>
#include <sys/types.h>

/* sendmsg on a socket that is not a ring connection: ring connections among
 * the SCM_RIGHTS descriptors travel with their segment and bells. */
ssize_t sl_scm_sendmsg(int fd, const struct msghdr *msg, int flags);
/* recvmsg with control data on a socket that is not a ring connection:
 * connections that arrive with their rings are adopted, and the application
 * gets the control data the kernel would have given it. */
ssize_t sl_scm_recvmsg(int fd, struct msghdr *msg, int flags);

#endif
