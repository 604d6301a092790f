/* registry.h — the shm fabric's listener registry: one file per listening
 * address under <rundir>/listen, alive while a listener holds a lock on it.
 */
#ifndef SCILAN_REGISTRY_H
#define SCILAN_REGISTRY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "socket/sock_state.h"

/* Register a listener: returns an fd holding the entry alive, or -1 (errno).
 * no_rdv: this listener holds no rendezvous (another holds the name), so
 * connectors of our user must name their offers (SL_REG_NAMED) for it. */
int sl_registry_add(const struct sl_key *key, uint64_t ring_bytes, bool no_rdv, char *path, size_t path_size);
/* Drop a registration; the entry disappears with the last listener. */
void sl_registry_remove(int fd, const char *path);
/* Unlink path even though other processes still hold it: the caller's
 * process is about to lose the right to serve it. */
void sl_registry_withdraw(int fd, const char *path);
/* An entry's flags: some holder of the listener accepts without its
 * rendezvous (an SO_REUSEPORT sibling, a re-exec'd master, a process that
 * made a passed socket listen): it finds offers only as files.  Sticky
 * while the entry has other holders. */
#define SL_REG_NAMED 1u
/* Not in the entry: sl_registry_find's word that its listener is in
 * another pid namespace than ours, where an offer file cannot be opened. */
#define SL_REG_OTHER_PIDNS 0x80000000u
/* Might a connector have named an offer for the entry we hold (fd, from
 * sl_registry_add) lately?  It asks for them, and a connector found it so
 * within the last seconds (each notes the time it found the entry asking:
 * sl_registry_find); true if it cannot be read.  For a holder of the
 * listener's rendezvous (rdv_holder), only an offer its connector could
 * not pass through the rendezvous counts (sl_registry_note_file_only):
 * every other one is in the rendezvous queue before its TCP connect. */
bool sl_registry_named(int fd, bool rdv_holder);
/* The entry's flags word, mapped read-only (the others holders' writes are
 * seen as they land), for sl_registry_named_at; NULL if it cannot be. */
const _Atomic uint32_t *sl_registry_map_flags(int fd);
void sl_registry_unmap_flags(const _Atomic uint32_t *flags);
/* sl_registry_named from the mapping, else from fd. */
bool sl_registry_named_at(const _Atomic uint32_t *flags, int fd, bool rdv_holder);
/* A connector's offer to key exists only as files (sl_registry_named). */
void sl_registry_note_file_only(const struct sl_key *key);
/* 1 if a live listener is registered exactly at key (its ring size in
 * *ring_bytes, its flags in *flags), 0 if not; stale entries of dead
 * processes are removed.  An entry that asks for named offers is noted as
 * found (sl_registry_named); one that cannot be is 0.  *flags also says
 * SL_REG_OTHER_PIDNS. */
int sl_registry_find(const struct sl_key *key, uint64_t *ring_bytes, uint32_t *flags);

/* Remove the entry at path if no listener holds it any more. */
void sl_registry_reap(const char *path);

#endif
