#!/usr/bin/env bash
# perf/apps/servers.sh — `make bench-apps`: server programs with many clients or
# worker processes (issue 11) on kernel TCP and with both ends under scilan_run,
# alternating in one run; writes apps.md, apps.csv and apps.png to $BUILD/perf/apps.
set -euo pipefail
# Settings (environment):
#   BENCH_SECS      seconds of each measured run (default 12; 2 for a smoke run)
#   BENCH_CPU_SECS  seconds of each sockperf CPU-cost run (default BENCH_SECS)
#   BENCH_REPS      runs per row and transport; the table gives medians (1)
#   BENCH_ONLY      programs, comma-separated, from: pgbench redis memcached
#                   gunicorn nginx-php varnish cpu (default all)
#   BENCH_PIN       1: servers on CPU BENCH_SRV_CPU (0), clients on BENCH_CLI_CPU
#                   (1), through taskset; 0: unpinned (default 1)
#   BENCH_MC_CONC   memcaslap's concurrency (connections), 4 threads (16)
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../../tests/apps/lib.sh"
apps_init bench-servers

uint() { # NAME VALUE MIN: VALUE, an integer >= MIN, else exit
	[[ "$2" =~ ^[0-9]+$ ]] && [ "$2" -ge "$3" ] || { echo "bench-apps: $1 must be an integer >= $3, not '$2'" >&2; exit 2; }
	echo "$2"
}
SECS=$(uint BENCH_SECS "${BENCH_SECS:-12}" 1)
CPU_SECS=$(uint BENCH_CPU_SECS "${BENCH_CPU_SECS:-$SECS}" 1)
REPS=$(uint BENCH_REPS "${BENCH_REPS:-1}" 1)
MC_CONC=$(uint BENCH_MC_CONC "${BENCH_MC_CONC:-16}" 4)
ONLY=${BENCH_ONLY:-pgbench,redis,memcached,gunicorn,nginx-php,varnish,cpu}
OUT=$BUILD/perf/apps
RES=$WORK/res
mkdir -p "$OUT" "$RES"

SRV=() CLI=() PIN="unpinned"
if [ "${BENCH_PIN:-1}" = 1 ]; then
	if [ "$(nproc)" -ge 2 ]; then
		SRV=(taskset -c "${BENCH_SRV_CPU:-0}") CLI=(taskset -c "${BENCH_CLI_CPU:-1}")
		PIN="servers on CPU ${BENCH_SRV_CPU:-0}, clients on CPU ${BENCH_CLI_CPU:-1}"
	else
		echo "bench-apps: one CPU only: ends not pinned apart" >&2
	fi
fi

. "$HERE/servers_runs.sh"

# ---- which programs can run --------------------------------------------------
# skip REASON KEY...: the rows are reported as skipped, with the reason.
skip() {
	local why=$1 k
	shift
	for k in "$@"; do echo "$why" >"$RES/$k.skip"; done
	echo "bench-apps: skipped $*: $why"
}
wanted() { [[ ",$ONLY," == *",$1,"* ]]; }
have() { command -v "$1" >/dev/null 2>&1; }

PG_KEYS=(pg_c1 pg_c2 pg_c4 pg_c8 pg_c16 pg_tpcb_c1)
REDIS_KEYS=(redis_c50_get redis_c50_set redis_c1_get redis_c1_set)
CPU_KEYS=(cpu1000_srv cpu1000_cli cpu20000_srv cpu20000_cli)

# The newest PostgreSQL server with initdb and pgbench next to it.
PGBIN=
for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
	[ -x "$d/postgres" ] && [ -x "$d/initdb" ] && [ -x "$d/pgbench" ] && { PGBIN=$d; break; }
done
MEMASLAP=$(command -v memcaslap || command -v memaslap || true)
PHPFPM=$(ls /usr/sbin/php-fpm* 2>/dev/null | sort -V | tail -n 1 || true)

if ! wanted pgbench; then skip "not in BENCH_ONLY" "${PG_KEYS[@]}"
elif [ -z "$PGBIN" ]; then skip "no PostgreSQL server with initdb and pgbench (postgresql)" "${PG_KEYS[@]}"
elif ! id postgres >/dev/null 2>&1; then skip "no user postgres" "${PG_KEYS[@]}"
elif ! have setpriv; then skip "setpriv not found (util-linux)" "${PG_KEYS[@]}"
fi
if ! wanted redis; then skip "not in BENCH_ONLY" "${REDIS_KEYS[@]}"
elif ! have redis-server || ! have redis-benchmark; then
	skip "redis-server or redis-benchmark not found (redis-server, redis-tools)" "${REDIS_KEYS[@]}"
fi
if ! wanted memcached; then skip "not in BENCH_ONLY" memcached
elif ! have memcached || [ -z "$MEMASLAP" ]; then
	skip "memcached or memcaslap/memaslap not found (memcached, libmemcached-tools)" memcached
fi
if ! wanted gunicorn; then skip "not in BENCH_ONLY" gunicorn
elif ! [ -x /usr/bin/python3 ] || ! /usr/bin/python3 -c 'import gunicorn' 2>/dev/null; then
	skip "Debian's python3 cannot import gunicorn (python3-gunicorn)" gunicorn
