#!/usr/bin/env bash
# perf/apps/bench.sh [--quick] — make bench-apps-pairs / run-apps: unmodified programs
# on kernel TCP vs scilan, ends pinned apart; table, apps.csv, apps.png.
set -euo pipefail
# sockperf ping-pong 64 B one-way latency (p50, p99), redis-benchmark -c 1 and
# -c 50 requests/s, nginx + wrk -c 1 requests/s, iperf3 throughput; server on
# CPU 0, client on CPU 1; medians of REPS runs, kernel and scilan alternating.
# Writes $BUILD/perf/apps.csv and apps.png and prints each row's scilan/kernel
# ratio and gain against the targets of issue 3.  --quick (make run-apps):
# sockperf pp and redis -c 1, one run, $BUILD/perf/apps-quick.csv, no plot.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../../tests/apps/lib.sh"
QUICK=0
[ "${1:-}" = --quick ] && QUICK=1
apps_init bench-apps
OUT="$BUILD/perf"
mkdir -p "$OUT" "$WORK/res"
if [ "$QUICK" = 1 ]; then
	REPS=${APPS_BENCH_REPS:-1} SECS=2 NAME=apps-quick
else
	REPS=${APPS_BENCH_REPS:-3} SECS=4 NAME=apps
fi
SRV=(taskset -c 0) CLI=(taskset -c 1)
if [ "$(nproc)" -lt 2 ]; then
	echo "bench-apps: needs 2 CPUs (server and client pinned apart)" >&2
	exit 1
fi

# record METRIC MODE VALUE: one measurement.
record() { echo "$3" >>"$WORK/res/$1.$2"; }

# accelerated MODE FILE: on scilan, the client's connections went over the
# rings (a run that fell back to kernel TCP would measure the kernel twice).
accelerated() {
	[ "$1" = kernel ] && return 0
	local a
	a=$(stat_sum accelerated "$2")
	[ "$a" -ge 1 ] || { echo "scilan run not accelerated: $(stat_lines_of "$2")" >&2; return 1; }
}

# field FILE REGEX: the first number captured by REGEX's group in FILE.
field() { sed -n "s/$2/\\1/p" "$1" | head -n 1; }

sockperf_run() { # MODE
	local mode=$1 port p50 p99
	port=$(free_port)
	daemon srv "$mode" "${SRV[@]}" sockperf sr --tcp -i 127.0.0.1 -p "$port"
	wait_listen "$port"
	pre "$mode"
	# --mps: sockperf's default ("max") sizes its sample table for 600,000
	# round trips/s and aborts ("_seqN > m_maxSequenceNo") when scilan goes
	# faster.  3,000,000/s is above either transport's rate here, so neither
	# run is paced (the table costs ~200 MB).
	timeout -k 5 60 "${CLI[@]}" "${PRE[@]}" sockperf pp --tcp -i 127.0.0.1 -p "$port" \
		-t "$SECS" -m 64 --mps=3000000 >"$WORK/cli.out" 2>"$WORK/cli.err"
	stop srv INT || true
	accelerated "$mode" "$WORK/cli.err"
	p50=$(field "$WORK/cli.out" '.*percentile 50.000 = *\([0-9.]*\).*')
	p99=$(field "$WORK/cli.out" '.*percentile 99.000 = *\([0-9.]*\).*')
	[ -n "$p50" ] && [ -n "$p99" ] || { cat "$WORK/cli.out"; return 1; }
	record pp_p50 "$mode" "$p50"
	record pp_p99 "$mode" "$p99"
	echo "ok: p50 $p50 us, p99 $p99 us"
}

redis_run() { # MODE CLIENTS N
	local mode=$1 c=$2 n=$3 port set get
	port=$(free_port)
	daemon srv "$mode" "${SRV[@]}" redis-server --port "$port" --bind 127.0.0.1 --save '' \
		--appendonly no --daemonize no --logfile '' --dir "$WORK"
	wait_listen "$port"
	pre "$mode"
	timeout -k 5 120 "${CLI[@]}" "${PRE[@]}" redis-benchmark -p "$port" -c "$c" -n "$n" -t set,get --csv \
		>"$WORK/cli.out" 2>"$WORK/cli.err"
	stop srv TERM || true
	accelerated "$mode" "$WORK/cli.err"
	set=$(awk -F'"' '$2 == "SET" {print $4}' "$WORK/cli.out")
	get=$(awk -F'"' '$2 == "GET" {print $4}' "$WORK/cli.out")
	[ -n "$set" ] && [ -n "$get" ] || { cat "$WORK/cli.out"; return 1; }
	record "redis_c${c}_set" "$mode" "$set"
	record "redis_c${c}_get" "$mode" "$get"
	echo "ok: SET $set, GET $get req/s"
}

