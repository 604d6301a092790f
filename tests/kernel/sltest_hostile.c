/* sltest_hostile.c — sltest's hostile arguments: bad ioctl arguments and
 * out-of-range mappings get errors, never an oops.
 */
#include "sltest.h"

/* Bad ioctl arguments and out-of-range mappings get errors, never an oops
 * (the runner fails the suite on any Oops/WARNING/BUG in the console). */
void test_hostile(void)
{
	int csock = slring_bound_sock(), usock = socket(AF_INET, SOCK_DGRAM, 0), tsock = socket(AF_INET, SOCK_STREAM, 0);
	struct scilan_connect cr = slring_connect_req(csock, 4242), ucr = slring_connect_req(tsock, 4242);
	struct scilan_listen lr = { .sockfd = -1 };
	struct scilan_info in;
	struct conn c, s;
	int fd = open(NODE_A, O_RDWR), bad = 0, checks = 0, lfd, zero = 0, minus = -1;
	uint32_t tok = 0xff;
	char small[2];
	void *m;
	volatile uintptr_t bad_addr = 8;
	pid_t pid;

	if (fd < 0) {
		result("hostile_args", 0, "open: %s", strerror(errno));
		return;
	}
	EXPECT(ioctl(fd, 0xdeadbeef, 0) < 0, ENOTTY);
	EXPECT(ioctl(fd, SCILAN_IOC_INFO, NULL) < 0, EFAULT);
	EXPECT(ioctl(fd, SCILAN_IOC_INFO, (void *)1) < 0, EFAULT);
	EXPECT(ioctl(fd, SCILAN_IOC_INFO, (void *)0xffff800000000000ull) < 0, EFAULT);
	EXPECT(ioctl(fd, SCILAN_IOC_LISTEN, NULL) < 0, EFAULT);
	/* LISTEN takes only a listening TCP socket of the caller. */
	EXPECT(ioctl(fd, SCILAN_IOC_LISTEN, &lr) < 0, EBADF);
	lr.sockfd = fd;
	EXPECT(ioctl(fd, SCILAN_IOC_LISTEN, &lr) < 0, ENOTSOCK);
	lr.sockfd = usock;
	EXPECT(ioctl(fd, SCILAN_IOC_LISTEN, &lr) < 0, EPROTONOSUPPORT);
	lr.sockfd = tsock;
	EXPECT(ioctl(fd, SCILAN_IOC_LISTEN, &lr) < 0, EINVAL);
	lr.backlog = 5000;
	EXPECT(ioctl(fd, SCILAN_IOC_LISTEN, &lr) < 0, EINVAL);
	EXPECT(ioctl(fd, SCILAN_IOC_CONNECT, NULL) < 0, EFAULT);
	/* CONNECT only from a bound TCP socket of the caller. */
	EXPECT(ioctl(fd, SCILAN_IOC_CONNECT, &ucr) < 0, EINVAL);
	ucr.sockfd = usock;
	EXPECT(ioctl(fd, SCILAN_IOC_CONNECT, &ucr) < 0, EPROTONOSUPPORT);
	cr.flags = 0x8000;
	EXPECT(ioctl(fd, SCILAN_IOC_CONNECT, &cr) < 0, EINVAL);
	/* A late connect (ABI 8) moves an established connection only. */
	cr.flags = SCILAN_CONNECT_LATE;
	EXPECT(ioctl(fd, SCILAN_IOC_CONNECT, &cr) < 0, ENOTCONN);
	cr.flags = 0;
	EXPECT(ioctl(fd, SCILAN_IOC_ACCEPT_LATE, NULL) < 0, EFAULT);
	EXPECT(ioctl(fd, SCILAN_IOC_ACCEPT_LATE, &(struct scilan_accept_late){ .sockfd = csock, .point = 1 }) < 0,
	       ENOTCONN);
	EXPECT(ioctl(fd, SCILAN_IOC_ACCEPT_LATE, &(struct scilan_accept_late){ .sockfd = csock, .flags = 1 }) < 0,
	       EINVAL);
	EXPECT(ioctl(fd, SCILAN_IOC_SEAM_POINT, NULL) < 0, EFAULT);
	EXPECT(ioctl(fd, SCILAN_IOC_SEAM_POINT, &(uint64_t){ 1 }) < 0, EINVAL);
	EXPECT(ioctl(fd, SCILAN_IOC_CONNECT, &cr) < 0, ECONNREFUSED);
	EXPECT(ioctl(fd, SCILAN_IOC_ACCEPT_SOCK, &(struct scilan_accept_sock){ .sockfd = csock }) < 0, ENOTCONN);
	EXPECT(ioctl(fd, SCILAN_IOC_ACCEPT, &minus) < 0, EBADF);
	EXPECT(ioctl(fd, SCILAN_IOC_ACCEPT, &zero) < 0, EINVAL);
	EXPECT(ioctl(fd, SCILAN_IOC_ACCEPT, &fd) < 0, EINVAL);
	EXPECT(ioctl(fd, SCILAN_IOC_ACCEPT, NULL) < 0, EFAULT);
	EXPECT(ioctl(fd, SCILAN_IOC_STIMULATE, &tok) < 0, EINVAL);
	tok = SCILAN_TOKEN_DATA;
	EXPECT(ioctl(fd, SCILAN_IOC_STIMULATE, &tok) < 0, ENOTCONN);
	tok = 0;
	EXPECT(ioctl(fd, SCILAN_IOC_RING_SELF, &tok) < 0, EINVAL);
	EXPECT(read(fd, small, sizeof(small)) < 0, EINVAL);
	EXPECT(read(fd, &tok, sizeof(tok)) < 0, ENOTCONN);
	EXPECT(mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED, ENOTCONN);
	tok = SCILAN_TOKEN_LOCAL;
	EXPECT(ioctl(fd, SCILAN_IOC_RING_SELF, &tok) == 0, 0);
	EXPECT(read(fd, (void *)(uintptr_t)bad_addr, 4) < 0, EFAULT);

	/* A connected endpoint: mappings outside its two slices. */
	lfd = listen_on(NODE_B, 11);
	pid = fork();
	if (pid == 0)
		_exit(conn_accept(&s, NODE_B, lfd, 0) < 0 ? 1 : (pause(), 0));
	if (conn_connect(&c, NODE_A, 11, 0) == 0 && info(c.fd, &in) == 0) {
		size_t sz = in.slice_size;

		EXPECT(ioctl(c.fd, SCILAN_IOC_LISTEN, &(struct scilan_listen){ .sockfd = slring_lsock[lfd] - 1 }) < 0,
		       EINVAL);
		EXPECT(ioctl(c.fd, SCILAN_IOC_CONNECT, &cr) < 0, EISCONN);
		/* Beyond the slices and the set pages (ABI 4). */
		EXPECT(mmap(NULL, sz, PROT_READ, MAP_SHARED, c.fd,
			    SCILAN_MMAP_OUR_ARMED(sz) + SCILAN_SETS * SCILAN_SET_PAGE) == MAP_FAILED,
		       EINVAL);
		EXPECT(mmap(NULL, 2 * sz, PROT_READ, MAP_SHARED, c.fd, 0) == MAP_FAILED, EINVAL);
		EXPECT(mmap(NULL, sz, PROT_READ, MAP_SHARED, c.fd, sz + 4096) == MAP_FAILED, EINVAL);
		EXPECT(mmap(NULL, 4096, PROT_READ, MAP_SHARED, c.fd, 1ull << 40) == MAP_FAILED, EINVAL);
		EXPECT(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, c.fd, 0) == MAP_FAILED, EINVAL);
		EXPECT((m = mremap(c.local, sz, 2 * sz, MREMAP_MAYMOVE)) == MAP_FAILED, EFAULT);
		tok = SCILAN_TOKEN_DATA | SCILAN_TOKEN_SPACE;
		EXPECT(ioctl(c.fd, SCILAN_IOC_STIMULATE, &tok) == 0, 0);
		/* Garbage in every ioctl of our type, sizes and pointers. */
		srand(1);
		for (int i = 0; i < 20000; i++) {
			unsigned long cmd = _IOC(rand() % 4, SCILAN_IOC_MAGIC, rand() % 14, rand() % 64);
			unsigned long arg = ((unsigned long)rand() << 33) ^ (unsigned long)rand();

			if (cmd == SCILAN_IOC_CONNECT || cmd == SCILAN_IOC_ACCEPT)
				continue; /* may block for a real answer */
			ioctl(c.fd, cmd, i % 3 ? arg : (unsigned long)&in);
			ioctl(fd, cmd, arg & 0xfff);
		}
		checks++;
	} else {
		bad++;
		printf("  hostile: connect: %s\n", strerror(errno));
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	conn_close(&c);
	listen_close(lfd);
	close(fd);
	close(csock);
	close(usock);
	close(tsock);
	result("hostile_args", bad == 0, "%d checks, %d unexpected", checks, bad);
}
