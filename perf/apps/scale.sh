#!/usr/bin/env bash
# perf/apps/scale.sh — make bench-scale (issue 10): servers holding many
# connections, kernel TCP against scilan (both ends under scilan_run) in one
# run: nginx serving a small file with keep-alive to wrk at 100, 1,000 and
# 10,000 connections, and redis-benchmark -c 1 against a redis-server that
# holds 5,000 idle clients.  Server on CPU 0, client on CPU 1; medians of
# SCALE_REPS runs (default 1), kernel and scilan alternating; table, CSV
# ($BUILD/perf/scale.csv) and, with gnuplot, scale.png.
set -euo pipefail
# Environment: SCALE_SECS (default 5), SCALE_CONNS ("100 1000 10000"),
# SCALE_IDLE (5000), SCALE_REPS (1).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../../tests/apps/lib.sh"
apps_init bench-scale
OUT="$BUILD/perf"
mkdir -p "$OUT" "$WORK/res"
SECS=${SCALE_SECS:-5} CONNS=${SCALE_CONNS:-"100 1000 10000"} IDLE=${SCALE_IDLE:-5000}
REPS=${SCALE_REPS:-1}
SRV=(taskset -c 0) CLI=(taskset -c 1)
if [ "$(nproc)" -lt 2 ]; then
	echo "bench-scale: needs 2 CPUs (server and client pinned apart)" >&2
	exit 1
fi
# 10,000 connections: both ends hold one descriptor each, plus the hook's
# (as many as the hard limit allows: raising it needs CAP_SYS_RESOURCE).
ulimit -n "$(ulimit -Hn)"

record() { echo "$3" >>"$WORK/res/$1.$2"; }
field() { sed -n "s/$2/\\1/p" "$1" | head -n 1; }

# accelerated MODE FILE MIN: on scilan, at least MIN connections of that
# side went over the rings (a run that fell back would measure the kernel).
accelerated() {
	[ "$1" = kernel ] && return 0
	local a
	a=$(stat_sum accelerated "$2")
	[ "$a" -ge "$3" ] || { echo "scilan run: $a accelerated, wanted $3: $(stat_lines_of "$2")" >&2; return 1; }
}

nginx_start() { # MODE CONNS: nginx on a free port ($PORT), one worker
	local mode=$1 conns=$2 d wc
	PORT=$(free_port)
	# nginx runs out before it holds conns (it warns "not enough, reusing"
	# and resets some) unless given about twice as many.
	wc=$((2 * conns + 64))
	[ "$wc" -lt "$(ulimit -Hn)" ] || wc=$(($(ulimit -Hn) - 64))
	d="$WORK/nginx.$PORT"
	nginx_static_conf "$d" "$PORT" "$wc" "worker_rlimit_nofile $(ulimit -Hn);" " backlog=16384"
	head -c 1024 /dev/urandom >"$d/html/small.bin"
	daemon srv "$mode" "${SRV[@]}" nginx -p "$d" -c "$d/nginx.conf" -g 'daemon off;'
	wait_listen "$PORT"
}

wrk_run() { # MODE CONNS
	local mode=$1 c=$2 rps
	nginx_start "$mode" "$c"
	pre "$mode"
	timeout -k 5 $((SECS + 120)) "${CLI[@]}" "${PRE[@]}" wrk -t 1 -c "$c" -d "${SECS}s" --timeout 10s \
		"http://127.0.0.1:$PORT/small.bin" >"$WORK/cli.out" 2>"$WORK/cli.err" ||
		{ stop srv QUIT || true; cat "$WORK/cli.out" "$WORK/cli.err" >&2; return 1; }
	stop srv QUIT || true
	# wrk opens them all at the start; near the descriptor limit the
	# library leaves some on kernel TCP (own_fd.c), so at least one.
	accelerated "$mode" "$WORK/cli.err" 1
	[ "$mode" = kernel ] || echo "accelerated: $(stat_sum accelerated "$WORK/cli.err") of $c"
	if grep -aE 'Non-2xx|Socket errors' "$WORK/cli.out"; then
		tail -n 5 "$WORK/srv.err" >&2
		return 1
	fi
	rps=$(awk '/^Requests\/sec:/ {print $2}' "$WORK/cli.out")
	[ -n "$rps" ] || { cat "$WORK/cli.out"; return 1; }
	record "wrk_c$c" "$mode" "$rps"
	echo "ok: $rps req/s"
}

# IDLE clients that connect and PING once, reading the answer (a pool that
# checks each connection it opens), then wait on stdin; each process of up to 1,000 of them
# prints "ready" when all its connections are up (split: one process with
# 5,000 would need 20,000 descriptors on the rings, over this machine's hard
# limit).
IDLE_PER_PROC=1000
idle_clients() { # MODE PORT N
	local mode=$1 port=$2 n=$3
	pre "$mode"
	"${CLI[@]}" "${PRE[@]}" python3 -c '
import os, socket, sys
port, n, per = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
kids = []
for first in range(0, n, per):
    pid = os.fork()
    if pid:
        kids.append(pid)
        continue
    conns = []
    for i in range(first, min(n, first + per)):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"PING\r\n")
        r = s.recv(64)
        if r != b"+PONG\r\n":
            sys.exit("connection %d: %r instead of +PONG" % (i, r))
        conns.append(s)
    print("ready", flush=True)
    sys.stdin.read()
    sys.exit(0)
