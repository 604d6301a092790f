/* exec_image.c — will the image an exec-family call runs adopt the hook's
 * hand-over?  A static executable or one that gains privileges
 * (set-user/group-ID: the loader then ignores LD_PRELOAD paths) never loads
 * the hook, and a Go program loads it but makes its own system calls, never
 * libc's: the caller moves the connections to kernel TCP instead
 * (exec_calls.c).
 */
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
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

/* What is read of the image at a time: small, for an exec from a thread
 * on a small stack (the buffers here and a script's recursion). */
#define HEAD_SIZE 256
/* Program headers looked at, note segments read, string table bytes read:
 * a hostile or broken image costs a bounded number of reads. */
#define MAX_PHDRS 256
#define MAX_NOTE_SEGMENTS 8
#define MAX_STRTAB (16 * 1024)

/* len bytes at off, all of them; false for a short read or an offset past
 * what pread takes. */
static bool read_at(int fd, void *buf, size_t len, uint64_t off)
{
	if (off > (uint64_t)INT64_MAX - len)
		return false;
	return pread(fd, buf, len, (off_t)off) == (ssize_t)len;
}

/* Does the note segment ph hold Go's build-id note (owner "Go", type 4),
 * within its first HEAD_SIZE bytes? */
static bool notes_say_go(int fd, const Elf64_Phdr *ph)
{
	unsigned char buf[HEAD_SIZE];
	size_t len = ph->p_filesz < sizeof(buf) ? (size_t)ph->p_filesz : sizeof(buf), off = 0;
	size_t align = ph->p_align == 8 ? 8 : 4;

	if (!read_at(fd, buf, len, ph->p_offset))
		return false;
	while (off + 12 <= len) {
		uint32_t namesz, descsz, type;
		size_t name_end;

		memcpy(&namesz, buf + off, 4);
		memcpy(&descsz, buf + off + 4, 4);
		memcpy(&type, buf + off + 8, 4);
		name_end = off + 12 + (size_t)namesz;
		if (name_end > len)
			return false;
		/* Go's linker writes "Go\0\0" (namesz 4); "Go\0" is the same name. */
		if ((namesz == 3 || namesz == 4) && memcmp(buf + off + 12, "Go", 3) == 0 && type == 4)
			return true;
		off = (name_end + align - 1) / align * align;
		off = (off + (size_t)descsz + align - 1) / align * align;
	}
	return false;
}

/* Does the section-name table name Go's .go.buildinfo (written by every Go
 * linker since 1.13, also without a build id and in stripped binaries)?
 * The table is read in HEAD_SIZE pieces that overlap by the name's length. */
static bool sections_say_go(int fd, const Elf64_Ehdr *eh)
{
	static const char name[] = ".go.buildinfo"; /* with its NUL */
	char buf[HEAD_SIZE];
	Elf64_Shdr sh;
	uint64_t size, at = 0;

	if (eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shstrndx == SHN_UNDEF || eh->e_shstrndx >= eh->e_shnum ||
	    !read_at(fd, &sh, sizeof(sh), eh->e_shoff + (uint64_t)eh->e_shstrndx * sizeof(sh)) ||
	    sh.sh_type != SHT_STRTAB)
		return false;
	size = sh.sh_size < MAX_STRTAB ? sh.sh_size : MAX_STRTAB;
	while (at < size) {
		size_t len = size - at < sizeof(buf) ? (size_t)(size - at) : sizeof(buf);

		if (sh.sh_offset > UINT64_MAX - at || !read_at(fd, buf, len, sh.sh_offset + at))
			return false;
		if (memmem(buf, len, name, sizeof(name)))
			return true;
		if (len < sizeof(buf))
			break;
		at += len - (sizeof(name) - 1);
	}
	return false;
}

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
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO named there must not hold the exec */
	if (fd < 0)
		return true;
	r = fd_loads_hook(fd, depth + 1);
	sl_sys.close(fd);
	return r;
}

/* An ELF executable loads the preload when it has an interpreter (the
 * dynamic loader), and uses it unless it is a Go program: Go's runtime
 * reads and writes its sockets with system calls of its own, so a hand-over
 * it adopted would leave the peer's bytes in rings nobody reads while its
 * own went onto the kernel socket (the peer then resets the connection).
 * Go is told by its build-id note, else by its .go.buildinfo section.
 * What cannot be read or recognised counts as loading the hook: the
 * hand-over is then as before. */
static bool fd_loads_hook(int fd, int depth)
{
	char head[HEAD_SIZE];
	Elf64_Ehdr eh;
	Elf64_Phdr ph[HEAD_SIZE / sizeof(Elf64_Phdr)];
	struct stat st;
	ssize_t len;
	bool interp = false, go = false;
	unsigned notes = 0;

	/* Not a file (a FIFO, a device): the kernel refuses to run it. */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return true;
	if (gains_ids(&st))
		return false;
	len = pread(fd, head, sizeof(head), 0);
	if (len >= 2 && head[0] == '#' && head[1] == '!')
		return script_loads_hook(head, (size_t)len, depth);
	if (len < (ssize_t)sizeof(eh) || memcmp(head, ELFMAG, SELFMAG) != 0 || head[EI_CLASS] != ELFCLASS64)
		return true;
	memcpy(&eh, head, sizeof(eh));
	if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > MAX_PHDRS)
		return true;
	for (unsigned i = 0; i < eh.e_phnum;) {
		unsigned n = eh.e_phnum - i < sizeof(ph) / sizeof(ph[0]) ? eh.e_phnum - i : sizeof(ph) / sizeof(ph[0]);

		if (!read_at(fd, ph, n * sizeof(ph[0]), eh.e_phoff + (uint64_t)i * sizeof(ph[0])))
			return true;
		for (unsigned k = 0; k < n; k++) {
			if (ph[k].p_type == PT_INTERP)
				interp = true;
			else if (ph[k].p_type == PT_NOTE && !go && notes++ < MAX_NOTE_SEGMENTS)
				go = notes_say_go(fd, &ph[k]);
		}
		i += n;
	}
	if (!interp)
		return false; /* static */
	return !go && !sections_say_go(fd, &eh);
}

static bool path_loads_hook(const char *path)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
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
