/* ctl_stat.h — `scilan_ctl stat`: live per-connection counters of running
 * scilan processes, read from their stats files.
 */
#ifndef SCILAN_CTL_STAT_H
#define SCILAN_CTL_STAT_H

#include <stdbool.h>

int cmd_stat(int argc, char **argv, bool json);

#endif
