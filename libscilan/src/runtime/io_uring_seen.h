/* io_uring_seen.h — whether this process holds an io_uring instance: its
 * reads and writes of a socket never pass the hook, so a connection such a
 * process holds cannot be moved onto the rings safely (io_uring_seen.c).
 */
#ifndef SCILAN_IO_URING_SEEN_H
#define SCILAN_IO_URING_SEEN_H

#include <stdbool.h>

/* True once an io_uring descriptor was found in this process (for good:
 * a ring may be closed and its requests still run); a look that finds none
 * is believed for a second. */
bool sl_io_uring_seen(void);

#endif
