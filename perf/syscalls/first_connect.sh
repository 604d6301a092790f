#!/usr/bin/env bash
# perf/syscalls/first_connect.sh BUILD — what a process's first connection
# costs against its second, plain and under the hook, one thread and two,
# against one hooked server (a plain client's connection stays on kernel
# TCP; a hooked one's rides the rings).  Each run is a fresh process
# (first_connect.c); RUNS of them per case, median and p99 in microseconds.
# The client runs on CPU 1, the server on CPU 0.  A first connection costs
# more than a second without the hook too (code and data touched for the
# first time); the hook's set-up is what its first connection costs beyond
# that: the median of the hooked runs' (first - second) less the plain
# runs', the two kinds alternating.  The target: at most 100 us, with a
# thread or without.
set -euo pipefail
BUILD=${1:-build}
RUN=$BUILD/bin/scilan_run FIRST=$BUILD/bin/first_connect LOOP=$BUILD/bin/conn_loop
RUNS=${FIRST_CONNECT_RUNS:-41} TARGET=100
for f in "$RUN" "$FIRST" "$LOOP"; do
	[ -x "$f" ] || { echo "bench-first-connect: no $f (make all)" >&2; exit 1; }
done
tmp=$(mktemp -d)
# The runtime directory where the default puts it, on tmpfs: the statistics
# file made at the first connection costs more on a disk's file system.
rundir=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp" "$rundir"' EXIT
export SCILAN_RUNDIR=$rundir/run
mkdir -m 700 "$SCILAN_RUNDIR"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# Enough connections for every run; every connect offers rings (no learning).
SCILAN_LOG=warn SCILAN_SHORT_CONNS=accelerate taskset -c 0 "$RUN" -- "$LOOP" server "$port" $((RUNS * 6 * 2)) >"$tmp/ready" &
for ((i = 0; i < 100; i++)); do
	grep -q ready "$tmp/ready" 2>/dev/null && break
	sleep 0.1
done

# pct FILE COLUMN P: the P-th percentile of a column of numbers
pct() { awk -v c="$2" '{print $c}' "$1" | sort -n | awk -v p="$3" '{a[NR]=$1} END {i=int((NR-1)*p/100)+1; print a[i]}'; }

printf 'First and second connection of a fresh process, us (%d runs each; median / p99)\n' "$RUNS"
printf 'set-up: median of the hooked runs'"'"' first - second, less that of the plain runs\n\n'
printf '%-28s %16s %16s %8s\n' case first second set-up
missed=0
for threads in one-thread two-threads; do
	arg=()
	[ "$threads" = two-threads ] && arg=(threaded)
	: >"$tmp/plain" >"$tmp/hooked"
	# Plain and hooked runs alternate: the machine's noise, which moves
	# for seconds at a time, falls on both alike.
	for ((i = 0; i < RUNS; i++)); do
		SCILAN_SHORT_CONNS=accelerate taskset -c 1 "$FIRST" "$port" "${arg[@]}" >>"$tmp/plain"
		SCILAN_SHORT_CONNS=accelerate taskset -c 1 "$RUN" -- "$FIRST" "$port" "${arg[@]}" >>"$tmp/hooked"
	done
	# Each run's own first - second, so that a slow stretch moves both.
	awk '{print $1 - $2}' "$tmp/plain" >"$tmp/plain.d"
	awk '{print $1 - $2}' "$tmp/hooked" >"$tmp/hooked.d"
	plain_extra=$(pct "$tmp/plain.d" 1 50)
	for hooked in 0 1; do
		f=$tmp/plain name=plain
		[ "$hooked" = 1 ] && f=$tmp/hooked name=hooked
		f50=$(pct "$f" 1 50) f99=$(pct "$f" 1 99) s50=$(pct "$f" 2 50) s99=$(pct "$f" 2 99)
		if [ "$hooked" = 0 ]; then
			printf '%-28s %7d / %6d %7d / %6d %8s\n' "$name, $threads" "$f50" "$f99" "$s50" "$s99" -
			continue
		fi
		setup=$(($(pct "$tmp/hooked.d" 1 50) - plain_extra)) verdict=""
		if [ "$setup" -gt "$TARGET" ]; then
			verdict="  MISSED (target $TARGET)"
			missed=1
		fi
		printf '%-28s %7d / %6d %7d / %6d %8d%s\n' "$name, $threads" "$f50" "$f99" "$s50" "$s99" "$setup" "$verdict"
	done
done
exit "$missed"
