/* ctl_fabric.h — the fabric part of `scilan_ctl topo` (ctl_fabric.c): this
 * node's ports, its peers' links and the cluster map's nodes on each.
 */
#ifndef SCILAN_CTL_FABRIC_H
#define SCILAN_CTL_FABRIC_H

#include <stdbool.h>

/* Print the fabric: as text lines, or as the member ,"fabric":{...} of the
 * JSON object topo prints.  0; -1 out of memory (nothing printed). */
int ctl_fabric_print(bool json);

#endif
