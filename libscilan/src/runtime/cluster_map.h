/* cluster_map.h — the cluster map: which IP addresses belong to which scilan
 * node and over which fabric it is reached.  Parsed from $SCILAN_CONF or
 * /etc/scilan/cluster.conf; edited by `scilan_ctl map`.
 */
#ifndef SCILAN_CLUSTER_MAP_H
#define SCILAN_CLUSTER_MAP_H

#include <stddef.h>
#include <stdio.h>

#include "socket/sock_state.h"

#define SL_CLUSTER_CONF_DEFAULT "/etc/scilan/cluster.conf"
#define SL_MAP_DEVICE_DEFAULT "scilan0"

enum sl_map_fabric { SL_MAP_SHM, SL_MAP_DEV };

struct sl_map_entry {
	unsigned node;              /* node id, 1..65535 */
	struct sl_key addr;         /* port unused */
	enum sl_map_fabric fabric;
	char device[32];            /* dev fabric: the /dev name of the link (default scilan0) */
	char text[64];              /* the address as written */
};

struct sl_cluster_map {
	struct sl_map_entry *entries;
	size_t count;
};

/* The map's path: $SCILAN_CONF if set, else the system path. */
const char *sl_cluster_map_path(void);
/* Parse path into map.  A missing file is an empty map (0).  A bad line is
 * -1 with a message "FILE:LINE: what" in err (the map is left empty). */
int sl_cluster_map_load(const char *path, struct sl_cluster_map *map, char *err, size_t err_size);
/* The same for an open stream (path names it in messages); f stays open. */
int sl_cluster_map_read(FILE *f, const char *path, struct sl_cluster_map *map, char *err, size_t err_size);
void sl_cluster_map_free(struct sl_cluster_map *map);
/* The entry whose address is addr, or NULL. */
const struct sl_map_entry *sl_cluster_map_find(const struct sl_cluster_map *map, const struct sl_key *addr);
/* Is name usable as a DEVICE (a /dev name: letters, digits, '_', '-', '.';
 * not "." or ".."; shorter than sl_map_entry.device)? */
int sl_map_device_valid(const char *name);
/* Parse one address (IPv4 or IPv6 text) into key; 0 or -1. */
int sl_map_parse_addr(const char *text, struct sl_key *key);
/* Write the map in its file format (with a header comment). */
void sl_cluster_map_write(const struct sl_cluster_map *map, FILE *out);
const char *sl_map_fabric_name(enum sl_map_fabric f);

#endif
