/* scen_promote.h — what progs/promote.c shares with its edge-triggered
 * scenarios (scen_promote_ev.c) and its single-call ones
 * (scen_promote_calls.c): the request-response protocol, the short
 * connections before a pool, and the event-loop servers. */
#ifndef SCEN_PROMOTE_H
#define SCEN_PROMOTE_H

#include <stdbool.h>
#include <stdint.h>

#define MAX_MSG (16 << 10)

/* A request: its length (4 bytes) and sequence (4 bytes), then that many
 * bytes of stream `seq`; the reply: the same header, then the request's
 * bytes each xored with the sequence's low byte. */
struct hdr {
	uint32_t len, seq;
};

int64_t now_ns(void);
/* The rest of a request whose header came, and its reply. */
void serve_request(int c, const struct hdr *h);
/* count short connections to port, one request each. */
void shorts(uint16_t port, int count, uint32_t *seq);
/* Their server: accepts count connections from l, a thread serving each. */
void serve_shorts(int l, int count);
struct kid;
/* A listener served by server(args) in a child (args[0]: the listener;
 * the caller's args[1..3]), 20 short connections to it, then one more,
 * returned: it lives on kernel TCP until its move. */
int connect_after_shorts(struct kid *k, int (*server)(void *), int args[4]);

/* Accepts `count` connections and serves them all until each has ended:
 * from the calling thread, edge-triggered, or (worker) from a worker
 * thread it passes each ready connection to. */
void serve_evloop(int l, int count, bool worker);
/* The etwriter and etidle scenarios (scen_promote_ev.c). */
int sc_etwriter(void);
int sc_etidle(void);
/* The single-call scenarios (scen_promote_calls.c). */
int sc_sendintr(void);
int sc_pollmark(void);
int sc_pollmarkq(void);
int sc_waitall(void);
int sc_shutrd(void);
int sc_readrestart(void);

#endif
