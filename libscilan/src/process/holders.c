/* holders.c — the holder table of one side of a connection (layout.h): each
 * process holding it is named by pid, start time and pid namespace, so the
 * last close can tell live holders from ones that died without a word
 * (_exit, SIGKILL); and the fork hand-over of holders and read indices.
 */
#include "process/holders.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ring/layout.h"
#include "ring/segment.h"
#include "runtime/self_ns.h"

#define PID_MASK 0xffffffffull

_Atomic bool sl_publish_at_once;

/* This process as the table names it; recomputed after fork (pid changes). */
static _Atomic pid_t me_pid;
static uint64_t me_start;
static uint32_t me_ns;

/* Only async-signal-safe calls: this runs in a fork child of a threaded parent. */
static void format_path(char *buf, pid_t pid)
{
	char digits[16];
	int n = 0;

	strcpy(buf, "/proc/");
	if (pid <= 0) {
		strcat(buf, "self");
	} else {
		for (unsigned v = (unsigned)pid; v; v /= 10)
			digits[n++] = (char)('0' + v % 10);
		buf += strlen(buf);
		while (n)
			*buf++ = digits[--n];
		*buf = '\0';
	}
}

/* State letter and start time of pid (0: ourselves) from /proc/PID/stat:
 * 1 found, -1 cannot tell (no /proc, hidepid, or it went away just now). */
static int proc_stat(pid_t pid, char *state, uint64_t *start)
{
	char path[48], buf[1024], *p, *end;
	ssize_t n;
	int fd, field;

	format_path(path, pid);
	strcat(path, "/stat");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* The command name may hold anything, ')' included: the fields start
	 * after the last ')'.  Field 3 is the state, 22 the start time. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return -1;
	p += 2;
	*state = *p;
	for (field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p)
		return -1;
	*start = 0;
	for (end = p; *end >= '0' && *end <= '9'; end++)
		*start = *start * 10 + (uint64_t)(*end - '0');
	return end == p ? -1 : 1;
}

static void learn_me(void)
{
	pid_t pid = sl_self_pid;
	int saved = errno;
	char state;

	if (atomic_load_explicit(&me_pid, memory_order_acquire) == pid)
		return;
	if (proc_stat(0, &state, &me_start) != 1)
		me_start = 0; /* no /proc: our holders are never judged dead */
	me_ns = sl_self_pidns();
	atomic_store_explicit(&me_pid, pid, memory_order_release);
	errno = saved;
}

void sl_holders_learn_self(void)
{
	learn_me();
}

static struct sl_seg_holders *table(struct sl_sock *s)
{
	return s->htab;
}

/* Take a free slot for this process: its index, or -1 if the table is full. */
static int claim_slot(struct sl_sock *s)
{
	struct sl_holder *slots = table(s)->slot[s->own_area];

	learn_me();
	/* Write first: a fork child touches each inherited segment here first,
	 * and a write fault maps the page at once, where a read would map it
	 * read-only (with its neighbours) and fault again on the write. */
	atomic_fetch_add_explicit(&table(s)->count[s->own_area], 0, memory_order_relaxed);
	for (int i = 0; i < SL_HOLDER_SLOTS; i++) {
		uint64_t t = atomic_load(&slots[i].tag), seq = (t >> 32) + 1;

		if ((t & PID_MASK) != 0 || !atomic_compare_exchange_strong(&slots[i].tag, &t, seq << 32 | (uint32_t)me_pid))
			continue;
		atomic_store_explicit(&slots[i].start, me_start, memory_order_relaxed);
		atomic_store_explicit(&slots[i].pidns, me_ns, memory_order_relaxed);
		atomic_store_explicit(&slots[i].ready, (uint32_t)seq, memory_order_release);
		return i;
	}
	return -1;
}

static void dec_floor0(_Atomic int32_t *v)
{
	int32_t old = atomic_load(v);

	/* The peer shares the page: never let garbage make us count below 0. */
	while (old > 0 && !atomic_compare_exchange_weak(v, &old, old - 1))
		;
}

