/* fallback_helpers.h — what the Criterion tests of fallback reasons share
 * (test_fallback*.c): a reason by its name, a listener without its
 * rendezvous (offers by file and /proc alone), a child whose offer stays out.
 */
#ifndef SCILAN_FALLBACK_HELPERS_H
#define SCILAN_FALLBACK_HELPERS_H

#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "runtime/fallback.h"
#include "fabric/shm/rendezvous.h"
#include "scilan.h"
#include "testutil.h"

static inline enum sl_fb reason_of(const char *name)
{
	for (unsigned i = 0; i < SL_FB_COUNT; i++)
		if (strcmp(sl_fb_name(i), name) == 0)
			return (enum sl_fb)i;
	cr_assert_fail("no reason named %s", name);
	return SL_FB_NONE;
}

/* A hooked listener on 127.0.0.1 whose rendezvous name (rendezvous.c) a
 * socket that does not listen holds first (*squat, to close): the listener
 * gets no rendezvous, its connectors' connect there is refused, and they
 * come by the registry, the offer file and /proc alone, as those of another
 * network namespace of the node do. */
static inline int listen_at_without_rendezvous(in_addr_t host, uint16_t *port, int *squat)
{
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(host) };
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int l = scilan_socket(AF_INET, SOCK_STREAM, 0), n;

	cr_assert_geq(l, 0);
	cr_assert_eq(scilan_bind(l, (struct sockaddr *)&me, sizeof(me)), 0, "bind: %s", strerror(errno));
	*port = tu_local_port(l);
	n = 1 + snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1, SL_RDV_NAME_PREFIX "4-%08x-%u", (unsigned)host,
			 (unsigned)*port);
	*squat = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(*squat, 0);
	cr_assert_eq(bind(*squat, (struct sockaddr *)&sun, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n)),
		     0, "rendezvous name of port %u: %s", (unsigned)*port, strerror(errno));
	cr_assert_eq(scilan_listen(l, 4), 0, "listen: %s", strerror(errno));
	return l;
}

static inline int listen_without_rendezvous(uint16_t *port, int *squat)
{
	return listen_at_without_rendezvous(INADDR_LOOPBACK, port, squat);
}

/* A child that connected and waits (its offer stays out); its pid. */
static inline pid_t connecting_child(uint16_t port, bool undumpable)
{
	struct tu_sync sync;
	uint64_t v;
	pid_t pid;

	cr_assert_eq(tu_sync_init(&sync), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int c;

		/* A failed assertion must not leave it paused forever. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (undumpable)
			prctl(PR_SET_DUMPABLE, 0);
		c = tu_connect(AF_INET, port);
		tu_sync_put_child(&sync, c >= 0);
		pause();
		_exit(0);
	}
	close(sync.child_fd);
	cr_assert_eq(tu_sync_get(&sync, &v), 0);
	cr_assert_eq(v, 1, "the child's connect failed");
	return pid;
}

#endif
