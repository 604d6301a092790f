/* scen_uring.c — io_uring calls for the scenario programs (progs/agree.c,
 * progs/stall.c): the kernel's own, which no preload sees.  Links liburing.
 */
#include <errno.h>
#include <liburing.h>
#include <sys/socket.h>

#include "scen.h"
#include "scen_uring.h"

struct io_uring scen_ring;

void uring_init(void)
{
	int r = io_uring_queue_init(8, &scen_ring, 0);

	if (r < 0) {
		errno = -r;
		fatal("io_uring_queue_init");
	}
}

/* Submit the prepared entry and wait for its completion: the result. */
int uring_wait(void)
{
	struct io_uring_cqe *cqe;
	int r;

	if (io_uring_submit(&scen_ring) != 1)
		fatal("io_uring_submit");
	while ((r = io_uring_wait_cqe(&scen_ring, &cqe)) == -EINTR)
		;
	if (r < 0) {
		errno = -r;
		fatal("io_uring_wait_cqe");
	}
	r = cqe->res;
	io_uring_cqe_seen(&scen_ring, cqe);
	return r;
}

int uring_accept(int l)
{
	io_uring_prep_accept(io_uring_get_sqe(&scen_ring), l, NULL, NULL, 0);
	return uring_wait();
}

size_t uring_send_all(int fd, const char *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		int n;

		io_uring_prep_send(io_uring_get_sqe(&scen_ring), fd, buf + done, len - done, MSG_NOSIGNAL);
		n = uring_wait();
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	return done;
}

size_t uring_recv_all(int fd, char *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		int n;

		io_uring_prep_recv(io_uring_get_sqe(&scen_ring), fd, buf + done, len - done, 0);
		n = uring_wait();
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	return done;
}
