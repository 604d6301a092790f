/* segment.h — building, validating and binding a connection segment (header
 * plus two areas) to a socket's rings; shared by every fabric.
 */
#ifndef SCILAN_SEGMENT_H
#define SCILAN_SEGMENT_H

#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ring/layout.h"
#include "socket/sock_state.h"

/* Fill hdr for rings of cap0 (creator receives) and cap1 (attacher receives). */
/* The seals every segment carries: nobody can resize it under a mapping. */
#define SL_SEGMENT_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
/* Is fd a segment as we make them: a regular (memfd) file carrying
 * SL_SEGMENT_SEALS?  0 with *st filled, else -1 with errno (EPERM, EINVAL). */
struct stat;
int sl_segment_fd_check(int fd, struct stat *st);
/* Can this process reopen a mapped segment through /proc/self/map_files
 * (CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE: root, not an ordinary user)?
 * Then a connection needs no memfd to be handed on (exec, SCM_RIGHTS), and
 * drops it to spare a descriptor; else it keeps it.  Probed once, again
 * after sl_segment_reopen_forget (the process is changing user). */
bool sl_segment_reopenable(void);
/* What the probe said: 1, 0, or -1 if it was not made yet: then it is made
 * at the process's next wait (sl_segment_reopen_idle), not now. */
int sl_segment_reopenable_known(void);
void sl_segment_reopen_idle(void);
void sl_segment_reopen_forget(void);
/* Accepting side: we hold the segment offered for our connection but will
 * not use it.  Store REFUSED in its offer word (compare-and-swap from
 * OFFERED: a decided offer stays decided) and ring bell (the connector's,
 * -1: none), so the connector moves to kernel TCP at once.  Only where that
 * store is safe whoever made the file: a regular file that cannot shrink
 * under our mapping (else nothing is written); the bell only if it is a
 * pipe, made non-blocking first (a hostile sender could pass a full
 * blocking pipe, or a file on a mount that never answers). */
void sl_segment_refuse(int fd, int bell);
void sl_segment_layout(struct sl_seg_header *hdr, uint64_t cap0, uint64_t cap1);
/* Check a header copied out of untrusted memory against the mapping size. */
int sl_segment_valid(const struct sl_seg_header *hdr, uint64_t size);
/* Map in, by reading, the pages a connection's first exchange uses. */
void sl_segment_touch(const void *base, const struct sl_seg_header *hdr);
/* Point s's rings at the mapping (touched first); own is the area index s
 * receives into. */
void sl_segment_bind(struct sl_sock *s, void *base, size_t len, int own, const struct sl_seg_header *hdr);
/* The same for areas that are not in one segment (the device fabric maps
 * each side's slice separately): base/len is what s->seg names, h the
 * holder words of our side. */
void sl_segment_bind_areas(struct sl_sock *s, void *base, size_t len, int own, struct sl_seg_holders *h,
			   struct sl_area_ctl *own_ctl, struct sl_area_ctl *peer_ctl, uint64_t own_cap,
			   uint64_t peer_cap);
/* Point s at a segment other processes of our side hold already (exec and
 * SCM_RIGHTS adoption): the holder words are left as they are. */
void sl_segment_adopt(struct sl_sock *s, void *base, size_t len, int own, const struct sl_seg_header *hdr);
/* The same for areas the fabric mapped itself (the device fabric's slices):
 * the holder words and users stay as the other holders left them. */
void sl_segment_adopt_areas(struct sl_sock *s, void *base, size_t len, int own, struct sl_seg_holders *h,
			    struct sl_area_ctl *own_ctl, struct sl_area_ctl *peer_ctl, uint64_t own_cap,
			    uint64_t peer_cap);
/* Before another process may take the receive direction over: publish our
 * exact read index, if this process is the one using the direction (another
 * process's published index is newer than our private one). */
void sl_rx_publish_exact(struct sl_sock *s);
/* A new holder (an exec hand-over) takes its private ring indices from the
 * shared words; false if they are impossible (the caller resets). */
bool sl_segment_recover_indices(struct sl_sock *s);
/* Forget the mapping: point s at a shut, reset stand-in (see segment.c). */
void sl_segment_unbind(struct sl_sock *s);
/* Drop this process's hold; true if it was the last live holder of our side
 * (the close the peer must see); false when it held nothing (any more). */
bool sl_segment_release_holder(struct sl_sock *s);
/* Write our SL_PEER_* bits into the peer's area (under ctl_lock). */
void sl_segment_set_state(struct sl_sock *s, uint32_t bits);
/* Take bits back (only SL_PEER_UNFENCED is ever taken back: conn.c). */
void sl_segment_clear_state(struct sl_sock *s, uint32_t bits);

/* Before using a direction (under its ring lock): if another process of our
 * side (forked) used it last, take over its published indices.  While the
 * side is shared, a reader publishes its index at once, so the hand-over is
 * exact; at most one process may use a direction at a time. */
void sl_claim_rx_take(struct sl_sock *s);
void sl_claim_tx_take(struct sl_sock *s);
static inline void sl_claim_rx(struct sl_sock *s)
{
	if (atomic_load_explicit(&s->users[SL_USE_RX], memory_order_relaxed) != sl_self_pid)
		sl_claim_rx_take(s);
}

static inline void sl_claim_tx(struct sl_sock *s)
{
	if (atomic_load_explicit(&s->users[SL_USE_TX], memory_order_relaxed) != sl_self_pid)
		sl_claim_tx_take(s);
}

/* Readiness views that take nothing over: bytes waiting in our ring and
 * room in the peer's, whichever process of our side uses the direction
 * (with its rx_lock / tx_lock held); -1 if the peer's index is impossible. */
int64_t sl_rx_waiting(struct sl_sock *s);
int64_t sl_tx_room(struct sl_sock *s, uint64_t want);

#endif
