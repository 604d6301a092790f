/* rundir.h — the per-user runtime directory that holds the listener registry
 * and connect offers: private (mode 0700, owned by the user) or not used.
 */
#ifndef SCILAN_RUNDIR_H
#define SCILAN_RUNDIR_H

#include <stddef.h>

/* Resolve ($SCILAN_RUNDIR, else /run/user/<uid>/scilan when /run/user/<uid>
 * is the user's private directory, else /dev/shm/scilan-<uid>, else
 * $XDG_RUNTIME_DIR/scilan, else /tmp/scilan-<uid>), create it and its
 * subdirectories if missing and check it is private.  Returns 0, or -1 after
 * logging why (no acceleration). */
int sl_rundir_prepare(char *path, size_t size);

#endif
