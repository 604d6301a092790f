// SPDX-License-Identifier: GPL-2.0
/* scilan_ntb_msg.c — the handshake's scratchpads over NTB message registers,
 * for hardware that has none (IDT): the last value per (peer, index) is kept
 * on both sides, and every value travels as 16-bit parts under the
 * sender's generation of it, in whichever inbound register of the peer is
 * free.  The core rewrites its values periodically ("last value wins"), so
 * a message that finds every register busy is sent at the next rewrite.
 */
#include <linux/ntb.h>
#include <linux/random.h>

#include "scilan_ntb.h"

/* A message: key (3 bits), part (3), generation (10), data (16). */
#define SL_MSG_KEY(m) ((m) >> 29)
#define SL_MSG_PART(m) (((m) >> 26) & 7)
#define SL_MSG_GEN(m) (((m) >> 16) & 0x3ff)
#define SL_MSG_GEN_MASK 0x3ff

static int sl_msg_parts(int key)
{
	return key < SL_NTB_KEY_ADDR ? 2 : key == SL_NTB_KEY_ADDR ? SL_NTB_ADDR_PARTS : 0;
}

/* Parts of a record from another session must not pass for this one (a
 * stale part of an equal generation): a check over the six others.
 */
static u16 sl_msg_check(const u16 *part)
{
	u32 c = 0x5ca1;
	int i;

	for (i = 0; i < SL_NTB_ADDR_PARTS - 1; i++)
		c = (c * 31 + part[i]) & 0xffff;
	return c;
}

/* The messages of one round in the order they go: the address record
 * first (it must be there when the peer's acknowledgement is), then the
 * core's values.
 */
static int sl_msg_count(const struct sl_ntb *nd)
{
	return (nd->out_trans ? SL_NTB_ADDR_PARTS : 0) + 2 * (SL_SPAD_COUNT + 1);
}

static void sl_msg_slot(const struct sl_ntb *nd, int m, int *key, int *part)
{
	if (nd->out_trans) {
		if (m < SL_NTB_ADDR_PARTS) {
			*key = SL_NTB_KEY_ADDR;
			*part = m;
			return;
		}
		m -= SL_NTB_ADDR_PARTS;
	}
	*key = m / 2;
	*part = m % 2;
}

static u32 sl_msg_encode(const struct sl_ntb_peer *p, int key, int part)
{
	u16 parts[SL_NTB_ADDR_PARTS];
	u32 data;

	if (key < SL_NTB_KEY_ADDR) {
		data = (p->out_val[key] >> (16 * part)) & 0xffff;
	} else {
		parts[0] = p->out_val[SL_NTB_ADDR_LO] & 0xffff;
		parts[1] = p->out_val[SL_NTB_ADDR_LO] >> 16;
		parts[2] = p->out_val[SL_NTB_ADDR_HI] & 0xffff;
		parts[3] = p->out_val[SL_NTB_ADDR_HI] >> 16;
		parts[4] = p->out_val[SL_NTB_ADDR_NONCE] & 0xffff;
		parts[5] = p->out_val[SL_NTB_ADDR_NONCE] >> 16;
		parts[6] = sl_msg_check(parts);
		data = parts[part];
	}
	return (u32)key << 29 | (u32)part << 26 | (u32)(p->out_gen[key] & SL_MSG_GEN_MASK) << 16 | data;
}

static void sl_msg_dirty_key(struct sl_ntb_peer *p, int key)
{
	int m, k, part;

	for (m = 0; m < sl_msg_count(p->nd); m++) {
		sl_msg_slot(p->nd, m, &k, &part);
		if (k == key)
			p->out_dirty |= BIT(m);
	}
}

/* Into any free inbound register of the peer: a write into a full one
 * fails and says so in our outbound status (read back: the status read
 * also flushes the posted write).
 */
