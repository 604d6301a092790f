#!/usr/bin/env bash
# tests/apps/php-fpm.sh — php-fpm over TCP FastCGI, master as root and its
# workers as www-data, with cgi-fcgi clients as root: kernel TCP, and under
# scilan_run on both ends, where every request is accelerated although the
# workers run as another user than the master that listened and the clients.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
apps_init php-fpm

FPM=$(command -v php-fpm8.2 || command -v php-fpm || ls /usr/sbin/php-fpm* 2>/dev/null | head -n 1)
REQS=20
# Readable by the workers (the work directory is 0700).
chmod 755 "$WORK"
mkdir -p "$WORK/www"
cat >"$WORK/www/page.php" <<'PHP'
<?php
echo "uid ", posix_geteuid(), "\n";
echo str_repeat("0123456789abcdef", 16384), "\n";
echo md5(str_repeat("0123456789abcdef", 16384)), "\n";
PHP
chmod 644 "$WORK/www/page.php"
WANT=$(printf '0123456789abcdef%.0s' $(seq 16384) | md5sum | cut -d' ' -f1)

server() { # MODE: php-fpm on a free port, pool user www-data, 2 static workers
	PORT=$(free_port)
	cat >"$WORK/fpm.conf" <<CONF
[global]
pid = $WORK/fpm.pid
; stderr: the workers' statistics lines reach it through catch_workers_output
error_log = /proc/self/fd/2
log_level = warning
daemonize = no
[www]
user = www-data
group = www-data
listen = 127.0.0.1:$PORT
pm = static
pm.max_children = 2
catch_workers_output = yes
decorate_workers_output = no
clear_env = no
CONF
	daemon srv "$1" "$FPM" -F -R -y "$WORK/fpm.conf"
	wait_listen "$PORT"
}

fcgi_case() {
	local mode=$1 i out
	server "$mode"
	pre "$mode"
	: >"$WORK/cli.err"
	for ((i = 0; i < REQS; i++)); do
		out=$(REQUEST_METHOD=GET SCRIPT_FILENAME="$WORK/www/page.php" SCRIPT_NAME=/page.php \
			timeout -k 5 30 "${PRE[@]}" cgi-fcgi -bind -connect "127.0.0.1:$PORT" 2>>"$WORK/cli.err")
		expect "request $i answered by a www-data worker" "$(grep -c '^uid 33$' <<<"$out")" -eq 1
		expect "request $i: the 256 KiB body intact" "$(grep -c "^$WANT\$" <<<"$out")" -eq 1
	done
	check_stats "$mode" client "$REQS" 0 $((REQS * 262144)) "$WORK/cli.err"
	if [ "$mode" != kernel ]; then
		expect "every request accelerated ($REQS)" "$(stat_sum accelerated "$WORK/cli.err")" -eq "$REQS"
	fi
	stop srv QUIT || true
	# The workers' own statistics lines go through php-fpm's log pipe, which
	# the master stops reading as it shuts down: the clients' lines above
	# (every response read from the rings, none fallen back) speak for them.
	if [ "$mode" = kernel ]; then
		check_stats "$mode" server 0 0 0 "$WORK/srv.err"
	fi
	echo "ok: $REQS requests, bodies intact"
}

for mode in $MODES; do
	run_case "$mode php-fpm www-data fastcgi" fcgi_case "$mode"
done
apps_finish
