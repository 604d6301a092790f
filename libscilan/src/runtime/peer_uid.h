/* peer_uid.h — what a uid the kernel reports for another process
 * (SO_PEERCRED, sock_diag) tells in this process's user namespace (peer_uid.c).
 */
#ifndef SCILAN_PEER_UID_H
#define SCILAN_PEER_UID_H

#include <stdbool.h>
#include <sys/types.h>

/* False for the overflow uid where this process's user namespace leaves
 * some uid unmapped: every unmapped uid reads as that one, so it does not
 * name one user.  True for every other uid. */
bool sl_uid_names_one_user(uid_t uid);

/* Does a process the kernel reports as speaker own what the kernel says
 * owner owns?  The same user, or root (who could take it by other means);
 * never a uid that does not name one user. */
bool sl_uid_may_speak_for(uid_t speaker, uid_t owner);

#endif
