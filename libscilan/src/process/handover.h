/* handover.h — carrying connected scilan sockets across exec (used by the
 * preload hook around the exec family and at start-up).
 */
#ifndef SCILAN_HANDOVER_H
#define SCILAN_HANDOVER_H

#include <stdbool.h>
#include <stddef.h>

#include "socket/sock_state.h"

#define SL_HANDOVER_ENV "SCILAN_HANDOVER"

/* One entry of the variable: "fd:domain:seg:brx:btx:own", entries joined
 * by ';'.  seg -1: a listening socket; seg -2: another descriptor (fd) of
 * the connection adopted under descriptor brx; btx SL_HANDOVER_DEV: a
 * device connection, seg its holder page's memfd and brx its endpoint. */
#define SL_HANDOVER_DEV (-3)
/* seg SL_HANDOVER_STRIP: a connection that failed over to kernel TCP with
 * the peer's fail-over header not yet stripped; the rest of the entry
 * (tail) says where the strip stands (failover.h). */
#define SL_HANDOVER_STRIP (-4)
struct sl_handover_entry {
	int fd, domain, seg, brx, btx, own;
	const char *tail; /* what follows the six numbers, up to ';' or the end */
};

/* Parse the entry at the start of list (the variable comes from whoever ran
 * exec: nothing in it is trusted).  Returns where the next entry starts, ""
 * after the last one, or NULL if list does not start with an entry. */
const char *sl_handover_parse(const char *list, struct sl_handover_entry *e);

/* Describe every connected socket that survives exec (no FD_CLOEXEC) into
 * buf, creating inheritable copies of its segment and bells; returns how
 * many (-1, ENOMEM: nothing described, the exec must fail).  A connection
 * that cannot be described is reset, never lost silently. */
int sl_handover_export(char *buf, size_t size);
/* The exec failed: close the copies export made. */
void sl_handover_abandon(const char *list);
/* In the new image: take over the listed connections; returns how many. */
int sl_handover_adopt(const char *list);
/* The segment of s as a new descriptor (the creator's memfd, else reopened
 * through /proc/self/map_files), or -1. */
int sl_handover_segment_fd(struct sl_sock *s);
/* Take over one connection of side own on kernel socket fd, given its
 * segment and bells (the bells are used through descriptions of our own
 * and closed, runtime/bell_fd.h; seg is not closed).  The holder table
 * already counts this process: by its entry (exec: same pid), or as the
 * holder the sender expects (expected: SCM_RIGHTS, whose bells a stranger
 * may have sent).  -1 with EINVAL if seg is no valid segment, EBADF if the
 * bells are not pipes we can use (then the bells stay the caller's). */
int sl_handover_adopt_one(int fd, int domain, int seg, int brx, int btx, int own, bool expected);

#endif
