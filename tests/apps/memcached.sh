#!/usr/bin/env bash
# tests/apps/memcached.sh — memcached with memcaslap (8 connections, gets
# verified) on kernel TCP and under scilan_run on both ends.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
apps_init memcached

C=8

# field NAME: a "name: value" counter of memcaslap's report.
field() { sed -n "s/^$1: *\\([0-9]*\\).*/\\1/p" "$WORK/cli.out" | head -n 1; }

mc_case() {
	local mode=$1 gets sets wr rd
	PORT=$(free_port)
	# -U 0: no UDP port; TCP only.
	# -m 1024: memcaslap writes ~65 MB in 2 s on scilan; the default 64 MB
	# would evict items it later verifies (verify_misses from evictions).
	daemon srv "$mode" memcached -u root -l 127.0.0.1 -p "$PORT" -U 0 -t 2 -m 1024
	wait_listen "$PORT"
	pre "$mode"
	timeout -k 5 60 "${PRE[@]}" memcaslap -s "127.0.0.1:$PORT" -T 2 -c "$C" -t 2s -v 0.1 -b \
		>"$WORK/cli.out" 2>"$WORK/cli.err"
	cat "$WORK/cli.out"
	if grep -ai 'error\|fail' "$WORK/cli.out" | grep -av '^verify_failed: 0$'; then
		echo "memcaslap reports errors" >&2
		return 1
	fi
	gets=$(field cmd_get) sets=$(field cmd_set) wr=$(field written_bytes) rd=$(field read_bytes)
	expect "gets done" "${gets:-0}" -gt 0
	expect "sets done" "${sets:-0}" -gt 0
	expect "no verification failure" "$(field verify_failed)" -eq 0
	expect "no verification miss" "$(field verify_misses)" -eq 0
	expect "no get miss" "$(field get_misses)" -eq 0
	check_stats "$mode" client "$C" "$wr" "$rd" "$WORK/cli.err"
	stop srv TERM
	check_stats "$mode" server "$C" "$rd" "$wr" "$WORK/srv.err"
	echo "ok: $(grep -a '^Run time' "$WORK/cli.out" | sed 's/.*TPS: \([0-9]*\).*/\1/') ops/s, $gets gets, $sets sets"
}

for mode in $MODES; do
	run_case "$mode memcached memcaslap" mc_case "$mode"
done
apps_finish
