/* set_queue.pml — a SPIN model of the epoll set's event queue (ARCHITECTURE.md,
 * "The event queue") under x86-TSO: two connections' senders publish data
 * through store buffers, then mark the set (want word, ready bit) and ring
 * the set's one bell when its waiter is armed; the waiter takes the bits,
 * asks again (want) before it looks, and sleeps on the bell after arming and
 * re-checking the bits.  An invalid end state is a lost wake-up.  The bitmap
 * and its summary word are one word here: the code sets the bit before the
 * summary and clears the summary before the bits, so a set bit is always
 * under a summary bit the waiter will see.  Mutants that must fail:
 * -DNO_TX_FENCE (no fence between the data and the want load),
 * -DARMED_FIRST (the sender reads armed before marking), -DLOOK_FIRST (the
 * waiter looks before it asks again).
 * -DUNFENCED models a peer that publishes with no fence (barrier.c,
 * SL_PEER_UNFENCED): the waiter puts a member whose want it newly set on the
 * set's fence list, and before it sleeps (after arming) pays one membarrier,
 * which drains every sender's store buffer, and looks at each listed member
 * again (epoll_queue.c hk_evq_arm).  Its mutants must fail too:
 * -DNO_MEMBARRIER (no barrier before the sleep), -DNO_RELOOK (the barrier,
 * but no second look at the listed members).
 * -DSWITCH (with -DUNFENCED) lets each sender switch between unfenced and
 * fenced publishing at any point, as conn.c does: the flag's clear goes
 * through its store buffer behind its index stores, and setting it again is
 * followed by one fence; the waiter lists a member only when it reads the
 * flag set after its locked want store (sl_evq_want).  -DSWITCH_BACK_UNFENCED
 * drops that fence and must fail.
 * -DDEVICE models the device fabric (evq_dev.c): the waiter's want and
 * armed stores are posted writes into the senders' memory (its own store
 * buffer, wst), made visible only by the read-back at the arm, so every
 * member it asked again is looked at once more after that read-back; a
 * sender marks with a posted write, fences, and reads the armed mirror in
 * its own memory.  Mutants that must fail: -DDEV_NO_READBACK, -DNO_RELOOK,
 * -DDEV_NO_MARK_FENCE (the sender reads armed before its mark is visible).
 */
#define N 2

byte idx_mem[2];     /* each ring's write index, as memory holds it */
bit want[2] = 1;     /* the want word in each sender's area (evq_want): set at registration */
bit bits[2];         /* the set's ready bits */
byte armed = 0;      /* waiters of the set about to sleep */
byte bell = 0;       /* bytes in the set's bell pipe */
byte consumed[2];
bit fence[2];        /* the set's fence list: wants newly set on an unfenced peer */
bit relook[2];       /* put back on the ready list after the barrier */

chan st0 = [3] of { byte };
chan st1 = [3] of { byte };
chan wst = [4] of { byte };  /* the waiter's posted writes (-DDEVICE) */
#define MARK 100             /* a sender's posted mark (-DDEVICE) */
#define WANT0 1
#define WANT1 2
#define ARM 3
#define DISARM 4
#define CLEAR_FLAG 0
#define SET_FLAG 255
bit unf_mem[2] = 1;  /* each sender's SL_PEER_UNFENCED, as memory holds it */

/* A store buffer's head: an index, or the flag's clear or set (-DSWITCH). */
inline drain(st, i)
{
	if
	:: st ? [CLEAR_FLAG] -> st ? _; unf_mem[i] = 0
	:: st ? [SET_FLAG] -> st ? _; unf_mem[i] = 1
	:: st ? [MARK] -> st ? _; bits[i] = 1
	:: else -> st ? idx_mem[i]
	fi
}

active proctype store_buffers()
{
end:	do
	:: atomic { nempty(st0) -> drain(st0, 0) }
	:: atomic { nempty(st1) -> drain(st1, 1) }
	:: atomic { wst ? [WANT0] -> wst ? _; want[0] = 1 }
	:: atomic { wst ? [WANT1] -> wst ? _; want[1] = 1 }
	:: atomic { wst ? [ARM] -> wst ? _; armed = 1 }
	:: atomic { wst ? [DISARM] -> wst ? _; armed = 0 }
	od
}

