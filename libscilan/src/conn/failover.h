/* failover.h — a device connection whose link went down continues on its
 * companion kernel TCP connection: each end re-sends, from its mirror, what
 * the other may not have seen, behind a header saying where it starts; each
 * end drops from the kernel stream what it had read already (failover.c).
 */
#ifndef SCILAN_FAILOVER_H
#define SCILAN_FAILOVER_H

#include <stdbool.h>
#include <stdint.h>

#include "socket/sock_state.h"

/* The header each end writes first onto the kernel stream at fail-over. */
#define SL_FAIL_OVER_MAGIC 0x564f4c53u /* "SLOV" */
#define SL_FAIL_OVER_VERSION 1u
struct sl_fail_over_hdr {
	uint32_t magic, version;
	uint64_t from; /* the index of our stream the re-sent bytes start at */
};

/* With the three locks held (bypass.c's move): send our header and the
 * bytes [from, write) of our mirror onto the kernel socket, and note what
 * to drop of the peer's.  NULL, or why the connection must be reset. */
const char *sl_fail_over(struct sl_sock *s);

/* The peer's kernel bytes arrived while the rings carry the connection:
 * do they start with a fail-over header (its link went down before ours
 * did)?  1 yes, 0 no, -1 a prefix of one (the rest is on its way). */
int sl_fail_over_seen(struct sl_sock *s);

/* Before a receive on the kernel socket (io_general.c): read the peer's
 * header and drop what we had read already, waiting as the call may
 * (flags' MSG_DONTWAIT, the socket's O_NONBLOCK).  0 when the kernel
 * stream now continues where our reads stopped; -1 with errno: EAGAIN
 * (not there yet), or the connection's error (a reset, the kernel's). */
int sl_fail_over_strip(struct sl_sock *s, int flags);
/* A poll's readiness of a connection whose strip is pending: the strip
 * runs first, never waiting, and the peer's header (or the bytes still to
 * drop) is not reported readable, so that a blocking receive after POLLIN
 * finds the program's bytes, as on TCP. */
short sl_fail_over_ready(struct sl_sock *s, short events);

/* Across exec (handover.c): a plain connection whose strip is pending is
 * described as text (out, at most size bytes): the socket's cookie, what
 * was read of the peer's header, what to drop, the ring size and the
 * program's user timeout, so that the new image strips as this one would
 * have, never reading the header as the program's bytes.  false if no
 * strip is pending any more, or it cannot be described (out too small, no
 * cookie): the caller then looks at sl_sock_strip_pending. */
#define SL_FAIL_OVER_DESC_MAX 128
bool sl_fail_over_describe(struct sl_sock *s, char *out, size_t size);
/* In the new image: take over kernel socket fd as a plain connection with that strip pending (desc
 * as described; nothing in it is trusted).  0, or -1 with errno: EINVAL,
 * fd is not the socket described (a stale description: leave it alone);
 * EPROTO, it is, but the rest cannot be read (its stream starts with the
 * header: reset it); ENOMEM. */
int sl_fail_over_adopt(int fd, int domain, const char *desc);

/* Before the connection goes to another process with SCM_RIGHTS: the
 * strip completes now if the peer's header is here (never waiting): true if
 * one is still pending, which the receiver must then take over. */
bool sl_fail_over_strip_now(struct sl_sock *s);
/* Still pending then: the receiver could not tell the header from the
 * program's bytes, so the connection is reset, loudly (an RST both ends
 * see). */
void sl_fail_over_reset_unpassable(struct sl_sock *s);

/* After the move: the peer's header is to be stripped, we had read `read`
 * bytes of its stream, and the program's user timeout was user_timeout.
 * The record is shared with the processes a later fork makes.  -1: no
 * memory. */
int sl_fail_over_strip_begin(struct sl_sock *s, uint64_t read, int user_timeout);
/* Let go of this process's strip record (its last strip ended, or the
 * socket's slot is reused). */
void sl_fail_over_forget(struct sl_sock *s);

/* Send head (head_len bytes, may be 0), then re-send ring bytes [from, to)
 * of ring (ours to send: the peer's ring, or our mirror of it) onto the
 * kernel socket, then a shutdown the program made (bypass.c).  false
 * (errno; ETIMEDOUT: the peer took nothing for 5 s) if the socket refused
 * them. */
bool sl_move_resend(struct sl_sock *s, const void *head, size_t head_len, const unsigned char *ring, uint64_t from,
		    uint64_t to);

#endif
