/* rdv_stranger.h — the hostile local processes the rendezvous tests play
 * (rdv_stranger.c): a forger of offers and a squatter on a listener's name,
 * run as another user (test_rdv_trust.c, test_rdv_userns.c).
 */
#ifndef SCILAN_TEST_RDV_STRANGER_H
#define SCILAN_TEST_RDV_STRANGER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "socket/sock_state.h"
#include "testutil.h"

#define NOBODY 65534

struct rdv_stranger {
	struct tu_sync sync;
	struct sl_key dst, src;
	uid_t uid; /* the squatter's or the forger's, 0: NOBODY */
	bool refused_ok; /* the forger's ring may come back refused */
};

/* In a child: all of uid's ids (and no supplementary groups). */
void rdv_become(uid_t uid);
void rdv_become_nobody(void);
/* 127.0.0.1:port as a key. */
struct sl_key rdv_loopback(uint16_t port);
/* tu_spawn bodies, arg a struct rdv_stranger: a well-formed segment of the
 * stranger's own offered for dst/src before the victim connects (reports
 * 1, then, when told, fails if anyone attached it); the rendezvous name of
 * dst bound before the real listener (reports 1, then, when told, fails if
 * an offer reached it). */
int rdv_forge_offer(void *st);
int rdv_squat(void *st);

#endif
