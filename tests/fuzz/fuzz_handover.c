/* fuzz_handover.c — the exec hand-over variable SCILAN_HANDOVER as the new
 * image reads it (handover.c, sl_handover_parse): every entry is read
 * inside the string, each step moves forward, the walk ends. */
#include <stdbool.h>

#include "fuzz.h"
#include "process/handover.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Exactly the string's bytes: a read past its NUL is an ASan report. */
	char *list = malloc(size + 1);
	const char *p = list, *next;
	struct sl_handover_entry e;
	size_t entries = 0;

	if (!list)
		return 0;
	memcpy(list, data, size);
	list[size] = '\0';
	while ((next = sl_handover_parse(p, &e))) {
		FUZZ_CHECK(next > p && next <= list + strlen(list), "entry %zu: no progress or past the end", entries);
		entries++;
		p = next;
	}
	FUZZ_CHECK(entries <= size / 11 + 1, "%zu entries from %zu bytes", entries, size);
	free(list);
	return 0;
}
