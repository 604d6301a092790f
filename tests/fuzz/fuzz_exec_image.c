/* fuzz_exec_image.c — the executable an exec is about to run, as the hook
 * reads it to decide whether the new image adopts the hand-over
 * (hook/exec_image.c: ELF program headers, note segments, the section-name
 * table): any file is read within its bounds and judged, never a crash or
 * an endless loop.  "#!" inputs are left out: they name files of this host. */
#include <sys/mman.h>

#include "fuzz.h"
#include "../../hook/exec_image.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd;
	bool adopts;

	if (size >= 2 && data[0] == '#' && data[1] == '!')
		return 0;
	fd = memfd_create("image", MFD_CLOEXEC);
	FUZZ_CHECK(fd >= 0, "memfd_create");
	FUZZ_CHECK(write(fd, data, size) == (ssize_t)size, "write %zu bytes", size);
	adopts = hk_image_loads_hook(NULL, fd, false);
	/* Only an ELF image of our class can be judged not to adopt. */
	FUZZ_CHECK(adopts || (size >= sizeof(Elf64_Ehdr) && memcmp(data, ELFMAG, SELFMAG) == 0 &&
			      data[EI_CLASS] == ELFCLASS64),
		   "a %zu-byte non-ELF image judged not to adopt", size);
	close(fd);
	return 0;
}
