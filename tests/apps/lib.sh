# tests/apps/lib.sh — helpers the tests/apps/*.sh program-pair tests source:
# work dirs, daemons and clean-up, ports, SCILAN_STATS checks, case bookkeeping.
# shellcheck shell=bash disable=SC2034 # (variables are for the sourcing test)

APPS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$APPS_DIR/../.." && pwd)
BUILD=$(cd "${SCILAN_BUILD:-$ROOT/build}" && pwd)
RUN="$BUILD/bin/scilan_run"
PRELOAD="$BUILD/lib/libscilan_preload.so"
# Every command of a case runs under `timeout`; a daemon lives at most this long.
DAEMON_TIMEOUT=${APPS_DAEMON_TIMEOUT:-300}
# kernel: plain programs (the reference); scilan: under scilan_run, default
# settings (polling); scilan-intr: under scilan_run --poll-us 0 (interrupt
# mode: every wait sleeps, so the sleep/wake-up protocol carries each pair);
# scilan-latency (the benches' profile comparison): --profile latency.
MODES=${APPS_MODES:-kernel scilan scilan-intr}

# apps_init NAME: a private work directory and scilan runtime directory (both
# ends of every pair share it; other users of the machine do not), removed at
# exit together with any daemon still running.
apps_init() {
	APP=$1
	passed=0 failed=0
	WORK=$(mktemp -d "/tmp/scilan-apps-$APP.XXXXXX")
	export SCILAN_RUNDIR="$WORK/rundir"
	mkdir -m 700 "$SCILAN_RUNDIR"
	: >"$WORK/pids"
	trap apps_cleanup EXIT
	trap 'exit 130' INT TERM
	if [ ! -x "$RUN" ] || [ ! -f "$PRELOAD" ]; then
		echo "$APP: $RUN or $PRELOAD missing (make hook)" >&2
		exit 1
	fi
	apps_share_run
	# A real log level (never debug: it would flood the transfer cases).
	export SCILAN_LOG=${SCILAN_LOG:-warn}
}

# apps_share_run: RUN and PRELOAD become copies that every user can run and
# load.  Cases start scilan_run as www-data or postgres, and the build tree
# may be in a checkout only its owner can enter (a clone in /root): there
# they would exit with status 127.  The copies are the owner's, in a fresh
# directory of /tmp (mktemp: no one else's) that only the owner may write
# into: no other user can swap what the owner's own cases then run.
# scilan_run finds the library next to it (../lib), as in the build tree.
apps_share_run() {
	SHARE=$(mktemp -d "/tmp/scilan-apps-$APP-bin.XXXXXX")
	install -d -m 755 "$SHARE/bin" "$SHARE/lib"
	install -m 755 "$RUN" "$SHARE/bin/scilan_run"
	install -m 644 "$PRELOAD" "$SHARE/lib/libscilan_preload.so"
	chmod 755 "$SHARE"
	RUN=$SHARE/bin/scilan_run PRELOAD=$SHARE/lib/libscilan_preload.so
}

# apps_scratch: sets SCRATCH, a directory in RAM (/dev/shm) for a test's large
# files, removed at exit.  The disk under /tmp is shared with the build and
# every other test, and a CI machine may have little of it free: a test that
# fills it loses its own log (an empty log, no reason) instead of one case.
apps_scratch() {
	SCRATCH=$(mktemp -d "/dev/shm/scilan-apps-$APP.XXXXXX")
	chmod 755 "$SCRATCH"
}

apps_cleanup() {
	local p
	# Only the daemons this test started (their pids were recorded at start).
	while read -r p; do
		if [ -n "$p" ]; then kill -KILL -- "-$p" 2>/dev/null || true; fi
	done <"$WORK/pids"
	wait 2>/dev/null || true
	if [ -n "${SHARE:-}" ]; then rm -rf "$SHARE"; fi
	if [ -n "${SCRATCH:-}" ]; then rm -rf "$SCRATCH"; fi
	if [ -n "${APPS_KEEP:-}" ]; then
		echo "$APP: work directory kept: $WORK" >&2
	else
		rm -rf "$WORK"
	fi
}

