#!/usr/bin/env bash
# tests/apps/apache.sh — Debian's Apache 2 (mpm_event, started as root, its
# children as www-data) serving a 400 KB and a 2 KB file to curl run as
# www-data and as root: keep-alive (many URLs in one connection) and a
# connection per request, on kernel TCP and with both ends under scilan_run,
# where every connection must be accelerated; and ab (which waits in epoll)
# as each user.  Every client and the server's
# start are bounded: a hang is a failed case, never a stuck suite.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
apps_init apache

APACHE=$(command -v apache2 || echo /usr/sbin/apache2)
APACHE_MODS=/usr/lib/apache2/modules
BIG=409600 SMALL=2048
CLIENT_TIMEOUT=30
# Readable by the children and the client that run as www-data (the work
# directory is 0700).
chmod 755 "$WORK"
mkdir -p "$WORK/html"
head -c "$BIG" /dev/urandom >"$WORK/html/big.bin"
head -c "$SMALL" /dev/urandom | base64 -w 64 | head -c "$SMALL" >"$WORK/html/small.txt"
chmod 755 "$WORK/html"
chmod 644 "$WORK/html/"*
# The www-data client's own runtime directory: scilan takes only a directory
# of the process's user (ARCHITECTURE.md, "The rendezvous").
mkdir -m 700 "$WORK/rundir-www"
chown www-data:www-data "$WORK/rundir-www"

server() { # MODE: apache2 on a free port, its own ServerRoot, config and logs
	PORT=$(free_port)
	local d="$WORK/apache.$PORT"
	mkdir -p "$d/run"
	cat >"$d/apache2.conf" <<CONF
ServerRoot $d
ServerName 127.0.0.1
Listen 127.0.0.1:$PORT
PidFile $d/run/apache2.pid
DefaultRuntimeDir $d/run
Mutex file:$d/run default
# stderr: the children's statistics lines go to the same place.
ErrorLog /proc/self/fd/2
LogLevel warn
LoadModule mpm_event_module $APACHE_MODS/mod_mpm_event.so
LoadModule authz_core_module $APACHE_MODS/mod_authz_core.so
LoadModule mime_module $APACHE_MODS/mod_mime.so
TypesConfig /etc/mime.types
# The root parent listens; its children accept as www-data.  Two of them, so
# that an offer can reach the child that did not accept its connection.
User www-data
Group www-data
StartServers 2
ServerLimit 2
ThreadsPerChild 8
MaxRequestWorkers 16
MinSpareThreads 2
MaxSpareThreads 16
Timeout 30
KeepAlive On
KeepAliveTimeout 10
MaxKeepAliveRequests 0
EnableSendfile On
DocumentRoot $WORK/html
<Directory />
	Require all granted
</Directory>
CONF
	# Apache's default AcceptFilter (TCP_DEFER_ACCEPT) stays: it is what
	# Debian's apache2 does.
	daemon srv "$1" "$APACHE" -f "$d/apache2.conf" -DFOREGROUND
	wait_listen "$PORT" 20
	# Its children, the ones that accept, run as www-data.
	local i n=0
	for ((i = 0; i < 100; i++)); do
		n=$(ps -eo pgid=,user=,comm= | awk -v g="${DPID[srv]}" '$1 == g && $2 == "www-data" && $3 == "apache2"' | wc -l)
		[ "$n" -ge 2 ] && break
		sleep 0.1
	done
	expect "2 apache2 children as www-data" "$n" -ge 2
}

# client USER LABEL CMD...: CMD as USER (www-data or root) in the case's
# mode, bounded by CLIENT_TIMEOUT; its stderr in $WORK/cli-USER.err
# (appended).  A client that hangs fails the case, saying so.
client() {
	local user=$1 label=$2 rc=0
	shift 2
	local -a as=()
	if [ "$user" = www-data ]; then
		as=(env SCILAN_RUNDIR="$WORK/rundir-www" setpriv --reuid=www-data --regid=www-data --clear-groups --)
	fi
	timeout -k 5 "$CLIENT_TIMEOUT" "${as[@]}" "${PRE[@]}" "$@" 2>>"$WORK/cli-$user.err" || rc=$?
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "$label: $1 as $user hung: killed after $CLIENT_TIMEOUT s" >&2
		return 1
	fi
	[ "$rc" -eq 0 ] || { echo "$label: $1 as $user exited with status $rc" >&2; return 1; }
}

fetch() { # USER LABEL CURL_ARGS...
	local user=$1 label=$2
	shift 2
	client "$user" "$label" curl -q -sS --fail "$@"
}

# urls DIR N: curl arguments for N requests, big and small alternating, each
# saved as DIR/<i>.<name>; their expected sizes summed in URL_BYTES.
urls() {
	local dir=$1 n=$2 i f
	URL_ARGS=() URL_BYTES=0
	for ((i = 0; i < n; i++)); do
		f=$([ $((i % 2)) -eq 0 ] && echo big.bin || echo small.txt)
		URL_ARGS+=(-o "$dir/$i.$f" "http://127.0.0.1:$PORT/$f")
		URL_BYTES=$((URL_BYTES + $(stat -c %s "$WORK/html/$f")))
	done
}

