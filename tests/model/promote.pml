/* promote.pml — a SPIN model of the switch that moves a live kernel TCP
 * connection onto the rings (promotion.c, seam.c; the device's agreement
 * through its drivers is promote_device.pml's):
 * the seam in each direction, where a byte can be lost, doubled or
 * reordered, and the wake-up of an end asleep in the kernel.
 * C (the connector) offers a segment; A (the acceptor) takes the offer
 * inside one of its calls, with its send lock held: it publishes X_A, the
 * count of bytes its kernel socket was given (the kernel's own count, which
 * includes bytes written past the hook), then claims the offer word
 * (OFFERED -> TAKEN), then writes a marker on TCP and sends on its ring
 * from then on.  C follows when it sees TAKEN: under its send lock it
 * publishes X_C, its kernel count, writes its marker on TCP, and sends on
 * its ring.  A receiver reads its kernel socket; only after a read does it
 * check whether the read crossed the peer's X (a read is not atomic with
 * that check): the byte at X must be the marker, which it drops, and it
 * then reads the ring.  An end waiting for its peer's bytes waits in the
 * kernel until it has switched, so only a TCP byte (the marker) wakes it.
 * C may revoke an offer nobody took (OFFERED -> REVOKED): then no byte of
 * either ring is ever sent.  A writer past the hook on C's side (io_uring, a
 * hookless process sharing the socket) writes one byte to C's kernel socket
 * at any time; written after C's marker, its place among C's ring bytes
 * cannot be known, and A must reset rather than deliver or drop it.
 * Each receiver must deliver the true order of its peer's writes, each once,
 * or stop at a reset; when nothing can move any more, every byte was
 * delivered or a reset was raised (no hang, no silent loss); a byte written
 * past the hook after C's count is never delivered and always reset.
 * Assumed, not modelled: from C's offer (and A's take) on, every read of
 * that end's kernel socket goes through the hook's check: a read already
 * under way in the kernel would hand the marker to the program, so the
 * offer and the take are refused while one is (a count of calls in flight
 * beside a flag, each side storing before it loads the other's).
 * Mutants that must fail: -DMARK_BEFORE_TAKE (A's marker before its claim,
 * which a revoke beats: C delivers the marker as data), -DNO_CROSS_CHECK
 * (a receiver delivers what it read without looking for the peer's X),
 * -DRING_FIRST (C reads A's ring once it sees TAKEN, before A's kernel bytes
 * up to X_A), -DHOOK_COUNT (C's X counts only what the hook sent, not the
 * kernel's count), -DNO_MARKER (no marker: the peer sleeps in the kernel
 * forever), -DNO_BYPASS_CHECK (A ignores kernel bytes after C's marker).
 */
#define N 2                /* bytes each end's program sends */
#define L 8                /* room in each kernel stream */
#define MARK 200
#define BYPASS 100         /* the byte written past C's hook */

#define OFFERED 1
#define TAKEN 2
#define REVOKED 3

byte word = 0;             /* the offer word in the segment */
byte xa = 0, xc = 0;       /* published switch points */
bit xc_known = 0;

/* kernel streams: C to A, A to C */
byte tcp_ca[L], tcp_ac[L];
byte w_ca = 0, w_ac = 0;
/* rings (no flow control: it plays no part in the seam) */
byte ring_ca[N + 1], ring_ac[N + 1];
byte rw_ca = 0, rw_ac = 0;

/* the true order of each side's writes, and what was delivered */
byte truth_ca[N + 2], truth_ac[N + 1];
byte n_truth_ca = 0, n_truth_ac = 0;
byte got_ca = 0, got_ac = 0;
bit reset = 0;
bit bypass_late = 0;

bit c_on_ring = 0, a_on_ring = 0;    /* senders switched */
byte c_hook_sent = 0;                /* what C's hook sent on TCP */

#define TCP_SEND(t, w, v) t[w] = v; w++
#define DELIVER(truth, got, v) assert(v == truth[got]); got++

active proctype C_offer()
{
	word = OFFERED;
	if
	:: atomic { word == OFFERED -> word = REVOKED }
	:: skip
	fi
}

