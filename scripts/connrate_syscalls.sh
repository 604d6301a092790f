#!/usr/bin/env bash
# connrate_syscalls.sh [TRANSPORT [N]] — system calls per short connection on
# each side: strace follows `scilan-bench connrate` over N timed connections
# (default scilan-hybrid, 300) and divides each process's count by the
# connections it made or served (N + the 20 warm-up ones + the last).
set -euo pipefail
tp=${1:-scilan-hybrid} n=${2:-300}
bench=${BENCH:-build/bin/scilan-bench}
command -v strace >/dev/null || { echo "connrate_syscalls: needs strace" >&2; exit 1; }
[ -x "$bench" ] || { echo "connrate_syscalls: no $bench (make bench-bin)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# One round only (--iters N spreads over 3 rounds): count the first round's pair.
strace -qq -ff -o "$tmp/t" "$bench" connrate --transports "$tp" --iters $((3 * n)) --seconds 300 >"$tmp/out" 2>"$tmp/err" ||
	{ cat "$tmp/err" >&2; exit 1; }
conns=$((n + 21))
# The accepting child is the one that accepted most; the connecting one connected most.
side() {
	local f best=0 file=
	for f in "$tmp"/t.*; do
		local c
		c=$(grep -c "^$1" "$f" || true)
		if [ "$c" -gt "$best" ]; then best=$c file=$f; fi
	done
	echo "$file"
}
for s in accept connect; do
	f=$(side "$s")
	total=$(grep -c '^[a-z_0-9]*(' "$f")
	printf '%s side: %.1f syscalls per connection; top:' "$s" "$(echo "$total / $conns" | bc -l)"
	sed -n 's/^\([a-z_0-9]*\)(.*/\1/p' "$f" | sort | uniq -c | sort -rn | head -12 |
		awk -v c="$conns" '{ printf " %s %.1f", $2, $1 / c }'
	echo
done
