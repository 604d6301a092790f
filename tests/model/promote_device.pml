/* promote_device.pml — a SPIN model of the device fabric's late move (the
 * switch of promote.pml, agreed through the two drivers over a link that
 * may be cut): where a byte can be lost, doubled or read as data, and where
 * an end can be left waiting.
 * C (the connector's library) stores OFFERED into its agreement word by
 * compare-and-swap from 0: its driver may already have agreed (ATTACHED).
 * A (the acceptor's library) claims inside one of its calls, its send lock
 * held: X_A (its kernel count) rides its ACCEPT_LATE as a VERIFY over the
 * link.  C's driver answers it under the link lock, against C's ABANDON:
 * not abandoned, it agrees, stores X_A in C's slice, then ATTACHED, and
 * then says yes (C's program may see ATTACHED before the answer is out).  A, told yes, writes its marker on TCP and sends on its ring;
 * told no, or cut off before the answer (ENOLINK), it publishes nothing.
 * C follows ATTACHED under its send lock: X_C (its kernel count) goes to
 * A's driver (SEAM_POINT, which waits until its driver's answer is out:
 * the link keeps their order), which stores it in A's slice and
 * acknowledges it only for a connection told yes; then C's marker, then
 * its ring.  A
 * SEAM_POINT cut off resets C, loudly.  C's revoke asks its driver first
 * (ABANDON): EALREADY means agreed, so it follows; a link already down
 * takes back a word still OFFERED (never agreed) and resets otherwise.  A
 * cut stores LINK_DOWN in an agreed word, which C, not yet followed, takes
 * for a reset.  A receiver reads its kernel stream and, at the point its
 * driver stored, expects the marker; before the point is known every byte
 * is data (each read looks again: C's driver stores X_A before ATTACHED,
 * yet a reader that took ATTACHED with no point yet would still stop at the
 * marker, which A sends only after its answer).  A cut once either sender
 * is on its ring is fail-over's (fail_over.pml) and ends the model's run
 * there.
 * Checked: each receiver delivers its peer's writes in order, each once,
 * or a reset is raised (either end's: its RST reaches the other); when
 * nothing can move, every byte was delivered, a reset was raised, or
 * fail-over took the connection (a cut with a sender on its ring, or one
 * going there after the cut); and no reset without a cut.
 * Mutants that must fail: -DPLAIN_OFFER (C stores OFFERED with a plain
 * store, over an ATTACHED its driver stored first: it withdraws and reads
 * A's marker as data; the defect of stop 40), -DNO_ABANDON (C's revoke is its
 * word's compare-and-swap alone, which its driver's agreement does not
 * see), -DPUBLISH_UNANSWERED (A, cut off before the answer, publishes
 * as if told yes: a C its VERIFY never reached takes its offer back and
 * reads A's marker as data), -DPOINT_BEFORE_ANSWER (C's point does not
 * wait for its driver's answer: ahead of it, A's driver refuses it and
 * the move resets with no cut; the defect test
 * dev_promoted_point_before_answer found in the driver).
 */
#define N 2                /* bytes each end's program sends */
#define L 8                /* room in each kernel stream */
#define MARK 200
#define UNKNOWN 255

#define OFFERED 1
#define ATTACHED 2
#define REVOKED 3
#define LINK_DOWN 4

byte word = 0;             /* C's agreement word, in C's slice */
bit link_up = 1;
bit failover = 0;          /* cut with a sender on its ring: fail_over.pml's */
/* C's driver, under its link lock */
bit c_agreed = 0, c_abandoned = 0;
byte x_in_c = UNKNOWN;     /* X_A, stored in C's slice */
/* A's driver: the answer arrived (its verdict, which A's call returns) */
bit a_verdict = 0;
byte x_in_a = UNKNOWN;     /* X_C, stored in A's slice */

/* the link: one question and one answer of each kind at most */
bit verify_out = 0, point_out = 0;
bit point_first = 0;       /* C's point went out before its driver's answer */
byte verify_x, point_x;
byte answer = 0;           /* to A's VERIFY: 0 none yet, 1 yes, 2 no */
byte point_acked = 0;       /* to C's SEAM_POINT: 0 none yet, 1 stored, 2 refused */

