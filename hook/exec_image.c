/* exec_image.c — will the image an exec-family call runs load the hook?  A
 * static executable or one that gains privileges (set-user/group-ID: the
 * loader then ignores LD_PRELOAD paths) never adopts a hand-over, so the
 * caller moves the connections to kernel TCP instead (exec_calls.c).
 */
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hook.h"
#include "preload_api.h"

/* A set-ID bit that changes our credentials: the loader runs it in secure
 * mode, where a preload named by a path is ignored. */
static bool gains_ids(const struct stat *st)
{
	return ((st->st_mode & S_ISUID) && st->st_uid != geteuid()) ||
	       ((st->st_mode & S_ISGID) && st->st_gid != getegid());
}

#define HEAD_SIZE 256

static bool fd_loads_hook(int fd, int depth);

/* "#!interpreter": what runs is the interpreter. */
static bool script_loads_hook(const char *head, size_t len, int depth)
{
	char path[HEAD_SIZE]; /* the interpreter's name is within the head read */
	size_t i = 2, n = 0;
	int fd;
	bool r;

	while (i < len && (head[i] == ' ' || head[i] == '\t'))
		i++;
	while (i < len && n < sizeof(path) - 1 && head[i] != ' ' && head[i] != '\t' && head[i] != '\n')
		path[n++] = head[i++];
	path[n] = '\0';
	if (!n || depth > 4)
		return true; /* the kernel refuses it: nothing runs */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	r = fd_loads_hook(fd, depth + 1);
	sl_sys.close(fd);
	return r;
}

/* An ELF executable loads the preload when it has an interpreter (the
 * dynamic loader).  What cannot be read or recognised counts as loading
 * it: the hand-over is then as before. */
static bool fd_loads_hook(int fd, int depth)
{
	char head[HEAD_SIZE];
	Elf64_Ehdr eh;
	struct stat st;
	ssize_t len;

	if (fstat(fd, &st) < 0)
		return true;
	if (gains_ids(&st))
		return false;
	len = pread(fd, head, sizeof(head), 0);
	if (len >= 2 && head[0] == '#' && head[1] == '!')
		return script_loads_hook(head, (size_t)len, depth);
	if (len < (ssize_t)sizeof(eh) || memcmp(head, ELFMAG, SELFMAG) != 0 || head[EI_CLASS] != ELFCLASS64)
		return true;
	memcpy(&eh, head, sizeof(eh));
	if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 256)
		return true;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != (ssize_t)sizeof(ph))
			return true;
		if (ph.p_type == PT_INTERP)
			return true;
	}
	return false; /* static */
}

static bool path_loads_hook(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool r;

	if (fd < 0)
		return true; /* the exec fails too, or will find something we cannot judge */
	r = fd_loads_hook(fd, 0);
	sl_sys.close(fd);
	return r;
}

static bool search_loads_hook(const char *file, char *path, size_t size);

bool hk_image_loads_hook(const char *file, int fd, bool search)
{
	char *path;
	bool r;

	if (!file)
		return fd_loads_hook(fd, 0);
	if (!search || strchr(file, '/'))
		return path_loads_hook(file);
	/* Not on the stack (the caller may be a 16 KiB thread) nor malloc'd
	 * (exec may follow vfork): a page of its own. */
	path = mmap(NULL, PATH_MAX, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (path == MAP_FAILED)
		return true; /* cannot judge: the hand-over is as before */
	r = search_loads_hook(file, path, PATH_MAX);
	munmap(path, PATH_MAX);
	return r;
}

/* execvp's search: the first executable on PATH is what runs. */
static bool search_loads_hook(const char *file, char *path, size_t size)
{
	const char *dirs = getenv("PATH");

	if (!dirs)
		dirs = "/bin:/usr/bin";
	while (*dirs) {
		size_t n = strcspn(dirs, ":");

		if (n + 1 + strlen(file) < size) {
			memcpy(path, n ? dirs : ".", n ? n : 1);
			path[n ? n : 1] = '/';
			strcpy(path + (n ? n : 1) + 1, file);
			if (access(path, X_OK) == 0)
				return path_loads_hook(path);
		}
		dirs += n + (dirs[n] == ':');
	}
	return true;
}
