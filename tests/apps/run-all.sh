#!/usr/bin/env bash
# tests/apps/run-all.sh BUILD RESULTS — runs the tests/apps tests one at a time,
# a line each, "apps: N passed, M failed", and RESULTS/apps.txt for the summary.
set -uo pipefail
# One at a time: a pair of spinning processes needs both CPUs.  The total
# counts cases; the exit status is 1 when one failed.
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
results=${2:-$build/results}
mkdir -p "$results" "$build/apps/logs"
out="$results/apps.txt"
: >"$out"
rm -f "$results"/details/apps-*.txt
total_p=0 total_f=0 t_all=$SECONDS
export SCILAN_BUILD="$build"
for t in "$here"/*.sh; do
	name=$(basename "$t" .sh)
	case "$name" in lib | deps | run-all) continue ;; esac
	[ -n "${APPS_ONLY:-}" ] && [[ " $APPS_ONLY " != *" $name "* ]] && continue
	log="$build/apps/logs/$name.log"
	t0=$SECONDS
	# A bound on the whole test: its commands have their own timeouts.
	timeout -k 10 300 "$t" >"$log" 2>&1
	rc=$?
	line=$(grep -aE "^$name: [0-9]+ passed, [0-9]+ failed" "$log" | tail -n 1)
	p=$(sed -n 's/.*: \([0-9]*\) passed.*/\1/p' <<<"$line")
	f=$(sed -n 's/.* \([0-9]*\) failed.*/\1/p' <<<"$line")
	p=${p:-0} f=${f:-0}
	# Died before its summary (timeout, a helper's failure): one failure.
	[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	echo "apps $name $p $f" >>"$out"
	total_p=$((total_p + p)) total_f=$((total_f + f))
	if [ "$f" -eq 0 ]; then
		printf 'apps: %-10s PASS  %2d passed          %4d s\n' "$name" "$p" $((SECONDS - t0))
	else
		printf 'apps: %-10s FAIL  %2d passed, %d failed %4d s  (status %d, log %s)\n' \
			"$name" "$p" "$f" $((SECONDS - t0)) "$rc" "$log"
		# The failed cases and the lines they logged.
		mkdir -p "$results/details"
		awk '/^  FAIL/ {p = 1; print; next} /^        [|]/ {if (p) print; next} {p = 0}' "$log" |
			sed 's/^/      /' | head -n 60 | tee "$results/details/apps-$name.txt"
		# Died before its summary, or a case that printed nothing: the log's end.
		[ -n "$line" ] && [ -s "$results/details/apps-$name.txt" ] ||
			tail -n 12 "$log" | sed 's/^/      /' | tee -a "$results/details/apps-$name.txt"
		# A log with nothing in it: the disk may have been full (a write that
		# failed takes the log's lines with it).  Say so, with the free space.
		[ -s "$log" ] ||
			echo "      its log is empty; free now: $(df -h --output=avail "$build" /tmp | tail -n +2 | tr -s ' \n' ' ')" |
			tee -a "$results/details/apps-$name.txt"
	fi
done
echo "apps: $total_p passed, $total_f failed ($((SECONDS - t_all)) s)"
[ "$total_f" -eq 0 ]
