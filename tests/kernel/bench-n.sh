#!/bin/bash
# bench-n.sh BUILD — the N-guest half of `make bench-kernel`: runs
# tests/kernel/run-n.sh's "bench" (4 guests: round trips of every ordered
# pair, fan-in of three into one) and "benchconns" (2 guests: 1,024
# connections against one), then tabulates the guests' BENCH lines into
# BUILD/results/bench-kernel-n.md.  Fails if a run or a bench in it failed.
set -u
build=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
results=$build/results
md=$results/bench-kernel-n.md
mkdir -p "$results"
rc=0
"$here/run-n.sh" "$build" 4 bench || rc=1
"$here/run-n.sh" "$build" 2 benchconns || rc=1

blines=$(cat "$build"/kernel-n-bench/console-*.log "$build"/kernel-n-benchconns/console-*.log 2>/dev/null |
	tr -d '\r' | grep -a '^BENCH ')
# val NAME KEY: the value of KEY in bench NAME's line (empty if it did not run).
val() { echo "$blines" | awk -v n="$1" -v k="$2" '$2 == n { for (i = 3; i < NF; i++) if ($i == k) { print $(i + 1); exit } }'; }
ratio() { [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", a / b }'; }
lowest() { tr ' ' '\n' | grep . | sort -g | head -n 1; }

{
	echo "# scilan, N guests: round trips per pair, fan-in, 1,024 connections"
	echo
	echo "QEMU TCG guests (1 vCPU each, no KVM) on one ivshmem server, kernel TCP over"
	echo "virtio-net taps on one bridge; host load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
	echo "TCG makes every absolute time slow and noisy: compare the ratios within this run,"
	echo "not the times. scilan = nbench under the preload hook (poll: SCILAN_POLL_US=100000,"
	echo "irq: SCILAN_POLL_US=0, interrupt mode), TCP = the same nbench without the hook."
	echo
	echo "## Round trips, 64 B, each ordered pair alone (the other guests idle)"
	echo
	echo "Round trips are timed with the TSC (its rate measured against CLOCK_MONOTONIC),"
	echo "as sockperf does: each sample includes one read of it (\"stamp read\"). A read of"
	echo "the guest's own clock, clock_gettime (HPET under TCG: a system call and a trapped"
	echo "MMIO read), costs what the last column says; both measured by the poll run's client."
	echo
	echo "| client → server | poll p50 us | poll p99 us | irq p50 us | irq p99 us | TCP p50 us | TCP p99 us | TCP p50 / poll p50 | TCP p50 / irq p50 | stamp read us | clock read us |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|"
	rp= ri=
	for c in 0 1 2 3; do
		for s in 0 1 2 3; do
			[ "$c" = "$s" ] && continue
			r=rtt_${c}_$s
			tp=$(val ${r}_tcp p50_us)
			a=$(ratio "$tp" "$(val ${r}_poll p50_us)") b=$(ratio "$tp" "$(val ${r}_irq p50_us)")
			rp="$rp $a" ri="$ri $b"
			echo "| $c → $s | $(val ${r}_poll p50_us) | $(val ${r}_poll p99_us) | $(val ${r}_irq p50_us) |" \
				"$(val ${r}_irq p99_us) | $tp | $(val ${r}_tcp p99_us) | $a | $b | $(val ${r}_poll stamp_us) |" \
				"$(val ${r}_poll clock_us) |"
		done
	done
	echo
	echo "Lowest over the 12 pairs: TCP p50 / poll p50 $(echo "$rp" | lowest), TCP p50 / irq p50 $(echo "$ri" | lowest)."
	echo
	echo "## Fan-in: guests 1, 2, 3 stream 128 MiB each into guest 0 at once"
	echo
	echo "CPU per byte on the receiver over the transfer: its process (getrusage) and its"
	echo "whole guest (/proc/stat, all but idle: softirq and interrupts included)."
	echo
	echo "| transport | receiver MB/s | this / TCP | process CPU ns/B | guest CPU ns/B | guest CPU: TCP / this |"
	echo "|---|---|---|---|---|---|"
	tm=$(val fanin_tcp MB_s) tg=$(val fanin_tcp guest_ns_per_B)
	for t in poll irq tcp; do
		g=$(val fanin_$t guest_ns_per_B)
		echo "| $t | $(val fanin_$t MB_s) | $(ratio "$(val fanin_$t MB_s)" "$tm") | $(val fanin_$t proc_ns_per_B) | $g |" \
			"$(ratio "$tg" "$g") |"
	done
	echo
	echo "## 1,024 connections between two guests (one epoll set on the server)"
	echo
	echo "64 B request/response, one at a time, each on a connection chosen at random,"
	echo "against the same exchanges on a single connection (2 guests, 256 MiB shared)."
	echo
	echo "| transport | 1,024 p50 us | 1,024 p99 us | 1 p50 us | 1 p99 us | p50 1,024 / 1 | p99 1,024 / 1 | TCP p50 / this p50 (1,024) |"
	echo "|---|---|---|---|---|---|---|---|"
	tp=$(val conns_tcp_1024 p50_us)
	for t in poll irq tcp; do
		m=conns_${t}_1024 o=conns_${t}_1
		echo "| $t | $(val $m p50_us) | $(val $m p99_us) | $(val $o p50_us) | $(val $o p99_us) |" \
			"$(ratio "$(val $m p50_us)" "$(val $o p50_us)") | $(ratio "$(val $m p99_us)" "$(val $o p99_us)") |" \
			"$(ratio "$tp" "$(val $m p50_us)") |"
	done
	echo
	echo "## Fail-over's cost on the fast path: the sender's mirror"
	echo
	echo "The same runs with SCILAN_FAIL_OVER=off (no mirror: a link down resets) beside the"
	echo "default (every byte sent is also copied into the sender's mirror of the ring)."
	echo
	echo "| bench | with mirror | without | with / without |"
	echo "|---|---|---|---|"
	a=$(val fanin_poll MB_s) b=$(val fanin_pollnm MB_s)
	echo "| fan-in 3 → 1, receiver MB/s (polling) | $a | $b | $(ratio "$a" "$b") |"
	a=$(val rtt_0_1_poll p50_us) b=$(val rtt_0_1_pollnm p50_us)
	echo "| round trip 0 → 1, 64 B, p50 us (polling) | $a | $b | $(ratio "$a" "$b") |"
	a=$(val rtt_0_1_poll p99_us) b=$(val rtt_0_1_pollnm p99_us)
	echo "| round trip 0 → 1, 64 B, p99 us (polling) | $a | $b | $(ratio "$a" "$b") |"
	[ $rc = 0 ] || { echo; echo "**Incomplete: a run or a bench failed (see build/results/kernel-n-bench*.txt).**"; }
} >"$md"
cat "$md"
echo "bench-n.sh: table in $md"
exit $rc
