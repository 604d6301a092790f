/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/* uapi/scilan.h — the /dev/scilanN ABI: endpoint ioctls, the mmap offsets of
 * the local and peer slices, and the wake-up tokens read() returns.
 * Shared by the driver, libscilan's device fabric and the kernel tests.
 */
#ifndef _UAPI_SCILAN_H
#define _UAPI_SCILAN_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define SCILAN_ABI_VERSION 3

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
};

/* Every request names one of the caller's own TCP sockets: holding the
 * descriptor is the proof of owning the port, and the driver reads the
 * addresses from the socket (ARCHITECTURE.md, "Security model").
 */
struct scilan_listen {
	__s32 sockfd;      /* a listening TCP socket: its namespace, address and port */
	__u32 backlog;     /* 0: the module default */
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
	__u16 flags;       /* 0 */
	__u32 pad;         /* 0 */
};

/* Take the queued connection of the accepted TCP socket sockfd (its 4-tuple
 * and namespace select it; the newest if several); never blocks: EAGAIN if
 * none is queued.
 */
struct scilan_accept_sock {
	__s32 sockfd;
	__u32 flags;       /* 0 */
};

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

/* On a connected endpoint the program will not use (it fell back to
 * kernel TCP): its close makes the peer drop the connection if it is still
 * queued there, instead of leaving it for a later accept of that 4-tuple.
 */
#define SCILAN_IOC_ABANDON    _IO(SCILAN_IOC_MAGIC, 9)

#endif
