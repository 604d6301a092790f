/* nonblock.c — O_NONBLOCK changed where the library does not see it
 * first-hand: through syscall(2), by a forked child on the open file
 * description it shares, by the receiver of an SCM_RIGHTS message.  A
 * recv that then blocked instead of saying EAGAIN would hang an event loop
 * (the alarm ends the scenario).
 */
#include <fcntl.h>
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

static int receive_and_set(void *arg)
{
	int *sv = arg, fd = scen_recv_fd(sv[1]);

	if (fd < 0)
		fatal("no descriptor came");
	return set_nonblock(&fd);
}

static int sc_scm_receiver(void)
{
	int c, s, sv[2];
	struct kid k;

	chan_open(sv);
	kid_start(&k, "receiver", receive_and_set, sv);
	tcp_pair(&c, &s);
	SHOW(recv(s, buf, sizeof(buf), MSG_DONTWAIT));
	if (scen_send_fd(sv[0], s) < 0)
		fatal("sendmsg");
	kid_join(&k);
	SHOW(recv(s, buf, sizeof(buf), 0));
	close(c);
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct scenario t[] = {
		{ "raw_syscalls", sc_raw_syscalls },
		{ "forked_child", sc_forked_child },
		{ "scm_receiver", sc_scm_receiver },
		{ NULL, NULL },
	};

	return scen_main(argc, argv, t);
}