bad = 0
for pid in kids:
    bad += os.waitpid(pid, 0)[1] != 0
sys.exit(bad)
' "$port" "$n" "$IDLE_PER_PROC" <"$WORK/idle.in" >"$WORK/idle.out" 2>"$WORK/idle.err" &
	IDLE_PID=$!
}

# All idle client processes said ready.
idle_ready() {
	local c
	c=$(grep -c ready "$WORK/idle.out" 2>/dev/null) || true
	[ "${c:-0}" -ge $(((IDLE + IDLE_PER_PROC - 1) / IDLE_PER_PROC)) ]
}

redis_idle_run() { # MODE
	local mode=$1 port set get i
	port=$(free_port)
	# A soft limit just above what redis needs (it raises it no further):
	# from there to the hard one is room for scilan's two bells per client,
	# which with soft = hard would have to keep within a quarter of it.
	( ulimit -Sn $((IDLE + 1000)); daemon srv "$mode" "${SRV[@]}" redis-server --port "$port" --bind 127.0.0.1 \
		--save '' --appendonly no --daemonize no --logfile '' --dir "$WORK" --maxclients $((IDLE + 100))
	  echo "${DPID[srv]}" >"$WORK/srv.pid" )
	DPID[srv]=$(cat "$WORK/srv.pid")
	wait_listen "$port"
	rm -f "$WORK/idle.in"
	mkfifo "$WORK/idle.in"
	idle_clients "$mode" "$port" "$IDLE"
	exec {hold}>"$WORK/idle.in" # their stdin stays open until we close it
	for ((i = 0; i < 1200; i++)); do
		idle_ready && break
		kill -0 "$IDLE_PID" 2>/dev/null || break
		sleep 0.1
	done
	idle_ready ||
		{ exec {hold}>&-; stop srv TERM || true; cat "$WORK/idle.err" >&2; return 1; }
	pre "$mode"
	timeout -k 5 120 "${CLI[@]}" "${PRE[@]}" redis-benchmark -p "$port" -c 1 -n $((SECS * 20000)) -t set,get --csv \
		>"$WORK/cli.out" 2>"$WORK/cli.err" || { exec {hold}>&-; stop srv TERM || true; return 1; }
	exec {hold}>&-
	wait "$IDLE_PID" || true
	stop srv TERM || true
	accelerated "$mode" "$WORK/idle.err" "$IDLE"
	accelerated "$mode" "$WORK/cli.err" 1
	set=$(awk -F'"' '$2 == "SET" {print $4}' "$WORK/cli.out")
	get=$(awk -F'"' '$2 == "GET" {print $4}' "$WORK/cli.out")
	[ -n "$set" ] && [ -n "$get" ] || { cat "$WORK/cli.out"; return 1; }
	record redis_idle_set "$mode" "$set"
	record redis_idle_get "$mode" "$get"
	echo "ok: SET $set, GET $get req/s with $IDLE idle clients"
}

echo "bench-scale: kernel TCP vs scilan (default settings), server on CPU 0, client on CPU 1, $REPS run(s) each"
for ((rep = 1; rep <= REPS; rep++)); do
	for mode in kernel scilan; do
		for c in $CONNS; do
			run_case "$mode nginx wrk -c $c #$rep" wrk_run "$mode" "$c"
		done
		run_case "$mode redis -c 1 with $IDLE idle #$rep" redis_idle_run "$mode"
	done
done

median() {
	[ -s "$1" ] || { echo nan; return; }
	sort -g "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# key | label | target gain (issue 10: at or above kernel TCP everywhere, 3x at 1,000)
rows=()
for c in $CONNS; do
	rows+=("wrk_c$c|nginx+wrk -c $c|$([ "$c" = 1000 ] && echo 3 || echo 1)")
done
rows+=("redis_idle_get|redis -c 1 GET, $IDLE idle|1" "redis_idle_set|redis -c 1 SET, $IDLE idle|1")
csv="$OUT/scale.csv"
echo "metric,unit,kernel,scilan,gain,target,met" >"$csv"
printf '\n%-28s %12s %12s %9s  %s\n' metric kernel scilan gain target
missed=0
for r in "${rows[@]}"; do
	IFS='|' read -r key label target <<<"$r"
	k=$(median "$WORK/res/$key.kernel") s=$(median "$WORK/res/$key.scilan")
	read -r gain met < <(awk -v k="$k" -v s="$s" -v t="$target" 'BEGIN {
		if (k == "nan" || s == "nan" || k + 0 <= 0 || s + 0 <= 0) { print "nan -"; exit }
		g = s / k; printf "%.3g %s\n", g, (g >= t ? "met" : "MISSED") }')
	[ "$met" = MISSED ] && missed=$((missed + 1))
	echo "$label,req/s,$k,$s,$gain,$target,$met" >>"$csv"
	printf '%-28s %12s %12s %8sx  >= %sx %s\n' "$label" "$k" "$s" "$gain" "$target" "$met"
done
echo
echo "bench-scale: $csv"
if command -v gnuplot >/dev/null; then
	gnuplot -e "csv='$csv'; png='$OUT/scale.png'" "$HERE/scale.gp" && echo "bench-scale: $OUT/scale.png"
fi
echo "bench-scale: $passed runs, $failed failed; $missed target(s) missed"
[ "$failed" -eq 0 ]