static bool sl_msg_send(struct sl_ntb *nd, int pidx, u32 msg)
{
	struct ntb_dev *ntb = nd->ntb;
	u64 out = nd->msg_out;
	int midx;

	for (midx = 0; midx < nd->msg_regs && out; midx++, out &= out - 1) {
		u64 bit = out & -out;

		ntb_msg_clear_sts(ntb, bit);
		if (ntb_peer_msg_write(ntb, pidx, midx, msg))
			return false;
		if (!(ntb_msg_read_sts(ntb) & bit))
			return true;
	}
	ntb_msg_clear_sts(ntb, nd->msg_out);
	return false;
}

/* What is still to send, from where the last flush stopped, until the
 * peer's registers are all busy.
 */
static void sl_msg_flush(struct sl_ntb_peer *p)
{
	int n = sl_msg_count(p->nd), i, m, key, part;

	for (i = 0; i < n && p->out_dirty; i++) {
		m = (p->out_cursor + i) % n;
		if (!(p->out_dirty & BIT(m)))
			continue;
		sl_msg_slot(p->nd, m, &key, &part);
		if (!sl_msg_send(p->nd, p->pidx, sl_msg_encode(p, key, part))) {
			p->out_cursor = m;
			return;
		}
		p->out_dirty &= ~BIT(m);
	}
}

static void sl_msg_set(struct sl_ntb_peer *p, int idx, u32 val, int key)
{
	if (p->out_val[idx] == val)
		return;
	p->out_val[idx] = val;
	p->out_gen[key]++;
	sl_msg_dirty_key(p, key);
}

/* The core's peer_spad_write.  Its rounds start with SL_SPAD_MAGIC: then
 * everything is sent again (a peer that restarted knows nothing).  Our
 * nonce also goes into the address record, with the buffer's address,
 * in one step (one generation): a record never mixes two sessions.
 */
void sl_ntb_msg_write(struct sl_ntb_peer *p, int idx, u32 val)
{
	struct sl_ntb *nd = p->nd;
	struct sl_link *link = p->link;

	if (idx < 0 || idx > SL_SPAD_COUNT)
		return;
	mutex_lock(&nd->out_mutex);
	if (idx == SL_SPAD_MAGIC)
		p->out_dirty = BIT(sl_msg_count(nd)) - 1;
	sl_msg_set(p, idx, val, idx);
	if (idx == SL_SPAD_NONCE && nd->out_trans && link->lwin &&
	    (p->out_val[SL_NTB_ADDR_LO] != lower_32_bits(link->lwin_dma) ||
	     p->out_val[SL_NTB_ADDR_HI] != upper_32_bits(link->lwin_dma) ||
	     p->out_val[SL_NTB_ADDR_NONCE] != val)) {
		p->out_val[SL_NTB_ADDR_LO] = lower_32_bits(link->lwin_dma);
		p->out_val[SL_NTB_ADDR_HI] = upper_32_bits(link->lwin_dma);
		p->out_val[SL_NTB_ADDR_NONCE] = val;
		p->out_gen[SL_NTB_KEY_ADDR]++;
		sl_msg_dirty_key(p, SL_NTB_KEY_ADDR);
	}
	sl_msg_flush(p);
	mutex_unlock(&nd->out_mutex);
}

u32 sl_ntb_msg_read(struct sl_ntb_peer *p, int idx)
{
	unsigned long flags;
	u32 v;

	if (idx < 0 || idx > SL_SPAD_COUNT)
		return 0;
	spin_lock_irqsave(&p->nd->in_lock, flags);
	v = p->in_val[idx];
	spin_unlock_irqrestore(&p->nd->in_lock, flags);
	return v;
}

/* The peer's buffer address and the session that announced it. */
bool sl_ntb_msg_record(struct sl_ntb_peer *p, u64 *addr, u32 *nonce)
{
	unsigned long flags;
	bool valid;

	spin_lock_irqsave(&p->nd->in_lock, flags);
	valid = p->in_addr_valid;
	*addr = (u64)p->in_val[SL_NTB_ADDR_HI] << 32 | p->in_val[SL_NTB_ADDR_LO];
	*nonce = p->in_val[SL_NTB_ADDR_NONCE];
	spin_unlock_irqrestore(&p->nd->in_lock, flags);
	return valid;
}

