/* ctl_topo.h — `scilan_ctl topo` (ctl_topo.c): the machine's NUMA layout from
 * hwloc and, for each NTB/ivshmem device, the CPUs to pin scilan processes to.
 */
#ifndef SCILAN_CTL_TOPO_H
#define SCILAN_CTL_TOPO_H

#include <stdbool.h>

/* `scilan_ctl [--json] topo`: 0, 1 (topology or PCI scan failed) or 2 (usage). */
int cmd_topo(int argc, char **argv, bool json);

#endif