# apps_finish: the line the runner parses; non-zero status when a case failed.
apps_finish() {
	echo "$APP: $passed passed, $failed failed"
	[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
}

# free_port: a loopback TCP port nobody listens on, below the ephemeral range
# (32768+) so no client's local port can take it between choice and bind.
free_port() {
	local p
	while :; do
		p=$((10000 + RANDOM % 22000))
		[ -z "$(ss -Htan "sport = :$p")" ] && { echo "$p"; return; }
	done
}

# wait_listen PORT [SECONDS]: until something listens on PORT.  Checked with
# ss, never by connecting: a probe connection would be a client to the server
# under test (iperf3 -s -1 would take it as its one test).
wait_listen() {
	local i
	for ((i = 0; i < ${2:-20} * 20; i++)); do
		[ -n "$(ss -Htln "sport = :$1")" ] && return 0
		sleep 0.05
	done
	echo "nothing listens on port $1 after ${2:-20} s" >&2
	return 1
}

# pre MODE: sets the array PRE, the launch prefix of a command in MODE.
pre() {
	case "$1" in
	kernel) PRE=() ;;
	scilan) PRE=("$RUN" --stats=stderr --) ;;
	scilan-intr) PRE=("$RUN" --stats=stderr --poll-us 0 --) ;;
	scilan-latency) PRE=("$RUN" --stats=stderr --profile latency --) ;;
	*) echo "unknown mode $1" >&2; return 1 ;;
	esac
}

# daemon NAME MODE CMD...: starts CMD in the background (stdout/stderr in
# $WORK/NAME.out/.err) under timeout; its pid (timeout's, which forwards
# signals to CMD) is in DPID[NAME] and in $WORK/pids for the final clean-up.
# timeout leads a process group of its own holding CMD and its children (nginx
# workers): a kill that cannot be forwarded (KILL) goes to that whole group.
declare -A DPID
daemon() {
	local name=$1 mode=$2
	shift 2
	pre "$mode"
	timeout -k 5 "$DAEMON_TIMEOUT" "${PRE[@]}" "$@" </dev/null >"$WORK/$name.out" 2>"$WORK/$name.err" &
	DPID[$name]=$!
	echo "$!" >>"$WORK/pids"
}

