/* cluster_map.c — reads and writes the cluster map file: one line per node
 * address, "NODE ADDRESS [shm|dev [DEVICE]]", '#' comments.  Errors name file and line
 * so that a typo is found at once, and never stop the program using it.
 */
#include "runtime/cluster_map.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/config.h"

const char *sl_cluster_map_path(void)
{
	const char *env = getenv("SCILAN_CONF");

	return env && *env ? env : SL_CLUSTER_CONF_DEFAULT;
}

const char *sl_map_fabric_name(enum sl_map_fabric f)
{
	return f == SL_MAP_DEV ? "dev" : "shm";
}

int sl_map_parse_addr(const char *text, struct sl_key *key)
{
	memset(key, 0, sizeof(*key));
	if (inet_pton(AF_INET, text, key->addr) == 1) {
		key->family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, text, key->addr) == 1) {
		static const unsigned char mapped[12] = { [10] = 0xff, [11] = 0xff };

		key->family = AF_INET6;
		if (memcmp(key->addr, mapped, 12) == 0) {
			memmove(key->addr, key->addr + 12, 4);
			memset(key->addr + 4, 0, 12);
			key->family = AF_INET;
		}
		return 0;
	}
	return -1;
}

int sl_map_device_valid(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= sizeof(((struct sl_map_entry *)0)->device) || !strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("_-.", name[i]))
			return 0;
	return 1;
}

static int add_entry(struct sl_cluster_map *map, const struct sl_map_entry *e)
{
	struct sl_map_entry *grown = realloc(map->entries, (map->count + 1) * sizeof(*grown));

	if (!grown)
		return -1;
	map->entries = grown;
	map->entries[map->count++] = *e;
	return 0;
}

/* Parse one non-comment line; returns NULL or a description of the error. */
static const char *parse_line(char *line, struct sl_map_entry *e)
{
	char *fields[5];
	int n = 0;
	long long node;

	for (char *tok = strtok(line, " \t\r\n"); tok; tok = strtok(NULL, " \t\r\n")) {
		if (n == 5)
			return "too many fields (want: NODE ADDRESS [shm|dev [DEVICE]])";
		fields[n++] = tok;
	}
	if (n < 2)
		return "missing fields (want: NODE ADDRESS [shm|dev [DEVICE]])";
	if (n > 4)
		return "too many fields (want: NODE ADDRESS [shm|dev [DEVICE]])";
	memset(e, 0, sizeof(*e));
	if (sl_parse_int(fields[0], 1, 65535, &node) < 0)
		return "node id is not an integer in [1, 65535]";
	e->node = (unsigned)node;
	if (strlen(fields[1]) >= sizeof(e->text) || sl_map_parse_addr(fields[1], &e->addr) < 0)
		return "address is not an IPv4 or IPv6 address";
	snprintf(e->text, sizeof(e->text), "%s", fields[1]);
	e->fabric = SL_MAP_SHM;
	if (n >= 3) {
		if (strcmp(fields[2], "dev") == 0)
			e->fabric = SL_MAP_DEV;
		else if (strcmp(fields[2], "shm") != 0)
			return "fabric is not 'shm' or 'dev'";
	}
	if (e->fabric == SL_MAP_DEV)
		snprintf(e->device, sizeof(e->device), "%s", n == 4 ? fields[3] : SL_MAP_DEVICE_DEFAULT);
	if (n == 4 && e->fabric != SL_MAP_DEV)
		return "a DEVICE is given only with the 'dev' fabric";
	if (n == 4 && !sl_map_device_valid(fields[3]))
		return "DEVICE is not a /dev name (like scilan0)";
	return NULL;
}

int sl_cluster_map_load(const char *path, struct sl_cluster_map *map, char *err, size_t err_size)
{
	FILE *f = fopen(path, "re");
	int r;

	map->entries = NULL;
	map->count = 0;
	if (!f) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, err_size, "%s: %s", path, strerror(errno));
		return -1;
	}
	r = sl_cluster_map_read(f, path, map, err, err_size);
	fclose(f);
	return r;
}

int sl_cluster_map_read(FILE *f, const char *path, struct sl_cluster_map *map, char *err, size_t err_size)
{
	char line[512];
	unsigned lineno = 0;
	struct sl_map_entry e;
	const char *why;

	map->entries = NULL;
	map->count = 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = line;

		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, err_size, "%s:%u: line too long", path, lineno);
			goto fail;
		}
		*strchrnul(p, '#') = '\0';
		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			continue;
		why = parse_line(p, &e);
		if (why) {
			snprintf(err, err_size, "%s:%u: %s", path, lineno, why);
			goto fail;
		}
		if (sl_cluster_map_find(map, &e.addr)) {
			snprintf(err, err_size, "%s:%u: address %s is listed twice", path, lineno, e.text);
			goto fail;
		}
		if (add_entry(map, &e) < 0) {
			snprintf(err, err_size, "%s:%u: out of memory", path, lineno);
			goto fail;
		}
	}
	return 0;
fail:
	sl_cluster_map_free(map);
	return -1;
}

void sl_cluster_map_free(struct sl_cluster_map *map)
{
	free(map->entries);
	map->entries = NULL;
	map->count = 0;
}

const struct sl_map_entry *sl_cluster_map_find(const struct sl_cluster_map *map, const struct sl_key *addr)
{
	size_t len = addr->family == AF_INET ? 4 : 16;

	for (size_t i = 0; i < map->count; i++)
		if (map->entries[i].addr.family == addr->family && memcmp(map->entries[i].addr.addr, addr->addr, len) == 0)
			return &map->entries[i];
	return NULL;
}

void sl_cluster_map_write(const struct sl_cluster_map *map, FILE *out)
{
	fprintf(out, "# scilan cluster map: NODE ADDRESS [shm|dev [DEVICE]]  (written by scilan_ctl)\n");
	for (size_t i = 0; i < map->count; i++)
		fprintf(out, "%u %s %s%s%s\n", map->entries[i].node, map->entries[i].text,
			sl_map_fabric_name(map->entries[i].fabric),
			map->entries[i].fabric == SL_MAP_DEV ? " " : "", map->entries[i].device);
}