/* The peer's link went down: what it said belongs to a lost session. */
void sl_ntb_msg_forget(struct sl_ntb_peer *p)
{
	unsigned long flags;

	spin_lock_irqsave(&p->nd->in_lock, flags);
	memset(p->in_val, 0, sizeof(p->in_val));
	memset(p->in_asm, 0, sizeof(p->in_asm));
	p->in_addr_valid = false;
	spin_unlock_irqrestore(&p->nd->in_lock, flags);
}

/* One message from the peer (hostile until checked: a bad key or part is
 * dropped, a value is whatever the peer says, as a scratchpad's would be).
 */
static void sl_msg_take(struct sl_ntb_peer *p, u32 msg)
{
	int key = SL_MSG_KEY(msg), part = SL_MSG_PART(msg), nparts = sl_msg_parts(key);
	u16 gen = SL_MSG_GEN(msg);
	typeof(p->in_asm[0]) *a;

	if (part >= nparts)
		return;
	a = &p->in_asm[key];
	spin_lock(&p->nd->in_lock);
	if (a->gen != gen) {
		a->gen = gen;
		a->have = 0;
	}
	a->part[part] = msg & 0xffff;
	a->have |= BIT(part);
	if (a->have == BIT(nparts) - 1) {
		a->have = 0;
		if (key < SL_NTB_KEY_ADDR) {
			p->in_val[key] = a->part[0] | (u32)a->part[1] << 16;
		} else if (a->part[6] == sl_msg_check(a->part)) {
			p->in_val[SL_NTB_ADDR_LO] = a->part[0] | (u32)a->part[1] << 16;
			p->in_val[SL_NTB_ADDR_HI] = a->part[2] | (u32)a->part[3] << 16;
			p->in_val[SL_NTB_ADDR_NONCE] = a->part[4] | (u32)a->part[5] << 16;
			p->in_addr_valid = true;
		}
	}
	spin_unlock(&p->nd->in_lock);
}

/* The message event (interrupt context): every full inbound register is
 * read and freed, until none is (a register filled meanwhile raises no
 * new event while the status is not all clear).  A message from a peer
 * whose link is down is from a lost session.
 */
void sl_ntb_msg_receive(struct sl_ntb *nd)
{
	struct ntb_dev *ntb = nd->ntb;
	u64 up = ntb_link_is_up(ntb, NULL, NULL), sts, in;
	int rounds, midx, pidx;
	u32 msg;

	for (rounds = 0; rounds < 16; rounds++) {
		sts = ntb_msg_read_sts(ntb) & nd->msg_in;
		if (!sts)
			break;
		for (midx = 0, in = nd->msg_in; in; midx++, in &= in - 1) {
			u64 bit = in & -in;

			if (!(sts & bit))
				continue;
			pidx = -1;
			msg = ntb_msg_read(ntb, &pidx, midx);
			ntb_msg_clear_sts(ntb, bit);
			if (pidx >= 0 && pidx < nd->npeers && (up & BIT_ULL(pidx)))
				sl_msg_take(&nd->peer[pidx], msg);
		}
	}
}

void sl_ntb_msg_init(struct sl_ntb *nd)
{
	int pidx;

	mutex_init(&nd->out_mutex);
	spin_lock_init(&nd->in_lock);
	nd->msg_in = ntb_msg_inbits(nd->ntb);
	nd->msg_out = ntb_msg_outbits(nd->ntb);
	nd->msg_regs = min3(ntb_msg_count(nd->ntb), (int)hweight64(nd->msg_in), (int)hweight64(nd->msg_out));
	/* A random first generation: a restarted sender's parts do not
	 * complete what its previous life left half sent.
	 */
	for (pidx = 0; pidx < nd->npeers; pidx++) {
		u16 g = get_random_u32();
		int k;

		for (k = 0; k < SL_NTB_KEYS; k++)
			nd->peer[pidx].out_gen[k] = g + k;
	}
}
