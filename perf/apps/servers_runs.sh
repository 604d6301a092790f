# perf/apps/servers_runs.sh — one measured run per server program of the server
# benchmark (sourced by perf/apps/servers.sh): start the server in MODE, drive
# it, record the figure and what scilan's statistics lines say.
# shellcheck shell=bash

# row KEY MODE: the row a run in MODE reports to.  The --profile latency runs
# (scilan-latency) have rows of their own, KEY_lat (KEY_lat_p99 for KEY_p99),
# whose kernel figures are those of KEY's kernel runs (record writes them
# there too).
row() {
	if [ "$2" != scilan-latency ]; then echo "$1"
	elif [[ "$1" == *_p99 ]]; then echo "${1%_p99}_lat_p99"
	else echo "$1_lat"; fi
}

# record KEY MODE VALUE: one measurement of a row.
record() {
	case $2 in
	kernel) echo "$3" >>"$RES/$1.kernel" && echo "$3" >>"$RES/$(row "$1" scilan-latency).kernel" ;;
	*) echo "$3" >>"$RES/$(row "$1" "$2").scilan" ;;
	esac
}

# p99_ms FILE COLUMN DIVISOR: the 99th percentile (nearest rank) of COLUMN of
# FILE's lines, divided by DIVISOR, in ms with 3 decimals.
p99_ms() {
	awk -v c="$2" '$c ~ /^[0-9.]+$/ { print $c }' "$1" | sort -g |
		awk -v d="$3" '{ v[NR] = $1 } END { if (NR) { i = int(NR * 0.99); if (i < NR * 0.99) i++; printf "%.3f\n", v[i] / d } }'
}

# record_acc MODE CLIENT_ERR SERVER_ERRS KEY...: on scilan, the accelerated and
# fallen-back connection counts of the client's and the servers' statistics
# lines, for the rows' acceleration verdict; on kernel TCP, that nothing was
# preloaded (a statistics line there would mean the reference is not plain).
record_acc() {
	local mode=$1 cli=$2 srv=$3 key line
	shift 3
	# shellcheck disable=SC2086 # $srv: a list of files
	if [ "$mode" = kernel ]; then
		[ "$(stat_lines "$cli" $srv)" -eq 0 ] || { echo "scilan statistics on kernel TCP (preloaded?)" >&2; return 1; }
		return 0
	fi
	line="$(stat_lines "$cli") $(stat_sum accelerated "$cli") $(stat_sum fallback "$cli") $(stat_lines $srv) $(stat_sum accelerated $srv) $(stat_sum fallback $srv)"
	for key in "$@"; do
		echo "$line" >>"$RES/$(row "$key" "$mode").acc"
		# shellcheck disable=SC2086
		{ stat_reasons "$cli" | sed 's/^/client /'; stat_reasons $srv | sed 's/^/servers /'; } >>"$RES/$(row "$key" "$mode").reasons"
	done
	echo "scilan statistics: client lines/accelerated/fallback, servers lines/accelerated/fallback: $line"
	# shellcheck disable=SC2086
	echo "fallback reasons: client $(stat_reasons "$cli" | paste -sd' '), servers $(stat_reasons $srv | paste -sd' ')"
}

# launch NAME MODE CMD...: a daemon (lib.sh) on the server's CPU, under
# scilan_run in MODE.
launch() {
	local name=$1
	pre "$2"
	shift 2
	daemon "$name" kernel "${SRV[@]}" "${PRE[@]}" "$@"
}

# client MODE SECONDS CMD...: the client on its CPU under MODE, its output in
# $WORK/cli.out and cli.err; fails with the end of its output.
client() {
	local mode=$1 t=$2 prog=$3 rc=0
	shift 2
	pre "$mode"
	timeout -k 5 "$t" "${CLI[@]}" "${PRE[@]}" "$@" >"$WORK/cli.out" 2>"$WORK/cli.err" || rc=$?
	if [ "$rc" -ne 0 ]; then
		tail -n 15 "$WORK/cli.out" "$WORK/cli.err" >&2
		echo "$prog exited with status $rc" >&2
		return "$rc"
	fi
}

# stop_master NAME SIGNAL: SIGNAL to the daemon's main process only, then
# lib.sh's wait.  timeout (lib.sh's stop) passes a signal to its whole process
# group: workers killed by it directly (gunicorn's) die without running their
# exit handlers, and their statistics lines are lost.
stop_master() {
	local m
	m=$(pgrep -P "${DPID[$1]}" | head -n 1)
	if [ -n "$m" ]; then kill "-$2" "$m" 2>/dev/null || true; fi
	stop "$1" 0
}

