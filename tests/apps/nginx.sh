#!/usr/bin/env bash
# tests/apps/nginx.sh — nginx (sendfile, keepalive, 2 workers) with curl (100 MB,
# sha256) and wrk (-c 1, -c 10) on kernel TCP and under scilan_run on both ends;
# and with its workers as nobody (root master listens, workers accept), wrk -c 10
# from root: accelerated all the same.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
apps_init nginx

BIG=$((100 * 1000 * 1000))
# The site in RAM (apps_scratch), readable by the workers that run as nobody;
# the download is hashed as it arrives, never stored.
apps_scratch
HTML=$SCRATCH/html
mkdir -p "$HTML"
# The prefixes in the work directory (0700) stay reachable to them too.
chmod 755 "$WORK" "$HTML"
head -c "$BIG" /dev/urandom >"$HTML/big.bin"
head -c 4096 /dev/urandom | base64 -w 64 | head -c 4096 >"$HTML/small.txt"

server() { # MODE [USER]: nginx on a free port, its own prefix, config and logs
	local user=${2:-root}
	PORT=$(free_port)
	local d="$WORK/nginx.$PORT"
	mkdir -p "$d/logs" "$d/tmp"
	cat >"$d/nginx.conf" <<CONF
# The workers' user: root, or nobody (the master listens as root, the workers
# accept as nobody; the offers reach them as descriptors, whatever the user).
user $user;
worker_processes 2;
pid $d/nginx.pid;
# stderr, not a file: the workers' statistics lines go to the same place.
error_log stderr warn;
events { worker_connections 256; }
http {
	access_log off;
	sendfile on;
	tcp_nopush on;
	keepalive_timeout 65;
	keepalive_requests 1000000;
	client_body_temp_path $d/tmp/body;
	proxy_temp_path $d/tmp/proxy;
	fastcgi_temp_path $d/tmp/fastcgi;
	uwsgi_temp_path $d/tmp/uwsgi;
	scgi_temp_path $d/tmp/scgi;
	types { application/octet-stream bin; text/plain txt; }
	server {
		listen 127.0.0.1:$PORT;
		root $HTML;
	}
}
CONF
	daemon srv "$1" nginx -p "$d" -c "$d/nginx.conf" -g 'daemon off;'
	wait_listen "$PORT"
}

# Graceful stop (SIGQUIT): the workers finish their connections and exit,
# printing their statistics lines, then the master.
server_stop() { stop srv QUIT; }

curl_case() {
	local mode=$1
	server "$mode"
	pre "$mode"
	local got size
	got=$(timeout -k 5 120 "${PRE[@]}" curl -sS --fail -w '%{stderr}downloaded %{size_download}\n' \
		"http://127.0.0.1:$PORT/big.bin" 2>"$WORK/cli.err" | sha256sum | cut -d' ' -f1)
	size=$(awk '/^downloaded / {print $2}' "$WORK/cli.err")
	expect "100 MB downloaded" "${size:-0}" -eq "$BIG"
	expect "sha256 of the download = the file's" "$got" = "$(sha "$HTML/big.bin")"
	check_stats "$mode" client 1 0 "$BIG" "$WORK/cli.err"
	server_stop
	check_stats "$mode" server 1 "$BIG" 0 "$WORK/srv.err"
	echo "ok: 100 MB, sha256 equal"
}

wrk_case() { # MODE CONNECTIONS [WORKER_USER]
	local mode=$1 c=$2 reqs
	server "$mode" "${3:-root}"
	pre "$mode"
	timeout -k 5 60 "${PRE[@]}" wrk -t 1 -c "$c" -d 2s "http://127.0.0.1:$PORT/small.txt" \
		>"$WORK/cli.out" 2>"$WORK/cli.err"
	cat "$WORK/cli.out"
	reqs=$(awk '/requests in/ {print $1}' "$WORK/cli.out")
	expect "requests served" "${reqs:-0}" -gt 0
	if grep -aE 'Non-2xx|Socket errors' "$WORK/cli.out"; then
		echo "wrk reports errors" >&2
		return 1
	fi
	check_stats "$mode" client "$c" 0 $((reqs * 4096)) "$WORK/cli.err"
	if [ "$mode" != kernel ]; then
		# Keep-alive: wrk needed its C connections and the one it opens first
		# to test the address (wrk.resolve), no more.  That one it closes at
		# once: when nginx had not accepted it yet, the close revokes its
		# offer and it ends as kernel TCP (ARCHITECTURE.md, "Agreement").
		acc=$(stat_sum accelerated "$WORK/cli.err") fb=$(stat_sum fallback "$WORK/cli.err")
		expect "every working connection accelerated ($c)" "$acc" -ge "$c"
		expect "connections = $c + 1 (keep-alive)" $((acc + fb)) -eq $((c + 1))
	fi
	server_stop
	check_stats "$mode" server "$c" $((reqs * 4096)) 0 "$WORK/srv.err"
	echo "ok: $(awk '/Requests\/sec/ {print $2}' "$WORK/cli.out") req/s, $reqs requests"
}

for mode in $MODES; do
	run_case "$mode nginx curl 100 MB" curl_case "$mode"
	run_case "$mode nginx wrk -c 1" wrk_case "$mode" 1
	run_case "$mode nginx wrk -c 10" wrk_case "$mode" 10
	run_case "$mode nginx nobody wrk -c 10" wrk_case "$mode" 10 "nobody nogroup"
done
apps_finish
