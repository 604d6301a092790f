/* seam.h — where a live kernel TCP stream hands over to a ring (promotion,
 * issue 26): each end's switch point counted by its kernel socket, the
 * marker byte written there, and a receive that reads the kernel stream up
 * to the peer's switch point and never hands the program the marker or a
 * byte after it (seam.c; the protocol is tests/model/promote.pml).
 */
#ifndef SCILAN_SEAM_H
#define SCILAN_SEAM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* The byte an end writes on its kernel stream at its switch point: the last
 * one it ever sends there.  It wakes a peer asleep in the kernel, and a
 * receiver that finds another byte at the switch point resets. */
#define SL_SEAM_MARKER 0x5a

/* A published switch point while the end has not published one. */
#define SL_SEAM_UNKNOWN UINT64_MAX

/* Both counts hold before either end's FIN, which the kernel counts as one
 * more byte: a connection one end shut down does not move. */
/* Bytes ever given to our kernel socket to send (by anyone holding it: the
 * kernel's count, not ours): acknowledged plus still queued.  The end that
 * connected (the active opener) says so: its kernel counts the
 * acknowledgement of its SYN as a byte acknowledged, and the acceptor's
 * count of what it read does not.  0, or -1 with errno. */
int sl_seam_sent_total(int fd, bool connector, uint64_t *total);
/* Bytes of the peer's stream our kernel socket has handed to readers:
 * received minus still queued.  0, or -1 with errno. */
int sl_seam_read_total(int fd, uint64_t *total);

/* Is the connection established, neither end's FIN sent or seen (the
 * counts hold only then)? */
bool sl_seam_established(int fd);

/* Can our kernel socket take the marker now without blocking (its send
 * memory, or POLLOUT where the kernel does not say)?  Asked before our
 * switch point is published: once it is, the marker must follow. */
bool sl_seam_room(int fd);

/* How many more bytes a connector whose late offer is out may put into its
 * kernel socket and still have room for its marker when the acceptor
 * claims (SIZE_MAX where the kernel does not say).  Without that room the
 * connector cannot follow, and a full-duplex stream deadlocks: the
 * acceptor, on its ring already, waits for the connector to read it, the
 * connector waits for the acceptor to read its kernel bytes. */
size_t sl_seam_send_allowance(int fd);
/* Write the marker (after our switch point was published, with no other
 * call of ours sending on fd).  0, or -1 with errno: the caller resets, as
 * the peer would wait at our switch point for ever. */
int sl_seam_mark(int fd);

/* The receiving half: how far we read the peer's kernel stream. */
struct sl_seam_rx {
	uint64_t read;  /* bytes of the peer's kernel stream read so far */
	bool crossed;   /* its marker was read: the rest comes from the ring */
};

/* Start at the kernel's own count (no read of ours may be under way).
 * 0, or -1 with errno. */
int sl_seam_rx_start(int fd, struct sl_seam_rx *rx);

/* Where the peer's switch point is: *x, once published; and, when word is
 * not NULL (the connector reading the acceptor's point), only once that
 * offer word says agreed: the acceptor publishes its point before its
 * claim, and a claim it lost leaves a point that never counts. */
struct sl_seam_point {
	const _Atomic uint64_t *x;
	const _Atomic uint32_t *word;
};

/* A receive of the peer's kernel stream (recvmsg's flags) that stops at its
 * switch point (SL_SEAM_UNKNOWN until published, before its marker).
 * Bytes before it: their count.  At it: the marker is consumed,
 * rx->crossed set, and 0 returned with nothing delivered: the caller reads
 * the ring.  -1 with errno: the kernel's error, or EPROTO when what follows
 * the switch point is not the marker alone (a writer past the hook, a
 * hostile peer): the caller resets. */
ssize_t sl_seam_recv(int fd, struct sl_seam_rx *rx, const struct sl_seam_point *point, const struct iovec *iov,
		     int cnt, int flags);

#endif
