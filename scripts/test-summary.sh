#!/usr/bin/env bash
# test-summary.sh RESULTS — totals the per-binary counts of every test run
# (native, ASan+UBSan, TSan), repeats what the failed ones printed (their
# RESULTS/details files) where the tail of a log shows it, and exits non-zero
# if anything failed.
set -u
results=$1
passed=0 failed=0 fails=""
while read -r label name p f; do
	passed=$((passed + p))
	failed=$((failed + f))
	[ "$f" -ne 0 ] && fails+="FAILED: [$label] $name ($f failing)"$'\n'
done < <(cat "$results"/*.txt 2>/dev/null)
# What the failed tests printed: the verdict line (with its figures) and the
# last lines under it, where a case's log ends with what went wrong.
for d in "$results"/details/*.txt; do
	[ -e "$d" ] || continue
	echo "--- $(basename "$d" .txt):"
	{ head -n 1 "$d"; tail -n +2 "$d" | tail -n 11; } | cut -c1-400
	# Nothing in it: its writer could not write (a full disk?).
	[ -s "$d" ] || echo "    (empty; free space now: $(df -h --output=avail "$results" /tmp | tail -n +2 | tr -s ' \n' ' '))"
done
printf '%s' "$fails"
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
