/* ctl_procs.c — who wrote a statistics file, seen from here: the process our
 * /proc shows with the pid namespace and pid the file names (NSpid's last
 * field), its network namespace, and the container its control group names.
 * A process our /proc does not show (another container's, from inside one)
 * is not found, and its file is not ours to list.
 */
#include "ctl_procs.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct seen {
	int pid;
	uint32_t pidns;
	int ns_pid; /* -1 not read yet, -2 unreadable */
};

static struct seen *procs;
static size_t nprocs;
static bool scanned;

static uint32_t ns_inode(int pid, const char *ns)
{
	char path[64];
	struct stat st;

	if (pid > 0)
		snprintf(path, sizeof(path), "/proc/%d/ns/%s", pid, ns);
	else
		snprintf(path, sizeof(path), "/proc/self/ns/%s", ns);
	return stat(path, &st) == 0 ? (uint32_t)st.st_ino : 0;
}

uint32_t ctl_own_pidns(void)
{
	return ns_inode(0, "pid");
}

/* Every process whose pid namespace we may look at (ours, or any for root). */
static void scan(void)
{
	size_t cap = 0;
	struct dirent *de;
	DIR *d = opendir("/proc");

	scanned = true;
	if (!d)
		return;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		uint32_t ns;

		if (*end || pid <= 0 || !(ns = ns_inode((int)pid, "pid")))
			continue;
		if (nprocs == cap) {
			struct seen *grown = realloc(procs, (cap = cap ? cap * 2 : 256) * sizeof(*grown));

			if (!grown)
				break;
			procs = grown;
		}
		procs[nprocs++] = (struct seen){ .pid = (int)pid, .pidns = ns, .ns_pid = -1 };
	}
	closedir(d);
}

/* The pid in its own namespace: NSpid's last field (kernel 4.1 and later). */
static int own_ns_pid(int pid)
{
	char path[64], line[256];
	int found = -2;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (!(f = fopen(path, "re")))
		return -2;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "NSpid:", 6) == 0) {
			char *last = strrchr(line, '\t');

			found = last ? atoi(last + 1) : -2;
			break;
		}
	fclose(f);
	return found;
}

void ctl_procs_forget(void)
{
	free(procs);
	procs = NULL;
	nprocs = 0;
	scanned = false;
}

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* A component that is a container: "<prefix>-<id>[.scope]" of a runtime we
 * know, or a bare 64-hex id (docker's and the kubelet's cgroupfs layout). */
static bool container_component(const char *c, size_t n, char *out, size_t size)
{
	static const struct {
		const char *prefix, *name;
	} runtimes[] = { { "libpod-", "libpod" },	{ "docker-", "docker" }, { "cri-containerd-", "containerd" },
			 { "crio-", "cri-o" },		{ NULL, NULL } };

	if (n > 6 && strncmp(c + n - 6, ".scope", 6) == 0)
		n -= 6;
	for (int i = 0; runtimes[i].prefix; i++) {
		size_t p = strlen(runtimes[i].prefix);

		if (n >= p + 12 && strncmp(c, runtimes[i].prefix, p) == 0 && all_hex(c + p, n - p)) {
			snprintf(out, size, "%s %.12s", runtimes[i].name, c + p);
			return true;
		}
	}
	if (n == 64 && all_hex(c, n)) {
		snprintf(out, size, "container %.12s", c);
		return true;
	}
	return false;
}

/* A Kubernetes pod's component: "pod<uid>" or systemd's
 * "kubepods-<class>-pod<uid with _>.slice". */
static bool pod_component(const char *c, size_t n, char *out, size_t size)
{
	const char *p = NULL;

	for (size_t i = 0; i + 3 < n; i++)
		if (strncmp(c + i, "pod", 3) == 0 && (i == 0 || c[i - 1] == '-'))
			p = c + i + 3;
	if (!p)
		return false;
	n -= (size_t)(p - c);
	if (n > 6 && strncmp(p + n - 6, ".slice", 6) == 0)
		n -= 6;
	if (n < 32 || n > 36)
		return false;
	snprintf(out, size, "pod %.*s", (int)n, p);
	for (char *u = out; *u; u++)
		if (*u == '_')
			*u = '-';
	return true;
}

void ctl_container_of_cgroup(const char *path, char *out, size_t size)
{
	char pod[48] = "", ctr[40] = "";

	for (const char *c = path; *c;) {
		size_t n = strcspn(c, "/\n");

		if (n) {
			if (!*pod)
				pod_component(c, n, pod, sizeof(pod));
			container_component(c, n, ctr, sizeof(ctr));
		}
		c += n;
		if (*c)
			c++;
	}
	if (*pod && *ctr)
		snprintf(out, size, "%s %s", pod, ctr);
	else
		snprintf(out, size, "%s", *ctr ? ctr : pod);
}

/* The path of its unified hierarchy ("0::"), else of systemd's, else the
 * first line's. */
static void container_of(int pid, char *out, size_t size)
{
	char path[64], line[1024], best[1024] = "";
	int rank = 0;
	FILE *f;

	*out = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	if (!(f = fopen(path, "re")))
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ':');
		int r;

		if (!p || !(p = strchr(p + 1, ':')))
			continue;
		r = strncmp(line, "0::", 3) == 0 ? 3 : strstr(line, ":name=systemd:") ? 2 : 1;
		if (r > rank) {
			rank = r;
			snprintf(best, sizeof(best), "%s", p + 1);
		}
	}
	fclose(f);
	ctl_container_of_cgroup(best, out, size);
}

static void describe(int pid, struct ctl_proc *out)
{
	out->pid = pid;
	out->netns = ns_inode(pid, "net");
	container_of(pid, out->container, sizeof(out->container));
}

bool ctl_proc_find(uint32_t pidns, int ns_pid, struct ctl_proc *out)
{
	/* Our namespace's, where our /proc is its: the pid itself, no scan. */
	if (ns_pid > 0 && ns_inode(ns_pid, "pid") == pidns && own_ns_pid(ns_pid) == ns_pid) {
		describe(ns_pid, out);
		return true;
	}
	if (!scanned)
		scan();
	for (size_t i = 0; i < nprocs; i++) {
		struct seen *p = &procs[i];

		if (p->pidns != pidns)
			continue;
		if (p->ns_pid == -1)
			p->ns_pid = own_ns_pid(p->pid);
		if (p->ns_pid != ns_pid)
			continue;
		describe(p->pid, out);
		return true;
	}
	return false;
}
