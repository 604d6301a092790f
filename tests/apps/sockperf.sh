#!/usr/bin/env bash
# tests/apps/sockperf.sh — sockperf over TCP (ping-pong, throughput; 64 B) on
# kernel TCP and under scilan_run on both ends: every message, none reordered.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
apps_init sockperf

MSG=64

# field FILE REGEX: the first number captured by REGEX's group in FILE.
field() { sed -n "s/$2/\\1/p" "$1" | head -n 1; }

server() { # MODE: a sockperf server on a free port (PORT)
	PORT=$(free_port)
	daemon srv "$1" sockperf sr --tcp -i 127.0.0.1 -p "$PORT"
	wait_listen "$PORT"
}

# The server prints its count when interrupted (SIGINT is its stop signal).
server_count() {
	stop srv INT
	field "$WORK/srv.out" '.*Total \([0-9]*\) messages received and handled.*'
}

pp_case() {
	local mode=$1 sent recv valid lat handled
	server "$mode"
	pre "$mode"
	# --mps: with the default (max) sockperf sizes its sample table for
	# 600,000 round trips/s and aborts with "_seqN > m_maxSequenceNo" when the
	# transport is faster, as scilan is; 100,000/s is above kernel TCP's rate.
	timeout -k 5 60 "${PRE[@]}" sockperf pp --tcp -i 127.0.0.1 -p "$PORT" -t 2 -m "$MSG" --mps=100000 \
		>"$WORK/cli.out" 2>"$WORK/cli.err"
	cat "$WORK/cli.out"
	sent=$(field "$WORK/cli.out" '.*\[Total Run\].*SentMessages=\([0-9]*\);.*')
	recv=$(field "$WORK/cli.out" '.*\[Total Run\].*ReceivedMessages=\([0-9]*\).*')
	valid=$(field "$WORK/cli.out" '.*\[Valid Duration\].*ReceivedMessages=\([0-9]*\).*')
	lat=$(field "$WORK/cli.out" '.*percentile 50.000 = *\([0-9.]*\).*')
	handled=$(server_count)
	echo "client sent $sent, received $recv replies; server handled $handled"
	expect "replies measured" "${valid:-0}" -gt 0
	grep -aq '# dropped messages = 0; # duplicated messages = 0; # out-of-order messages = 0' "$WORK/cli.out" ||
		{ echo "messages dropped, duplicated or out of order" >&2; return 1; }
	# The client stops sending at the end of the test: at most one reply is
	# still on its way.
	expect "replies = messages sent (at most one in flight)" $((sent - recv)) -le 1
	expect "server handled every message sent" "$handled" -eq "$sent"
	check_stats "$mode" client 1 $((sent * MSG)) $((recv * MSG)) "$WORK/cli.err"
	check_stats "$mode" server 1 $((recv * MSG)) $((handled * MSG)) "$WORK/srv.err"
	echo "ok: p50 one-way $lat us, $valid round trips measured"
}

tp_case() {
	local mode=$1 sent rate handled
	server "$mode"
	pre "$mode"
	timeout -k 5 60 "${PRE[@]}" sockperf tp --tcp -i 127.0.0.1 -p "$PORT" -t 2 -m "$MSG" \
		>"$WORK/cli.out" 2>"$WORK/cli.err"
	cat "$WORK/cli.out"
	sent=$(field "$WORK/cli.out" '.*Total of \([0-9]*\) messages sent.*')
	rate=$(field "$WORK/cli.out" '.*Message Rate is \([0-9]*\).*')
	# Give the server time to drain what is still queued before interrupting.
	sleep 0.5
	handled=$(server_count)
	echo "client sent $sent; server handled $handled"
	expect "messages sent" "${sent:-0}" -gt 0
	expect "server handled every message sent" "$handled" -eq "$sent"
	check_stats "$mode" client 1 $((sent * MSG)) 0 "$WORK/cli.err"
	check_stats "$mode" server 1 0 $((sent * MSG)) "$WORK/srv.err"
	echo "ok: $rate msg/s, $sent messages"
}

for mode in $MODES; do
	run_case "$mode sockperf pp" pp_case "$mode"
	run_case "$mode sockperf tp" tp_case "$mode"
done
apps_finish
