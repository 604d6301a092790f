/* stats_file.h — the live per-connection counters a process publishes in
 * <rundir>/stats/<pid> (a shared mapping that scilan_ctl stat reads), and the
 * file format both sides share.
 */
#ifndef SCILAN_STATS_FILE_H
#define SCILAN_STATS_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "socket/sock_state.h"

#define SL_STATS_MAGIC 0x3654535320434c53ull /* "SLC SST6": reasons numbered as fallback.h says, keys with a scope,
					      * each connection's fabric and flags */
#define SL_STATS_SLOTS 1024

enum sl_stats_fabric { SL_STATS_TCP = 0, SL_STATS_SHM = 1, SL_STATS_DEV = 2 };
/* A slot's flags: the connection began on kernel TCP and moved onto the
 * rings (promotion). */
#define SL_STATS_PROMOTED 1u

struct sl_stats_slot {
	_Atomic uint32_t in_use;
	int32_t fd;
	uint32_t reason; /* enum sl_fb: SL_FB_NONE accelerated, else why kernel TCP carries it */
	uint32_t side;   /* enum sl_fb_side */
	uint32_t fabric; /* enum sl_stats_fabric: what carries it */
	int32_t link;    /* SL_STATS_DEV: N of the /dev/scilanN it rides (-1 not known) */
	uint32_t flags;  /* SL_STATS_PROMOTED */
	struct sl_key local, peer;
	struct sl_counters ctr;
};

struct sl_stats_file_hdr {
	uint64_t magic;
	int32_t pid;
	uint32_t slots;
	char comm[16];
	_Atomic uint64_t accelerated; /* connections accelerated so far */
};

/* After the slots (a file of an older library ends before it): the pid
 * namespace the header's pid means something in.  Processes of pid
 * namespaces of their own (containers) may share the runtime directory, and
 * the same pid (1, often) in two of them: the second names its file
 * <pid>.<namespace> (stats_file.c), and scilan_ctl finds the process behind
 * each file by pid and namespace in its own /proc (ctl_procs.c). */
#define SL_STATS_IDENT_MAGIC 0x31544e4449534c53ull /* "SLSIDNT1" */

struct sl_stats_ident {
	uint64_t magic; /* SL_STATS_IDENT_MAGIC once pidns is written */
	uint32_t pidns; /* inode of /proc/self/ns/pid, 0 not known */
	uint32_t reserved;
};

struct sl_stats_map {
	struct sl_stats_file_hdr hdr;
	struct sl_stats_slot slot[SL_STATS_SLOTS];
	struct sl_stats_ident ident;
};

/* The size of a file an older library made: it ends with the slots. */
#define SL_STATS_MAP_V6_SIZE offsetof(struct sl_stats_map, ident)

/* A connection became accelerated: count it in a slot of our stats file;
 * until the file is made (sl_stats_publish_idle) it counts in the socket. */
void sl_stats_conn_open(struct sl_sock *s);
/* Make the file if an accelerated connection waits for it, and give every
 * such connection its slot: when the process has time (idle.c). */
void sl_stats_publish_idle(void);
/* Whether an accelerated connection waits for the file. */
bool sl_stats_publish_pending(void);
/* A connection is kernel TCP for s->fb_reason (fallback.c): listed in a
 * slot of our stats file (created on first use) until it closes. */
void sl_stats_conn_plain(struct sl_sock *s);
/* It closes: its counters join the process totals, its slot is freed. */
void sl_stats_conn_close(struct sl_sock *s);
/* In a forked child: the file is the parent's; count privately again. */
void sl_stats_file_after_fork_child(void);
/* Remove the statistics file at path if no live process holds it (its
 * owner's lock is gone); true if it was a dead process's. */
bool sl_stats_file_reap(const char *path);
/* Our lock's descriptor moved to another number (own_fd.c). */
void sl_stats_file_renumber(int from, int to);

#endif
