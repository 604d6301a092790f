#!/usr/bin/env bash
# run-fuzz.sh BINDIR CORPUS RESULTS LABEL LIBFUZZER-ARGS... — runs every
# libFuzzer target in BINDIR over CORPUS/<target> (read only: new inputs go
# to a scratch directory), one at a time, and records each as
# "LABEL <target> passed failed" in RESULTS/LABEL.txt (a crash, leak or
# sanitizer report is a failure; its input is kept in RESULTS/LABEL-crashes).
# FUZZ_ARGS_<target>, when set, replaces LIBFUZZER-ARGS for that target (the
# slow ones that build real descriptors per input get a time, not a count).
set -u
bindir=$1 corpus=$2 results=$3 label=$4
shift 4
mkdir -p "$results" "$results/$label-crashes"
out="$results/$label.txt"
: >"$out"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
for t in $(find "$bindir" -type f -perm -u+x -name 'fuzz_*' | sort); do
	name=${t##*/}
	seeds="$corpus/$name"
	scratch=$(mktemp -d)
	log=$(mktemp)
	echo "== [$label] $name"
	[ -d "$seeds" ] || seeds=
	override=FUZZ_ARGS_$name
	args=("$@")
	[ -n "${!override:-}" ] && read -r -a args <<<"${!override}"
	"$t" "${args[@]}" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$results/$label-crashes/$name-" "$scratch" $seeds >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	if [ "$rc" -eq 0 ]; then
		echo "$label $name 1 0" >>"$out"
		echo "$name: ${execs:-?} executions, 0 crashes"
	else
		echo "$label $name 0 1" >>"$out"
		tail -n 40 "$log"
		echo "$name: ${execs:-?} executions, CRASHED (exit $rc; input in $results/$label-crashes)"
	fi
	rm -rf "$scratch" "$log"
done
exit 0
