/* rdv_stranger.c — the hostile local processes of the rendezvous tests
 * (rdv_stranger.h): they speak the rendezvous's message as any local process
 * can, without the connector's own look at who listens.
 */
#include "rdv_stranger.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fabric/shm/rendezvous.h"
#include "ring/layout.h"
#include "ring/segment.h"

void rdv_become(uid_t uid)
{
	TU_CHECK(setgroups(0, NULL) == 0 && setgid(uid) == 0 && setuid(uid) == 0, "become uid %d", (int)uid);
}

void rdv_become_nobody(void)
{
	rdv_become(NOBODY);
}

struct sl_key rdv_loopback(uint16_t port)
{
	struct sl_key k = { .family = AF_INET, .addr = { 127, 0, 0, 1 }, .port = port };

	return k;
}

/* A well-formed segment of the stranger's own, offered for the victim's
 * 4-tuple before the victim connects; it reports whether anyone attached. */
int rdv_forge_offer(void *p)
{
	struct rdv_stranger *st = p;
	struct sl_seg_header hdr;
	int fds[SL_RDV_FDS], conn, tcp, seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	_Atomic uint32_t *word;
	uint64_t v;
	void *base;

	rdv_become(st->uid ? st->uid : NOBODY);
	sl_segment_layout(&hdr, 65536, 65536);
	fds[0] = memfd_create("forged", MFD_ALLOW_SEALING);
	TU_CHECK(fds[0] >= 0 && ftruncate(fds[0], (off_t)hdr.total_size) == 0, "memfd");
	base = mmap(NULL, hdr.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	TU_CHECK(base != MAP_FAILED, "mmap");
	memcpy(base, &hdr, sizeof(hdr));
	word = (_Atomic uint32_t *)((char *)base + SL_SEG_OFFER_OFF);
	atomic_store(word, SL_OFFER_OFFERED);
	TU_CHECK(fcntl(fds[0], F_ADD_SEALS, seals) == 0, "seal");
	{
		int p1[2], p2[2];

		TU_CHECK(pipe2(p1, O_NONBLOCK) == 0 && pipe2(p2, O_NONBLOCK) == 0, "pipes");
		/* As the library's own bells are: any acceptor may reopen them. */
		TU_CHECK(fchmod(p1[1], 0666) == 0 && fchmod(p2[1], 0666) == 0, "bells open to all");
		fds[1] = p1[1];
		fds[2] = p2[1];
	}
	conn = sl_rdv_connect(&st->dst);
	TU_CHECK(conn >= 0, "reach the listener's rendezvous");
	tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0); /* the offer names a socket of its maker */
	TU_CHECK(tcp >= 0, "socket");
	TU_CHECK(sl_rdv_send_unchecked(conn, tcp, &st->dst, &st->src, fds, false) == 0, "offer sent");
	TU_CHECK(tu_sync_put_child(&st->sync, 1) == 0, "report");
	TU_CHECK(tu_sync_get_child(&st->sync, &v) == 0, "wait for the accept");
	/* Refused is what an acceptor that cannot tell us from the client
	 * says to both (a user namespace leaving uids unmapped). */
	TU_CHECK(atomic_load(word) == SL_OFFER_OFFERED || (st->refused_ok && atomic_load(word) == SL_OFFER_REFUSED),
		 "the forged ring was attached (word %u)", (unsigned)atomic_load(word));
	return 0;
}

/* Binds the rendezvous name of st->dst as st->uid (0: NOBODY) before the
 * real listener, and checks that no offer ever reaches it. */
int rdv_squat(void *p)
{
	struct rdv_stranger *st = p;
	char b;
	int sq, e, n;
	uint64_t v;

	rdv_become(st->uid ? st->uid : NOBODY);
	sq = sl_rdv_listen(&st->dst);
	TU_CHECK(sq >= 0, "bind the rendezvous name");
	TU_CHECK(tu_sync_put_child(&st->sync, 1) == 0, "report");
	TU_CHECK(tu_sync_get_child(&st->sync, &v) == 0, "wait for the connect");
	n = 0;
	while ((e = accept(sq, NULL, NULL)) >= 0) {
		TU_CHECK(recv(e, &b, 1, MSG_DONTWAIT) <= 0, "the squatter received an offer");
		close(e);
		n++;
	}
	tu_log("squatter saw %d connections", n);
	return 0;
}