# check_got DIR N: N responses, each the file it names, byte for byte.
check_got() {
	local dir=$1 n=$2 got g b
	got=$(find "$dir" -type f | wc -l)
	expect "$n responses in $dir" "$got" -eq "$n"
	for g in "$dir"/*; do
		b=$(basename "$g")
		expect "$b intact (sha256)" "$(sha "$g")" = "$(sha "$WORK/html/${b#*.}")"
	done
}

# check_conns MODE USER CONNECTIONS: on scilan, the user's clients made
# exactly CONNECTIONS connections and all of them were accelerated.
check_conns() {
	local mode=$1 user=$2 want=$3 acc fb
	[ "$mode" = kernel ] && return 0
	acc=$(stat_sum accelerated "$WORK/cli-$user.err") fb=$(stat_sum fallback "$WORK/cli-$user.err")
	expect "$user: every connection accelerated ($want)" "$acc" -eq "$want"
	expect "$user: no connection on kernel TCP" "$fb" -eq 0
}

# A case: as each user, CLIENTS curl processes of URLS requests each, with
# CURL_ARGS (keep-alive: one connection per process; Connection: close: one
# per request).
http_case() { # MODE CLIENTS URLS CONNS_PER_CLIENT [CURL_ARGS...]
	local mode=$1 clients=$2 nurls=$3 per=$4 user c bytes total=0
	shift 4
	server "$mode"
	pre "$mode"
	for user in www-data root; do
		: >"$WORK/cli-$user.err"
		bytes=0
		rm -rf "$WORK/got-$user"
		mkdir -m 755 "$WORK/got-$user"
		chown "$user" "$WORK/got-$user"
		for ((c = 0; c < clients; c++)); do
			mkdir "$WORK/got-$user/$c"
			chown "$user" "$WORK/got-$user/$c"
			urls "$WORK/got-$user/$c" "$nurls"
			fetch "$user" "client $c" "$@" "${URL_ARGS[@]}"
			bytes=$((bytes + URL_BYTES))
		done
		for ((c = 0; c < clients; c++)); do
			check_got "$WORK/got-$user/$c" "$nurls"
		done
		check_stats "$mode" "client $user" $((clients * per)) 0 "$bytes" "$WORK/cli-$user.err"
		check_conns "$mode" "$user" $((clients * per))
		total=$((total + bytes))
	done
	stop srv TERM
	check_stats "$mode" server $((2 * clients * per)) "$total" 0 "$WORK/srv.err"
	if [ "$mode" != kernel ] && grep -aE 'scilan: pid [0-9]+: (warn|error)' "$WORK"/cli-*.err "$WORK/srv.err"; then
		echo "scilan warnings above" >&2
		return 1
	fi
	echo "ok: $((2 * clients * nurls)) responses intact, $((2 * clients * per)) connections, $total bytes"
}

# ab (epoll, like wrk) as each user, keep-alive, 2 connections: it waits in
# epoll for answers that children of another user than root send.
ab_case() { # MODE
	local mode=$1 user f n size done_ failed
	server "$mode"
	pre "$mode"
	local total=0
	for user in www-data root; do
		: >"$WORK/cli-$user.err"
		for f in small.txt big.bin; do
			n=$([ "$f" = small.txt ] && echo 2000 || echo 100)
			size=$(stat -c %s "$WORK/html/$f")
			client "$user" "ab $f" ab -q -k -c 2 -n "$n" "http://127.0.0.1:$PORT/$f" >"$WORK/ab.out"
			done_=$(awk '/^Complete requests:/ {print $3}' "$WORK/ab.out")
			failed=$(awk '/^Failed requests:/ {print $3}' "$WORK/ab.out")
			expect "$user ab $f: $n requests complete" "${done_:-0}" -eq "$n"
			expect "$user ab $f: no failed request" "${failed:-1}" -eq 0
			expect "$user ab $f: document length $size" "$(awk '/^Document Length:/ {print $3}' "$WORK/ab.out")" = "$size"
			if grep -a 'Non-2xx' "$WORK/ab.out"; then
				echo "$user ab $f: non-2xx answers" >&2
				return 1
			fi
			total=$((total + n * size))
		done
		check_stats "$mode" "client $user" 4 0 0 "$WORK/cli-$user.err"
		check_conns "$mode" "$user" 4
	done
	stop srv TERM
	check_stats "$mode" server 8 "$total" 0 "$WORK/srv.err"
	echo "ok: 4200 requests, 8 connections, $total bytes of bodies"
}

for mode in $MODES; do
	run_case "$mode apache keep-alive" http_case "$mode" 2 20 1
	run_case "$mode apache conn per request" http_case "$mode" 4 6 6 -H 'Connection: close'
	run_case "$mode apache ab -k -c 2" ab_case "$mode"
done
apps_finish