inline send(i, st)
{
	byte k = 1, switches = 0;
	bit a, fenced = 0;

	do
#ifdef SWITCH
	:: fenced == 0 && switches < 2 ->        /* to fenced: the clear, buffered */
		switches++;
		fenced = 1;
		st ! CLEAR_FLAG
	:: fenced == 1 && switches < 2 ->        /* back: the flag, then one fence */
		switches++;
		st ! SET_FLAG;
#ifndef SWITCH_BACK_UNFENCED
		empty(st);
#endif
		fenced = 0
#endif
	:: k <= N ->
		st ! k;                                  /* publish the write index */
#if !defined(NO_TX_FENCE) && !defined(UNFENCED)
		empty(st);                               /* the fence after publishing */
#endif
#ifdef SWITCH
		if
		:: fenced -> empty(st)                   /* fenced: xchg */
		:: else -> skip
		fi;
#endif
		if
		:: want[i] == 1 ->                       /* plain load of the want word */
#ifdef DEVICE
			want[i] = 0;                     /* fetch_and: locked, our memory */
			st ! MARK;                       /* posted into the waiter's window */
#ifndef DEV_NO_MARK_FENCE
			empty(st);                       /* the fence */
#endif
			a = (armed > 0);                 /* the mirror, in our memory */
#else
#ifdef ARMED_FIRST
			a = (armed > 0);
#endif
			atomic { empty(st); want[i] = 0; bits[i] = 1 } /* fetch_and, fetch_or: locked */
#ifndef ARMED_FIRST
			a = (armed > 0);                 /* after the locked ops */
#endif
#endif
			if
			:: a -> bell++
			:: else -> skip
			fi
		:: else -> skip
		fi;
		k++
	:: else -> break
	od
}

active proctype sender0() { send(0, st0) }
active proctype sender1() { send(1, st1) }

inline look(i)
{
	if :: idx_mem[i] > consumed[i] -> consumed[i] = idx_mem[i]; got = 1 :: else -> skip fi
}

inline take(i)
{
	if
	:: bits[i] == 1 || relook[i] == 1 ->
		bits[i] = 0;                             /* exchange: locked */
		relook[i] = 0;
#ifdef LOOK_FIRST
		look(i);
		want[i] = 1;
#elif defined(DEVICE)
		if                                       /* a posted store: listed */
		:: i == 0 -> wst ! WANT0
		:: else -> wst ! WANT1
		fi;
		fence[i] = 1;
		look(i)
#else
#if defined(UNFENCED) && defined(SWITCH)
		if                                       /* sl_evq_want: newly set, then the */
		:: want[i] == 0 ->                       /* flag read after the locked store */
			want[i] = 1;
			if :: unf_mem[i] -> fence[i] = 1 :: else -> skip fi
		:: else -> want[i] = 1
		fi;
		look(i)
#else
#ifdef UNFENCED
		if                                       /* sl_evq_want: newly set -> fence list */
		:: want[i] == 0 -> fence[i] = 1
		:: else -> skip
		fi;
#endif
		want[i] = 1;                             /* fetch_or: locked, then look */
		look(i)
#endif
#endif
	:: else -> skip
	fi
}

active proctype waiter()
{
	bit got;

	do
	:: consumed[0] == N && consumed[1] == N -> break
	:: else ->
		got = 0;
		take(0);
		take(1);
		if
		:: got -> skip
		:: else ->
			bell = 0;                        /* drain the bell */
#ifdef DEVICE
			wst ! ARM;                       /* the mirror: posted */
#ifndef DEV_NO_READBACK
			empty(wst);                      /* the read-back */
#endif
#ifndef NO_RELOOK
			relook[0] = fence[0];
			relook[1] = fence[1];
#endif
			fence[0] = 0;
			fence[1] = 0;
#else
			armed++;                         /* fetch_add: locked */
#endif
#ifdef UNFENCED
			if
			:: fence[0] == 1 || fence[1] == 1 ->
#ifndef NO_MEMBARRIER
				empty(st0);              /* membarrier: every sender's */
				empty(st1);              /* store buffer drains */
#endif
#ifndef NO_RELOOK
				relook[0] = fence[0];    /* listed members back on the */
				relook[1] = fence[1];    /* ready list: no sleep yet */
#endif
				fence[0] = 0;
				fence[1] = 0
			:: else -> skip
			fi;
#endif
			if
			:: bits[0] == 1 || bits[1] == 1 || relook[0] == 1 || relook[1] == 1 -> skip /* re-check */
			:: else -> bell > 0              /* sleep until rung */
			fi;
#ifdef DEVICE
			wst ! DISARM
#else
			armed--
#endif
		fi
	od
}
