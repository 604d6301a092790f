#!/usr/bin/env bash
# run-tests.sh DIR LABEL RESULTS [PATTERN] — runs every Criterion binary under
# DIR (those whose path under DIR matches the extended regular expression
# PATTERN, if given), one at a time (the 2-vCPU machine has no room for
# parallel spinning peers), and records each binary's pass/fail counts in
# RESULTS/LABEL.txt and a failed one's assertions in RESULTS/details.
set -u
dir=$1 label=$2 results=$3 pattern=${4:-}
mkdir -p "$results"
out="$results/$label.txt"
: >"$out"
status=0
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
for t in $(find "$dir" -type f -perm -u+x | sort); do
	name=${t#"$dir"/}
	if [ -n "$pattern" ] && ! [[ "$name" =~ $pattern ]]; then continue; fi
	case "$t" in */threads/*) name=threads/${t##*/} ;; esac
	echo "== [$label] $name"
	log=$(mktemp)
	case "$name" in
	threads/*) "$t" >"$log" 2>&1 ;;              # own harness: "N passed, M failed"
	*) "$t" --jobs 1 --verbose=0 >"$log" 2>&1 ;; # Criterion
	esac
	rc=$?
	cat "$log"
	if line=$(grep -a 'Synthesis:' "$log" | tail -n 1) && [ -n "$line" ]; then
		passed=$(sed -n 's/.*Passing: \([0-9]*\).*/\1/p' <<<"$line")
		failed=$(sed -n 's/.*Failing: \([0-9]*\).*/\1/p' <<<"$line")
		crashed=$(sed -n 's/.*Crashing: \([0-9]*\).*/\1/p' <<<"$line")
	else
		line=$(grep -aE '^[a-z]+: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
		passed=$(sed -n 's/.* \([0-9]*\) passed.*/\1/p' <<<"$line")
		failed=$(sed -n 's/.* \([0-9]*\) failed.*/\1/p' <<<"$line")
		crashed=0
	fi
	passed=${passed:-0} failed=$(( ${failed:-0} + ${crashed:-0} ))
	if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
	echo "$label $name $passed $failed" >>"$out"
	if [ "$failed" -ne 0 ]; then
		status=1
		# Its failed assertions, for the summary (scripts/test-summary.sh).
		mkdir -p "$results/details"
		d="$results/details/$label-${name//\//_}.txt"
		grep -aE '^\[(FAIL|----)\]|FAIL|CRASH|[Aa]ssert|Sanitizer|runtime error|signal' "$log" | head -n 12 >"$d"
		[ -s "$d" ] || tail -n 12 "$log" >"$d" # a crash or a hang's end says it there
	fi
	rm -f "$log"
done
exit 0
