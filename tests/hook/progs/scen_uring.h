/* scen_uring.h — io_uring calls for the scenario programs (scen_uring.c):
 * one ring per process, each call submitted and waited for alone.
 */
#ifndef SCEN_URING_H
#define SCEN_URING_H

#include <liburing.h>
#include <stddef.h>

extern struct io_uring scen_ring;

void uring_init(void);
/* Submit the prepared entry and wait for its completion: the result. */
int uring_wait(void);
int uring_accept(int l);
/* Until len bytes, an error or EOF: how many moved. */
size_t uring_send_all(int fd, const char *buf, size_t len);
size_t uring_recv_all(int fd, char *buf, size_t len);

#endif
