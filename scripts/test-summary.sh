#!/usr/bin/env bash
# test-summary.sh RESULTS — totals the per-binary counts of every test run
# (native, ASan+UBSan, TSan) and exits non-zero if anything failed.
set -u
results=$1
passed=0 failed=0
while read -r label name p f; do
	passed=$((passed + p))
	failed=$((failed + f))
	[ "$f" -ne 0 ] && echo "FAILED: [$label] $name ($f failing)"
done < <(cat "$results"/*.txt 2>/dev/null)
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
