#!/usr/bin/env bash
# pathcount.sh [SIZE [N]] — instructions of scilan's data path against the
# bare ring, counted by callgrind in `scilan-bench pathcount` (both ends in
# one process, taking turns: the counts repeat exactly, where timings on a
# shared machine do not): per round trip (send, recv, send, recv) and per
# streamed message (one send and its recv).  Defaults: 64 B, 20000.
set -euo pipefail
size=${1:-64} n=${2:-20000}
bench=${BENCH:-build/bin/scilan-bench}
command -v valgrind >/dev/null || { echo "pathcount: needs valgrind" >&2; exit 1; }
[ -x "$bench" ] || { echo "pathcount: no $bench (make bench-bin)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Instructions executed inside function $1 over the whole run.
count() {
	valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" --toggle-collect="$1" \
		"$bench" pathcount --sizes "$size" --iters "$n" >"$tmp/out" 2>"$tmp/err" ||
		{ cat "$tmp/err" >&2; exit 1; }
	sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/err"
}
pp_s=$(count pathcount_scilan_pingpong)
st_s=$(count pathcount_scilan_stream)
pp_b=$(count pathcount_bare_pingpong)
st_b=$(count pathcount_bare_stream)
rounds=$(sed -n 's/.*: \([0-9]*\) round trips.*/\1/p' "$tmp/out")
msgs=$(sed -n 's/.* and \([0-9]*\) streamed.*/\1/p' "$tmp/out")
awk -v size="$size" -v r="$rounds" -v m="$msgs" -v ps="$pp_s" -v ss="$st_s" -v pb="$pp_b" -v sb="$st_b" 'BEGIN {
	printf "pathcount %s B (callgrind instructions; %d round trips, %d streamed messages)\n", size, r, m
	printf "  round trip        scilan %7.0f   bare %7.0f   %.2fx\n", ps / r, pb / r, ps / pb
	printf "  streamed message  scilan %7.0f   bare %7.0f   %.2fx\n", ss / m, sb / m, ss / sb
}'
