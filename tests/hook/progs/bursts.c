/* bursts.c — many short connections at once to a server of several processes
 * (pre-forked workers accepting on one listener, as gunicorn, nginx, php-fpm
 * run): every request gets its answer without waiting for the agreement's
 * 1 s bound.  A plain POSIX program; it re-executes itself once to ask the
 * hook to offer rings on every connect (no learning of short connections).
 *
 * The one timed line of the transcript: no connection took 500 ms or more
 * from its connect to the first byte of its answer.  The defect it catches is
 * a fixed 1 s wait (an acceptor that missed its client's offer, the client
 * then moving to kernel TCP after its agreement bound), not a slowness: a
 * short connection takes well under a millisecond on either transport, so a
 * bound of half that second tells the two apart on a loaded machine too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "scen.h"

#define WORKERS 8
#define CLIENTS 16
#define PER_CLIENT 75 /* 1,200 connections */
#define SLOW_MS 500

static uint16_t port;
static const char *const client_names[CLIENTS] = { "client 1",  "client 2",  "client 3",  "client 4",
						   "client 5",  "client 6",  "client 7",  "client 8",
						   "client 9",  "client 10", "client 11", "client 12",
						   "client 13", "client 14", "client 15", "client 16" };
static int lfd;

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Pre-forked worker: answer one request per connection until told to stop. */
static int worker(void *arg)
{
	static const char answer[] = "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok";
	unsigned served = 0;

	(void)arg;
	for (;;) {
		char req[128] = { 0 };
		int s = MUST(accept(lfd, NULL, NULL));
		ssize_t n = recv(s, req, sizeof(req) - 1, 0);

		if (n <= 0)
			fatal("worker recv after %u connections", served);
		if (strncmp(req, "quit", 4) == 0) {
			close(s);
			break;
		}
		send_all(s, answer, sizeof(answer) - 1);
		close(s);
		served++;
	}
	say("stops");
	return 0;
}

/* ab's way: connect, send the request, read the answer to its end, close;
 * one after another, while the other clients do the same. */
static int client(void *arg)
{
	/* 83 bytes, as ab's GET. */
	static const char request[] = "GET / HTTP/1.0\r\nHost: 127.0.0.1\r\nUser-Agent: ApacheBench/2.3\r\nAccept: */*\r\n\r\n\r\n";
	int64_t worst = 0;
	unsigned slow = 0, answered = 0;

	(void)arg;
	for (int i = 0; i < PER_CLIENT; i++) {
		char buf[256];
		int64_t start = now_ms(), first;
		int c = tcp_connect(port);
		ssize_t n;

		send_all(c, request, sizeof(request) - 1);
		n = recv(c, buf, sizeof(buf), 0);
		first = now_ms() - start;
		if (n <= 0)
			fatal("client recv on connection %d", i);
		while ((n = recv(c, buf, sizeof(buf), 0)) > 0)
			;
		close(c);
		answered++;
		if (first >= SLOW_MS)
			slow++;
		if (first > worst)
			worst = first;
	}
	say("%u answers, %u of them %d ms or more after the connect", answered, slow, SLOW_MS);
	if (slow) /* only a failing run shows a time */
		say("the slowest took %lld ms", (long long)worst);
	return 0;
}

static void ask_to_stop(int workers)
{
	for (int i = 0; i < workers; i++) {
		int c = tcp_connect(port);
		char b;

		send_all(c, "quit", 4);
		if (recv(c, &b, 1, 0) != 0)
			fatal("quit answered");
		close(c);
	}
}

/* Every connect offers rings: the hook reads its settings at load, hence
 * the exec. */
static void offer_on_every_connect(const char *scenario)
{
	if (getenv("SCILAN_SHORT_CONNS"))
		return;
	setenv("SCILAN_SHORT_CONNS", "accelerate", 1);
	fflush(stdout);
	execl(scen_self, scen_self, scenario, (char *)NULL);
	fatal("exec %s", scen_self);
}

