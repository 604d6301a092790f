#!/usr/bin/env bash
# tests/apps/redis.sh — redis-server with redis-benchmark (-c 1, -c 50, -P 16),
# redis-cli (1 MB value), 1,400 idle clients and 750 in a tight descriptor
# limit, on kernel TCP, under scilan_run, and mixed ends.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
apps_init redis

# Bytes of one request and reply of redis-benchmark's SET and GET (RESP, key
# "key:__rand_int__", 3-byte value): lower bounds of what must cross.
SET_REQ=45 GET_REQ=36 SET_REP=5 GET_REP=9

server() { # MODE
	PORT=$(free_port)
	daemon srv "$1" redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
		--daemonize no --logfile '' --dir "$WORK"
	wait_listen "$PORT"
}

# The last server check: it exits on SIGTERM (status 0) with its statistics.
server_stop() { stop srv TERM; }

bench_case() { # MODE N CLIENTS ARGS...
	local mode=$1 n=$2 c=$3 sets gets got tx rx
	shift 3
	server "$mode"
	pre "$mode"
	timeout -k 5 120 "${PRE[@]}" redis-benchmark -p "$PORT" -n "$n" -c "$c" -t set,get "$@" \
		>"$WORK/cli.out" 2>"$WORK/cli.err"
	tr '\r' '\n' <"$WORK/cli.out" | grep -a -A1 -E '^====== |throughput summary' | grep -av '^--' || true
	sets=$(tr '\r' '\n' <"$WORK/cli.out" | sed -n '/^====== SET ======/{n;s/^ *\([0-9]*\) requests completed.*/\1/p}')
	gets=$(tr '\r' '\n' <"$WORK/cli.out" | sed -n '/^====== GET ======/{n;s/^ *\([0-9]*\) requests completed.*/\1/p}')
	expect "all $n SETs completed" "${sets:-0}" -eq "$n"
	expect "all $n GETs completed" "${gets:-0}" -eq "$n"
	# What the SETs stored (read by a plain client: kernel TCP, whatever MODE).
	got=$(timeout -k 5 10 redis-cli -p "$PORT" strlen key:__rand_int__)
	expect "a stored value of 3 bytes" "$got" = 3
	tx=$((sets * SET_REQ + gets * GET_REQ)) rx=$((sets * SET_REP + gets * GET_REP))
	# One connection per client.
	check_stats "$mode" client "$c" "$tx" "$rx" "$WORK/cli.err"
	server_stop
	check_stats "$mode" server "$c" "$rx" "$tx" "$WORK/srv.err"
	echo "ok: $(tr '\r' '\n' <"$WORK/cli.out" | grep -a 'throughput summary' | awk '{printf "%s%s", s, $3; s = " / "}') req/s (SET / GET)"
}

value_case() { # MODE: a 1 MB random value through redis-cli, both ways
	local mode=$1 size=1048576
	server "$mode"
	pre "$mode"
	head -c $((size * 3 / 4)) /dev/urandom | base64 -w0 >"$WORK/value"
	timeout -k 5 30 "${PRE[@]}" redis-cli -p "$PORT" -x set big <"$WORK/value" >"$WORK/set.out" 2>"$WORK/set.err"
	expect "SET reply OK" "$(cat "$WORK/set.out")" = OK
	timeout -k 5 30 "${PRE[@]}" redis-cli -p "$PORT" --raw get big >"$WORK/got" 2>"$WORK/get.err"
	# redis-cli --raw ends the value with a newline.
	truncate -s -1 "$WORK/got"
	expect "value read = value written (sha256)" "$(sha "$WORK/got")" = "$(sha "$WORK/value")"
	check_stats "$mode" "client (set)" 1 "$size" 0 "$WORK/set.err"
	check_stats "$mode" "client (get)" 1 0 "$size" "$WORK/get.err"
	server_stop
	check_stats "$mode" server 2 "$size" "$size" "$WORK/srv.err"
	echo "ok: 1 MB value, sha256 equal"
}