# stop NAME [SIGNAL]: asks the daemon to exit (default TERM) so that its
# statistics line is printed, waits up to 15 s, then kills it.  Returns the
# daemon's status (KILL: 137).
stop() {
	local name=$1 sig=${2:-TERM} pid=${DPID[$1]} i rc=0
	kill "-$sig" "$pid" 2>/dev/null || true
	for ((i = 0; i < 150; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "$name did not exit on SIG$sig within 15 s: killed" >&2
		kill -KILL -- "-$pid" 2>/dev/null || true
	fi
	wait "$pid" || rc=$?
	return "$rc"
}

# The SCILAN_STATS lines of the files, in the documented format.  Found
# anywhere in a line, not only at its start: a program may leave its last
# stderr line unterminated (rpcgen's main prints "svc_run returned" so).
stat_lines_of() {
	cat "$@" 2>/dev/null | grep -ao 'scilan: pid [0-9]*: accelerated [0-9]*, fallback [0-9]*, tx [0-9]* bytes, rx [0-9]* bytes, sleeps [0-9]*, wakeups [0-9]*' || true
}

# stat_sum FIELD FILE...: the sum of FIELD (accelerated|fallback|tx|rx|
# sleeps|wakeups) over the statistics lines of the files.
stat_sum() {
	local field=$1
	shift
	stat_lines_of "$@" | awk -v f="$field" '
		{ for (i = 1; i < NF; i++) if ($i == f) { v = $(i + 1); sub(/,$/, "", v); s += v } }
		END { printf "%.0f\n", s }'
}
stat_lines() { stat_lines_of "$@" | wc -l; }

# stat_reasons FILE...: "REASON COUNT" lines, the fallback reasons of the
# statistics lines of the files summed per reason.
stat_reasons() {
	cat "$@" 2>/dev/null | grep -ao 'wakeups [0-9]*; fallback reasons: [a-z0-9 ,-]*[0-9]' |
		sed 's/.*fallback reasons: //' | tr ',' '\n' |
		awk 'NF == 2 { n[$1] += $2 } END { for (r in n) print r, n[r] }' | sort || true
}

# check_stats MODE WHO MIN_ACCEL MIN_TX MIN_RX FILE...: on scilan, the
# processes of one end (FILEs: their stderr) printed statistics, accelerated at
# least MIN_ACCEL connections and carried at least MIN_TX / MIN_RX bytes over
# the rings; on kernel TCP, nothing was preloaded (no statistics line at all).
check_stats() {
	local mode=$1 who=$2 acc=$3 tx=$4 rx=$5
	shift 5
	local n a t r
	n=$(stat_lines "$@")
	if [ "$mode" = kernel ]; then
		[ "$n" -eq 0 ] || { echo "$who: $n scilan statistics lines on kernel TCP (preloaded?)" >&2; return 1; }
		return 0
	fi
	a=$(stat_sum accelerated "$@") t=$(stat_sum tx "$@") r=$(stat_sum rx "$@")
	echo "$who: $n processes, accelerated $a, fallback $(stat_sum fallback "$@"), tx $t, rx $r bytes"
	[ "$n" -ge 1 ] || { echo "$who: no scilan statistics line" >&2; return 1; }
	[ "$a" -ge "$acc" ] || { echo "$who: accelerated $a < $acc" >&2; return 1; }
	[ "$t" -ge "$tx" ] || { echo "$who: tx $t bytes on scilan < $tx moved" >&2; return 1; }
	[ "$r" -ge "$rx" ] || { echo "$who: rx $r bytes on scilan < $rx moved" >&2; return 1; }
}

# expect DESCRIPTION TEST...: `[ TEST ]` must hold, else the case fails
# naming what was expected.
expect() {
	local what=$1
	shift
	if ! [ "$@" ]; then
		echo "expected $what: [ $* ] is false" >&2
		return 1
	fi
}

# run_case LABEL FUNCTION ARGS...: one case, in a subshell with errexit (run
# in the background and waited for, since a function called from a condition
# would run with errexit off), output in $WORK/cases/LABEL.log.  Its daemons
# are stopped when it ends, passed or not.
run_case() {
	local label=$1 log t0=$SECONDS rc=0
	shift
	mkdir -p "$WORK/cases"
	log="$WORK/cases/${label//[^A-Za-z0-9_.-]/_}.log"
	(
		set -euo pipefail
		# Only the daemons this case starts are its own to kill.
		DPID=()
		trap 'for n in "${!DPID[@]}"; do kill -KILL -- "-${DPID[$n]}" 2>/dev/null || true; done' EXIT
		"$@"
	) >"$log" 2>&1 &
	wait $! || rc=$?
	if [ "$rc" -eq 0 ]; then
		passed=$((passed + 1))
		printf '  PASS  %-34s %3d s  %s\n' "$label" $((SECONDS - t0)) "$(grep -a '^ok: ' "$log" | tail -n 1 | cut -c5-)"
	else
		failed=$((failed + 1))
		printf '  FAIL  %-34s %3d s  (status %d)\n' "$label" $((SECONDS - t0)) "$rc"
		tail -n 25 "$log" | sed 's/^/        | /'
	fi
}

# sha FILE: the sha256 of a file.
sha() { sha256sum "$1" | cut -d' ' -f1; }

# reap NAME [SECONDS]: waits for a daemon that exits by itself (a one-shot
# server); fails, killing it, if it is still running after SECONDS (15).
reap() {
	local name=$1 pid=${DPID[$1]} i rc=0
	for ((i = 0; i < ${2:-15} * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "$name still running ${2:-15} s after its client finished: killed" >&2
		kill -KILL -- "-$pid" 2>/dev/null || true
		wait "$pid" || true
		return 1
	fi
	wait "$pid" || rc=$?
	[ "$rc" -eq 0 ] || echo "$name exited with status $rc" >&2
	return "$rc"
}

# nginx_static_conf DIR PORT CONNS [MAIN_LINE] [LISTEN_OPTS]: DIR/nginx.conf
# for one worker serving DIR/html over keep-alive on 127.0.0.1:PORT (the
# perf benches' static file server); MAIN_LINE is added to the main context.
nginx_static_conf() {
	local d=$1 port=$2 conns=$3 main=${4:-} listen_opts=${5:-}
	mkdir -p "$d/html" "$d/tmp"
	cat >"$d/nginx.conf" <<CONF
user root;
worker_processes 1;
$main
pid $d/nginx.pid;
error_log stderr warn;
events { worker_connections $conns; }
http {
	access_log off;
	sendfile on;
	keepalive_timeout 65;
	keepalive_requests 10000000;
	client_body_temp_path $d/tmp/body;
	proxy_temp_path $d/tmp/proxy;
	fastcgi_temp_path $d/tmp/fastcgi;
	uwsgi_temp_path $d/tmp/uwsgi;
	scgi_temp_path $d/tmp/scgi;
	server { listen 127.0.0.1:$port$listen_opts; root $d/html; }
}
CONF
}
