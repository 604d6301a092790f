# perf/apps/servers_report.sh — the server benchmark's report (sourced by
# perf/apps/servers.sh): from the runs' results in $RES, the markdown table,
# the CSV and the PNG (perf/apps/servers.gp) in $OUT.
# shellcheck shell=bash

# key | program | metric | unit | better (higher/lower).  KEY_p99: the p99
# of KEY's runs; KEY_lat: KEY's kernel runs against scilan's --profile latency.
SERVER_ROWS=(
	"pg_c1|pgbench -S -c 1|select-only transactions|tps|higher"
	"pg_c1_p99|pgbench -S -c 1: p99|transaction latency|ms|lower"
	"pg_c1_lat|pgbench -S -c 1 (--profile latency)|select-only transactions|tps|higher"
	"pg_c1_lat_p99|pgbench -S -c 1 (--profile latency): p99|transaction latency|ms|lower"
	"pg_c2|pgbench -S -c 2 -j 2|select-only transactions|tps|higher"
	"pg_c4|pgbench -S -c 4 -j 2|select-only transactions|tps|higher"
	"pg_c4_p99|pgbench -S -c 4 -j 2: p99|transaction latency|ms|lower"
	"pg_c4_lat|pgbench -S -c 4 -j 2 (--profile latency)|select-only transactions|tps|higher"
	"pg_c4_lat_p99|pgbench -S -c 4 -j 2 (--profile latency): p99|transaction latency|ms|lower"
	"pg_c8|pgbench -S -c 8 -j 2|select-only transactions|tps|higher"
	"pg_c16|pgbench -S -c 16 -j 2|select-only transactions|tps|higher"
	"pg_tpcb_c1|pgbench -c 1 (TPC-B-like)|transactions|tps|higher"
	"pg_tpcb_c1_p99|pgbench -c 1 (TPC-B-like): p99|transaction latency|ms|lower"
	"redis_c50_get|redis-benchmark -c 50 GET|requests|req/s|higher"
	"redis_c50_set|redis-benchmark -c 50 SET|requests|req/s|higher"
	"redis_c1_get|redis-benchmark -c 1 GET|requests|req/s|higher"
	"redis_c1_set|redis-benchmark -c 1 SET|requests|req/s|higher"
	"memcached|memcached -t 4 / memcaslap -T 4 -c $MC_CONC|get+set|ops/s|higher"
	"gunicorn|gunicorn 3 sync workers / ab -c 10|requests|req/s|higher"
	"gunicorn_p99|gunicorn / ab -c 10: p99|request time|ms|lower"
	"nginx_php|nginx + php-fpm (TCP FastCGI) / ab -c 10|requests|req/s|higher"
	"nginx_php_p99|nginx + php-fpm / ab -c 10: p99|request time|ms|lower"
	"varnish|varnish (default jail) + nginx / ab -c 10|requests|req/s|higher"
	"varnish_p99|varnish (default jail) / ab -c 10: p99|request time|ms|lower"
	"varnish_jnone|varnish -j none + nginx / ab -c 10|requests|req/s|higher"
	"varnish_jnone_p99|varnish -j none / ab -c 10: p99|request time|ms|lower"
	"cpu1000_srv|sockperf pp --mps=1000 64 B: server|CPU per 1M requests|s|lower"
	"cpu1000_cli|sockperf pp --mps=1000 64 B: client|CPU per 1M requests|s|lower"
	"cpu20000_srv|sockperf pp --mps=20000 64 B: server|CPU per 1M requests|s|lower"
	"cpu20000_cli|sockperf pp --mps=20000 64 B: client|CPU per 1M requests|s|lower"
)

