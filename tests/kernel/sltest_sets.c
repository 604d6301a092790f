/* sltest_sets.c — sltest's set endpoints (ABI 4): index, limit, pages and
 * ringing; a set under link down; the per-uid quota of set indices, plain
 * and through a user namespace.
 */
#include "sltest.h"

/* The set tests' mappings, each MAP_FAILED when not made: the peer's
 * marks pages and our armed pages (a connection's), a set's two pages. */
static void unmap_set_pages(void *pmarks, void *oarmed, void *marks, void *armed)
{
	size_t pg = SCILAN_SET_PAGE;

	if (pmarks != MAP_FAILED)
		munmap(pmarks, SCILAN_SETS * pg);
	if (oarmed != MAP_FAILED)
		munmap(oarmed, SCILAN_SETS * pg);
	if (marks != MAP_FAILED)
		munmap(marks, pg);
	if (armed != MAP_FAILED)
		munmap(armed, pg);
}

/* A set endpoint (ABI 4) on node A: its index, INFO, the SCILAN_SETS limit,
 * an index freed at close; a connection whose B side marks its slice in
 * A's set, reads the set's armed word and rings it; the mapping rules. */
void test_sets(void)
{
	const size_t pg = SCILAN_SET_PAGE;
	struct scilan_info in, sin, cin;
	struct conn c = { .fd = -1 }, s = { .fd = -1 };
	int lfd = listen_on(NODE_B, 21), set = open(NODE_A, O_RDWR), idle = open(NODE_A, O_RDWR), more[SCILAN_SETS];
	int bad = 0, checks = 0, nmore = 0, err = 0, ok_limit, woke = 0, busy_all, again_fd, stats;
	uint32_t idx = ~0u, j, tok = 0;
	uint8_t *marks = MAP_FAILED, *armed = MAP_FAILED, *pmarks = MAP_FAILED, *oarmed = MAP_FAILED;
	struct pollfd p;
	size_t sz = 0;
	void *m;

	if (lfd < 0 || set < 0 || idle < 0) {
		result("sets", 0, "setup: %s", strerror(errno));
		goto out;
	}
	EXPECT(ioctl(set, SCILAN_IOC_SET_CREATE, &idx) == 0 && idx < SCILAN_SETS, 0);
	EXPECT(info(set, &in) == 0 && in.ep_state == SCILAN_EP_SET && in.slice == idx, 0);
	EXPECT(ioctl(set, SCILAN_IOC_SET_CREATE, &j) < 0, EINVAL);
	EXPECT(ioctl(set, SCILAN_IOC_ACCEPT, &lfd) < 0, EINVAL);
	EXPECT(ioctl(set, SCILAN_IOC_STIMULATE_SET, &(uint32_t){ 0 }) < 0, ENOTCONN);
	EXPECT(ioctl(set, SCILAN_IOC_STIMULATE, &(uint32_t){ SCILAN_TOKEN_DATA }) < 0, ENOTCONN);
	EXPECT(ioctl(idle, SCILAN_IOC_SET_CREATE, NULL) < 0, EFAULT);
	EXPECT(ioctl(idle, SCILAN_IOC_STIMULATE_SET, &(uint32_t){ 0 }) < 0, ENOTCONN);
	EXPECT(ioctl(idle, SCILAN_IOC_STIMULATE_SET, &(uint32_t){ SCILAN_SETS }) < 0, EINVAL);
	/* Every index taken, then EAGAIN; a closed set's index is free again. */
	while (nmore < (int)SCILAN_SETS) {
		more[nmore] = open(NODE_A, O_RDWR);
		if (ioctl(more[nmore], SCILAN_IOC_SET_CREATE, &j) < 0) {
			err = errno;
			close(more[nmore]);
			break;
		}
		nmore++;
	}
	busy_all = (int)dbg_value(0, "sets_busy");
	ok_limit = nmore == (int)SCILAN_SETS - 1 && err == EAGAIN && busy_all == (int)SCILAN_SETS;
	if (nmore > 0) {
		close(more[--nmore]);
		again_fd = open(NODE_A, O_RDWR);
		ok_limit = ok_limit && ioctl(again_fd, SCILAN_IOC_SET_CREATE, &j) == 0;
		more[nmore++] = again_fd;
	}
	while (nmore > 0)
		close(more[--nmore]);
	ok_limit = ok_limit && settle(0, "sets_busy", 1);
	if (!ok_limit) {
		bad++;
		printf("  sets: %d more sets, then %s; sets_busy %d\n", nmore, strerror(err), busy_all);
	}
	checks++;

	/* The set's own pages: one page each, nothing else. */
	EXPECT((marks = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, set, SCILAN_MMAP_SET_MARKS)) != MAP_FAILED, 0);
	EXPECT((armed = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, set, SCILAN_MMAP_SET_ARMED)) != MAP_FAILED, 0);
	EXPECT(mmap(NULL, 2 * pg, PROT_READ, MAP_SHARED, set, 0) == MAP_FAILED, EINVAL);
	EXPECT(mmap(NULL, pg, PROT_READ, MAP_SHARED, set, 2 * pg) == MAP_FAILED, EINVAL);
	EXPECT(mmap(NULL, pg, PROT_READ, MAP_PRIVATE, set, 0) == MAP_FAILED, EINVAL);
	if (marks == MAP_FAILED || armed == MAP_FAILED)
		goto done;

	/* A connection A -> B: B's side is the sender into A's set. */
	if (conn_connect(&c, NODE_A, 21, 0) < 0 || conn_accept(&s, NODE_B, lfd, 0) < 0 || info(s.fd, &sin) < 0 ||
	    info(c.fd, &cin) < 0) {
		bad++;
		printf("  sets: connect: %s\n", strerror(errno));
		goto done;
	}
	sz = sin.slice_size;
	EXPECT(sin.peer_slice == cin.slice, 0);
	EXPECT((pmarks = mmap(NULL, SCILAN_SETS * pg, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd,
			      SCILAN_MMAP_PEER_MARKS(sz))) != MAP_FAILED, 0);
	EXPECT(mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd, SCILAN_MMAP_OUR_ARMED(sz)) == MAP_FAILED, EACCES);
	EXPECT((oarmed = mmap(NULL, SCILAN_SETS * pg, PROT_READ, MAP_SHARED, s.fd, SCILAN_MMAP_OUR_ARMED(sz))) != MAP_FAILED,
	       0);
	if (oarmed != MAP_FAILED)
		EXPECT(mprotect(oarmed, pg, PROT_READ | PROT_WRITE) < 0, EACCES);
	/* A mapping lies inside one region. */
	EXPECT(mmap(NULL, 2 * pg, PROT_READ, MAP_SHARED, s.fd, SCILAN_MMAP_OUR_ARMED(sz) - pg) == MAP_FAILED, EINVAL);
	EXPECT(mmap(NULL, 2 * pg, PROT_READ, MAP_SHARED, s.fd, SCILAN_MMAP_PEER_MARKS(sz) - pg) == MAP_FAILED, EINVAL);
	EXPECT(mmap(NULL, pg, PROT_READ, MAP_SHARED, s.fd, SCILAN_MMAP_OUR_ARMED(sz) + SCILAN_SETS * pg) == MAP_FAILED,
	       EINVAL);
	EXPECT((m = mmap(NULL, pg, PROT_READ, MAP_SHARED, s.fd, SCILAN_MMAP_OUR_ARMED(sz) + (SCILAN_SETS - 1) * pg)) !=
		       MAP_FAILED,
	       0);
	if (m != MAP_FAILED)
		munmap(m, pg);
	if (pmarks == MAP_FAILED || oarmed == MAP_FAILED)
		goto done;

	/* B marks its connection in A's set i; A's set arms, B sees it. */
	atomic_store((_Atomic uint8_t *)(pmarks + idx * pg + SCILAN_SET_MARKS_OFF + sin.peer_slice), 1);
	EXPECT(atomic_load((_Atomic uint8_t *)(marks + SCILAN_SET_MARKS_OFF + cin.slice)) == 1, 0);
	atomic_store((_Atomic uint32_t *)armed, 1);
	EXPECT(atomic_load((_Atomic uint32_t *)(oarmed + idx * pg)) == 1, 0);

	/* Nothing pending: EAGAIN; B rings set i: A's set wakes with DATA. */
	fcntl(set, F_SETFL, O_NONBLOCK);
	EXPECT(read(set, &tok, sizeof(tok)) < 0, EAGAIN);
	fcntl(set, F_SETFL, 0);
	EXPECT(ioctl(s.fd, SCILAN_IOC_STIMULATE_SET, &(uint32_t){ SCILAN_SETS }) < 0, EINVAL);
	EXPECT(ioctl(s.fd, SCILAN_IOC_STIMULATE_SET, &idx) == 0, 0);
	p = (struct pollfd){ .fd = set, .events = POLLIN };
	woke = poll(&p, 1, 5000) == 1 && (p.revents & POLLIN);
	EXPECT(woke && read(set, &tok, sizeof(tok)) == sizeof(tok) && tok == SCILAN_TOKEN_DATA, 0);
	EXPECT(atomic_load((_Atomic uint32_t *)marks) == 0, 0); /* the stimulus word was taken */
	stats = dbg_value(1, "set_stimuli") > 0 && dbg_value(0, "set_wakeups") > 0;
	EXPECT(stats, 0);
	/* A ring of another set does not wake this one. */
	EXPECT(ioctl(s.fd, SCILAN_IOC_STIMULATE_SET, &(uint32_t){ (idx + 1) % SCILAN_SETS }) == 0, 0);
	p = (struct pollfd){ .fd = set, .events = POLLIN };
	EXPECT(poll(&p, 1, 200) == 0, 0);
	/* RING_SELF on a set, as on a connection. */
	EXPECT(ioctl(set, SCILAN_IOC_RING_SELF, &(uint32_t){ SCILAN_TOKEN_LOCAL }) == 0, 0);
	EXPECT(read(set, &tok, sizeof(tok)) == sizeof(tok) && tok == SCILAN_TOKEN_LOCAL, 0);
	/* A's side closes the connection: B (peer-closed) may still ring. */
	conn_close(&c);
	for (int k = 0; k < 300 && (info(s.fd, &sin) < 0 || sin.ep_state != SCILAN_EP_PEER_CLOSED); k++)
		usleep(10000);
	EXPECT(sin.ep_state == SCILAN_EP_PEER_CLOSED, 0);
	EXPECT(ioctl(s.fd, SCILAN_IOC_STIMULATE_SET, &idx) == 0, 0);
	p = (struct pollfd){ .fd = set, .events = POLLIN };
	EXPECT(poll(&p, 1, 5000) == 1 && read(set, &tok, sizeof(tok)) == sizeof(tok) && tok == SCILAN_TOKEN_DATA, 0);
	/* Closing the set takes its armed word back (B reads 0). */
	munmap(marks, pg);
	munmap(armed, pg);
	marks = armed = MAP_FAILED;
	close(set);
	set = -1;
	EXPECT(atomic_load((_Atomic uint32_t *)(oarmed + idx * pg)) == 0, 0);
	woke = woke && settle(0, "sets_busy", 0);
