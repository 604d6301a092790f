#!/usr/bin/env bash
# tests/apps/node-cluster.sh — a Node.js cluster (node-cluster.js: a primary,
# 2 workers) serving curl, in both scheduling policies: round-robin (the
# primary accepts and passes each connection to a worker with SCM_RIGHTS) and
# none (the workers accept on the listener the primary passed them).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
apps_init node-cluster

NODE=$(command -v node || command -v nodejs || true)
[ -n "$NODE" ] || { echo "node-cluster: no node (tests/apps/deps.sh installs nodejs)" >&2; exit 1; }
REQUESTS=24

# The body node-cluster.js sends for PATH?lines=N, without its first line
# ("req PATH worker PID").
body_tail() { awk -v p="$1" -v n="$2" 'BEGIN { for (k = 1; k <= n; k++) print p, k }'; }

# check_body FILE PATH LINES: FILE is the whole answer to PATH; prints the
# pid of the worker that answered.
check_body() {
	local file=$1 path=$2 lines=$3 first
	[ -s "$file" ] || { echo "$path: no answer" >&2; return 1; }
	first=$(head -n 1 "$file")
	[[ "$first" =~ ^req\ $path\ worker\ ([0-9]+)$ ]] || { echo "$path: answered \"${first:0:80}\"" >&2; return 1; }
	if ! cmp -s <(tail -n +2 "$file") <(body_tail "$path" "$lines"); then
		echo "$path: body differs from the $lines lines sent" >&2
		return 1
	fi
	echo "${BASH_REMATCH[1]}"
}

cluster_case() { # MODE POLICY
	local mode=$1 policy=$2 i lines pid rc body_bytes=0 n=0 out
	local -A pids=()
	export NODE_CLUSTER_SCHED_POLICY=$policy
	# Nothing of the last case may be taken for this one's ("ready" before
	# the new daemon's redirection truncated the file, statistics).
	rm -f "$WORK"/srv.* "$WORK"/cli.*.err "$WORK"/body.* "$WORK"/ka.*
	PORT=$(free_port)
	daemon srv "$mode" "$NODE" "$APPS_DIR/node-cluster.js" "$PORT"
	for ((i = 0; i < 600; i++)); do
		grep -qx ready "$WORK/srv.out" 2>/dev/null && break
		kill -0 "${DPID[srv]}" 2>/dev/null || { cat "$WORK/srv.err" >&2; echo "the cluster exited" >&2; return 1; }
		sleep 0.05
	done
	grep -qx ready "$WORK/srv.out" || { echo "the cluster did not start within 30 s" >&2; return 1; }
	pre "$mode"
	# One connection per request; bodies from one line to about 300 KB.
	for ((i = 1; i <= REQUESTS; i++)); do
		lines=$((i * i * 50 - 49))
		rc=0
		timeout -k 2 20 "${PRE[@]}" curl -sS --max-time 15 -o "$WORK/body.$i" \
			"http://127.0.0.1:$PORT/r$i?lines=$lines" 2>"$WORK/cli.$i.err" || rc=$?
		[ "$rc" -eq 0 ] || { echo "request $i: curl exited with status $rc" >&2; grep -v '^scilan: pid' "$WORK/cli.$i.err" >&2 || true; return 1; }
		pid=$(check_body "$WORK/body.$i" "/r$i" "$lines")
		pids[$pid]=1
		body_bytes=$((body_bytes + $(stat -c %s "$WORK/body.$i")))
		n=$((n + 1))
	done
	# Three requests on one kept-alive connection.
	out=()
	for i in 1 2 3; do out+=(-o "$WORK/ka.$i" "http://127.0.0.1:$PORT/ka$i?lines=$((i * 1000))"); done
	rc=0
	timeout -k 2 20 "${PRE[@]}" curl -sS --max-time 15 "${out[@]}" 2>"$WORK/cli.ka.err" || rc=$?
	[ "$rc" -eq 0 ] || { echo "kept-alive requests: curl exited with status $rc" >&2; return 1; }
	for i in 1 2 3; do
		pid=$(check_body "$WORK/ka.$i" "/ka$i" $((i * 1000)))
		pids[$pid]=1
		body_bytes=$((body_bytes + $(stat -c %s "$WORK/ka.$i")))
		n=$((n + 1))
	done
	echo "$n answers right, from workers ${!pids[*]}"
	# Round-robin hands successive connections to the worker that is free
	# the longest: both take turns.
	[ "$policy" = none ] || expect "answers from both workers" "${#pids[@]}" -eq 2
	# A request is at least "GET / HTTP/1.1\r\n".
	check_stats "$mode" clients $((REQUESTS + 1)) $((n * 16)) "$body_bytes" "$WORK"/cli.*.err
	stop srv TERM
	check_stats "$mode" cluster $((REQUESTS + 1)) "$body_bytes" $((n * 16)) "$WORK/srv.err"
	[ "$mode" = kernel ] || expect "statistics of the primary and both workers" "$(stat_lines "$WORK/srv.err")" -ge 3
	echo "ok: $n requests, $body_bytes bytes of bodies, policy $policy"
}

for mode in $MODES; do
	run_case "$mode node cluster round-robin" cluster_case "$mode" rr
	run_case "$mode node cluster sched none" cluster_case "$mode" none
done
apps_finish