active proctype A_tx()
{
	byte k = 0;

	do
	:: k == N -> break
	:: k < N ->
		atomic {
			if
			:: a_on_ring -> ring_ac[rw_ac] = k; rw_ac++
			:: else -> TCP_SEND(tcp_ac, w_ac, k)
			fi;
			truth_ac[n_truth_ac] = k; n_truth_ac++;
			k++
		}
	/* the take, between two sends (the send lock held) */
	:: atomic {
		word == OFFERED && !a_on_ring ->
#ifdef MARK_BEFORE_TAKE
		TCP_SEND(tcp_ac, w_ac, MARK);
		xa = w_ac - 1
	};
	atomic {                   /* a revoke may come first */
		if
		:: word == OFFERED -> word = TAKEN; a_on_ring = 1
		:: else -> skip
		fi
	}
#else
		xa = w_ac;
		word = TAKEN
	};
	atomic { TCP_SEND(tcp_ac, w_ac, MARK); a_on_ring = 1 }
#endif
	od;
	/* it may still take the offer after its last byte */
end_a_tx:
	if
	:: atomic { word == OFFERED && !a_on_ring ->
		xa = w_ac; word = TAKEN; TCP_SEND(tcp_ac, w_ac, MARK); a_on_ring = 1 }
	fi
}

active proctype C_tx()
{
	byte k = 0;

end_c_tx:
	do
	:: k < N ->
		atomic {
			if
			:: c_on_ring -> ring_ca[rw_ca] = k; rw_ca++
			:: else -> TCP_SEND(tcp_ca, w_ca, k); c_hook_sent++
			fi;
			truth_ca[n_truth_ca] = k; n_truth_ca++;
			k++
		}
	/* the follow, when C sees TAKEN (any call of C's, or the marker's
	 * wake-up): the count, then the marker, which a writer past the
	 * hook may come between */
	:: atomic {
		word == TAKEN && !c_on_ring && !xc_known ->
#ifdef HOOK_COUNT
		xc = c_hook_sent;
#else
		xc = w_ca;
#endif
		xc_known = 1
	};
	atomic {
#ifndef NO_MARKER
		TCP_SEND(tcp_ca, w_ca, MARK);
#endif
		c_on_ring = 1
	}
	od
}

/* One byte written to C's kernel socket past the hook, at any time.
 * Before C's count it is part of C's kernel stream, delivered in its
 * place; after it, its place among C's ring bytes cannot be known, so it
 * is in no true order A could deliver, and A must reset. */
active proctype C_bypass()
{
	atomic {
		TCP_SEND(tcp_ca, w_ca, BYPASS);
		if
		:: xc_known -> bypass_late = 1
		:: else -> truth_ca[n_truth_ca] = BYPASS; n_truth_ca++
		fi
	}
}

/* A receives C's stream */
active proctype A_rx()
{
	byte r = 0, b, pos;
	bit on_ring = 0;
	byte rr = 0;

end_a_rx:
	do
	:: !on_ring && !reset && r < w_ca ->
		b = tcp_ca[r]; pos = r; r++;        /* the read ... */
#ifdef NO_CROSS_CHECK
		DELIVER(truth_ca, got_ca, b)
#else
		if                                   /* ... then the check */
		:: xc_known && pos == xc && b == MARK -> on_ring = 1
		/* not the marker at X: a write past the hook came between
		 * the count and the marker */
		:: xc_known && pos == xc && b != MARK -> reset = 1
		:: else -> DELIVER(truth_ca, got_ca, b)
		fi
#endif
	:: on_ring && !reset && rr < rw_ca ->
		DELIVER(truth_ca, got_ca, ring_ca[rr]); rr++
#ifndef NO_BYPASS_CHECK
	/* kernel bytes after the peer's marker: a writer past its hook */
	:: on_ring && !reset && r < w_ca -> reset = 1
#endif
	od
}

/* C receives A's stream */
active proctype C_rx()
{
	byte r = 0, b, pos;
	bit on_ring = 0;
	byte rr = 0;

end_c_rx:
	do
	:: !on_ring && !reset && r < w_ac ->
		b = tcp_ac[r]; pos = r; r++;
#ifdef NO_CROSS_CHECK
		DELIVER(truth_ac, got_ac, b)
#else
		if
		:: word == TAKEN && pos == xa ->
			assert(b == MARK); on_ring = 1
		:: else -> DELIVER(truth_ac, got_ac, b)
		fi
#endif
#ifdef RING_FIRST
	:: !on_ring && word == TAKEN -> on_ring = 1
#endif
	:: on_ring && !reset && rr < rw_ac ->
		DELIVER(truth_ac, got_ac, ring_ac[rr]); rr++
	:: on_ring && !reset && r < w_ac -> reset = 1
	od
}

/* Nothing can move: every byte was delivered, or a reset was raised. */
active proctype quiet()
{
	timeout -> assert(reset || (got_ca == n_truth_ca && got_ac == n_truth_ac && !bypass_late))
}