done:
	unmap_set_pages(pmarks, oarmed, marks, armed);
	conn_close(&c);
	conn_close(&s);
	result("sets", bad == 0 && ok_limit && woke, "set %u, %d checks, %d unexpected, limit of %u sets %d, woken %d",
	       idx, checks, bad, SCILAN_SETS, ok_limit, woke);
out:
	if (set >= 0)
		close(set);
	if (idle >= 0)
		close(idle);
	listen_close(lfd);
}

/* The link is cut under a set and a connection with set pages mapped:
 * the set polls POLLERR and reads ECONNRESET, ringing and creating fail,
 * every mapping is still usable (our pages stay ours, the peer's are the
 * sink: no SIGBUS), the index is held until close; after link up a set
 * is created again. */
void test_sets_linkdown(void)
{
	const size_t pg = SCILAN_SET_PAGE;
	struct scilan_info in = { 0 }, sin;
	struct conn c = { .fd = -1 }, s = { .fd = -1 };
	int lfd = listen_on(NODE_B, 22), set = open(NODE_A, O_RDWR), fresh = -1, bad = 0, checks = 0, again = 0, held;
	uint8_t *marks = MAP_FAILED, *armed = MAP_FAILED, *pmarks = MAP_FAILED, *oarmed = MAP_FAILED;
	uint32_t idx = ~0u, tok;
	struct pollfd p;
	size_t sz;
	int cut;

	if (lfd < 0 || set < 0 || ioctl(set, SCILAN_IOC_SET_CREATE, &idx) < 0 || conn_connect(&c, NODE_A, 22, 0) < 0 ||
	    conn_accept(&s, NODE_B, lfd, 0) < 0 || info(s.fd, &sin) < 0) {
		result("sets_linkdown", 0, "setup: %s", strerror(errno));
		goto out;
	}
	sz = sin.slice_size;
	marks = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, set, SCILAN_MMAP_SET_MARKS);
	armed = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, set, SCILAN_MMAP_SET_ARMED);
	pmarks = mmap(NULL, SCILAN_SETS * pg, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd, SCILAN_MMAP_PEER_MARKS(sz));
	oarmed = mmap(NULL, SCILAN_SETS * pg, PROT_READ, MAP_SHARED, s.fd, SCILAN_MMAP_OUR_ARMED(sz));
	if (marks == MAP_FAILED || armed == MAP_FAILED || pmarks == MAP_FAILED || oarmed == MAP_FAILED) {
		result("sets_linkdown", 0, "mmap: %s", strerror(errno));
		goto out;
	}
	marks[SCILAN_SET_MARKS_OFF] = 7;
	*(volatile uint32_t *)armed = 1;
	EXPECT(*(volatile uint32_t *)(oarmed + idx * pg) == 1, 0);
	cut = write_file(MOCK_LINK, "0") == 0;
	EXPECT(cut, 0);
	p = (struct pollfd){ .fd = set, .events = POLLIN };
	EXPECT(poll(&p, 1, 5000) == 1 && (p.revents & POLLERR) && (p.revents & POLLHUP), 0);
	/* Tokens pending at the cut are read first, as for any endpoint (a
	 * doorbell that landed just before it: one run in many); then the
	 * reset. */
	EXPECT(read(set, &tok, sizeof(tok)) < 0 || read(set, &tok, sizeof(tok)) < 0, ECONNRESET);
	EXPECT(info(set, &in) == 0 && in.ep_state == SCILAN_EP_RESET && in.slice == idx, 0);
	EXPECT(ioctl(s.fd, SCILAN_IOC_STIMULATE_SET, &idx) < 0, ECONNRESET);
	fresh = open(NODE_A, O_RDWR);
	EXPECT(fresh >= 0, 0);
	EXPECT(ioctl(fresh, SCILAN_IOC_SET_CREATE, &tok) < 0, ENETUNREACH);
	held = dbg_value(0, "sets_busy") == 1;
	EXPECT(held, 0);
	/* Touching every mapping again: no SIGBUS; our pages are ours. */
	signal(SIGBUS, sigbus_handler);
	if (sigsetjmp(sigbus_jmp, 1) == 0) {
		EXPECT(marks[SCILAN_SET_MARKS_OFF] == 7, 0);
		marks[SCILAN_SET_MARKS_OFF] = 0;
		*(volatile uint32_t *)armed = 2;
		(void)*(volatile uint32_t *)armed;
		pmarks[idx * pg + SCILAN_SET_MARKS_OFF] = 1;
		(void)*(volatile uint32_t *)(oarmed + idx * pg);
		checks++;
	} else {
		bad++;
		printf("  sets_linkdown: SIGBUS\n");
	}
	signal(SIGBUS, SIG_DFL);
	munmap(marks, pg);
	munmap(armed, pg);
	marks = armed = MAP_FAILED;
	close(set);
	set = -1;
	held = settle(0, "sets_busy", 0);
	EXPECT(held, 0);
	write_file(MOCK_LINK, "1");
	again = wait_link(NODE_A, 5000) && wait_link(NODE_B, 5000) && ioctl(fresh, SCILAN_IOC_SET_CREATE, &tok) == 0 &&
		tok < SCILAN_SETS;
	result("sets_linkdown", bad == 0 && again, "set %u, %d checks, %d unexpected, set created after link up %d", idx,
	       checks, bad, again);