/* A client without the hook (a program not on scilan), in a kid: this
 * program again, unhooked, with the port. */
static int plain_client(void *arg)
{
	char portarg[8];

	(void)arg;
	snprintf(portarg, sizeof(portarg), "%u", (unsigned)port);
	close(lfd);
	unsetenv("LD_PRELOAD");
	fflush(stdout);
	execl(scen_self, scen_self, "plain_client", portarg, (char *)NULL);
	fatal("exec %s", scen_self);
}

static int sc_plain_client(void)
{
	port = (uint16_t)atoi(scen_argc > 0 ? scen_argv[0] : "0");
	return client(NULL);
}

/* CLIENTS clients at once, the first plain of them without the hook, to the
 * running workers w; then the workers are stopped. */
static int serve_clients(struct kid *w, int plain)
{
	struct kid c[CLIENTS];

	for (int i = 0; i < CLIENTS; i++)
		kid_start(&c[i], client_names[i], i < plain ? plain_client : client, NULL);
	for (int i = 0; i < CLIENTS; i++)
		kid_join(&c[i]);
	ask_to_stop(WORKERS);
	for (int i = 0; i < WORKERS; i++)
		kid_join(&w[i]);
	close(lfd);
	return 0;
}

/* WORKERS pre-forked workers, CLIENTS clients at once; the first plain of
 * them without the hook. */
static int preforked(const char *scenario, int plain)
{
	static const char *const names[WORKERS] = { "worker 1", "worker 2", "worker 3", "worker 4",
						    "worker 5", "worker 6", "worker 7", "worker 8" };
	struct kid w[WORKERS];

	offer_on_every_connect(scenario);
	lfd = tcp_listener(&port);
	for (int i = 0; i < WORKERS; i++)
		kid_start(&w[i], names[i], worker, NULL);
	return serve_clients(w, plain);
}

/* Half the workers are not forked from the listener's maker: forked
 * before it listened, they are handed the listener over SCM_RIGHTS (as a
 * Node.js cluster primary hands its workers theirs), and with it its
 * rendezvous but not the lock its forked acceptors share, so all of them
 * take the queue's record lock too; every offer is still found. */
static int late_worker(void *arg)
{
	int *via = arg;

	lfd = scen_recv_fd(via[1]);
	if (lfd < 0)
		fatal("no listener received");
	close(via[0]);
	close(via[1]);
	return worker(NULL);
}

static int sc_preforked_passed(void)
{
	static const char *const names[WORKERS] = { "late worker 1", "late worker 2", "late worker 3",
						    "late worker 4", "worker 5",      "worker 6",
						    "worker 7",      "worker 8" };
	struct kid w[WORKERS];
	int via[WORKERS / 2][2];

	offer_on_every_connect("preforked_passed");
	for (int i = 0; i < WORKERS / 2; i++) {
		MUST(socketpair(AF_UNIX, SOCK_STREAM, 0, via[i]));
		kid_start(&w[i], names[i], late_worker, via[i]);
	}
	lfd = tcp_listener(&port);
	for (int i = 0; i < WORKERS / 2; i++) {
		MUST(scen_send_fd(via[i][0], lfd));
		close(via[i][0]);
		close(via[i][1]);
	}
	for (int i = WORKERS / 2; i < WORKERS; i++)
		kid_start(&w[i], names[i], worker, NULL);
	return serve_clients(w, 0);
}

static int sc_preforked(void)
{
	return preforked("preforked", 0);
}

/* Half the clients are not on scilan: their connections are told plain at
 * once, without a wait, and the others' offers are still all found. */
static int sc_preforked_mixed(void)
{
	return preforked("preforked_mixed", CLIENTS / 2);
}

int main(int argc, char **argv)
{
	static const struct scenario table[] = {
		{ "preforked", sc_preforked },
		{ "preforked_mixed", sc_preforked_mixed },
		{ "preforked_passed", sc_preforked_passed },
		{ "plain_client", sc_plain_client },
		{ NULL, NULL },
	};

	return scen_main(argc, argv, table);
}
