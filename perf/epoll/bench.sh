#!/usr/bin/env bash
# perf/epoll/bench.sh BUILD — make bench-epoll: an epoll set of N connections
# (perf/epoll/epoll_scale.c), and the same server in poll(2) (rows poll-*),
# on kernel TCP and on scilan (polling, hybrid, interrupt), all in one run;
# table, epoll.csv and, with gnuplot, epoll.png.
set -euo pipefail
# Environment: EPOLL_NS (default "1 16 256 1024 4096"), EPOLL_ROUNDS (5000),
# EPOLL_IDLE_MS (2000), EPOLL_WARM_MS (1000: exchanges before the timed
# ones, the same time at every N; see epoll_scale.c), EPOLL_MODES (a subset of the four), EPOLL_APIS
# ("epoll poll", or one of them), EPOLL_RUN (the
# scilan_run of another build, for a before/after), EPOLL_CSV (where).  Ends unpinned; figures are indicative on a shared
# machine: compare the ratios of one run.
BUILD=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT="$BUILD/perf"
BIN="$BUILD/bin/epoll_scale"
RUN=${EPOLL_RUN:-"$BUILD/bin/scilan_run"}
NS=${EPOLL_NS:-"1 16 256 1024 4096"}
MODES=${EPOLL_MODES:-"kernel scilan-poll scilan-hybrid scilan-intr"}
APIS=${EPOLL_APIS:-"epoll poll"}
ROUNDS=${EPOLL_ROUNDS:-5000}
IDLE_MS=${EPOLL_IDLE_MS:-2000}
WARM_MS=${EPOLL_WARM_MS:-1000}
CSV=${EPOLL_CSV:-"$OUT/epoll.csv"}
mkdir -p "$OUT"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export SCILAN_RUNDIR="$WORK/run" SCILAN_CONF="$WORK/cluster.conf"
mkdir -p -m 700 "$SCILAN_RUNDIR"
: >"$SCILAN_CONF"

# one MODE N API: "n,p50,p99,idle,first_p50" of one run (epoll_scale.c).
one() {
	local mode=$1 n=$2 api=$3
	local acc
	case $mode in
	kernel) timeout -k 5 300 "$BIN" "$n" "$ROUNDS" "$IDLE_MS" "$api" "$WARM_MS"; return ;;
	scilan-poll) export SCILAN_POLL_US=10000000 ;;
	scilan-hybrid) export SCILAN_POLL_US=auto ;;
	scilan-intr) export SCILAN_POLL_US=0 ;;
	esac
	SCILAN_STATS=stderr timeout -k 5 300 "$RUN" "$BIN" "$n" "$ROUNDS" "$IDLE_MS" "$api" "$WARM_MS" 2>"$WORK/err"
	unset SCILAN_POLL_US
	# The server's connections must have gone over the rings (the client
	# ends in _exit: no stats line of its own).
	acc=$(sed -n 's/.*accelerated \([0-9]*\),.*/\1/p' "$WORK/err" | awk '{ s += $1 } END { print s + 0 }')
	if [ "$acc" -lt "$n" ]; then
		echo "bench-epoll: $mode N=$n: $acc of $n connections accelerated:" >&2
		cat "$WORK/err" >&2
		return 1
	fi
}

echo "n,mode,p50_us,p99_us,idle_cpu_ms_per_s,first_p50_us" >"$CSV"
for n in $NS; do
	for api in $APIS; do
		for mode in $MODES; do
			line=$(one "$mode" "$n" "$api") || { echo "bench-epoll: $api $mode N=$n failed" >&2; exit 1; }
			IFS=, read -r _ p50 p99 idle first <<<"$line"
			# epoll rows keep their plain mode names; poll rows say poll-.
			[ "$api" = epoll ] || mode="$api-$mode"
			echo "$n,$mode,$p50,$p99,$idle,$first" >>"$CSV"
		done
	done
done

# The table: each scilan mode's p50 against kernel TCP's with the same API
# (x faster), and against its own p50 at the smallest N (flatness).
awk -F, 'NR > 1 {
	key = $1 "," $2; p50[key] = $3; p99[key] = $4; idle[key] = $5; first[key] = $6
	if (!($1 in seen)) { seen[$1] = 1; ns[++nn] = $1 }
}
END {
	nm = split("kernel scilan-poll scilan-hybrid scilan-intr poll-kernel poll-scilan-poll poll-scilan-hybrid poll-scilan-intr", modes, " ")
	printf "%-6s %-19s %10s %10s %12s %14s %12s %12s\n", "N", "mode", "p50 us", "p99 us", "idle ms/s", "kernel/mode", "p50/p50(N1)", "first p50 us"
	for (i = 1; i <= nn; i++)
		for (m = 1; m <= nm; m++) {
			k = ns[i] "," modes[m]; kk = ns[i] (modes[m] ~ /^poll-/ ? ",poll-kernel" : ",kernel"); k1 = ns[1] "," modes[m]
			if (k in p50)
				printf "%-6s %-19s %10.2f %10.2f %12.3f %13.1fx %11.2fx %12.2f\n", ns[i], modes[m], p50[k], p99[k], idle[k],
				       p50[kk] / p50[k], p50[k] / p50[k1], first[k]
		}
}' "$CSV"
echo "csv: $CSV"
if command -v gnuplot >/dev/null; then
	gnuplot -e "csv='$CSV'; png='$OUT/epoll.png'" "$HERE/epoll.gp" && echo "png: $OUT/epoll.png"
fi
