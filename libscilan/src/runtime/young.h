/* young.h — a process's first moments with scilan: the 10 ms from its first
 * accelerated connection, during which set-up chores that can wait (the
 * statistics file, the janitor, the reopening probe) are put off.
 */
#ifndef SCILAN_YOUNG_H
#define SCILAN_YOUNG_H

#include <stdbool.h>
#include <stdint.h>

#define SL_YOUNG_NS 10000000

/* True within SL_YOUNG_NS of the first call (the clock starts there). */
bool sl_young(void);
/* What is left of it, in ns: 0 once over. */
int64_t sl_young_left_ns(void);

#endif
