#!/usr/bin/env bash
# check.sh RESULTS — what the two shared libraries export: each exactly the
# names of its version script (libscilan/libscilan.map, hook/preload.map),
# even when built with a command line's CFLAGS (which replaces the
# Makefile's), and each script exactly what the sources declare: scilan.h's
# SCILAN_API calls (and debian/libscilan0.symbols), the hook's HK_EXPORT
# definitions plus that API.  And no shipped library (the two shared ones,
# libscilan.a) carries test-only code: none defines a symbol of the objects
# of tests/common.
set -u
results=${1:-build/results}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$results"
out="$results/exports.txt"
: >"$out"
echo "== [exports] dynamic symbols of libscilan.so and libscilan_preload.so"

# One line per check: "exports NAME 1 0" or "exports NAME 0 1" (and why).
check() { # name, expected list file, actual list file
	if diff -u "$2" "$3" >"$scratch/diff"; then
		echo "exports $1 1 0" >>"$out"
	else
		echo "$1: expected ($2) vs actual ($3):"
		sed 1,2d "$scratch/diff"
		echo "exports $1 0 1" >>"$out"
	fi
}
# The global names of a version script.
map_names() {
	sed 's,/\*.*\*/,,; /\/\*/,/\*\//d' "$1" |
		awk '/global:/ { on = 1; next } /local:/ { on = 0 } on' | tr -d ' \t;' | grep -v '^$' | sort -u
}
exported() { nm -D --defined-only -g "$1" | awk '{ print $NF }' | sort -u; }

test_objs=$(for c in tests/common/*.c; do echo "$scratch/obj/${c%.c}.o"; done)
if ! make --no-print-directory BUILD="$scratch" CFLAGS=-g "$scratch/lib/libscilan.so" \
	"$scratch/lib/libscilan_preload.so" "$scratch/lib/libscilan.a" $test_objs >"$scratch/build.log" 2>&1; then
	cat "$scratch/build.log"
	echo "exports build 0 1" >>"$out"
	exit 0
fi
grep -h 'SCILAN_API' libscilan/include/scilan.h | grep -v '#define' |
	sed -E 's/.*[ *](scilan_[a-z0-9_]+)\(.*/\1/' | sort -u >"$scratch/api"
awk '/^ [a-z_0-9]+@Base/ { sub(/@.*/, "", $1); print $1 }' debian/libscilan0.symbols | sort -u >"$scratch/symbols"
grep -h '^HK_EXPORT' hook/*.c | sed -E 's/^[^(]*[ *]([A-Za-z_0-9]+)\(.*/\1/' | cat - "$scratch/api" |
	sort -u >"$scratch/hooked"
map_names libscilan/libscilan.map >"$scratch/lib.map"
map_names hook/preload.map >"$scratch/preload.map"
exported "$scratch/lib/libscilan.so" >"$scratch/lib.dyn"
exported "$scratch/lib/libscilan_preload.so" >"$scratch/preload.dyn"

check libscilan_map_is_the_api "$scratch/api" "$scratch/lib.map"
check libscilan_map_is_debian_symbols "$scratch/symbols" "$scratch/lib.map"
check libscilan_exports_its_map "$scratch/lib.map" "$scratch/lib.dyn"
check preload_map_is_the_hooked_calls "$scratch/hooked" "$scratch/preload.map"
check preload_exports_its_map "$scratch/preload.map" "$scratch/preload.dyn"
# Every symbol a library defines, local ones included (the libraries are not
# stripped), against what the test-only objects define.
# shellcheck disable=SC2086
nm --defined-only $test_objs | awk 'NF == 3 && $2 ~ /[TDBR]/ { print $3 }' | sort -u >"$scratch/test.syms"
for lib in libscilan.so libscilan_preload.so libscilan.a; do
	nm --defined-only "$scratch/lib/$lib" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u >"$scratch/lib.syms"
	comm -12 "$scratch/test.syms" "$scratch/lib.syms" >"$scratch/test_in_lib"
	: >"$scratch/none"
	check "${lib%%.*}_${lib##*.}_has_no_test_code" "$scratch/none" "$scratch/test_in_lib"
done
awk '{ p += $3; f += $4 } END { printf "exports: %d passed, %d failed\n", p, f }' "$out"
exit 0