median() { # FILE: the median of its lines (nan when there are none)
	[ -s "$1" ] || { echo nan; return; }
	sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

num() { # VALUE: for the tables, whole numbers from 100 up, else 3 digits
	awk -v v="$1" 'BEGIN { if (v == "nan" || v == "") print (v == "" ? "-" : v); else if (v + 0 >= 100) printf "%.0f\n", v; else printf "%.3g\n", v }'
}

# accel KEY: "VERDICT|client acc|client fallback|servers acc|servers fallback"
# over the row's scilan runs.  The client's count is the proof: it connected
# over the rings; a run whose connections all fell back measured the kernel.
# A few fallbacks are connections a client gave up at its time limit, before
# the agreement (ab): "partly" from 1 % of the client's connections.
accel() {
	[ -s "$RES/$1.acc" ] || { echo "-||||"; return; }
	awk '{ cl += $1; ca += $2; cf += $3; sl += $4; sa += $5; sf += $6 }
	END {
		if (cl == 0) v = "NOT accelerated (no statistics line from the client)"
		else if (ca == 0) v = "NOT accelerated (client: 0 connections over scilan)"
		else if (cf + sf > ca / 100) v = sprintf("partly (client %d over scilan; %d fell back)", ca, cf + sf)
		else v = sprintf("yes (client %d; servers %d; %d fell back)", ca, sa, cf + sf)
		printf "%s|%d|%d|%d|%d\n", v, ca, cf, sa, sf
	}' "$RES/$1.acc"
}

# reasons KEY: the fallback reasons of the row's scilan runs, summed, as
# "client short 14320 / servers no-offer 14320" (no commas: a CSV field).
reasons() {
	[ -s "$RES/$1.reasons" ] || return 0
	awk '{ n[$1 " " $2] += $3 } END { for (k in n) print k, n[k] }' "$RES/$1.reasons" | sort |
		awk '$1 != w { if (w != "") printf " / "; printf "%s", $1; w = $1 } { printf " %s %s", $2, $3 } END { if (w != "") print "" }'
}

# servers_report: writes the three files and prints the table; non-zero when a
# row failed or its scilan run was not accelerated.
servers_report() {
	local md=$OUT/apps.md csv=$OUT/apps.csv dat=$OUT/apps.plot.dat r key prog metric unit better
	local k s ratio acc verdict ca cf sa sf status bad=0 i=0 fmt why
	{
		echo "# bench-apps: server programs, kernel TCP vs scilan"
		echo
		echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $PIN, ${SECS} s per run (CPU rows ${CPU_SECS} s),"
		echo "$REPS run(s) per row and transport (medians), load average before the runs: $LOAD0, after: $(cut -d' ' -f1-3 /proc/loadavg)."
		echo "Both ends under \`scilan_run --stats=stderr\` (default settings; rows marked --profile latency: \`--profile latency\`)"
		echo "vs plain programs, alternating in one run (a --profile latency row's kernel figure is its default row's)."
		echo "scilan/kernel: above 1 is better for throughput (higher), worse for CPU and p99 latency (lower)."
		echo
		echo "| program | metric | unit | kernel TCP | scilan | scilan/kernel | better | scilan run accelerated |"
		echo "|---|---|---|---|---|---|---|---|"
	} >"$md"
	echo "key,program,metric,unit,better,kernel,scilan,ratio,accelerated,client_acc,client_fallback,server_acc,server_fallback,status" >"$csv"
	: >"$dat"
	for r in "${SERVER_ROWS[@]}"; do
		IFS='|' read -r key prog metric unit better <<<"$r"
		if [ -e "$RES/$key.skip" ]; then
			status="skipped: $(cat "$RES/$key.skip")"
			echo "$key,$prog,$metric,$unit,$better,,,,,,,,,$status" >>"$csv"
			echo "| $prog | $metric | $unit | | | | | $status |" >>"$md"
			continue
		fi
		k=$(median "$RES/$key.kernel") s=$(median "$RES/$key.scilan")
		ratio=$(awk -v k="$k" -v s="$s" 'BEGIN { if (k == "nan" || s == "nan" || k + 0 <= 0) print "nan"; else printf "%.3g\n", s / k }')
		acc=$(accel "$key")
		IFS='|' read -r verdict ca cf sa sf <<<"$acc"
		why=$(reasons "$key")
		[ -z "$why" ] || verdict="$verdict; fallback reasons: $why"
		status=ok
		if [ -e "$RES/$key.fail" ]; then
			status="FAILED: $(paste -sd';' "$RES/$key.fail")"
			bad=1
		elif [[ "$verdict" == NOT* ]]; then
			status="NOT accelerated"
			bad=1
		fi
		echo "$key,$prog,$metric,$unit,$better,$k,$s,$ratio,$verdict,$ca,$cf,$sa,$sf,$status" >>"$csv"
		case $status in
		ok | "NOT accelerated") ;;
		*) verdict="$([ "$verdict" = - ] || echo "$verdict; ")$status" ;;
		esac
		echo "| $prog | $metric | $unit | $(num "$k") | $(num "$s") | **$ratio** | $better | $verdict |" >>"$md"
		if [ "$ratio" != nan ]; then
			echo "$i \"$prog\" $ratio $([ "$better" = higher ] && echo 1 || echo 0)" >>"$dat"
			i=$((i + 1))
		fi
	done
	echo
	fmt='%-46s %-6s %12s %12s %8s  %s\n'
	# shellcheck disable=SC2059 # fmt: the one format of the table
	printf "$fmt" program unit kernel scilan s/k "scilan run accelerated"
	# shellcheck disable=SC2034 # (the CSV's other columns)
	tail -n +2 "$csv" | while IFS=, read -r key prog metric unit better k s ratio verdict ca cf sa sf status; do
		case $status:$verdict in
		ok:* | "NOT accelerated":*) ;;
		*: | *:-) verdict=$status ;;
		*) verdict="$verdict; $status" ;;
		esac
		# shellcheck disable=SC2059
		printf "$fmt" "$prog" "$unit" "$(num "$k")" "$(num "$s")" "${ratio:--}" "$verdict"
	done
	echo
	if [ -s "$dat" ] && command -v gnuplot >/dev/null; then
		gnuplot -e "dat='$dat'; png='$OUT/apps.png'; sub='$PIN, ${SECS} s per run, $(date -u '+%Y-%m-%d %H:%M UTC')'" \
			"$HERE/servers.gp" || { echo "bench-apps: gnuplot failed" >&2; bad=1; }
	else
		echo "bench-apps: no plot (no row measured on both transports, or no gnuplot)" >&2
		rm -f "$OUT/apps.png"
	fi
	return "$bad"
}