void sl_holders_init(struct sl_sock *s)
{
	struct sl_seg_holders *h = table(s);
	int own = s->own_area;

	for (int i = 0; i < SL_HOLDER_SLOTS; i++)
		atomic_store(&h->slot[own][i].tag, atomic_load(&h->slot[own][i].tag) & ~PID_MASK);
	atomic_store(&h->unnamed[own], 0);
	atomic_store(&h->count[own], 1);
	s->holder_slot = claim_slot(s);
	if (s->holder_slot < 0) {
		s->holder_slot = SL_HOLDER_UNNAMED;
		atomic_store(&h->unnamed[own], 1);
	}
}

void sl_holders_adopt_self(struct sl_sock *s)
{
	struct sl_holder *slots = table(s)->slot[s->own_area];

	learn_me();
	s->holder_slot = SL_HOLDER_UNNAMED; /* the old image held it without a slot */
	for (int i = 0; i < SL_HOLDER_SLOTS; i++)
		if ((atomic_load(&slots[i].tag) & PID_MASK) == (uint32_t)me_pid &&
		    atomic_load(&slots[i].start) == me_start) {
			s->holder_slot = i;
			return;
		}
}

void sl_holders_expect(struct sl_sock *s)
{
	/* The coming holder may set O_NONBLOCK on the socket we share. */
	atomic_store_explicit(&s->nonblock_exact_at, 0, memory_order_relaxed);
	sl_sock_forget_timeouts(s);
	if (!s->htab)
		return;
	atomic_fetch_add(&table(s)->count[s->own_area], 1);
	atomic_fetch_add(&table(s)->unnamed[s->own_area], 1);
}

void sl_holders_unexpect(struct sl_sock *s)
{
	if (!s->htab)
		return;
	dec_floor0(&table(s)->unnamed[s->own_area]);
	dec_floor0(&table(s)->count[s->own_area]);
}

void sl_holders_arrive(struct sl_sock *s)
{
	if (!s->htab)
		return;
	s->holder_slot = claim_slot(s);
	if (s->holder_slot >= 0)
		dec_floor0(&table(s)->unnamed[s->own_area]);
	else
		s->holder_slot = SL_HOLDER_UNNAMED;
}

void sl_holders_hold(struct sl_sock *s)
{
	if (!s->htab || s->holder_slot != SL_HOLDER_NONE)
		return;
	atomic_fetch_add(&table(s)->count[s->own_area], 1);
	s->holder_slot = claim_slot(s);
	if (s->holder_slot < 0) {
		s->holder_slot = SL_HOLDER_UNNAMED;
		atomic_fetch_add(&table(s)->unnamed[s->own_area], 1);
	}
}

enum liveness { GONE, LIVE };

static enum liveness holder_state(const struct sl_holder *h, uint64_t tag)
{
	pid_t pid = (pid_t)(tag & PID_MASK);
	uint64_t start;
	uint32_t ns;
	char state;
	uint64_t now_start;

	if (atomic_load_explicit(&h->ready, memory_order_acquire) != (uint32_t)(tag >> 32))
		return LIVE; /* still writing its start time: it ran our code just now */
	start = atomic_load_explicit(&h->start, memory_order_relaxed);
	ns = atomic_load_explicit(&h->pidns, memory_order_relaxed);
	if (atomic_load(&h->tag) != tag)
		return LIVE; /* changed under us: someone is there */
	if (!start || (ns && me_ns && ns != me_ns))
		return LIVE; /* no /proc then, or another pid namespace: cannot judge */
	if (pid == me_pid)
		return LIVE; /* another socket state of ours naming the same connection */
	/* kill(0) sees every process of our namespace (hidepid hides /proc
	 * entries of other users, such as workers that changed user). */
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return GONE;
	if (proc_stat(pid, &state, &now_start) != 1)
		return LIVE; /* cannot tell: the safe side */
	/* A zombie closed its descriptors already; another start time is
	 * another process under a reused pid. */
	return state == 'Z' || state == 'X' || now_start != start ? GONE : LIVE;
}

