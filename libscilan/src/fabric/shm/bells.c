/* bells.c — the shm fabric's wake-ups: the two FIFOs beside an offer, a
 * byte rung per stimulus and drained by the sleeper.
 */
#include "fabric/shm/bells.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "conn/agree.h"
#include "fabric/shm/offer_names.h"
#include "ring/urgent.h"
#include "runtime/log.h"
#include "runtime/own_fd.h"
#include "runtime/sys.h"

/* Wake-up bells are FIFOs beside the offer (an anonymous eventfd cannot be
 * reopened through /proc): <offer>.bell0 wakes the connecting side,
 * <offer>.bell1 the accepting side.  A pipe is pollable with the
 * application's other descriptors and a one-byte write costs no more than an
 * eventfd's. */
int sl_shm_open_bell(const char *offer_path, int which, bool create)
{
	char path[SL_BELL_PATH_SIZE];
	int fd;

	if (sl_shm_bell_path(offer_path, which, path, sizeof(path)) < 0)
		return -1;
	/* Created exclusively: a name that exists belongs to another connection
	 * with the same 4-tuple (a port reused quickly), never to share. */
	if (create && mkfifo(path, 0600) < 0)
		return -1;
	/* O_RDWR: neither end blocks in open, and the pipe never reports EOF. */
	fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	/* Our directory, but a pipe is all a bell may be (a file there would
	 * read forever). */
	if (fd >= 0 && sl_sys.fcntl(fd, F_GETPIPE_SZ) <= 0) {
		sl_sys.close(fd);
		errno = EINVAL;
		return -1;
	}
	return sl_own_fd(fd);
}

static void ring_bell(struct sl_sock *s, int bell, int token)
{
	char byte = (char)token;

	/* A full pipe (EAGAIN) already holds wake-ups enough. */
	if (bell >= 0 && sl_sys.write(bell, &byte, 1) < 0 && errno != EAGAIN)
		sl_debug("wake-up on fd %d not sent: %s", s->fd, strerror(errno));
}

void sl_shm_stimulate(struct sl_sock *s, int token)
{
	ring_bell(s, s->bell_tx, token);
}

void sl_shm_ring_self(struct sl_sock *s, int token)
{
	ring_bell(s, s->bell_rx, token);
}

void sl_shm_flush_remote(struct sl_sock *s)
{
	(void)s;
	atomic_thread_fence(memory_order_seq_cst);
}

/* Reads per drain: the peer writes one byte per arm it finds, so a few
 * suffice; a peer that keeps the pipe full only earns spurious wake-ups,
 * each draining this much, never a loop without end. */
#define DRAIN_READS 16

int sl_shm_drain(struct sl_sock *s)
{
	unsigned char tokens[64];
	ssize_t n;
	int seen = 0, reads = 0;

	do {
		n = sl_sys.read(s->bell_rx, tokens, sizeof(tokens));
		for (ssize_t i = 0; i < n; i++)
			seen |= tokens[i];
	} while (n == (ssize_t)sizeof(tokens) && ++reads < DRAIN_READS);
	return seen & (SL_TOKEN_DATA | SL_TOKEN_SPACE | SL_TOKEN_LOCAL);
}
