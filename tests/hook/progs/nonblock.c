/* nonblock.c — O_NONBLOCK and SO_RCVTIMEO changed where the library does not
 * see it first-hand: through syscall(2), by a forked child on the open file
 * description it shares, by the receiver of an SCM_RIGHTS message.  A recv
 * that then blocked instead of saying EAGAIN would hang an event loop or a
 * client waiting with a timeout (the alarm ends the scenario).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scen.h"

static char buf[64];

static int sc_raw_syscalls(void)
{
	int c, s, off = 0;

	tcp_pair(&c, &s);
	SHOW(syscall(SYS_fcntl, s, F_SETFL, O_NONBLOCK));
	SHOW(recv(s, buf, sizeof(buf), 0));
	SHOW(syscall(SYS_ioctl, s, FIONBIO, &off));
	SHOW(send(c, "x", 1, 0));
	SHOW(recv(s, buf, sizeof(buf), 0));
	close(c);
	close(s);
	return 0;
}

static int set_nonblock(void *arg)
{
	int fd = *(int *)arg;

	say("child sets O_NONBLOCK -> %d", fcntl(fd, F_SETFL, O_NONBLOCK));
	return 0;
}

/* The child changes the flag after the parent's last look, while the
 * parent no longer forks: the parent must ask the kernel again. */
static int set_nonblock_later(void *arg)
{
	int *sv = arg;

	chan_get(sv[1]);
	return set_nonblock(&sv[2]);
}

static int sc_forked_child(void)
{
	int c, s, sv[3];
	struct kid k;

	tcp_pair(&c, &s);
	SHOW(recv(s, buf, sizeof(buf), MSG_DONTWAIT));
	kid_start(&k, "child", set_nonblock, &s);
	kid_join(&k);
	SHOW(recv(s, buf, sizeof(buf), 0));
	SHOW(fcntl(s, F_SETFL, 0));

	say("-- the child changes it later");
	chan_open(sv);
	sv[2] = s;
	kid_start(&k, "child", set_nonblock_later, sv);
	SHOW(recv(s, buf, sizeof(buf), MSG_DONTWAIT));
	chan_put(sv[0], 'g');
	kid_join(&k);
	SHOW(recv(s, buf, sizeof(buf), 0));
	close(c);
	close(s);
	return 0;
}

/* SO_RCVTIMEO: a first sleep learns "none" (a thread's byte ends it);
 * then the timeout is set unseen, and a recv with no data must end. */
static void *send_later(void *arg)
{
	usleep(100000);
	if (send(*(int *)arg, "x", 1, 0) != 1)
		fatal("send");
	return NULL;
}

static void sleep_once(int c, int s)
{
	pthread_t t;

	if (pthread_create(&t, NULL, send_later, &c) != 0)
		fatal("pthread_create");
	SHOW(recv(s, buf, sizeof(buf), 0));
	pthread_join(t, NULL);
}

static const struct timeval timeo = { .tv_usec = 200000 };

static int sc_timeout_raw_syscall(void)
{
	int c, s;

	tcp_pair(&c, &s);
	sleep_once(c, s);
	SHOW(syscall(SYS_setsockopt, s, SOL_SOCKET, SO_RCVTIMEO, &timeo, sizeof(timeo)));
	SHOW(recv(s, buf, sizeof(buf), 0));
	close(c);
	close(s);
	return 0;
}

static int set_timeout(void *arg)
{
	say("child sets SO_RCVTIMEO -> %d", setsockopt(*(int *)arg, SOL_SOCKET, SO_RCVTIMEO, &timeo, sizeof(timeo)));
	return 0;
}

static int sc_timeout_forked_child(void)
{
	int c, s;
	struct kid k;

	tcp_pair(&c, &s);
	sleep_once(c, s);
	kid_start(&k, "child", set_timeout, &s);
	kid_join(&k);
	SHOW(recv(s, buf, sizeof(buf), 0));
	close(c);
	close(s);
	return 0;
}

/* The socket, after a first look (learn: a sleep), goes by SCM_RIGHTS to
 * a process that changes it with change() and exits. */
struct handoff {
	int sv[2];
	int (*change)(void *fd);
};

static int receive_and_change(void *arg)
{
	struct handoff *h = arg;
	int fd = scen_recv_fd(h->sv[1]);

	if (fd < 0)
		fatal("no descriptor came");
	return h->change(&fd);
}

static int scm_handoff(int (*change)(void *fd), bool learn)
{
	struct handoff h = { .change = change };
	int c, s;
	struct kid k;

	chan_open(h.sv);
	kid_start(&k, "receiver", receive_and_change, &h);
	tcp_pair(&c, &s);
	if (learn)
		sleep_once(c, s);
	else
		SHOW(recv(s, buf, sizeof(buf), MSG_DONTWAIT));
	if (scen_send_fd(h.sv[0], s) < 0)
		fatal("sendmsg");
	kid_join(&k);
	SHOW(recv(s, buf, sizeof(buf), 0));
	close(c);
	close(s);
	return 0;
}

static int sc_scm_receiver(void)
{
	return scm_handoff(set_nonblock, false);
}

static int sc_timeout_scm_receiver(void)
{
	return scm_handoff(set_timeout, true);
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "raw_syscalls", sc_raw_syscalls },
		{ "forked_child", sc_forked_child },
		{ "scm_receiver", sc_scm_receiver },
		{ "timeout_raw_syscall", sc_timeout_raw_syscall },
		{ "timeout_forked_child", sc_timeout_forked_child },
		{ "timeout_scm_receiver", sc_timeout_scm_receiver },
		{ NULL, NULL },
	};

	return scen_main(argc, argv, t);
}
