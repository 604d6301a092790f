/* biased_lock.pml — SPIN model of the biased ring lock (libscilan/src/sync/ring_lock.c) under
 * x86-TSO: the owner enters with plain stores (busy := me; load owner), a
 * revoker stores owner := -1, calls membarrier (drains the owner's store
 * buffer), then waits for busy == 0.  Mutual exclusion is asserted;
 * -DNO_MEMBARRIER removes the membarrier and must break it.
 */
#define ME 1

byte owner_mem = ME;     /* biased to the owner thread */
byte busy_mem = 0;
byte inside = 0;         /* threads in the critical section */

chan owner_stores = [2] of { byte };    /* owner's pending busy stores */
chan revoker_stores = [2] of { byte };  /* revoker's pending owner stores */

active proctype store_buffers()
{
end:	do
	:: atomic { nempty(owner_stores) -> owner_stores ? busy_mem }
	:: atomic { nempty(revoker_stores) -> revoker_stores ? owner_mem }
	od
}

active proctype owner_thread()
{
	byte rounds = 0;

	do
	:: rounds < 2 ->
		owner_stores ! ME;                     /* busy := me (plain store) */
		if
		:: owner_mem == ME ->                  /* still biased: fast path */
			inside++;
			assert(inside == 1);
			inside--;
			owner_stores ! 0                /* busy := 0 (release) */
		:: else ->
			owner_stores ! 0;               /* revoked: back off (slow path not modelled) */
			break
		fi;
		rounds++
	:: else -> break
	od
}

active proctype revoker()
{
	revoker_stores ! 255;                          /* owner := -1 (xchg: drains our buffer) */
	empty(revoker_stores);
#ifndef NO_MEMBARRIER
	empty(owner_stores);                           /* membarrier(PRIVATE_EXPEDITED) */
#endif
	busy_mem == 0;                                 /* wait for the owner to leave */
	inside++;
	assert(inside == 1);
	inside--
}