/* kernel streams: C to A, A to C */
byte tcp_ca[L], tcp_ac[L];
byte w_ca = 0, w_ac = 0;
/* rings (no flow control: it plays no part in the seam) */
byte ring_ca[N], ring_ac[N];
byte rw_ca = 0, rw_ac = 0;

/* the true order of each side's writes, and what was delivered */
byte truth_ca[N], truth_ac[N];
byte n_truth_ca = 0, n_truth_ac = 0;
byte got_ca = 0, got_ac = 0;
bit reset = 0;

bit c_on_ring = 0, a_on_ring = 0;    /* senders switched */
bit c_plain = 0;                     /* C withdrew: its word no longer read */

#define TCP_SEND(t, w, v) t[w] = v; w++
#define DELIVER(truth, got, v) assert(v == truth[got]); got++
#define MOVING (!reset && !failover)

/* One cut of the link, at any time. */
active proctype cut()
{
end_cut:
	atomic {
		link_up && MOVING ->
		link_up = 0;
		if
		:: c_on_ring || a_on_ring -> failover = 1
		:: else ->
			if
			:: c_agreed -> word = LINK_DOWN
			:: else -> skip
			fi
		fi
	}
}

/* C's driver answers A's VERIFY (its control work, no user space). */
active proctype C_driver()
{
	bit agreed = 0;

end_c_driver:
	atomic {
		verify_out && link_up ->
		verify_out = 0;
		if
		:: !c_abandoned ->
			c_agreed = 1; agreed = 1;
#ifdef WORD_BEFORE_POINT
			word = ATTACHED
#else
			x_in_c = verify_x;
			word = ATTACHED
#endif
		:: else -> answer = 2
		fi
	};
	/* the answer goes out after the agreement is visible in C's word */
	if
	:: agreed ->
#ifdef WORD_BEFORE_POINT
		x_in_c = verify_x;
#endif
		answer = 1
	:: else -> skip
	fi
}

/* A's driver takes the answer and C's point in the order the link carried
 * them; a point is stored only for a connection told yes. */
active proctype A_driver()
{
end_a_driver:
	do
	:: atomic { answer == 1 && link_up && !a_verdict && !(point_out && point_first) -> a_verdict = 1 }
	:: atomic {
		point_out && link_up && (point_first || answer != 1 || a_verdict) ->
		point_out = 0;
		if
		:: a_verdict -> x_in_a = point_x; point_acked = 1
		:: else -> point_acked = 2       /* refused: C resets */
		fi
	}
	od
}

active proctype A_tx()
{
	byte k = 0;
	bit looked = 0;

end_a_tx:
	do
	:: k < N && MOVING ->
		atomic {
			if
			:: a_on_ring -> ring_ac[rw_ac] = k; rw_ac++
			:: else -> TCP_SEND(tcp_ac, w_ac, k)
			fi;
			truth_ac[n_truth_ac] = k; n_truth_ac++;
			k++
		}
	/* the claim, between two sends or after the last (its send lock
	 * held): a question over the link, if the link is there */
	:: !looked && MOVING ->
		looked = 1;
		atomic {
			if
			:: link_up -> verify_x = w_ac; verify_out = 1
			:: else -> goto told_no
			fi
		};
		/* the answer crosses the link too: a cut may lose it */
		if
		:: atomic {
			a_verdict -> TCP_SEND(tcp_ac, w_ac, MARK); a_on_ring = 1;
			if
			:: !link_up -> failover = 1     /* on a dead link's ring */
			:: else -> skip
			fi
		}
		:: answer == 2 && link_up -> skip
#ifndef PUBLISH_UNANSWERED
		:: !link_up && !a_verdict -> skip      /* ENOLINK: nothing published */
#else
		:: atomic { !link_up && !a_verdict -> TCP_SEND(tcp_ac, w_ac, MARK); a_on_ring = 1 }
#endif
		:: failover || reset -> skip
		fi;
told_no:	skip
	od
}

