/* ctl_links.h — the scilan driver's links (one /dev/scilanN per peer) as
 * `scilan_ctl status`, `topo` and `stat` see them: read from the driver's
 * debugfs state files, or from SCILAN_IOC_INFO when debugfs is not readable.
 */
#ifndef SCILAN_CTL_LINKS_H
#define SCILAN_CTL_LINKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The numeric keys of a state file, in this order (ctl_links.c keys[]). */
enum ctl_key {
	K_PROTO, K_MW_SIZE, K_SLICE_SIZE, K_SLICES, K_PEER_SLICES, K_SLICES_BUSY, K_DB_BITS, K_GENERATION,
	K_DB_IRQS, K_WAKEUPS, K_STIMULI, K_SETS_BUSY, K_SET_WAKEUPS, K_SET_STIMULI, K_CTL_RX, K_CTL_TX, K_ZAPS,
	K_ENDPOINTS, K_COUNT
};

#define CTL_EXTRA_MAX 16

struct ctl_link {
	char name[32];                  /* scilanN */
	int index;                      /* N */
	char backend[16];               /* "ntb", "ivshmem"; "" unknown */
	char doorbell[8];               /* "words", "bits"; "" unknown */
	bool ports_known[2];            /* local_port, peer_port given and >= 0 */
	long port[2];                   /* [0] this node's fabric port, [1] the peer's */
	int up;                         /* 1 up, 0 down, -1 unknown */
	bool known[K_COUNT];
	unsigned long long v[K_COUNT];
	unsigned connected;             /* ep lines in state connected */
	char *ep_text;                  /* the ep and listener lines, as the driver wrote them */
	size_t nextra;                  /* backend lines (ivshmem_id ...), kept as text */
	char extra_key[CTL_EXTRA_MAX][32];
	char extra_val[CTL_EXTRA_MAX][32];
};

struct ctl_links {
	struct ctl_link *v;
	size_t n;
	bool from_info;                 /* debugfs unreadable: SCILAN_IOC_INFO of /dev/scilanN */
	char why[512];                  /* why debugfs was not read ("" if it was) */
};

/* The key's name in the state file. */
const char *ctl_key_name(enum ctl_key k);

/* Parse one state file (text) into l, named name; any key may be missing or
 * garbage: it stays unknown. */
void ctl_link_parse(struct ctl_link *l, const char *name, FILE *f);

/* Every link, sorted by number: the state files under $SCILAN_DRIVER_STATE
 * (else /sys/kernel/debug/scilan); if that directory cannot be read, every
 * scilanN under $SCILAN_DEV_DIR (else /dev) asked with SCILAN_IOC_INFO, with
 * the reason in links->why.  0; -1 when neither gives a link and the
 * directory could not be read (message in links->why). */
int ctl_links_read(struct ctl_links *links);
void ctl_links_free(struct ctl_links *links);
/* The link named name, or NULL. */
const struct ctl_link *ctl_links_find(const struct ctl_links *links, const char *name);

/* Do a and b sit on the same port of the same backend (a group)? */
bool ctl_link_same_port(const struct ctl_link *a, const struct ctl_link *b);

/* Sort sel so that each port's links stand together, in number order. */
void ctl_links_by_port(const struct ctl_link **sel, size_t n);

/* Print into buf: the value, or "?" when unknown. */
const char *ctl_link_num(const struct ctl_link *l, enum ctl_key k, char *buf, size_t size);
const char *ctl_link_port(const struct ctl_link *l, int which, char *buf, size_t size);
const char *ctl_link_state(const struct ctl_link *l);   /* "up", "down", "?" */
/* JSON: the value or null. */
void ctl_json_num(FILE *out, const struct ctl_link *l, enum ctl_key k);
void ctl_json_port(FILE *out, const struct ctl_link *l, int which);

#endif
