/* rundir_sweep.h — removes what dead processes left in the runtime directory
 * (statistics files, offers, wake-up FIFOs, half-written offers, listener
 * entries), a bounded number of entries per call.
 */
#ifndef SCILAN_RUNDIR_SWEEP_H
#define SCILAN_RUNDIR_SWEEP_H

/* Entries one set-up sweep looks at. */
#define SL_SWEEP_BUDGET 32

/* Look at up to budget entries of <rundir>/stats, offer and listen, going on
 * from where the last sweep of any process stopped, and remove those no live
 * process holds.  Liveness is proven by what the owner holds open (a lock, a
 * FIFO), never by a pid, which another process may have by now. */
void sl_rundir_sweep(unsigned budget);
/* One sweep of SL_SWEEP_BUDGET, at most once a second per process: for
 * set-up paths (connect, the first accelerated connection). */
void sl_rundir_sweep_tick(void);
/* A tick wanted at the process's next wait (sl_rundir_sweep_idle): set-up
 * paths that must not pay for a round of the janitor. */
void sl_rundir_sweep_soon(void);
void sl_rundir_sweep_idle(void);

#endif
