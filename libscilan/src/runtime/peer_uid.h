/* peer_uid.h — what a uid the kernel reports for another process
 * (SO_PEERCRED, sock_diag) tells in this process's user namespace (peer_uid.c).
 */
#ifndef SCILAN_PEER_UID_H
#define SCILAN_PEER_UID_H

#include <stdbool.h>
#include <sys/types.h>

/* Do both uids name one user each?  Not the overflow uid where this
 * process's user namespace leaves some uid unmapped: every unmapped uid
 * reads as that one.  Reads /proc only when one of them is the overflow uid. */
bool sl_uids_name_users(uid_t a, uid_t b);

/* Does a process the kernel reports as speaker own what the kernel says
 * owner owns?  The same user, or root (who could take it by other means).
 * Only for uids that name users (sl_uids_name_users). */
bool sl_uid_may_speak_for(uid_t speaker, uid_t owner);

#endif
