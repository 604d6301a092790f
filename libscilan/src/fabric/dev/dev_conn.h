/* dev_conn.h — what the device fabric's files share (fabric_dev.c, late.c,
 * dev_links.c): the map's device entries, the links' nodes, a connection's
 * mapping and agreement word; and the late moves of a live connection (late.c).
 */
#ifndef SCILAN_DEV_CONN_H
#define SCILAN_DEV_CONN_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/cluster_map.h"
#include "socket/sock_state.h"

/* The map entry that sends dst over a device, or NULL. */
const struct sl_map_entry *sl_dev_entry(const struct sl_key *dst);
/* A key's address as the driver takes it: IPv6, IPv4 as IPv4-mapped. */
void sl_dev_addr16(const struct sl_key *k, uint8_t out[16]);
/* /dev/scilanN's path. */
void sl_dev_link_path(int link, char *path, size_t size);
/* N of a link's device name "scilanN" (N at most SL_DEV_LINK_MAX), or -1. */
#define SL_DEV_LINK_MAX 65535
int sl_dev_link_number(const char *name);
/* The N of every /dev/scilanN, in order, into *links (malloc'd, the
 * caller's to free; NULL when none): how many. */
int sl_dev_link_numbers(int **links);
/* N of the /dev/scilanN the endpoint fd was opened as; -1 if not known. */
int sl_dev_link_of(int fd);
/* SCILAN_IOC_INFO into *in, refusing a driver of another ABI or a slice
 * size that cannot hold a ring: 0, or -1 with errno (EPROTO). */
struct scilan_info;
int sl_dev_link_info(int fd, struct scilan_info *in);
/* The largest power-of-two ring that fits a slice after its control page
 * (0 if none does). */
uint64_t sl_dev_ring_for_slice(uint64_t slice);
/* A link's device name is at most this long, its NUL included. */
#define SL_DEV_NAME_MAX 32
/* A fresh endpoint of the link /dev/NAME (one of the library's own
 * descriptors, O_NONBLOCK), or -1. */
int sl_dev_open_link(const char *name);
void sl_dev_close_quietly(int fd);
/* The connected endpoint fd's two slices mapped as s's rings (own: our
 * area, 0 the connecting side's). */
int sl_dev_map_connection(struct sl_sock *s, int fd, int own);
/* CONNECT over the link the map names for dst (flags: SCILAN_CONNECT_*),
 * mapped as s's rings, its agreement word OFFERED.  0, or -1 with errno
 * (said in the log; ENOSPC: no slice left). */
int sl_dev_connect(struct sl_sock *s, const struct sl_key *dst, const struct sl_key *src, uint16_t flags);
/* The agreement word in our own slice (the driver's and ours). */
_Atomic uint32_t *sl_dev_agree_word(struct sl_sock *s);
/* A connected endpoint the program will not use: the peer drops it. */
void sl_dev_abandon(int fd);
/* on(s, l, i) for each link i of the listener's, the one the map names for
 * peer first, until one says other than 0 (taken, or a reset): its answer. */
int sl_dev_each_link(struct sl_sock *s, const struct sl_sock *listener, const struct sl_key *peer,
		     int (*on)(struct sl_sock *s, const struct sl_dev_listen *l, int i));

/* The fabric's late moves (sl_fabric_ops, promotion.c): CONNECT_LATE,
 * ACCEPT_LATE with the acceptor's point, the driver's point word, and
 * SEAM_POINT. */
int sl_dev_offer_late(struct sl_sock *s, const struct sl_key *dst, const struct sl_key *src, uint64_t peer_ring);
int sl_dev_take_late(struct sl_sock *s, struct sl_sock *listener, struct sl_key *local, struct sl_key *peer);
const _Atomic uint64_t *sl_dev_late_peer_point(struct sl_sock *s, int side);
int sl_dev_late_publish(struct sl_sock *s, uint64_t x);

#endif
