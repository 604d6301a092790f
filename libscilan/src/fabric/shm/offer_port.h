/* offer_port.h — the mark a connector's port carries when its offer waits in
 * a listener's rendezvous queue: such offers come only from ports in one
 * fixed range (or privileged ones, which clients bind themselves), so an
 * accept whose client's port lies outside has no offer to look for there
 * (offer_port.c).
 */
#ifndef SCILAN_OFFER_PORT_H
#define SCILAN_OFFER_PORT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#ifndef IP_LOCAL_PORT_RANGE
#define IP_LOCAL_PORT_RANGE 51 /* Linux 6.3: the low 16 bits the first port, the high the last */
#endif

/* Inside Linux's default ephemeral range (32768-60999), at its top: a
 * plain client's port falls there about one time in eight. */
#define SL_OFFER_PORT_LO 57344
#define SL_OFFER_PORT_HI 60999
/* And every port below this one: a client binds such a port itself. */
#define SL_OFFER_PORT_PRIVILEGED 1024

/* Accepting side: must an accept from the client port `port` (the kernel's
 * word, from accept) look into its listener's rendezvous queue?  True where
 * this kernel cannot confine a connect's port, and for a marked port. */
bool sl_offer_port_look(int listener, uint16_t port);

/* Connecting side, before an offer goes through the rendezvous: confine the
 * port the kernel's connect picks for tcp to the range.  1 confined (undo
 * with sl_offer_port_settle after the connect), 0 this kernel cannot (its
 * acceptors look at every accept), -1 with errno: the offer must not go
 * that way (EADDRNOTAVAIL: tcp has a port outside the range already; a
 * port outside it recently, see offer_port.c). */
int sl_offer_port_confine(int tcp);

/* bind() of a TCP socket that asks the kernel for a port (port 0: a client
 * that fixes its source address first): the port comes from the range where
 * one is free, else from the whole one, as without us. */
int sl_offer_port_bind(int tcp, const struct sockaddr *addr, socklen_t len);

/* After the kernel's connect of a confined tcp, whatever it returned: the
 * range goes (a later connect of the socket picks from the whole one), and
 * whether the port it took is in range (connected: a port was taken). */
bool sl_offer_port_settle(int tcp, bool connected);

#endif
