/* SPDX-License-Identifier: GPL-2.0 */
/* scilan_ntb.h — the NTB backend's state, shared by the client
 * (scilan_ntb.c: one sl_link per peer port of an ntb_dev) and the handshake
 * values over message registers for hardware without scratchpads
 * (scilan_ntb_msg.c).
 */
#ifndef SCILAN_NTB_H
#define SCILAN_NTB_H

#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>

#include "scilan.h"

struct ntb_dev;

/* The values each peer's handshake carries: the core's SL_SPAD_COUNT + 1,
 * then, when the sender sets the outbound translation (IDT), the address
 * of the receiver's buffer and the session (nonce) that announced it.
 */
enum { SL_NTB_ADDR_LO = SL_SPAD_COUNT + 1, SL_NTB_ADDR_HI, SL_NTB_ADDR_NONCE, SL_NTB_VALS };

/* Message encoding (scilan_ntb_msg.c): a key (a core value, or the address
 * record) and a 16-bit part of it, under the sender's generation of that
 * key, so that parts of two values are never mixed.
 */
#define SL_NTB_KEY_ADDR (SL_SPAD_COUNT + 1)
#define SL_NTB_KEYS (SL_NTB_KEY_ADDR + 1)
#define SL_NTB_ADDR_PARTS 7  /* address 4, nonce 2, check 1 */
#define SL_NTB_MAX_PARTS SL_NTB_ADDR_PARTS

struct sl_ntb;

struct sl_ntb_peer {
	struct sl_ntb *nd;
	struct sl_link *link;
	int pidx;
	int in_widx;              /* our inbound window for it (the peer's outbound index to us) */
	int out_widx;             /* our outbound window to it */
	u64 ring_bit;             /* one doorbell per peer: the bit that rings it */

	/* Message registers, outbound (nd->out_mutex): the values we announce,
	 * a generation per key, the messages still to send and where the last
	 * flush stopped at a busy register.
	 */
	u32 out_val[SL_NTB_VALS];
	u16 out_gen[SL_NTB_KEYS];
	u32 out_dirty;
	int out_cursor;
	/* ... inbound (nd->in_lock): the last value per index, the record's
	 * validity, and the parts of each key being assembled.
	 */
	u32 in_val[SL_NTB_VALS];
	bool in_addr_valid;
	struct {
		u16 gen;
		u8 have;
		u16 part[SL_NTB_MAX_PARTS];
	} in_asm[SL_NTB_KEYS];
};

/* One ntb_dev (ntb->ctx): its peers and how the hardware is used. */
struct sl_ntb {
	struct ntb_dev *ntb;
	int npeers;
	bool msgs;                /* handshake values over message registers, not scratchpads */
	bool out_trans;           /* the sender translates (ntb_peer_mw_set_trans) */
	bool db_words;            /* one doorbell bit per peer, the core's words behind it */
	int db_bits;              /* else: the doorbell bits the links use */
	int nvals;                /* scratchpads per peer */
	u64 db_mine;              /* db_words: the bit peers ring us with */
	u64 up_seen;              /* peer link bits at the last link event */
	bool link_enabled;
	int msg_regs;
	u64 msg_in, msg_out;      /* status bits of the inbound and outbound registers */
	struct mutex out_mutex;   /* outbound message registers and their status */
	spinlock_t in_lock;
	struct sl_ntb_peer peer[];
};

/* scilan_ntb_msg.c */
void sl_ntb_msg_init(struct sl_ntb *nd);
void sl_ntb_msg_write(struct sl_ntb_peer *p, int idx, u32 val);
u32 sl_ntb_msg_read(struct sl_ntb_peer *p, int idx);
bool sl_ntb_msg_record(struct sl_ntb_peer *p, u64 *addr, u32 *nonce);
void sl_ntb_msg_receive(struct sl_ntb *nd);
void sl_ntb_msg_forget(struct sl_ntb_peer *p);

#endif
