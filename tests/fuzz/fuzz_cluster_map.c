/* fuzz_cluster_map.c — the cluster map file (cluster_map.c,
 * sl_cluster_map_read): any text either fails with a FILE:LINE message or
 * gives a map that scilan_ctl writes back and reads again unchanged. */
#include <stdbool.h>

#include "runtime/cluster_map.h"
#include "fuzz.h"

static void same_entries(const struct sl_cluster_map *a, const struct sl_cluster_map *b)
{
	FUZZ_CHECK(a->count == b->count, "%zu entries became %zu", a->count, b->count);
	for (size_t i = 0; i < a->count; i++) {
		const struct sl_map_entry *x = &a->entries[i], *y = &b->entries[i];

		FUZZ_CHECK(x->node == y->node && x->fabric == y->fabric && x->addr.family == y->addr.family &&
				   !memcmp(x->addr.addr, y->addr.addr, sizeof(x->addr.addr)) &&
				   !strcmp(x->device, y->device) && !strcmp(x->text, y->text),
			   "entry %zu (%u %s) changed on the way back", i, x->node, x->text);
		FUZZ_CHECK(sl_cluster_map_find(a, &x->addr) == x, "entry %zu not found by its address", i);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sl_cluster_map map, again;
	char err[512], *out = NULL;
	size_t out_len = 0;
	FILE *f;

	if (size == 0)
		return 0;
	f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	err[0] = '\0';
	if (sl_cluster_map_read(f, "fuzz.conf", &map, err, sizeof(err)) < 0) {
		fclose(f);
		FUZZ_CHECK(!strncmp(err, "fuzz.conf:", 10) && map.count == 0 && !map.entries, "error '%s'", err);
		return 0;
	}
	fclose(f);
	for (size_t i = 0; i < map.count; i++)
		FUZZ_CHECK(map.entries[i].node >= 1 && map.entries[i].node <= 65535 &&
				   (map.entries[i].fabric == SL_MAP_SHM || sl_map_device_valid(map.entries[i].device)),
			   "entry %zu: node %u device '%s'", i, map.entries[i].node, map.entries[i].device);
	f = open_memstream(&out, &out_len);
	FUZZ_CHECK(f != NULL, "open_memstream");
	sl_cluster_map_write(&map, f);
	fclose(f);
	f = fmemopen(out, out_len, "r");
	FUZZ_CHECK(f != NULL, "fmemopen");
	FUZZ_CHECK(sl_cluster_map_read(f, "written", &again, err, sizeof(err)) == 0, "written map unreadable: %s", err);
	fclose(f);
	same_entries(&map, &again);
	sl_cluster_map_free(&again);
	sl_cluster_map_free(&map);
	free(out);
	return 0;
}
