/* ctl_status.h — `scilan_ctl status`: link, window and endpoint state of the
 * scilan driver, read from its debugfs files (driver/scilan_main.c).
 */
#ifndef SCILAN_CTL_STATUS_H
#define SCILAN_CTL_STATUS_H

#include <stdbool.h>

/* 0; 1 driver missing or unreadable (message on stderr); 2 usage. */
int cmd_status(int argc, char **argv, bool json);

#endif
