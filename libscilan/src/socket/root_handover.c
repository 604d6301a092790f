/* root_handover.c — a root process becoming another user for good hands
 * that user the TCP sockets it made and nothing listens or connects on yet
 * (varnish: root binds, the worker listens after its setuid).
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/log.h"
#include "runtime/sys.h"
#include "socket/sock_state.h"

/* The one thread of the process that calls setuid: the table walk takes no
 * argument. */
static uid_t new_owner;

static bool sockopt_int(int fd, int level, int name, int *v)
{
	socklen_t len = sizeof(*v);

	return sl_sys.getsockopt(fd, level, name, v, &len) == 0;
}

/* The listener's clients send their segment only to the user the kernel
 * names as the TCP listener's owner (sock_diag: the socket's creator, or
 * whom root fchown'ed it to), and the worker's rendezvous is made at its
 * listen, as the new user.  Root may give what it made to the user it
 * becomes, who holds it anyway; the kernel then tells the truth about who
 * will listen.  Only sockets still closed to TCP (bound or not): a listener
 * made as root has a rendezvous made as root, and a connection is a
 * connection.  Not SO_REUSEPORT ones: the owner decides who may join the
 * group, and every process of a shared uid (nobody) could then take a share
 * of root's port.  The table's word is checked against the kernel's, which
 * a raw system call may have changed behind our back. */
static bool hand_over(struct sl_sock *s)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	struct stat st;
	int proto, reuseport;

	if (sl_sock_state(s) != SL_FRESH)
		return false;
	if (!sockopt_int(s->fd, SOL_SOCKET, SO_PROTOCOL, &proto) || proto != IPPROTO_TCP ||
	    sl_sys.getsockopt(s->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0 || ti.tcpi_state != TCP_CLOSE ||
	    !sockopt_int(s->fd, SOL_SOCKET, SO_REUSEPORT, &reuseport) || reuseport ||
	    fstat(s->fd, &st) < 0 || !S_ISSOCK(st.st_mode) || st.st_uid != 0)
		return false;
	if (fchown(s->fd, new_owner, (gid_t)-1) < 0)
		sl_warn("fd %d: cannot hand a socket root made to uid %u (%m); a listener on it will use kernel TCP "
			"with clients of other users", s->fd, (unsigned)new_owner);
	else
		sl_debug("fd %d: the socket root made is uid %u's now, who will listen on it", s->fd,
			 (unsigned)new_owner);
	return false;
}

void sl_user_leaving_root(uid_t uid)
{
	new_owner = uid;
	sl_sock_any(hand_over);
}
