/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/* uapi/scilan.h — the /dev/scilanN ABI: endpoint ioctls, the mmap offsets of
 * the local and peer slices, and the wake-up tokens read() returns.
 * Shared by the driver, libscilan's device fabric and the kernel tests.
 */
#ifndef _UAPI_SCILAN_H
#define _UAPI_SCILAN_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define SCILAN_ABI_VERSION 8 /* 5: ACCEPT_SOCK pairs only what the client's driver vouched for; 6: INFO's ports;
			      * 7: the agreement (SCILAN_SLICE_AGREE_OFF, ABANDON's EALREADY);
			      * 8: late connects (SCILAN_CONNECT_LATE, ACCEPT_LATE, SEAM_POINT) */

/* Wake-up tokens: what the peer stimulated (bits of the value read() returns). */
#define SCILAN_TOKEN_DATA  0x1u /* the peer wrote data (or a FIN) into our slice */
#define SCILAN_TOKEN_SPACE 0x2u /* the peer freed space in its slice */
#define SCILAN_TOKEN_LOCAL 0x4u /* SCILAN_IOC_RING_SELF from this side */
#define SCILAN_TOKENS_ALL  0x7u

/* Endpoint states reported in scilan_info.ep_state. */
#define SCILAN_EP_IDLE       0
#define SCILAN_EP_LISTEN     1
#define SCILAN_EP_CONNECTED  2
#define SCILAN_EP_PEER_CLOSED 3
#define SCILAN_EP_RESET      4
#define SCILAN_EP_SET        5 /* an epoll set's event queue (SCILAN_IOC_SET_CREATE) */

struct scilan_info {
	__u32 abi_version;
	__u32 link_up;     /* handshake with the peer done */
	__u64 mw_size;     /* our inbound window */
	__u32 slice_size;  /* bytes per connection slice (both mmap regions) */
	__u32 nslices;     /* slices in our window */
	__u32 peer_nslices;
	__u32 ep_state;    /* SCILAN_EP_* of this endpoint */
	__u32 slice;       /* our slice, when connected */
	__u32 peer_slice;  /* the peer's slice we write into */
	__s32 local_port;  /* the fabric ids of this link's two ends (NTB port */
	__s32 peer_port;   /* numbers, ivshmem IVPositions); -1: not known */
};

/* Every request names one of the caller's own TCP sockets: holding the
 * descriptor is the proof of owning the port, and the driver reads the
 * addresses from the socket (ARCHITECTURE.md, "Security model").
 */
struct scilan_listen {
	__s32 sockfd;      /* a listening TCP socket: its namespace, address and port */
	__u32 backlog;     /* 0: the socket's own, as listen() set it (its accept
			    * queue's bound, capped by somaxconn)
			    */
};

struct scilan_connect {
	__s32 sockfd;      /* a TCP socket bound to its source port, not connected
			    * elsewhere; its address and port are the source
			    */
	__u32 timeout_ms;  /* 0: the module default */
	__u8 daddr[16];    /* destination: IPv6, or IPv4-mapped */
	__u8 saddr[16];    /* the source address, read only when the socket is
			    * bound to the wildcard address: one of ours
			    */
	__u16 dport;
	__u16 flags;       /* 0, or SCILAN_CONNECT_LATE */
	__u32 pad;         /* 0 */
};

/* A late connect (ABI 8): sockfd is a connection already established to
 * daddr:dport, which the caller moves onto the link live (a connection that
 * fell back to kernel TCP, offered the rings again).  The peer's driver
 * keeps it apart from the listener's backlog, so that no ACCEPT or
 * ACCEPT_SOCK pairs it, under a cap of its own (ENOBUFS when full); only an
 * ACCEPT_LATE of its 4-tuple does.  Each end's switch point then travels
 * through the drivers (ACCEPT_LATE's point, SEAM_POINT), never through the
 * peer's window: a point must be known before the peer's marker, which
 * crosses the kernel's connection, is read.
 */
#define SCILAN_CONNECT_LATE 0x1u

/* Take the queued connection of the accepted TCP socket sockfd (its 4-tuple
 * and namespace select it; the newest if several), once the client's driver
 * vouched that the client endpoint's socket holds that 4-tuple (ABI 5: at
 * most one control round trip, no user space on the other side).  EAGAIN:
 * none is queued, or the queued one is not that client's (closed; the
 * socket stays kernel TCP).  ETIMEDOUT, ECONNRESET, EINTR (fatal signal):
 * no answer; the connection's bytes may be in the ring, so reset it.
 */
struct scilan_accept_sock {
	__s32 sockfd;
	__u32 flags;       /* 0 */
};

/* ACCEPT_SOCK for a connection queued by a SCILAN_CONNECT_LATE (ABI 8), with
 * the acceptor's switch point: the client's driver, as it agrees, stores
 * point at SCILAN_SLICE_POINT_OFF of the client's local slice before its
 * agreement word says SCILAN_AGREE_ATTACHED.  Errors as ACCEPT_SOCK's; the
 * client must be there to agree (no proof by its CLOSE): a late connect
 * whose client left is dropped, EAGAIN.  ENOLINK: the link went down before
 * the client's answer (or the question found the control channel full):
 * nothing is published, and the socket stays kernel TCP, whole; a client
 * that agreed all the same cannot follow (its SEAM_POINT needs the session
 * that is gone) and resets.
 */
struct scilan_accept_late {
	__s32 sockfd;
	__u32 flags;       /* 0 */
	__u64 point;
};

/* The peer's switch point in our local slice (ABI 8), a __u64 our driver
 * stores: SCILAN_POINT_UNKNOWN from the connect until the peer's point
 * arrives (a late connect's client: by the acceptor's ACCEPT_LATE; its
 * acceptor: by the client's SEAM_POINT).  Past the control words, before
 * the agreement word; the peer's library never writes it.
 */
#define SCILAN_SLICE_POINT_OFF 4080u
#define SCILAN_POINT_UNKNOWN (~0ull)

/* mmap offsets: the local slice (cached; the ring we receive into) and the
 * peer's slice (write-combining on hardware; the ring we send into).  Each is
 * exactly slice_size bytes; MAP_SHARED only.
 */
#define SCILAN_MMAP_LOCAL 0ull
#define SCILAN_MMAP_PEER(slice_size) ((__u64)(slice_size))

#define SCILAN_IOC_MAGIC 'S'
#define SCILAN_IOC_INFO       _IOR(SCILAN_IOC_MAGIC, 1, struct scilan_info)
#define SCILAN_IOC_LISTEN     _IOW(SCILAN_IOC_MAGIC, 2, struct scilan_listen)
#define SCILAN_IOC_CONNECT    _IOW(SCILAN_IOC_MAGIC, 3, struct scilan_connect)
/* On a freshly opened endpoint: take the first connection queued on the
 * listener whose fd is the argument (blocks unless O_NONBLOCK).
 */
#define SCILAN_IOC_ACCEPT     _IOW(SCILAN_IOC_MAGIC, 4, __s32)
/* Wake the peer endpoint: SCILAN_TOKEN_DATA and/or SCILAN_TOKEN_SPACE. */
#define SCILAN_IOC_STIMULATE  _IOW(SCILAN_IOC_MAGIC, 5, __u32)
/* Post tokens to this endpoint itself (wakes our own poll/read). */
#define SCILAN_IOC_RING_SELF  _IOW(SCILAN_IOC_MAGIC, 6, __u32)
/* On a freshly opened endpoint: take the connection of an accepted socket. */
#define SCILAN_IOC_ACCEPT_SOCK _IOW(SCILAN_IOC_MAGIC, 8, struct scilan_accept_sock)
/* On a freshly opened endpoint: take the late connect of an accepted socket. */
#define SCILAN_IOC_ACCEPT_LATE _IOW(SCILAN_IOC_MAGIC, 12, struct scilan_accept_late)
/* On a late connect's client endpoint, once agreed, once: our switch point,
 * stored by the acceptor's driver at its slice's SCILAN_SLICE_POINT_OFF.
 * Returns when that driver acknowledged it.  EINVAL: not a late connect's
 * client, or a point already sent; ENOTCONN: not agreed; ECONNREFUSED: the
 * acceptor's driver holds no such connection (closed); ECONNRESET (link
 * down), ETIMEDOUT, EINTR (fatal signal): unknown whether it landed.
 */
#define SCILAN_IOC_SEAM_POINT _IOW(SCILAN_IOC_MAGIC, 13, __u64)

/* Event queues of epoll sets (ABI version 4; ARCHITECTURE.md, "The event
 * queue on the device fabric").  Each side's window holds SCILAN_SETS
 * pairs of pages, both written by the peer:
 *   marks page i: the marks of OUR set i: byte SCILAN_SET_MARKS_OFF + s is
 *     stored 1 by the peer's sender of the connection whose slice is our
 *     slice s ("look at it"); the owner exchanges it to 0.  The first word
 *     is the driver's stimulus word for the set.
 *   armed page i: word 0 is the armed count of the PEER's set i, stored by
 *     the peer's waiter, read by our senders before they ring that set.
 * A fresh endpoint becomes set i with SCILAN_IOC_SET_CREATE (the index is
 * returned, and INFO's slice is it, also after a reset; EAGAIN: all
 * SCILAN_SETS are taken, ENETUNREACH: link down) and
 * maps its marks page (read-write, to clear them) at SCILAN_MMAP_SET_MARKS
 * and its armed word in the peer's window at SCILAN_MMAP_SET_ARMED, one page
 * each.  poll/read as a connection's: POLLIN and SCILAN_TOKEN_DATA when a
 * peer's SCILAN_IOC_STIMULATE_SET rang it (or RING_SELF); POLLERR after link
 * down.  A connected endpoint may map, beyond its two slices, the peer's
 * SCILAN_SETS marks pages (write: it marks its connection in the peer's
 * sets) and our SCILAN_SETS armed pages (read-only), and ring set i of the
 * peer with SCILAN_IOC_STIMULATE_SET(i).
 */
#define SCILAN_SETS 16u
/* Slices of one link at most: a set's marks page has a byte for each. */
#define SCILAN_MAX_SLICES 2048u
#define SCILAN_SET_PAGE 4096u
#define SCILAN_SET_MARKS_OFF 64u
#define SCILAN_MMAP_SET_MARKS 0ull
#define SCILAN_MMAP_SET_ARMED ((__u64)SCILAN_SET_PAGE)
#define SCILAN_MMAP_PEER_MARKS(slice_size) (2 * (__u64)(slice_size))
#define SCILAN_MMAP_OUR_ARMED(slice_size) (2 * (__u64)(slice_size) + (__u64)SCILAN_SETS * SCILAN_SET_PAGE)
#define SCILAN_IOC_SET_CREATE _IOR(SCILAN_IOC_MAGIC, 10, __u32)
#define SCILAN_IOC_STIMULATE_SET _IOW(SCILAN_IOC_MAGIC, 11, __u32)

/* On a connected endpoint the program will not use (it fell back to
 * kernel TCP): its close makes the peer drop the connection if it is still
 * queued there, instead of leaving it for a later accept of that 4-tuple.
 * On a client endpoint it is also the revoke of the agreement (ABI 7):
 * EALREADY if the acceptor's driver paired the connection first (the rings
 * carry it); after success no acceptor can pair it.
 */
#define SCILAN_IOC_ABANDON    _IO(SCILAN_IOC_MAGIC, 9)

/* The agreement word of a client connection (ABI 7): a __u32 at this offset
 * of its local slice (the control page's tail, which the peer's library
 * never writes), stored SCILAN_AGREE_ATTACHED by the client's driver when it
 * answers the acceptor's pairing, the moment the acceptor agreed.  The
 * library may store its own values there (other than ATTACHED) while the
 * agreement is open.
 */
#define SCILAN_SLICE_AGREE_OFF 4092u
#define SCILAN_AGREE_ATTACHED 2u
/* An accepting endpoint's word is ATTACHED from the pairing on.  When the
 * link goes down, every agreed connection's word becomes LINK_DOWN, so the
 * library sees it at its next look at the word, without a system call (a
 * sender writing into the peer's sink page would not notice otherwise).
 */
#define SCILAN_AGREE_LINK_DOWN 16u

#endif
