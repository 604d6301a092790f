/* offer.h — the connect offer record the connecting side writes beside the
 * listener (fabric_shm.c) and the accepting side reads: untrusted bytes
 * until sl_offer_parse has checked them.
 */
#ifndef SCILAN_OFFER_H
#define SCILAN_OFFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OFFER_MAGIC 0x3146464f20434c53ull /* "SLC OFF1" */

struct offer {
	uint64_t magic;
	int32_t pid;
	int32_t memfd;
	uint64_t ino;
	uint64_t dev;
};

/* The offer in the len bytes at buf (as read from the offer file), if they
 * are one: exactly one record, our magic, a pid and a descriptor number
 * that can name a /proc entry. */
bool sl_offer_parse(const void *buf, size_t len, struct offer *out);

#endif
