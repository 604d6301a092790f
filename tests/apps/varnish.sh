#!/usr/bin/env bash
# tests/apps/varnish.sh — varnish in its default set-up (the master binds as
# root, the worker listens after its setuid to vcache) in front of a plain
# HTTP backend, with curl (one connection) and ab -k (keep-alive) on kernel TCP
# and under scilan_run on both ends: every client connection accelerated, no
# fallback for the worker's uid (the hook hands it root's socket at its setuid).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
apps_init varnish

mkdir -p "$WORK/www"
# Readable by varnish's users (the work directory is 0700).
chmod 755 "$WORK" "$WORK/www"
head -c 3000 /dev/urandom | base64 -w 64 >"$WORK/www/page.txt"

backend() { # a plain backend (kernel TCP, not under test)
	BPORT=$(free_port)
	daemon be kernel python3 -m http.server "$BPORT" --bind 127.0.0.1 --directory "$WORK/www"
	wait_listen "$BPORT"
}

server() { # MODE: varnishd on a free port, default jail (root binds, vcache listens)
	PORT=$(free_port)
	daemon srv "$1" varnishd -F -n "$WORK/varnish.$PORT" -a "127.0.0.1:$PORT" -b "127.0.0.1:$BPORT" \
		-s malloc,32m
	wait_listen "$PORT" 60
}

# The clients' stderr: no connection fell back for want of the listener's
# owner behind its rendezvous (reason other, with that warning).
no_owner_fallback() {
	if grep -a 'TCP listener belongs to uid' "$@"; then
		echo "a client did not trust the worker's rendezvous" >&2
		return 1
	fi
	if grep -a 'fallback reasons:.*other' "$@"; then
		echo "a connection fell back for reason other" >&2
		return 1
	fi
}

curl_case() {
	local mode=$1
	backend
	server "$mode"
	pre "$mode"
	timeout -k 5 60 "${PRE[@]}" curl -sS --fail -o "$WORK/got.txt" "http://127.0.0.1:$PORT/page.txt" \
		2>"$WORK/cli.err"
	expect "the page through varnish = the backend's" "$(sha "$WORK/got.txt")" = "$(sha "$WORK/www/page.txt")"
	check_stats "$mode" client 1 0 1 "$WORK/cli.err"
	if [ "$mode" != kernel ]; then
		no_owner_fallback "$WORK/cli.err"
		expect "curl's one connection accelerated" "$(stat_sum fallback "$WORK/cli.err")" -eq 0
	fi
	stop srv || true
	echo "ok: page intact"
}

ab_case() { # MODE: ab -k -c 4, 400 requests (keep-alive: 4 connections)
	local mode=$1 done_reqs
	backend
	server "$mode"
	pre "$mode"
	timeout -k 5 60 "${PRE[@]}" ab -k -n 400 -c 4 "http://127.0.0.1:$PORT/page.txt" >"$WORK/cli.out" \
		2>"$WORK/cli.err"
	done_reqs=$(awk '/Complete requests:/ {print $3}' "$WORK/cli.out")
	expect "400 requests complete" "${done_reqs:-0}" -eq 400
	expect "no failed request" "$(awk '/Failed requests:/ {print $3}' "$WORK/cli.out")" -eq 0
	check_stats "$mode" client 4 0 $((400 * 3000)) "$WORK/cli.err"
	if [ "$mode" != kernel ]; then
		no_owner_fallback "$WORK/cli.err"
		expect "every connection accelerated" "$(stat_sum fallback "$WORK/cli.err")" -eq 0
	fi
	stop srv || true
	echo "ok: $(awk '/Requests per second/ {print $4}' "$WORK/cli.out") req/s"
}

for mode in $MODES; do
	run_case "$mode varnish curl" curl_case "$mode"
	run_case "$mode varnish ab -k -c 4" ab_case "$mode"
done
apps_finish