out:
	unmap_set_pages(pmarks, oarmed, marks, armed);
	conn_close(&c);
	conn_close(&s);
	if (set >= 0)
		close(set);
	if (fresh >= 0)
		close(fresh);
	listen_close(lfd);
	write_file(MOCK_LINK, "1");
	wait_link(NODE_A, 5000);
	wait_link(NODE_B, 5000);
}

/* The module's per-uid limit of set indices (-1 when unreadable). */
static long sets_per_uid(void)
{
	FILE *f = fopen("/sys/module/scilan/parameters/sets_per_uid", "r");
	long v = -1;

	if (f && fscanf(f, "%ld", &v) != 1)
		v = -1;
	if (f)
		fclose(f);
	return v;
}

/* One uid cannot take every set index of a link: uid 65534 creates sets
 * until EAGAIN and gets exactly sets_per_uid; then another uid (65533) and
 * root still create one each. */
void test_sets_per_uid(void)
{
	int to_child[2], to_parent[2], n = -1, other = 0, root_ok, fd = -1, st = -1;
	long quota = sets_per_uid(), busy0 = dbg_value(0, "sets_busy");
	uint32_t idx;
	pid_t pid;
	char step;

	if (pipe(to_child) < 0 || pipe(to_parent) < 0) {
		result("sets_per_uid", 0, "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		int sets[SCILAN_SETS], k = 0, err = 0;

		if (become_uid(65534) < 0)
			_exit(100);
		while (k < (int)SCILAN_SETS) {
			sets[k] = open(NODE_A, O_RDWR);
			if (sets[k] < 0 || ioctl(sets[k], SCILAN_IOC_SET_CREATE, &idx) < 0) {
				err = errno;
				break;
			}
			k++;
		}
		if (k < (int)SCILAN_SETS && err != EAGAIN)
			k = -err;
		if (write(to_parent[1], &k, sizeof(k)) != sizeof(k) || read(to_child[0], &step, 1) != 1)
			_exit(101);
		_exit(0);
	}
	if (read(to_parent[0], &n, sizeof(n)) == sizeof(n)) {
		pid_t o = fork();

		if (o == 0) {
			int f;

			if (become_uid(65533) < 0)
				_exit(100);
			f = open(NODE_A, O_RDWR);
			_exit(f >= 0 && ioctl(f, SCILAN_IOC_SET_CREATE, &idx) == 0 ? 0 : 1);
		}
		other = waitpid(o, &st, 0) == o && WIFEXITED(st) && WEXITSTATUS(st) == 0;
		st = -1;
	}
	fd = open(NODE_A, O_RDWR);
	root_ok = fd >= 0 && ioctl(fd, SCILAN_IOC_SET_CREATE, &idx) == 0;
	if (write(to_child[1], "x", 1) == 1 && waitpid(pid, &st, 0) == pid && WIFEXITED(st))
		st = WEXITSTATUS(st);
	if (fd >= 0)
		close(fd);
	close(to_child[0]);
	close(to_child[1]);
	close(to_parent[0]);
	close(to_parent[1]);
	result("sets_per_uid", busy0 == 0 && quota > 0 && n == quota && other && root_ok && st == 0,
	       "uid 65534 took %d of %u sets then EAGAIN (quota %ld, %ld busy before); uid 65533 then created one %d, "
	       "root %d",
	       n, SCILAN_SETS, quota, busy0, other, root_ok);
	settle(0, "sets_busy", 0);
}

/* The quota of sets_per_uid through a user namespace with a range of uids
 * (what newuidmap gives from /etc/subuid): uid 65534 makes one, root maps
 * 16 uids into it, and it creates a set as each of them; they all count as
 * 65534's, so it gets exactly sets_per_uid. */
void test_sets_per_uid_userns(void)
{
	int to_child[2], to_parent[2], n = -1;
	long quota = sets_per_uid(), busy0 = dbg_value(0, "sets_busy");
	char path[64], step;
	pid_t pid;

	if (pipe(to_child) < 0 || pipe(to_parent) < 0) {
		result("sets_per_uid_userns", 0, "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		int sets[SCILAN_SETS], k = 0, got = 0;
		uint32_t idx;

		if (become_uid(65534) < 0 || unshare(CLONE_NEWUSER) < 0 || write(to_parent[1], "u", 1) != 1 ||
		    read(to_child[0], &step, 1) != 1)
			_exit(100);
		/* Uid k of the namespace (saved uid 0: back to root after). */
		for (k = 0; k < (int)SCILAN_SETS; k++) {
			if (setresuid((uid_t)k, (uid_t)k, 0) < 0)
				break;
			sets[got] = open(NODE_A, O_RDWR);
			if (sets[got] >= 0 && ioctl(sets[got], SCILAN_IOC_SET_CREATE, &idx) == 0)
				got++;
			if (setresuid(0, 0, 0) < 0)
				break;
		}
		if (k < (int)SCILAN_SETS)
			got = -1;
		if (write(to_parent[1], &got, sizeof(got)) != sizeof(got) || read(to_child[0], &step, 1) != 1)
			_exit(101);
		_exit(0);
	}
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	if (read(to_parent[0], &step, 1) != 1 || write_file(path, "0 300000 16") < 0 || write(to_child[1], "m", 1) != 1 ||
	    read(to_parent[0], &n, sizeof(n)) != sizeof(n))
		n = -2;
	if (write(to_child[1], "x", 1) != 1)
		n = -3;
	waitpid(pid, NULL, 0);
	close(to_child[0]);
	close(to_child[1]);
	close(to_parent[0]);
	close(to_parent[1]);
	result("sets_per_uid_userns", busy0 == 0 && quota > 0 && n == quota,
	       "16 uids of uid 65534's user namespace took %d sets (quota %ld, %ld busy before; -1 setresuid failed)",
	       n, quota, busy0);
	settle(0, "sets_busy", 0);
}
