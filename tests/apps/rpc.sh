#!/usr/bin/env bash
# tests/apps/rpc.sh — the rpcgen program of tests/apps/rpc with rpcbind (SunRPC
# over TCP, every reply compared) on kernel TCP and under scilan_run.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
apps_init rpc

BIN="$BUILD/apps/rpc"
PROG=$((0x3513a110)) # BULKPROG of bulk.x
CALLS=1000 MAX=65536
for b in bulk_server bulk_client; do
	[ -x "$BIN/$b" ] || { echo "rpc: $BIN/$b missing (make test-apps builds it)" >&2; exit 1; }
done

# The portmapper is infrastructure, not the pair under test: the machine's
# rpcbind if one answers, else one started (plain) for this test and stopped
# after it.  Registration and look-up go to it over kernel sockets.
if ! timeout -k 5 5 rpcinfo -p 127.0.0.1 >/dev/null 2>&1; then
	daemon rpcbind kernel rpcbind -f
	wait_listen 111
	trap 'stop rpcbind TERM || true; apps_cleanup' EXIT
fi

rpc_case() {
	local mode=$1 i line sent recv rc=0
	# The last case's server exited through svc_run's return and left its
	# registration: found before this server replaced it, its dead port
	# sent the client to a refused connect (a case that failed in 0 s).
	timeout -k 5 5 rpcinfo -d "$PROG" 1 >/dev/null 2>&1 || true
	daemon srv "$mode" "$BIN/bulk_server"
	for ((i = 0; i < 100; i++)); do
		timeout -k 5 5 rpcinfo -p 127.0.0.1 | awk -v p="$PROG" '$1 == p && $3 == "tcp"' | grep -q . && break
		sleep 0.1
	done
	expect "the server registered with rpcbind (tcp)" "$i" -lt 100
	pre "$mode"
	timeout -k 5 120 "${PRE[@]}" "$BIN/bulk_client" 127.0.0.1 "$CALLS" "$MAX" bye \
		>"$WORK/cli.out" 2>"$WORK/cli.err" || { tail -n 20 "$WORK/cli.out" "$WORK/cli.err" >&2; return 1; }
	line=$(cat "$WORK/cli.out")
	echo "$line"
	expect "every reply matched" "$(sed -n 's/.* \([0-9]*\) mismatched replies$/\1/p' <<<"$line")" = 0
	sent=$(sed -n 's/.* \([0-9]*\) bytes sent.*/\1/p' <<<"$line")
	recv=$(sed -n 's/.* \([0-9]*\) bytes received.*/\1/p' <<<"$line")
	# BULK_BYE makes svc_run return; rpcgen's main then says so and exits 1.
	reap srv || rc=$?
	expect "the server exited through svc_run's return (status 1)" "$rc" -eq 1
	grep -aq 'svc_run returned' "$WORK/srv.err" || { echo "server: no 'svc_run returned'" >&2; return 1; }
	# The client also asks rpcbind for the port (kernel TCP: a fallback).
	check_stats "$mode" client 1 "$sent" "$recv" "$WORK/cli.err"
	check_stats "$mode" server 1 "$recv" "$sent" "$WORK/srv.err"
	echo "ok: $((2 * CALLS)) calls, $sent bytes sent, $recv received, all replies equal"
}

for mode in $MODES; do
	run_case "$mode rpc bulk" rpc_case "$mode"
done
apps_finish
