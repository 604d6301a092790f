/* handover.h — carrying connected scilan sockets across exec (used by the
 * preload hook around the exec family and at start-up).
 */
#ifndef SCILAN_HANDOVER_H
#define SCILAN_HANDOVER_H

#include <stddef.h>

#include "sock.h"

#define SL_HANDOVER_ENV "SCILAN_HANDOVER"

/* Describe every connected socket that survives exec (no FD_CLOEXEC) into
 * buf, creating inheritable copies of its segment and bells; returns how
 * many.  A connection that cannot be described is reset, never lost silently. */
int sl_handover_export(char *buf, size_t size);
/* The exec failed: close the copies export made. */
void sl_handover_abandon(const char *list);
/* In the new image: take over the listed connections; returns how many. */
int sl_handover_adopt(const char *list);

#endif
