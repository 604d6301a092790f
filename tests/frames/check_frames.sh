#!/usr/bin/env bash
# check_frames.sh RESULTS — builds the library and the hook with gcc
# -fstack-usage into a scratch directory and fails if any function's frame
# reaches LIMIT bytes: the hook runs on application threads whose stacks may
# be 16 KiB (PTHREAD_STACK_MIN), so no path buffer may live on the stack.
set -u
results=${1:-build/results}
limit=${LIMIT:-2048}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$results"
out="$results/frames.txt"
echo "== [frames] stack frames of libscilan/ and hook/ below $limit bytes"
if ! make --no-print-directory BUILD="$scratch" OPT='-O2 -g -fstack-usage' "$scratch/lib/libscilan_preload.so" \
	>"$scratch/build.log" 2>&1; then
	cat "$scratch/build.log"
	echo "frames build 0 1" >"$out"
	exit 0
fi
# .su lines: file:line:col:function<TAB>bytes<TAB>qualifiers
files=$(find "$scratch/obj/libscilan" "$scratch/obj/hook" -name '*.su')
[ -n "$files" ] || { echo "no .su files"; echo "frames build 0 1" >"$out"; exit 0; }
offenders=$(cat $files | awk -F'\t' -v lim="$limit" '$2 + 0 >= lim' | sort -t$'\t' -k2 -n -r)
checked=$(cat $files | wc -l)
if [ -n "$offenders" ]; then
	echo "frames of $limit bytes or more:"
	echo "$offenders"
	echo "frames stack_usage 0 1" >"$out"
else
	echo "$checked frames checked, largest: $(cat $files | sort -t$'\t' -k2 -n -r | head -n 1)"
	echo "frames stack_usage 1 0" >"$out"
fi
exit 0