# field FILE REGEX: the first number captured by REGEX's group in FILE.
field() { sed -n "s/$2/\\1/p" "$1" | head -n 1; }

# wait_log FILE TEXT PID: until TEXT is in FILE (a server says it is ready);
# fails when the server died first or after 60 s.
wait_log() {
	local i
	for ((i = 0; i < 60 * 20; i++)); do
		grep -aq "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || { tail -n 10 "$1" >&2; echo "server exited before '$2'" >&2; return 1; }
		sleep 0.05
	done
	echo "no '$2' in $1 after 60 s" >&2
	return 1
}

# ---- PostgreSQL + pgbench -S ------------------------------------------------
# PostgreSQL refuses to run as root: the cluster, the server and pgbench run as
# postgres (scilan accelerates a pair of one user only), with a runtime
# directory of that user's.
AS_PG=(setpriv --reuid=postgres --regid=postgres --init-groups --)

# pg_setup: a cluster in $PGW, filled with pgbench's tables (scale 1), the
# server stopped again.  Plain programs, kernel TCP.
PGW=$WORK/pg
PG_ENV=(env SCILAN_RUNDIR="$PGW/rundir" PGHOST=127.0.0.1 PGUSER=postgres)
pg_setup() {
	chmod 711 "$WORK"
	mkdir -p "$PGW/rundir"
	chmod 700 "$PGW/rundir"
	chown -R postgres: "$PGW"
	"${AS_PG[@]}" "$PGBIN/initdb" -D "$PGW/data" -A trust -U postgres --no-sync -E UTF8 \
		>"$PGW/initdb.log" 2>&1 || { tail -n 20 "$PGW/initdb.log" >&2; return 1; }
	pg_start kernel
	timeout -k 5 120 "${AS_PG[@]}" "${PG_ENV[@]}" "$PGBIN/pgbench" -p "$PGPORT" -i -s 1 -q postgres \
		>"$PGW/init.log" 2>&1 || { tail -n 20 "$PGW/init.log" >&2; return 1; }
	stop srv INT
	touch "$PGW/init.done"
	echo "ok: cluster of PostgreSQL $("$PGBIN/postgres" -V | awk '{print $3}'), pgbench scale 1"
}

# pg_start MODE: the server on a free loopback port (PGPORT), ready.
pg_start() {
	PGPORT=$(free_port)
	rm -f "$WORK/srv.err"
	pre "$1"
	# The user switch first: scilan_run's hook is then loaded by postgres only.
	# Commits do not wait for the WAL's fsync: pgbench -c 1 measures the
	# round trips, not the disk.
	daemon srv kernel "${SRV[@]}" "${AS_PG[@]}" "${PG_ENV[@]}" "${PRE[@]}" "$PGBIN/postgres" \
		-D "$PGW/data" -p "$PGPORT" -k "$PGW" -c listen_addresses=127.0.0.1 -c logging_collector=off \
		-c synchronous_commit=off
	# Ready when it says so (it listens before recovery is over).
	wait_log "$WORK/srv.err" 'ready to accept connections' "${DPID[srv]}"
}

# pg_run MODE CLIENTS [tpcb]: pgbench -S (select only; rows pg_cN), or its
# default TPC-B-like script (tpcb; rows pg_tpcb_cN), for SECS seconds.  The
# p99 comes from pgbench's log of every transaction (-l: its third column is
# the latency in microseconds).
pg_run() {
	local mode=$1 c=$2 j=2 tps p99 key=pg_c$2 script=(-S) log=$PGW/txlog
	if [ "${3:-}" = tpcb ]; then key=pg_tpcb_c$2 script=(); fi
	[ "$c" -lt 2 ] && j=1
	[ -e "$PGW/init.done" ] || { echo "no cluster (its setup failed)" >&2; return 1; }
	pg_start "$mode"
	pre "$mode"
	rm -f "$log".*
	timeout -k 5 $((SECS + 60)) "${AS_PG[@]}" "${CLI[@]}" "${PG_ENV[@]}" "${PRE[@]}" "$PGBIN/pgbench" \
		-p "$PGPORT" -n "${script[@]}" -T "$SECS" -c "$c" -j "$j" -l --log-prefix="$log" postgres \
		>"$WORK/cli.out" 2>"$WORK/cli.err" ||
		{ tail -n 15 "$WORK/cli.out" "$WORK/cli.err" >&2; return 1; }
	stop srv INT || true
	tps=$(field "$WORK/cli.out" '^tps = \([0-9.]*\) .*')
	[ -n "$tps" ] || { cat "$WORK/cli.out" >&2; return 1; }
	# (PostgreSQL before 15 does not print the line.)
	if grep -aE '^number of failed transactions: [1-9]' "$WORK/cli.out" >&2; then return 1; fi
	cat "$log".* >"$WORK/txlog"
	rm -f "$log".*
	p99=$(p99_ms "$WORK/txlog" 3 1000)
	[ -n "$p99" ] || { echo "no transaction in pgbench's log" >&2; return 1; }
	record_acc "$mode" "$WORK/cli.err" "$WORK/srv.err" "$key" "${key}_p99"
	record "$key" "$mode" "$tps"
	record "${key}_p99" "$mode" "$p99"
	echo "ok: $tps tps, p99 $p99 ms"
}

