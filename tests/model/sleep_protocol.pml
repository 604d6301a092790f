/* sleep_protocol.pml — a SPIN model of scilan's interrupt-flag sleep protocol
 * (ARCHITECTURE.md, "The sleep protocol") under x86-TSO: each side's stores go
 * through a FIFO store buffer drained at arbitrary times; mfence waits for it.
 * SPIN reports an invalid end state if the receiver can sleep forever with
 * data in the ring (a lost wake-up).  -DNO_RX_FENCE / -DNO_TX_FENCE remove a
 * fence; check.sh requires those mutants to fail, so the model can fail.
 * -DMEMBARRIER models the asymmetric variant (barrier.c): the sender publishes
 * with no fence and the receiver's membarrier drains the sender's store
 * buffer before its re-check; -DNO_MEMBARRIER then drops that call.
 * -DFUTEX models the shm sleep on the arm word itself: the receiver arms
 * with a locked OR of SL_ARM_FUTEX (2) and sleeps in FUTEX_WAIT while the
 * word still holds what it armed (compared and queued atomically under the
 * kernel's bucket lock); the sender exchanges the word to 0, then, as a
 * separate step, FUTEX_WAKEs.  -DNO_FUTEX_COMPARE sleeps without the
 * comparison (a wake before the wait is lost), which must fail.
 */
#define N 3

#ifdef FUTEX
#define ARMED 2                    /* SL_ARM_FUTEX */
#else
#define ARMED 1                    /* SL_ARM_BELL */
#endif

byte idx_mem = 0;          /* ring write index, as memory holds it */
byte arm_mem = 0;          /* wake_on_data in the sender's area */
byte doorbell = 0;         /* wake-up bytes queued in the bell */
bit waiting = 0;           /* the receiver is queued in FUTEX_WAIT */
byte consumed = 0;

chan sender_stores = [2] of { byte };   /* sender's pending idx stores */
chan receiver_stores = [2] of { byte }; /* receiver's pending arm stores */

active proctype store_buffers()
{
end:	do
	:: atomic { nempty(sender_stores) -> sender_stores ? idx_mem }
	:: atomic { nempty(receiver_stores) -> receiver_stores ? arm_mem }
	od
}

active proctype sender()
{
	byte k = 1;

	byte armed;

	do
	:: k <= N ->
		sender_stores ! k;                 /* publish the new write index */
#if !defined(NO_TX_FENCE) && !defined(MEMBARRIER)
		empty(sender_stores);              /* mfence (xchg) */
#endif
		armed = 0;
		if
		:: arm_mem != 0 ->                 /* plain load of the arm word */
			atomic {                   /* xchg: a locked op is SC */
				empty(sender_stores);
				armed = arm_mem;
				arm_mem = 0
			}
		:: else -> skip
		fi;
		if                                 /* the stimulus the arm asked for */
		:: armed == 1 -> doorbell++
		:: armed == 2 -> waiting = 0       /* FUTEX_WAKE: every waiter queued now */
		:: else -> skip
		fi;
		k++
	:: else -> break
	od
}

active proctype receiver()
{
	do
	:: consumed == N -> break
	:: else ->
		if
		:: idx_mem > consumed -> consumed = idx_mem
		:: else ->
#ifdef FUTEX
			atomic {                   /* lock or: drains our buffer, SC */
				empty(receiver_stores);
				arm_mem = arm_mem | ARMED
			}
#else
			doorbell = 0;              /* drain stale wake-ups */
			receiver_stores ! ARMED;   /* arm */
#endif
#ifndef NO_RX_FENCE
			empty(receiver_stores);    /* mfence (read-back on NTB) */
#endif
#if defined(MEMBARRIER) && !defined(NO_MEMBARRIER)
			empty(sender_stores);      /* membarrier: IPI makes the sender fence */
#endif
			if
			:: idx_mem > consumed ->   /* re-check before sleeping */
				receiver_stores ! 0;
				consumed = idx_mem
			:: else ->
#ifdef FUTEX
				atomic {           /* FUTEX_WAIT(word, armed value) */
#ifdef NO_FUTEX_COMPARE
					waiting = 1
#else
					if
					:: arm_mem == ARMED -> waiting = 1
					:: else -> skip    /* EAGAIN: already woken */
					fi
#endif
				}
				waiting == 0;      /* sleep until FUTEX_WAKE */
#else
				doorbell > 0;      /* sleep until the wake-up byte */
				doorbell--;
#endif
				receiver_stores ! 0
			fi
		fi
	od
}
