/* self_ns.c — the pid namespace this process is in: a pid we publish (an
 * offer file, an epoll set's registration) names us only to processes of the
 * same namespace, so both sides compare it before trusting a pid to reach.
 */
#include "runtime/self_ns.h"

#include <errno.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include "socket/sock_state.h"

/* Known for this pid and fork count: a child made after unshare(CLONE_NEWPID)
 * is in the new namespace, and may have its parent's pid (1, in a container). */
static _Atomic pid_t known_for;
static _Atomic unsigned known_forks;
static _Atomic uint32_t known_ns;

uint32_t sl_self_pidns(void)
{
	unsigned forks = atomic_load_explicit(&sl_forks, memory_order_relaxed);
	int saved = errno;
	struct stat st;
	uint32_t ns;

	if (atomic_load_explicit(&known_for, memory_order_acquire) == sl_self_pid &&
	    atomic_load_explicit(&known_forks, memory_order_relaxed) == forks)
		return atomic_load_explicit(&known_ns, memory_order_relaxed);
	ns = stat("/proc/self/ns/pid", &st) == 0 ? (uint32_t)st.st_ino : 0;
	errno = saved;
	atomic_store_explicit(&known_ns, ns, memory_order_relaxed);
	atomic_store_explicit(&known_forks, forks, memory_order_relaxed);
	atomic_store_explicit(&known_for, sl_self_pid, memory_order_release);
	return ns;
}