# ---- redis-server + redis-benchmark ----------------------------------------
redis_run() { # MODE CLIENTS REQUESTS
	local mode=$1 c=$2 n=$3 port set get
	port=$(free_port)
	launch srv "$mode" redis-server --port "$port" --bind 127.0.0.1 --save '' \
		--appendonly no --daemonize no --logfile '' --dir "$WORK"
	wait_listen "$port"
	client "$mode" $((SECS * 10 + 120)) redis-benchmark -p "$port" -c "$c" -n "$n" -t set,get --csv
	stop srv TERM || true
	set=$(awk -F'"' '$2 == "SET" {print $4}' "$WORK/cli.out")
	get=$(awk -F'"' '$2 == "GET" {print $4}' "$WORK/cli.out")
	[ -n "$set" ] && [ -n "$get" ] || { cat "$WORK/cli.out" >&2; return 1; }
	record_acc "$mode" "$WORK/cli.err" "$WORK/srv.err" "redis_c${c}_get" "redis_c${c}_set"
	record "redis_c${c}_set" "$mode" "$set"
	record "redis_c${c}_get" "$mode" "$get"
	echo "ok: SET $set, GET $get req/s"
}

# ---- memcached -t 4 + memcaslap -T 4 ----------------------------------------
memcached_run() { # MODE
	local mode=$1 port tps
	port=$(free_port)
	launch srv "$mode" memcached -u root -l 127.0.0.1 -p "$port" -U 0 -t 4 -m 256
	wait_listen "$port"
	client "$mode" $((SECS + 60)) "$MEMASLAP" -s "127.0.0.1:$port" -T 4 -c "$MC_CONC" -t "${SECS}s"
	stop srv TERM || true
	tps=$(field "$WORK/cli.out" '^Run time: .*TPS: *\([0-9]*\).*')
	[ -n "$tps" ] || { cat "$WORK/cli.out" >&2; return 1; }
	record_acc "$mode" "$WORK/cli.err" "$WORK/srv.err" memcached
	record memcached "$mode" "$tps"
	echo "ok: $tps ops/s"
}

# ---- ab -c 10 against an HTTP server ----------------------------------------
# drain_time_wait: until at most 2,000 TCP sockets of this namespace are in
# TIME_WAIT, for up to 75 s.  A short-connection run leaves tens of
# thousands (ab's connects, and a proxy's), for 60 s, and the run after it
# was measured on a connect whose port search walks them: kernel TCP's and
# scilan's runs of nginx + php-fpm alike stalled for 1-4 s (SYN retries)
# after a few runs back to back, and the second run of each pair paid more.
drain_time_wait() {
	local i n=0
	for ((i = 0; i < 150; i++)); do
		n=$(ss -s | sed -n 's/.*timewait \([0-9]*\).*/\1/p')
		[ "${n:-0}" -le 2000 ] && return 0
		sleep 0.5
	done
	echo "bench-apps: $n sockets still in TIME_WAIT after 75 s" >&2
}

# ab_drive MODE URL: ab -c 10 for SECS seconds; every request answered 200.
# -n after -t: ab's -t alone stops at 50,000 requests; ab allocates a record
# per request up front, so the bound is 50,000 a second, not unlimited.
# Its percentiles go to $WORK/ab.csv (ab_p99).
ab_drive() {
	local rps
	rm -f "$WORK/ab.csv"
	drain_time_wait
	client "$1" $((SECS + 60)) ab -q -c 10 -t "$SECS" -n $((SECS * 50000)) -e "$WORK/ab.csv" "$2"
	grep -aq '^Failed requests: *0$' "$WORK/cli.out" || { cat "$WORK/cli.out" >&2; return 1; }
	if grep -aq '^Non-2xx responses' "$WORK/cli.out"; then cat "$WORK/cli.out" >&2; return 1; fi
	rps=$(field "$WORK/cli.out" '^Requests per second: *\([0-9.]*\) .*')
	[ -n "$rps" ] || { cat "$WORK/cli.out" >&2; return 1; }
	echo "$rps"
}

