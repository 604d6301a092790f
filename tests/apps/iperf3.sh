#!/usr/bin/env bash
# tests/apps/iperf3.sh — iperf3 (plain, -R, -P 4) on kernel TCP and under
# scilan_run on both ends: both ends' byte counts agree; SCILAN_STATS carry them.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
apps_init iperf3

# iperf_case MODE ARGS: one iperf3 run; ARGS are the client's extra options.
iperf_case() {
	local mode=$1 args=$2 port sent recv srecv ssent conns
	port=$(free_port)
	# -1: the server exits after one test, printing its own statistics line.
	daemon srv "$mode" iperf3 -s -1 -J -B 127.0.0.1 -p "$port"
	wait_listen "$port"
	pre "$mode"
	# shellcheck disable=SC2086 # ARGS are options
	timeout -k 5 60 "${PRE[@]}" iperf3 -c 127.0.0.1 -p "$port" -t 2 -J $args \
		>"$WORK/cli.json" 2>"$WORK/cli.err"
	reap srv
	sent=$(jq ".end.sum_sent.bytes" "$WORK/cli.json")
	recv=$(jq ".end.sum_received.bytes" "$WORK/cli.json")
	# The sender counts what it wrote, the receiver what it read before the
	# end of the test: they differ by what was in flight.  The server's own
	# count of what it moved must equal the figure the client reports for it.
	if [[ "$args" == *-R* ]]; then
		ssent=$(jq ".end.sum_sent.bytes" "$WORK/srv.out")
		expect "the server's sent count = the client's report" "$ssent" -eq "$sent"
	else
		srecv=$(jq ".end.sum_received.bytes" "$WORK/srv.out")
		expect "the server's received count = the client's report" "$srecv" -eq "$recv"
	fi
	echo "sent $sent, received $recv bytes"
	expect "bytes received > 0" "$recv" -gt 0
	expect "bytes received <= bytes sent" "$recv" -le "$sent"
	# One control connection plus one per stream.
	conns=$(( $(jq '.start.test_start.num_streams' "$WORK/cli.json") + 1 ))
	if [[ "$args" == *-R* ]]; then
		check_stats "$mode" client "$conns" 0 "$recv" "$WORK/cli.err"
		check_stats "$mode" server "$conns" "$recv" 0 "$WORK/srv.err"
	else
		check_stats "$mode" client "$conns" "$recv" 0 "$WORK/cli.err"
		check_stats "$mode" server "$conns" 0 "$recv" "$WORK/srv.err"
	fi
	echo "ok: $(jq -r '.end.sum_received.bits_per_second / 1e9 | . * 100 | round / 100 | tostring + " Gbit/s"' "$WORK/cli.json"), $recv bytes"
}

for mode in $MODES; do
	run_case "$mode iperf3" iperf_case "$mode" ""
	run_case "$mode iperf3 -R" iperf_case "$mode" "-R"
	run_case "$mode iperf3 -P 4" iperf_case "$mode" "-P 4"
done
apps_finish
