#!/usr/bin/env bash
# check-layers.sh [RESULTS] — the include rules of libscilan/src's layers
# (ARCHITECTURE.md, "Layers") and of the hook, checked over #include lines.
# With RESULTS, records "layers NAME PASS FAIL" lines there for `make test`
# (scripts/test-summary.sh fails on them) and exits 0; alone, exits 1 on a
# violation.
set -u
cd "$(dirname "$0")/.."
results=${1:-}

# The layers, top first: a file may include its own folder and any folder
# listed after its own, never one before it or beside it (fabric/shm and
# fabric/dev share a rank and must not use each other).
RANKS="
socket      9
fabric/shm  8
fabric/dev  8
process     7
conn        6
evq         5
fabric      4
ring        3
sync        2
runtime     1
"
# The per-socket record every layer reads and writes.
SHARED="socket/sock_state.h"
# Includes against the order, each a debt with its reason; a new one is a
# design decision, written here and in ARCHITECTURE.md.
EXCEPTIONS="
evq/evq.c conn/agree.h                      an epoll set's registration waits for the agreement
ring/segment.c process/holders.h            a new segment starts its holder tables
runtime/config.c ring/layout.h              SCILAN_RING_KB is checked against the ring's bounds
runtime/config.c ring/ring.h                the same
runtime/config.h sync/spin_policy.h         the settings hold the spin policy's parameters
runtime/own_fd.c fabric/shm/seg_pool.h      near the descriptor limit, the pool gives its spare set back
runtime/own_fd.c fabric/shm/sock_diag.h     the same, for the netlink socket
runtime/rundir_sweep.c fabric/shm/offer.h   the janitor removes dead processes' offers
runtime/rundir_sweep.c fabric/shm/registry.h  and listener entries
runtime/rundir_sweep.c fabric/shm/offer_names.h  and wake-up FIFOs
runtime/rundir_sweep.c sync/clock.h         the janitor ticks once a second by the one clock
runtime/young.c sync/clock.h                a process's first 10 ms, by the same clock
"
# Public or foreign headers any library file may include.
PUBLIC="scilan.h"
# The driver's ABI, for the device fabric only (and evq/evq_dev.c, below).
DRIVER_ABI="uapi/scilan.h"

rank_of() { awk -v l="$1" '$1 == l { print $2 }' <<<"$RANKS"; }
layer_of() { # path under libscilan/src -> its folder ("" at the top)
	local d=${1%/*}
	[ "$d" = "$1" ] && d=""
	echo "$d"
}

violations=()
checked=0
# The library.
while IFS= read -r f; do
	rel=${f#libscilan/src/}
	layer=$(layer_of "$rel")
	[ -z "$layer" ] && continue # preload_api.h: the hook's view of every layer
	rank=$(rank_of "$layer")
	if [ -z "$rank" ]; then
		violations+=("$f: folder $layer has no rank in scripts/check-layers.sh")
		continue
	fi
	while IFS= read -r inc; do
		checked=$((checked + 1))
		[ "$inc" = "$PUBLIC" ] && continue
		# and for the epoll sets' queues on it (their pages are the driver's ABI)
		[ "$inc" = "$DRIVER_ABI" ] && { [ "$layer" = fabric/dev ] || [ "$rel" = evq/evq_dev.c ]; } && continue
		if [ ! -f "libscilan/src/$inc" ]; then
			violations+=("$f: \"$inc\" is not \"layer/name.h\" under libscilan/src")
			continue
		fi
		[ "$inc" = "$SHARED" ] && continue
		il=$(layer_of "$inc")
		[ "$il" = "$layer" ] && continue
		irank=$(rank_of "$il")
		if [ -n "$irank" ] && [ "$irank" -lt "$rank" ]; then
			continue
		fi
		grep -qE "^$rel $inc( |$)" <<<"$EXCEPTIONS" && continue
		violations+=("$f: includes $inc ($layer may not use ${il:-the top level})")
	done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done < <(find libscilan/src -name '*.[ch]' | sort)

# The hook: its own headers, the public API and preload_api.h only.
while IFS= read -r f; do
	while IFS= read -r inc; do
		checked=$((checked + 1))
		case "$inc" in
		"$PUBLIC" | preload_api.h) continue ;;
		*/*) ;;
		*) [ -f "hook/$inc" ] && continue ;;
		esac
		violations+=("$f: includes $inc (the hook uses the library through libscilan/src/preload_api.h)")
	done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done < <(find hook -name '*.[ch]' | sort)

echo "== [layers] include rules of libscilan/src and hook/ (scripts/check-layers.sh)"
for v in "${violations[@]}"; do echo "$v"; done
echo "layers: $checked includes checked, ${#violations[@]} violations"
if [ -n "$results" ]; then
	mkdir -p "$results"
	if [ ${#violations[@]} -eq 0 ]; then
		echo "layers include_rules 1 0" >"$results/layers.txt"
	else
		echo "layers include_rules 0 1" >"$results/layers.txt"
	fi
	exit 0
fi
[ ${#violations[@]} -eq 0 ]
