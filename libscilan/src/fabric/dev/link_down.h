/* link_down.h — the device fabric's answer to a link that went down under a
 * connection (link_down.c).
 */
#ifndef SCILAN_LINK_DOWN_H
#define SCILAN_LINK_DOWN_H

#include "socket/sock_state.h"

/* The driver reset the endpoint (INFO says RESET, or the bell read
 * ECONNRESET): decide once what becomes of the connection; a second thread
 * waits for the first's decision.  Not with our ring or ctl locks held. */
void sl_dev_link_lost(struct sl_sock *s);
/* Why this connection may not fail over (NULL: it may): several processes
 * hold it (fork), and each would re-send and strip on its own. */
const char *sl_dev_fail_over_refused(struct sl_sock *s);

#endif
