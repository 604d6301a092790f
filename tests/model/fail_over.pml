/* fail_over.pml — a SPIN model of the device fabric's fail-over
 * (ARCHITECTURE.md, "Fail-over"; libscilan's failover.c): the link
 * dies under a connection and both ends continue on the companion kernel
 * TCP stream.  What can go wrong is a byte lost or delivered twice at the
 * seam, because neither end knows how much of what it stored across the link
 * landed.  One direction only, P sends to X: the other direction is the same
 * with the roles swapped and shares no state with this one.
 * P stores each byte into X's ring (remote memory) and into a local mirror,
 * then sometimes publishes its write index into X's memory; X reads its ring
 * in order and publishes its read index into P's memory when the ring is
 * drained, and otherwise only sometimes (batched).  Each direction's remote
 * stores are posted writes: one FIFO per direction, as PCIe keeps posted
 * writes in order and the sfence keeps the data ahead of the index that
 * covers it.  The link fails once, at any point, or never.  It drops every
 * store still in flight; dropping any suffix instead adds nothing, since the
 * link may deliver any prefix before it fails.  Each end notices the failure
 * at its own time and may go on using its local memory until then (X its
 * ring, P its mirror; what P stores across the link after the failure is
 * lost).  Then P sends on the kernel stream from = v (the read index it last
 * saw), the bytes [v, w) from its mirror, the bytes it had not written yet
 * and a FIN (the stream's end, so X can tell it has everything); X checks
 * from <= r, drops the r - from bytes it already read from its ring (the
 * rest of its ring is abandoned) and delivers the rest.  Both ends wait for
 * the failure after the last byte too, as a connection that stays open does:
 * a failure that comes after X read everything still runs the seam.  X's
 * application must get 0..N-1 in order, each once.
 * Mutants that must fail: -DRESEND_FROM_WRITE (P re-sends nothing from its
 * mirror: the bytes in flight are lost), -DNO_DROP (X delivers the re-sent
 * bytes it had read: duplicates), -DPUBLISH_BEFORE_CONSUME (X publishes r+1
 * before it reads byte r, so P may skip a byte X never read), -DNO_TX_FENCE
 * (P's index store overtakes its data: X reads a slot that has not landed).
 */
#define N 6
#define C 3
#define NONE 254           /* a ring slot nothing landed in yet */
#define FIN 255            /* the kernel stream's end */

/* X's memory */
byte ring[C] = NONE;
byte w_x = 0;              /* P's write index, as X's memory holds it */
/* P's memory */
byte v_p = 0;              /* X's read index, as P's memory holds it */
byte mirror[C];

bit failed = 0;

/* posted writes in flight, P to X: a ring store (slot, value) or an index
 * store (IDX, index); at most C of each, as P stays within C of v_p */
#define IDX 255
chan p2x = [2 * C] of { byte, byte };
chan x2p = [C + 1] of { byte };        /* X's read index stores */
chan ks = [N + 2] of { byte };          /* the kernel stream: from, bytes, FIN */

byte next = 0;             /* the byte X's application expects next */

active proctype link()
{
	byte a, b;

end:	do
	:: atomic { !failed && nempty(p2x) ->
		p2x ? a, b;
		if
		:: a == IDX -> w_x = b
		:: else -> ring[a] = b
		fi }
	:: atomic { !failed && nempty(x2p) -> x2p ? v_p }
	:: atomic { !failed ->
		failed = 1;
		do
		:: p2x ? _, _
		:: x2p ? _
		:: empty(p2x) && empty(x2p) -> break
		od }
	od
}

/* a store across the link: after the failure it goes nowhere */
#define REMOTE(c, m) if :: failed -> skip :: else -> c ! m fi
#define REMOTE2(c, m, n) if :: failed -> skip :: else -> c ! m, n fi

active proctype P()
{
	byte w = 0, k;

	do
	:: w == N -> break
	:: w < N && w - v_p < C ->
		atomic {
			mirror[w % C] = w;
			REMOTE2(p2x, w % C, w);
			w++;
			if
			:: w == N || w - v_p == C -> skip   /* must publish: X would wait */
			:: else ->
				if
				:: goto unpublished        /* batched */
				:: skip
				fi
			fi;
#ifdef NO_TX_FENCE
			if :: failed -> skip :: else -> w_x = w fi;
#else
			REMOTE2(p2x, IDX, w);
#endif
unpublished:		skip
		}
	:: failed -> goto fail_over
	od;
end_idle:
	failed;
fail_over:
	ks ! v_p;
#ifndef RESEND_FROM_WRITE
	k = v_p;
	do
	:: k < w -> ks ! mirror[k % C]; k++
	:: else -> break
	od;
#endif
	do
	:: w < N -> ks ! w; w++
	:: else -> break
	od;
	ks ! FIN
}

active proctype X()
{
	byte r = 0, b, from, drop;

	do
	:: next == N -> break
	:: r < w_x ->
#ifdef PUBLISH_BEFORE_CONSUME
		atomic {
			if
			:: r + 1 == w_x -> REMOTE(x2p, r + 1)
			:: else ->
				if
				:: REMOTE(x2p, r + 1)
				:: skip
				fi
			fi
		};
		if
		:: failed -> goto fail_over        /* noticed before the copy */
		:: else -> skip
		fi;
		atomic {
			b = ring[r % C];
			r++;
			assert(b == next);
			next++
		}
#else
		atomic {
			b = ring[r % C];
			r++;
			assert(b == next);
			next++;
			if
			:: r == w_x -> REMOTE(x2p, r)      /* a drained ring publishes */
			:: else ->
				if
				:: REMOTE(x2p, r)
				:: skip
				fi
			fi
		}
#endif
	:: failed -> goto fail_over
	od;
end_idle:
	failed;
fail_over:
	ks ? from;
	assert(from <= r);
#ifndef NO_DROP
	drop = r - from;
	do
	:: drop > 0 -> ks ? b; assert(b != FIN); drop--
	:: else -> break
	od;
#endif
	do
	:: ks ? b ->
		if
		:: b == FIN -> break
		:: else -> assert(b == next); next++
		fi
	od;
	assert(next == N)
}