elif ! have ab; then skip "ab not found (apache2-utils)" gunicorn
fi
if ! wanted nginx-php; then skip "not in BENCH_ONLY" nginx_php
elif ! have nginx || [ -z "$PHPFPM" ]; then skip "nginx or php-fpm not found (nginx-light, php-fpm)" nginx_php
elif ! have ab; then skip "ab not found (apache2-utils)" nginx_php
fi
if ! wanted varnish; then skip "not in BENCH_ONLY" varnish varnish_jnone
elif ! have varnishd || ! have nginx; then skip "varnishd or nginx not found (varnish, nginx-light)" varnish varnish_jnone
elif ! have ab; then skip "ab not found (apache2-utils)" varnish varnish_jnone
fi
if ! wanted cpu; then skip "not in BENCH_ONLY" "${CPU_KEYS[@]}"
elif ! have sockperf; then skip "sockperf not found (sockperf)" "${CPU_KEYS[@]}"
fi
# A skipped row's p99 and --profile latency rows are skipped with it.
for f in "$RES"/*.skip; do
	[ -e "$f" ] || continue
	k=$(basename "$f" .skip)
	for r in "${k}_p99" "${k}_lat" "${k}_lat_p99"; do cp "$f" "$RES/$r.skip"; done
done
skipped() { [ -e "$RES/$1.skip" ]; }

# ---- the runs ----------------------------------------------------------------
# bench KEYS LABEL FUNCTION ARGS...: one run (lib.sh's run_case); when it
# fails, its rows say so (KEYS: space-separated).
bench() {
	local keys=$1 label=$2 f0=$failed k
	shift 2
	run_case "$label" "$@"
	if [ "$failed" -gt "$f0" ]; then
		for k in $keys; do
			for r in "$k" "${k}_p99"; do echo "$label failed (logs/${label//[^A-Za-z0-9_.-]/_}.log)" >>"$RES/$r.fail"; done
		done
	fi
}

echo "bench-apps: kernel TCP vs scilan (both ends under scilan_run, default settings; pgbench -S -c 1"
echo "  and -c 4 also with --profile latency); $PIN;"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "  ${SECS} s per run (BENCH_SECS), CPU runs ${CPU_SECS} s, $REPS run(s) per row and transport; load before: $LOAD0"
T0=$SECONDS
# A cluster that could not be made fails its rows once, not once per run.
PG_OK=0
if ! skipped pg_c1; then
	f0=$failed
	bench "${PG_KEYS[*]}" "pgbench cluster setup" pg_setup
	[ "$failed" -eq "$f0" ] && PG_OK=1
fi
# The transports' order within each pair, turn about by rep: a run right
# after another may pay for the one before (its sockets still being torn
# down), and a fixed order would charge that to one transport.
pair() { # REP [EXTRA]: "kernel scilan EXTRA" on odd reps, "scilan EXTRA kernel" on even
	if (($1 % 2)); then echo "kernel scilan${2:+ $2}"; else echo "scilan${2:+ $2} kernel"; fi
}
for ((rep = 1; rep <= REPS; rep++)); do
	if [ "$PG_OK" = 1 ]; then
		# -S -c 1 (a CPU free) and -c 4 (none on 2 CPUs) also with --profile
		# latency: what the default leaves of its gain.
		for c in 1 2 4 8 16; do
			case $c in 1 | 4) modes=$(pair "$rep" scilan-latency) ;; *) modes=$(pair "$rep") ;; esac
			for mode in $modes; do bench "$(row "pg_c$c" "$mode")" "$mode pgbench -S -c $c #$rep" pg_run "$mode" "$c"; done
		done
		for mode in $(pair "$rep"); do bench pg_tpcb_c1 "$mode pgbench -c 1 #$rep" pg_run "$mode" 1 tpcb; done
	fi
	if ! skipped redis_c1_get; then
		# Requests sized for about SECS seconds of SET+GET on kernel TCP here.
		for c in 50 1; do
			n=$((SECS * (c == 1 ? 8000 : 30000)))
			for mode in $(pair "$rep"); do
				bench "redis_c${c}_get redis_c${c}_set" "$mode redis-benchmark -c $c #$rep" redis_run "$mode" "$c" "$n"
			done
		done
	fi
	if ! skipped memcached; then
		for mode in $(pair "$rep"); do bench memcached "$mode memcached memcaslap #$rep" memcached_run "$mode"; done
	fi
	if ! skipped gunicorn; then
		for mode in $(pair "$rep"); do bench gunicorn "$mode gunicorn ab -c 10 #$rep" gunicorn_run "$mode"; done
	fi
	if ! skipped nginx_php; then
		for mode in $(pair "$rep"); do bench nginx_php "$mode nginx php-fpm ab -c 10 #$rep" nginx_php_run "$mode"; done
	fi
	if ! skipped varnish; then
		for jail in default none; do
			k=varnish
			[ "$jail" = none ] && k=varnish_jnone
			for mode in $(pair "$rep"); do bench $k "$mode varnish -j $jail ab -c 10 #$rep" varnish_run "$mode" "$jail"; done
		done
	fi
	if ! skipped cpu1000_srv; then
		for mps in 1000 20000; do
			for mode in $(pair "$rep"); do
				bench "cpu${mps}_srv cpu${mps}_cli" "$mode sockperf pp mps $mps #$rep" cpu_run "$mode" "$mps"
			done
		done
	fi
done

rm -rf "$OUT/logs"
mkdir -p "$OUT/logs"
cp "$WORK"/cases/*.log "$OUT/logs/" 2>/dev/null || true
. "$HERE/servers_report.sh"
bad=0
servers_report || bad=$?
echo "bench-apps: $passed runs, $failed failed, $((SECONDS - T0)) s; $OUT/apps.md, apps.csv, apps.png, logs/"
[ "$failed" -eq 0 ] && [ "$bad" -eq 0 ]