wrk_run() { # MODE
	local mode=$1 port d rps
	port=$(free_port)
	d="$WORK/nginx.$port"
	nginx_static_conf "$d" "$port" 64
	head -c 4096 /dev/urandom >"$d/html/small.bin"
	daemon srv "$mode" "${SRV[@]}" nginx -p "$d" -c "$d/nginx.conf" -g 'daemon off;'
	wait_listen "$port"
	pre "$mode"
	timeout -k 5 60 "${CLI[@]}" "${PRE[@]}" wrk -t 1 -c 1 -d "${SECS}s" "http://127.0.0.1:$port/small.bin" \
		>"$WORK/cli.out" 2>"$WORK/cli.err"
	stop srv QUIT || true
	accelerated "$mode" "$WORK/cli.err"
	if grep -aE 'Non-2xx|Socket errors' "$WORK/cli.out"; then return 1; fi
	rps=$(awk '/^Requests\/sec:/ {print $2}' "$WORK/cli.out")
	[ -n "$rps" ] || { cat "$WORK/cli.out"; return 1; }
	record wrk_c1 "$mode" "$rps"
	echo "ok: $rps req/s"
}

iperf_run() { # MODE
	local mode=$1 port gbps
	port=$(free_port)
	daemon srv "$mode" "${SRV[@]}" iperf3 -s -1 -B 127.0.0.1 -p "$port"
	wait_listen "$port"
	pre "$mode"
	timeout -k 5 60 "${CLI[@]}" "${PRE[@]}" iperf3 -c 127.0.0.1 -p "$port" -t "$SECS" -J \
		>"$WORK/cli.json" 2>"$WORK/cli.err"
	reap srv || true
	accelerated "$mode" "$WORK/cli.err"
	gbps=$(jq '.end.sum_received.bits_per_second / 1e7 | round / 100' "$WORK/cli.json")
	record iperf3 "$mode" "$gbps"
	echo "ok: $gbps Gbit/s"
}

echo "bench-apps: kernel TCP vs scilan (polling, default settings), server on CPU 0, client on CPU 1, $REPS run(s) each"
for ((rep = 1; rep <= REPS; rep++)); do
	for mode in kernel scilan; do
		run_case "$mode sockperf pp #$rep" sockperf_run "$mode"
		run_case "$mode redis -c 1 #$rep" redis_run "$mode" 1 $((QUICK ? 20000 : 50000))
		[ "$QUICK" = 1 ] && continue
		run_case "$mode redis -c 50 #$rep" redis_run "$mode" 50 200000
		run_case "$mode nginx wrk -c 1 #$rep" wrk_run "$mode"
		run_case "$mode iperf3 #$rep" iperf_run "$mode"
	done
done

median() { # FILE: the median of its lines (nan when empty)
	[ -s "$1" ] || { echo nan; return; }
	sort -g "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# metric key | label | unit | better (lower/higher) | target gain ("" = none)
rows=(
	"pp_p50|sockperf pp 64 B p50|us|lower|40"
	"pp_p99|sockperf pp 64 B p99|us|lower|"
	"redis_c1_get|redis -c 1 GET|req/s|higher|3"
	"redis_c1_set|redis -c 1 SET|req/s|higher|3"
	"redis_c50_get|redis -c 50 GET|req/s|higher|"
	"redis_c50_set|redis -c 50 SET|req/s|higher|"
	"wrk_c1|nginx+wrk -c 1|req/s|higher|3"
	"iperf3|iperf3|Gbit/s|higher|2"
)
csv="$OUT/$NAME.csv"
echo "metric,unit,better,kernel,scilan,ratio,gain,target,met" >"$csv"
printf '\n%-22s %-7s %12s %12s %14s %9s  %s\n' metric unit kernel scilan scilan/kernel gain target
missed=0
for r in "${rows[@]}"; do
	IFS='|' read -r key label unit better target <<<"$r"
	[ -e "$WORK/res/$key.kernel" ] || [ -e "$WORK/res/$key.scilan" ] || continue
	k=$(median "$WORK/res/$key.kernel") s=$(median "$WORK/res/$key.scilan")
	# gain: how many times better scilan is (kernel/scilan for a latency).
	read -r ratio gain met < <(awk -v k="$k" -v s="$s" -v b="$better" -v t="$target" 'BEGIN {
		if (k == "nan" || s == "nan" || k + 0 <= 0 || s + 0 <= 0) { print "nan nan -"; exit }
		r = s / k; g = (b == "lower") ? k / s : r
		m = (t == "") ? "-" : (g >= t ? "met" : "MISSED")
		printf "%.4g %.3g %s\n", r, g, m }')
	[ "$met" = MISSED ] && missed=$((missed + 1))
	echo "$label,$unit,$better,$k,$s,$ratio,$gain,$target,$met" >>"$csv"
	printf '%-22s %-7s %12s %12s %14s %8sx  %s\n' "$label" "$unit" "$k" "$s" "$ratio" "$gain" \
		"${target:+>= ${target}x $met}"
done
echo
echo "bench-apps: $csv"
if [ "$QUICK" = 0 ]; then
	gnuplot -e "csv='$csv'; png='$OUT/$NAME.png'" "$HERE/apps.gp"
	echo "bench-apps: $OUT/$NAME.png"
fi
echo "bench-apps: $passed runs, $failed failed; $missed target(s) missed"
[ "$failed" -eq 0 ]