/* Whether a live holder other than this process remains; entries of dead
 * holders are freed on the way (so the count converges). */
static bool others_live(struct sl_sock *s)
{
	struct sl_seg_holders *h = table(s);
	struct sl_holder *slots = h->slot[s->own_area];
	int saved = errno; /* close() and exec report their own errno */
	bool live = false;

	learn_me();
	if (atomic_load(&h->unnamed[s->own_area]) > 0)
		return true;
	for (int i = 0; i < SL_HOLDER_SLOTS && !live; i++) {
		uint64_t t = atomic_load(&slots[i].tag);

		if (!(t & PID_MASK) || i == s->holder_slot)
			continue;
		if (holder_state(&slots[i], t) == LIVE)
			live = true;
		else if (atomic_compare_exchange_strong(&slots[i].tag, &t, t & ~PID_MASK))
			dec_floor0(&h->count[s->own_area]);
	}
	errno = saved;
	return live;
}

bool sl_holders_others(struct sl_sock *s)
{
	return s->htab && others_live(s);
}

bool sl_holders_release(struct sl_sock *s)
{
	struct sl_seg_holders *h = table(s);
	int idx = s->holder_slot;

	if (!h || idx == SL_HOLDER_NONE)
		return false;
	s->holder_slot = SL_HOLDER_NONE;
	if (idx >= 0) {
		struct sl_holder *slot = &h->slot[s->own_area][idx];
		uint64_t t = atomic_load(&slot->tag);

		learn_me();
		if ((t & PID_MASK) == (uint32_t)me_pid)
			atomic_compare_exchange_strong(&slot->tag, &t, t & ~PID_MASK);
	} else {
		dec_floor0(&h->unnamed[s->own_area]);
	}
	dec_floor0(&h->count[s->own_area]);
	/* Two holders closing at once: each removes itself (a locked, fencing
	 * operation) before it looks at the other, so at least one of them
	 * sees the other gone and closes for the peer. */
	atomic_thread_fence(memory_order_seq_cst);
	return !others_live(s);
}

/* ---- fork ------------------------------------------------------------------ */

/* The fork a socket was counted for: a dup'ed socket is in the table once
 * per alias, but one process holds it once. */
static unsigned fork_gen;

static bool count_child(struct sl_sock *s)
{
	if (!sl_sock_on_rings(s) || !s->seg || s->fork_mark == fork_gen ||
	    s->holder_slot == SL_HOLDER_NONE)
		return false;
	s->fork_mark = fork_gen;
	/* Counted first: from here on our readers publish at once (the side is
	 * shared), so the index published next stays exact until the fork. */
	sl_holders_expect(s);
	sl_rx_publish_exact(s);
	return false;
}

void sl_holders_before_fork(void)
{
	if (++fork_gen == 0)
		fork_gen = 1;
	sl_sock_any(count_child);
}

static bool name_child(struct sl_sock *s)
{
	/* Only the process that told the peer we publish unfenced may: it alone
	 * switches the flag (conn.c). */
	s->tx.unfenced = false;
	s->fence_owner = false;
	if (s->fork_mark == fork_gen && fork_gen) {
		s->fork_mark = 0;
		if (sl_sock_on_rings(s) && s->seg) {
			sl_holders_arrive(s);
			/* A process that had our pid before us (dead, the pid
			 * reused) may be the last user of a direction: we must
			 * still take its indices over, not think they are ours. */
			for (int d = SL_USE_RX; d <= SL_USE_TX; d++) {
				int32_t stale = sl_self_pid;

				atomic_compare_exchange_strong(&s->users[d], &stale, 0);
			}
		}
	}
	return false;
}

void sl_holders_in_child(void)
{
	sl_sock_any(name_child);
}