active proctype C_tx()
{
	byte k = 0, r;
	bit followed = 0;

#ifdef PLAIN_OFFER
	word = OFFERED;
#else
	atomic { if :: word == 0 -> word = OFFERED :: else -> skip fi };
#endif
end_c_tx:
	do
	:: k < N && MOVING ->
		atomic {
			if
			:: c_on_ring -> ring_ca[rw_ca] = k; rw_ca++
			:: else -> TCP_SEND(tcp_ca, w_ca, k)
			fi;
			truth_ca[n_truth_ca] = k; n_truth_ca++;
			k++
		}
	/* the follow, at any call of C's that sees ATTACHED (send lock held) */
	:: !followed && !c_plain && word == ATTACHED && MOVING ->
follow:
		followed = 1;
#ifndef POINT_BEFORE_ANSWER
		/* SEAM_POINT waits for its driver's answer to go out first */
		answer != 0 || !link_up;
#endif
		atomic {
			if
			:: link_up -> point_x = w_ca; point_out = 1; point_first = answer == 0
			:: else -> reset = 1    /* SEAM_POINT: ECONNRESET */
			fi
		};
		if
		:: atomic {
			point_acked == 1 -> TCP_SEND(tcp_ca, w_ca, MARK); c_on_ring = 1;
			if
			:: !link_up -> failover = 1     /* on a dead link's ring */
			:: else -> skip
			fi
		}
		:: point_acked == 2 -> reset = 1    /* ECONNREFUSED */
		:: !link_up && point_acked == 0 -> reset = 1
		:: failover || reset -> skip
		fi
	/* the cut's word before the follow */
	:: !followed && !c_plain && word == LINK_DOWN && MOVING -> reset = 1
	/* the revoke, at the offer's deadline */
	:: !followed && !c_plain && word == OFFERED && MOVING ->
#ifdef NO_ABANDON
		r = 1;
#else
		atomic {
			if
			:: link_up && !c_agreed -> c_abandoned = 1; r = 1
			:: link_up && c_agreed -> r = 0     /* EALREADY */
			:: !link_up -> r = 2                /* its endpoint reset */
			fi
		};
#endif
		if
		:: r == 0 ->
			if
			/* agreed, by the word (LINK_DOWN is an agreed word too) */
			:: word == ATTACHED || word == LINK_DOWN -> goto follow
			:: else -> c_plain = 1       /* withdrawn */
			fi
		:: r == 1 || r == 2 ->
			atomic {
				if
				:: word == OFFERED -> word = REVOKED; c_plain = 1
				:: word == ATTACHED && r == 1 -> skip /* agreed first: follow */
				:: else -> reset = 1
				fi
			}
		fi
	od
}

/* A receives C's stream */
active proctype A_rx()
{
	byte r = 0, b, pos;
	bit on_ring = 0;
	byte rr = 0;

end_a_rx:
	do
	:: !on_ring && MOVING && r < w_ca ->
		b = tcp_ca[r]; pos = r; r++;        /* the read ... */
		if                                   /* ... then the check */
		:: x_in_a != UNKNOWN && pos == x_in_a && b == MARK -> on_ring = 1
		:: x_in_a != UNKNOWN && pos == x_in_a && b != MARK -> reset = 1
		:: else -> DELIVER(truth_ca, got_ca, b)
		fi
	:: on_ring && MOVING && rr < rw_ca ->
		DELIVER(truth_ca, got_ca, ring_ca[rr]); rr++
	:: on_ring && MOVING && r < w_ca -> reset = 1
	od
}

/* C receives A's stream: the point counts once its word says agreed (a
 * withdrawn offer's word is unmapped: every byte is data then). */
active proctype C_rx()
{
	byte r = 0, b, pos;
	bit on_ring = 0;
	byte rr = 0;

end_c_rx:
	do
	:: !on_ring && MOVING && r < w_ac ->
		b = tcp_ac[r]; pos = r; r++;
		if
		:: !c_plain && (word == ATTACHED || word == LINK_DOWN) && x_in_c != UNKNOWN && pos == x_in_c ->
			if
			:: b == MARK -> on_ring = 1
			:: else -> reset = 1
			fi
		:: else -> DELIVER(truth_ac, got_ac, b)
		fi
	:: on_ring && MOVING && rr < rw_ac ->
		DELIVER(truth_ac, got_ac, ring_ac[rr]); rr++
	:: on_ring && MOVING && r < w_ac -> reset = 1
	od
}

/* Nothing can move: every byte was delivered, a reset was raised (only
 * after a cut), or fail-over took the connection. */
active proctype quiet()
{
	timeout -> assert(reset || failover || (got_ca == n_truth_ca && got_ac == n_truth_ac));
	/* and a move the link did not cut never resets */
	assert(!reset || !link_up)
}
