/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/* uapi/scilan.h — the /dev/scilanN ABI: endpoint ioctls, the mmap offsets of
 * the local and peer slices, and the wake-up tokens read() returns.
 * Shared by the driver, libscilan's device fabric and the kernel tests.
 */
#ifndef _UAPI_SCILAN_H
#define _UAPI_SCILAN_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define SCILAN_ABI_VERSION 2

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

struct scilan_listen {
	__u32 port;        /* 1..65535, unique per link */
	__u32 backlog;     /* 0: the module default */
};

struct scilan_connect {
	__u32 port;
	__u32 timeout_ms;  /* 0: the module default */
	__u64 tag;         /* carried to the listener's side, where
			    * SCILAN_IOC_ACCEPT_TAG takes the connection by it
			    */
};

/* Take the queued connection whose CONNECT carried tag (the newest one if
 * several did); never blocks: EAGAIN if none is queued.
 */
struct scilan_accept_tag {
	__s32 listener_fd;
	__u32 flags;       /* 0 */
	__u64 tag;
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
/* On a freshly opened endpoint: take the connection with a given tag. */
#define SCILAN_IOC_ACCEPT_TAG _IOW(SCILAN_IOC_MAGIC, 7, struct scilan_accept_tag)

#endif