# ab_p99: the last ab_drive's 99th percentile of the request times, in ms.
# From its -e file (to the microsecond there; the text report rounds to ms).
ab_p99() {
	local p
	p=$(awk -F, '$1 == 99 { print $2 }' "$WORK/ab.csv" 2>/dev/null)
	[ -n "$p" ] || { echo "no 99th percentile in ab's -e file" >&2; return 1; }
	echo "$p"
}

# ab_record MODE KEY RPS SERVER_ERRS: the rows KEY (req/s) and KEY_p99.
ab_record() {
	local p99
	p99=$(ab_p99)
	record_acc "$1" "$WORK/cli.err" "$4" "$2" "$2_p99"
	record "$2" "$1" "$3"
	record "$2_p99" "$1" "$p99"
	echo "ok: $3 req/s, p99 $p99 ms"
}

# gunicorn, 3 sync workers (one connection per request), a WSGI app that
# answers 6 bytes.  Debian's python3, not whichever python3 is first on PATH.
gunicorn_run() { # MODE
	local mode=$1 port d=$WORK/wsgi rps
	port=$(free_port)
	mkdir -p "$d"
	cat >"$d/hello.py" <<'PY'
def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "6")])
    return [b"hello\n"]
PY
	launch srv "$mode" /usr/bin/python3 -m gunicorn -w 3 -k sync -b "127.0.0.1:$port" \
		--chdir "$d" --worker-tmp-dir "$d" hello:app
	wait_listen "$port"
	rps=$(ab_drive "$mode" "http://127.0.0.1:$port/")
	stop_master srv TERM || true
	ab_record "$mode" gunicorn "$rps" "$WORK/srv.err"
}

# nginx (1 worker) in front of php-fpm (3 static children) over TCP FastCGI, a
# PHP script that echoes 6 bytes.  Everything stays root: a process that
# switched user would withdraw its scilan listeners.
nginx_php_run() { # MODE
	local mode=$1 port fport d rps
	port=$(free_port)
	fport=$(free_port)
	[ "$fport" != "$port" ] || fport=$(free_port)
	d=$WORK/web.$port
	mkdir -p "$d/html" "$d/tmp"
	echo '<?php echo "hello\n";' >"$d/html/hello.php"
	cat >"$d/fpm.conf" <<CONF
[global]
pid = $d/fpm.pid
error_log = $d/fpm.log
daemonize = no
[bench]
user = root
group = root
listen = 127.0.0.1:$fport
pm = static
pm.max_children = 3
; the children's stderr (their statistics lines) into error_log, not /dev/null
catch_workers_output = yes
decorate_workers_output = no
CONF
	cat >"$d/nginx.conf" <<CONF
user root;
worker_processes 1;
pid $d/nginx.pid;
error_log stderr warn;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path $d/tmp/body;
	proxy_temp_path $d/tmp/proxy;
	fastcgi_temp_path $d/tmp/fastcgi;
	uwsgi_temp_path $d/tmp/uwsgi;
	scgi_temp_path $d/tmp/scgi;
	server {
		listen 127.0.0.1:$port;
		root $d/html;
		location ~ \.php\$ {
			fastcgi_pass 127.0.0.1:$fport;
			fastcgi_param SCRIPT_FILENAME \$document_root\$fastcgi_script_name;
			fastcgi_param SCRIPT_NAME \$fastcgi_script_name;
			fastcgi_param REQUEST_METHOD \$request_method;
			fastcgi_param QUERY_STRING \$query_string;
			fastcgi_param REQUEST_URI \$request_uri;
			fastcgi_param SERVER_PROTOCOL \$server_protocol;
			fastcgi_param CONTENT_TYPE \$content_type;
			fastcgi_param CONTENT_LENGTH \$content_length;
		}
	}
}
CONF
	launch fpm "$mode" "$PHPFPM" -F -R -y "$d/fpm.conf"
	wait_listen "$fport"
	launch srv "$mode" nginx -p "$d" -c "$d/nginx.conf" -g 'daemon off;'
	wait_listen "$port"
	rps=$(ab_drive "$mode" "http://127.0.0.1:$port/hello.php")
	# Graceful stops (QUIT): the workers and children exit, printing their
	# statistics lines.
	stop_master srv QUIT || true
	stop_master fpm QUIT || true
	ab_record "$mode" nginx_php "$rps" "$WORK/srv.err $WORK/fpm.err $d/fpm.log"
}

