/* fdinfo.c — a descriptor's mount and inode as procfs prints them from the
 * open file: safe to ask of a file whose file system never answers (FUSE),
 * where fstat or an open would wait for its daemon.
 */
#include "runtime/fdinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/sys.h"

int sl_fdinfo_of(pid_t pid, int fd, struct sl_fdinfo *out)
{
	char path[64], buf[1024], *m, *i;
	ssize_t n;
	int f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)pid, fd);
	else
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (f < 0)
		return -1;
	n = sl_sys.read(f, buf, sizeof(buf) - 1);
	sl_sys.close(f);
	if (n <= 0) {
		errno = ENOENT;
		return -1;
	}
	buf[n] = '\0';
	/* "pos:" opens the text, so every field we want follows a newline. */
	m = strstr(buf, "\nmnt_id:");
	if (!m) {
		errno = EOPNOTSUPP;
		return -1;
	}
	i = strstr(buf, "\nino:");
	out->mnt_id = strtol(m + strlen("\nmnt_id:"), NULL, 10);
	out->ino = i ? strtoull(i + strlen("\nino:"), NULL, 10) : 0;
	return 0;
}