# bash's /dev/tcp as a redis client (RESP written by printf, replies read by
# read -t): bash moves the connection onto fd 5 with dup2 (`exec 5<>`) and
# saves and restores its stdin and stdout around each redirection.
bash_case() {
	local mode=$1 value got
	server "$mode"
	pre "$mode"
	value=$(head -c 1500 /dev/urandom | base64 -w0)
	timeout -k 5 20 "${PRE[@]}" bash -c '
		exec 5<>"/dev/tcp/127.0.0.1/$1"
		printf "*3\r\n\$3\r\nSET\r\n\$3\r\nkey\r\n\$%d\r\n%s\r\n" ${#2} "$2" >&5
		IFS= read -r -t 10 a <&5
		printf "*2\r\n\$3\r\nGET\r\n\$3\r\nkey\r\n" >&5
		IFS= read -r -t 10 b <&5
		IFS= read -r -t 10 c <&5
		printf "%s|%s|%s\n" "$a" "$b" "$c" | tr -d "\r"
	' bash "$PORT" "$value" >"$WORK/cli.out" 2>"$WORK/cli.err" || echo "bash exited with status $?"
	got=$(cat "$WORK/cli.out")
	echo "bash got: ${got:0:60}..."
	expect "SET reply +OK" "${got%%|*}" = "+OK"
	[ "$got" = "+OK|\$${#value}|$value" ] || { echo "GET did not return the value SET" >&2; return 1; }
	check_stats "$mode" "client (bash)" 1 ${#value} ${#value} "$WORK/cli.err"
	stop srv TERM
	check_stats "$mode" server 1 ${#value} ${#value} "$WORK/srv.err"
	echo "ok: SET and GET of a ${#value}-byte value from bash"
}

# idle_pings MODE SERVER_ULIMIT MAXCLIENTS N MIN_ACCEL: N clients each send
# PING, then every reply is read; a redis started under `ulimit
# SERVER_ULIMIT` must answer them all, at least MIN_ACCEL of its connections
# on the rings under scilan.
idle_pings() {
	local mode=$1 srv_limit=$2 maxclients=$3 n=$4 min_accel=$5 hard limit got
	hard=$(ulimit -Hn)
	limit=8192
	[ "$hard" = unlimited ] || [ "$hard" -ge "$limit" ] || limit=$hard
	PORT=$(free_port)
	# shellcheck disable=SC2086 # the ulimit options are words
	( ulimit $srv_limit; daemon srv "$mode" redis-server --port "$PORT" --bind 127.0.0.1 --save '' \
		--appendonly no --daemonize no --logfile '' --dir "$WORK" --maxclients "$maxclients"
	  echo "${DPID[srv]}" >"$WORK/srv.pid" )
	DPID[srv]=$(cat "$WORK/srv.pid")
	wait_listen "$PORT"
	pre "$mode"
	got=$( (ulimit -Sn "$limit"; timeout -k 5 120 "${PRE[@]}" python3 -c '
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
conns, bad, deadline = [], 0, time.monotonic() + 40
for i in range(n):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=max(0.01, deadline - time.monotonic()))
        s.sendall(b"PING\r\n")
        conns.append(s)
    except OSError:
        bad += 1
deadline = time.monotonic() + 20
for s in conns:
    s.settimeout(max(0.01, deadline - time.monotonic()))
    try:
        r = s.recv(16)
    except OSError:
        r = b""
    bad += r != b"+PONG\r\n"
print("unanswered", bad)
' "$PORT" "$n") 2>"$WORK/cli.err")
	echo "python: $got"
	expect "every PING of $n idle clients answered (redis under ulimit $srv_limit)" "$got" = "unanswered 0"
	kill -TERM "${DPID[srv]}" 2>/dev/null || true
	for ((i = 0; i < 150; i++)); do kill -0 "${DPID[srv]}" 2>/dev/null || break; sleep 0.1; done
	if [ "$mode" != kernel ]; then
		stat_lines_of "$WORK/srv.err"
		expect "server: connections accelerated" "$(stat_sum accelerated "$WORK/srv.err")" -ge "$min_accel"
	fi
	echo "ok: $n idle clients (redis under ulimit $srv_limit), every PING answered"
}

# Many idle clients: 1,400.  redis sizes its event loop to maxclients + 128
# and ignores, without a word, a client whose descriptor number lies past
# it: the library's own descriptors must not push the program's numbers up.
idle_case() { idle_pings "$1" "-Sn 4096" 1500 1400 1000; }

# A redis whose descriptor limit is all it has (soft = hard, as redis sets
# them to maxclients + 32 when it may, and as containers run): 750 idle
# clients of maxclients 1,000 in a limit of 1,100.  The library's own
# descriptors come out of the same limit: they once took so many that accept
# failed with EMFILE from about the 400th client on (297 of the 750 never
# answered); now they keep within a quarter of it (own_fd.c).
full_limit_case() { idle_pings "$1" "-n 1100" 1000 750 1; }

# Mixed ends: a preloaded client of a plain server and a plain client of a
# preloaded server fall back to kernel TCP (fallback counted, nothing
# accelerated) and still get every reply right.
mixed_case() {
	local sets gets got
	server kernel
	timeout -k 5 60 "$RUN" --stats=stderr -- redis-benchmark -p "$PORT" -n 2000 -c 1 -t set,get \
		>"$WORK/cli.out" 2>"$WORK/cli.err"
	sets=$(tr '\r' '\n' <"$WORK/cli.out" | sed -n '/^====== SET ======/{n;s/^ *\([0-9]*\) requests completed.*/\1/p}')
	gets=$(tr '\r' '\n' <"$WORK/cli.out" | sed -n '/^====== GET ======/{n;s/^ *\([0-9]*\) requests completed.*/\1/p}')
	expect "all 2000 SETs and GETs completed" "${sets:-0}:${gets:-0}" = 2000:2000
	stat_lines_of "$WORK/cli.err"
	expect "preloaded client of a plain server: nothing accelerated" "$(stat_sum accelerated "$WORK/cli.err")" -eq 0
	expect "preloaded client of a plain server: a fallback" "$(stat_sum fallback "$WORK/cli.err")" -ge 1
	stop srv TERM

	server scilan
	timeout -k 5 10 redis-cli -p "$PORT" set k mixed-value >/dev/null
	got=$(timeout -k 5 10 redis-cli -p "$PORT" get k)
	expect "plain client of a preloaded server: value read back" "$got" = mixed-value
	stop srv TERM
	stat_lines_of "$WORK/srv.err"
	expect "preloaded server of plain clients: nothing accelerated" "$(stat_sum accelerated "$WORK/srv.err")" -eq 0
	expect "preloaded server of plain clients: fallbacks" "$(stat_sum fallback "$WORK/srv.err")" -ge 2
	echo "ok: both mixed pairs on kernel TCP, replies right"
}

for mode in $MODES; do
	run_case "$mode redis -c 1" bench_case "$mode" 20000 1
	run_case "$mode redis -c 50" bench_case "$mode" 50000 50
	run_case "$mode redis -c 50 -P 16" bench_case "$mode" 200000 50 -P 16
	run_case "$mode redis 1 MB value" value_case "$mode"
	run_case "$mode redis bash /dev/tcp" bash_case "$mode"
	run_case "$mode redis 1,400 idle clients" idle_case "$mode"
	run_case "$mode redis 750 clients, soft limit = hard" full_limit_case "$mode"
done
[[ " $MODES " == *" scilan "* ]] && run_case "mixed redis ends" mixed_case
apps_finish
