/* sleep_protocol.pml — a SPIN model of scilan's interrupt-flag sleep protocol
 * (ARCHITECTURE.md, "The sleep protocol") under x86-TSO: each side's stores go
 * through a FIFO store buffer drained at arbitrary times; mfence waits for it.
 * SPIN reports an invalid end state if the receiver can sleep forever with
 * data in the ring (a lost wake-up).  -DNO_RX_FENCE / -DNO_TX_FENCE remove a
 * fence; check.sh requires those mutants to fail, so the model can fail.
 * -DMEMBARRIER models the asymmetric variant (barrier.c): the sender publishes
 * with no fence and the receiver's membarrier drains the sender's store
 * buffer before its re-check; -DNO_MEMBARRIER then drops that call.
 * -DSWITCH adds the sender's switches between unfenced and fenced sends
 * (conn.c): at any point it clears the unfenced flag through its store
 * buffer, behind its earlier index stores, and fences every later publish;
 * and at any point after that (a few times) it sets the flag again through
 * the buffer, fences once, and publishes unfenced.  The receiver pays the
 * membarrier only while it reads the flag set.  -DSWITCH_OVERTAKES lets the
 * clear bypass the earlier stores, -DSWITCH_BACK_UNFENCED drops the fence
 * after setting the flag again; both must fail.
 */
#define N 3

byte idx_mem = 0;          /* ring write index, as memory holds it */
bit arm_mem = 0;           /* wake_on_data in the sender's area */
byte doorbell = 0;         /* wake-up bytes queued in the kernel socket */
byte consumed = 0;
bit unfenced_mem = 1;      /* SL_PEER_UNFENCED, as memory holds it */
bit fenced = 0;            /* the sender's own mode, after its switch */

/* sender's pending stores: an index 1..N, 0 for the flag's clear, SET_FLAG
 * for setting it again */
#define SET_FLAG 255
chan sender_stores = [3] of { byte };
byte switches = 0;
chan receiver_stores = [2] of { bit };  /* receiver's pending arm stores */

active proctype store_buffers()
{
end:	do
	:: atomic { nempty(sender_stores) ->
		if
		:: sender_stores ? [0] -> sender_stores ? _; unfenced_mem = 0 /* the head only */
		:: sender_stores ? [SET_FLAG] -> sender_stores ? _; unfenced_mem = 1
		:: else -> sender_stores ? idx_mem
		fi }
	:: atomic { nempty(receiver_stores) -> receiver_stores ? arm_mem }
	od
}

active proctype sender()
{
	byte k = 1;

	do
#ifdef SWITCH
	:: fenced == 0 && switches < 4 ->       /* to fenced, at any point */
		switches++;
		fenced = 1;
#ifdef SWITCH_OVERTAKES
		unfenced_mem = 0
#else
		sender_stores ! 0
#endif
	:: fenced == 1 && switches < 4 ->       /* back to unfenced, at any point */
		switches++;
		sender_stores ! SET_FLAG;
#ifndef SWITCH_BACK_UNFENCED
		empty(sender_stores);              /* one fence before unfenced sends */
#endif
		fenced = 0
#endif
	:: k <= N ->
		sender_stores ! k;                 /* publish the new write index */
#if !defined(NO_TX_FENCE) && !defined(MEMBARRIER)
		empty(sender_stores);              /* mfence (xchg) */
#endif
#ifdef SWITCH
		if
		:: fenced -> empty(sender_stores)  /* switched: xchg */
		:: else -> skip
		fi;
#endif
		if
		:: arm_mem == 1 ->                 /* plain load of the arm word */
			atomic {                   /* xchg: a locked op is SC */
				empty(sender_stores);
				if
				:: arm_mem == 1 -> arm_mem = 0; doorbell++
				:: else -> skip
				fi
			}
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
			doorbell = 0;              /* drain stale wake-ups */
			receiver_stores ! 1;       /* arm */
#ifndef NO_RX_FENCE
			empty(receiver_stores);    /* mfence (read-back on NTB) */
#endif
#if defined(MEMBARRIER) && !defined(NO_MEMBARRIER)
#ifdef SWITCH
			if
			:: unfenced_mem -> empty(sender_stores) /* membarrier while the flag is set */
			:: else -> skip
			fi;
#else
			empty(sender_stores);      /* membarrier: IPI makes the sender fence */
#endif
#endif
			if
			:: idx_mem > consumed ->   /* re-check before sleeping */
				receiver_stores ! 0;
				consumed = idx_mem
			:: else ->
				doorbell > 0;      /* sleep until the wake-up byte */
				doorbell--;
				receiver_stores ! 0
			fi
		fi
	od
}
