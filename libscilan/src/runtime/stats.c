/* stats.c — the process's scilan counters as SCILAN_STATS prints them: the
 * totals of closed connections plus the live counters of open ones.
 */
#include "runtime/stats.h"

#include "runtime/log.h"
#include "runtime/sys.h"

#include <stdio.h>
#include <unistd.h>

/* The process-wide counters (sock_state.h). */
struct sl_totals sl_totals;

static _Thread_local struct sl_stats *summing;

/* Once per connection: a dup'ed one has a table slot per descriptor. */
static bool add_live(int fd, struct sl_sock *s)
{
	if (sl_sock_on_rings(s) && fd == s->fd) {
		summing->tx_bytes += atomic_load_explicit(&sl_ctr(s)->tx_bytes, memory_order_relaxed);
		summing->rx_bytes += atomic_load_explicit(&sl_ctr(s)->rx_bytes, memory_order_relaxed);
	}
	return false;
}

void sl_stats_read(struct sl_stats *out)
{
	out->accelerated = atomic_load(&sl_totals.accelerated);
	out->fallback = atomic_load(&sl_totals.fallback);
	out->tx_bytes = atomic_load(&sl_totals.tx_bytes);
	out->rx_bytes = atomic_load(&sl_totals.rx_bytes);
	out->sleeps = atomic_load(&sl_totals.sleeps);
	out->wakeups = atomic_load(&sl_totals.wakeups);
	out->promoted = atomic_load(&sl_totals.promoted);
	for (int i = 0; i < SL_FB_COUNT; i++)
		out->fb[i] = atomic_load(&sl_totals.fb[i]);
	summing = out;
	sl_sock_any_fd(add_live);
	summing = NULL;
}

static bool zero_live(struct sl_sock *s)
{
	atomic_store(&sl_ctr(s)->tx_bytes, 0);
	atomic_store(&sl_ctr(s)->rx_bytes, 0);
	atomic_store(&sl_ctr(s)->sleeps, 0);
	atomic_store(&sl_ctr(s)->wakeups, 0);
	return false;
}

void sl_stats_reset_in_child(void)
{
	atomic_store(&sl_totals.accelerated, 0);
	atomic_store(&sl_totals.fallback, 0);
	atomic_store(&sl_totals.tx_bytes, 0);
	atomic_store(&sl_totals.rx_bytes, 0);
	atomic_store(&sl_totals.sleeps, 0);
	atomic_store(&sl_totals.wakeups, 0);
	atomic_store(&sl_totals.promoted, 0);
	for (int i = 0; i < SL_FB_COUNT; i++)
		atomic_store(&sl_totals.fb[i], 0);
	sl_sock_any(zero_live);
}

void sl_stats_print(int fd)
{
	struct sl_stats st;
	char line[1024];
	int n;

	if (fd == STDERR_FILENO && sl_log_stderr_muted())
		return;
	sl_stats_read(&st);
	n = snprintf(line, sizeof(line),
		     "scilan: pid %d: accelerated %llu, fallback %llu, tx %llu bytes, rx %llu bytes, sleeps %llu, wakeups %llu\n",
		     (int)getpid(), (unsigned long long)st.accelerated, (unsigned long long)st.fallback,
		     (unsigned long long)st.tx_bytes, (unsigned long long)st.rx_bytes, (unsigned long long)st.sleeps,
		     (unsigned long long)st.wakeups);
	/* "..., wakeups 9, promoted 4": of the fallbacks, those
	 * moved onto the rings later, which count as accelerated as well. */
	if (st.promoted && n > 0 && n < (int)sizeof(line) - 64) {
		n--; /* over the newline */
		n += snprintf(line + n, sizeof(line) - (size_t)n, ", promoted %llu\n", (unsigned long long)st.promoted);
	}
	/* Why the fallbacks: "; fallback reasons: no-listener 2, bypass 1". */
	for (int i = 1, first = 1; i < SL_FB_COUNT && n > 0 && n < (int)sizeof(line) - 64; i++) {
		if (!st.fb[i])
			continue;
		n--; /* over the newline */
		n += snprintf(line + n, sizeof(line) - (size_t)n, "%s%s %llu\n", first ? "; fallback reasons: " : ", ",
			      sl_fb_name((unsigned)i), (unsigned long long)st.fb[i]);
		first = 0;
	}
	/* Not into the program's data: stderr may be a connection. */
	if (sl_log_fd_is_network(fd))
		return;
	/* One write, so lines of processes exiting together do not interleave;
	 * the kernel's, not the hook's (which would send it through a ring). */
	if (n > 0 && sl_sys.write(fd, line, (size_t)n) < 0)
		return;
}