# varnish (malloc storage) in front of nginx serving a 6-byte file (the perf
# benches' static server, lib.sh), ab -c 10 through it: almost every request
# is a cache hit.  JAIL default: varnishd's own (its worker process runs as
# vcache and listens after the switch); none: -j none, everything root.
varnish_run() { # MODE JAIL
	local mode=$1 jail=$2 port bport d rps key=varnish jopt=()
	if [ "$jail" = none ]; then key=varnish_jnone jopt=(-j none); fi
	port=$(free_port)
	bport=$(free_port)
	[ "$bport" != "$port" ] || bport=$(free_port)
	d=$WORK/varnish.$port
	# The worker (vcache) reaches its working directory under $WORK.
	chmod 711 "$WORK"
	nginx_static_conf "$d" "$bport" 256
	echo hello >"$d/html/hello.txt"
	launch be "$mode" nginx -p "$d" -c "$d/nginx.conf" -g 'daemon off;'
	wait_listen "$bport"
	launch srv "$mode" varnishd -F -n "$d/varnish" "${jopt[@]}" -a "127.0.0.1:$port" \
		-b "127.0.0.1:$bport" -s malloc,64m
	wait_listen "$port" 60
	rps=$(ab_drive "$mode" "http://127.0.0.1:$port/hello.txt")
	# The manager stops its worker process first (statistics lines).
	stop_master srv TERM || true
	stop_master be QUIT || true
	ab_record "$mode" "$key" "$rps" "$WORK/srv.err $WORK/be.err"
}

# ---- CPU cost: sockperf ping-pong at a fixed rate ---------------------------
# ticks_of STAT_LINE FIRST: utime+stime (FIRST=12) or cutime+cstime (FIRST=14)
# of a /proc/PID/stat line, counted after the command name's ")".
ticks_of() { echo "${1##*) }" | awk -v f="$2" '{ print $f + $(f + 1) }'; }

# cpu_run MODE MPS: sockperf sr and sockperf pp --mps=MPS -m 64 for CPU_SECS.
# The server's CPU is read from its /proc/PID/stat once the client is done;
# the client's from the cutime+cstime of the shell that waited for it.
cpu_run() {
	local mode=$1 mps=$2 port spid sstat cstat recv hz srv_s cli_s
	port=$(free_port)
	launch srv "$mode" sockperf sr --tcp -i 127.0.0.1 -p "$port"
	wait_listen "$port"
	spid=$(pgrep -g "${DPID[srv]}" -x sockperf | head -n 1)
	[ -n "$spid" ] || { echo "no sockperf server process" >&2; return 1; }
	pre "$mode"
	timeout -k 5 $((CPU_SECS + 60)) bash -c '"$@" >"$0.out" 2>"$0.err"; rc=$?; cat /proc/$$/stat >"$0.stat"; exit $rc' \
		"$WORK/cli" "${CLI[@]}" "${PRE[@]}" sockperf pp --tcp -i 127.0.0.1 -p "$port" \
		-t "$CPU_SECS" -m 64 --mps="$mps" ||
		{ tail -n 15 "$WORK/cli.out" "$WORK/cli.err" >&2; return 1; }
	sstat=$(cat "/proc/$spid/stat")
	cstat=$(cat "$WORK/cli.stat")
	stop srv INT || true
	recv=$(field "$WORK/cli.out" '.*\[Total Run\].*ReceivedMessages=\([0-9]*\).*')
	[ "${recv:-0}" -gt 0 ] || { cat "$WORK/cli.out" >&2; return 1; }
	hz=$(getconf CLK_TCK)
	srv_s=$(awk -v t="$(ticks_of "$sstat" 12)" -v hz="$hz" -v n="$recv" 'BEGIN { printf "%.4g", t / hz / n * 1e6 }')
	cli_s=$(awk -v t="$(ticks_of "$cstat" 14)" -v hz="$hz" -v n="$recv" 'BEGIN { printf "%.4g", t / hz / n * 1e6 }')
	record_acc "$mode" "$WORK/cli.err" "$WORK/srv.err" "cpu${mps}_srv" "cpu${mps}_cli"
	record "cpu${mps}_srv" "$mode" "$srv_s"
	record "cpu${mps}_cli" "$mode" "$cli_s"
	echo "ok: $recv round trips; CPU s per 1M requests: server $srv_s, client $cli_s"
}
