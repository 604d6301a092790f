#!/usr/bin/env bash
# perf/syscalls/bench.sh BUILD — system calls per short connection that ends
# on kernel TCP, at connect and at accept, against plain kernel TCP: a hooked
# client of a plain server, a plain client of a hooked server, and both
# hooked where the offer policy keeps them on kernel TCP (`short`); also a
# pre-forked server (one that accepts on a socket another process holds),
# and one whose forked child makes the socket listen (then its connectors of
# the same user also name their offers as files).
# Counted by strace, as the difference between a run of N1 and one of N2
# connections (start-up and exit fall out).  The target: at most 2 more than
# kernel TCP on each side.
set -euo pipefail
BUILD=${1:-build}
RUN=$BUILD/bin/scilan_run LOOP=$BUILD/bin/conn_loop
N1=${SYSCALLS_N1:-200} N2=${SYSCALLS_N2:-600} TARGET=2
command -v strace >/dev/null || { echo "bench-syscalls: needs strace (make deps)" >&2; exit 1; }
for f in "$RUN" "$LOOP"; do
	[ -x "$f" ] || { echo "bench-syscalls: no $f (make all)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
export SCILAN_RUNDIR=$tmp/run
mkdir -m 700 "$SCILAN_RUNDIR"

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# calls FILE_PREFIX SYSCALL: system calls of the process (strace -ff file)
# that made the most SYSCALL calls.
calls() {
	local f best=-1 total=0 c
	for f in "$1".*; do
		c=$(grep -c "^$2" "$f" || true)
		if [ "$c" -gt "$best" ]; then
			best=$c
			total=$(grep -c '^[a-z_0-9]*(' "$f" || true)
		fi
	done
	echo "$total"
}

# one SERVER_HOOK CLIENT_HOOK SERVER_MODE N: "ACCEPT_CALLS CONNECT_CALLS"
one() {
	local shook=$1 chook=$2 mode=$3 n=$4 p spre=() cpre=() i
	p=$(port)
	[ "$shook" = 1 ] && spre=("$RUN" --)
	[ "$chook" = 1 ] && cpre=("$RUN" --)
	rm -f "$tmp"/s.* "$tmp"/c.* "$tmp/ready"
	strace -qq -ff -o "$tmp/s" "${spre[@]}" "$LOOP" "$mode" "$p" "$n" >"$tmp/ready" 2>>"$tmp/log" &
	local spid=$!
	for ((i = 0; i < 100; i++)); do
		grep -q ready "$tmp/ready" 2>/dev/null && break
		sleep 0.1
	done
	strace -qq -ff -o "$tmp/c" "${cpre[@]}" "$LOOP" client "$p" "$n" 2>>"$tmp/log" ||
		{ cat "$tmp/log" >&2; return 1; }
	wait "$spid" || { cat "$tmp/log" >&2; return 1; }
	echo "$(calls "$tmp/s" "accept4\\?(") $(calls "$tmp/c" "connect(")"
}

# per_conn SERVER_HOOK CLIENT_HOOK SERVER_MODE: marginal calls per connection
per_conn() {
	local a b
	read -r -a a < <(one "$1" "$2" "$3" "$N1")
	read -r -a b < <(one "$1" "$2" "$3" "$N2")
	echo "$(echo "(${b[0]} - ${a[0]}) / ($N2 - $N1)" | bc -l) $(echo "(${b[1]} - ${a[1]}) / ($N2 - $N1)" | bc -l)"
}

printf 'System calls per short connection ending on kernel TCP (strace, %d vs %d connections)\n\n' "$N2" "$N1"
printf '%-44s %8s %8s %8s %8s\n' case accept "+kernel" connect "+kernel"
missed=0
for server in server forked-server late-listen-server; do
	read -r ka kc < <(per_conn 0 0 "$server")
	printf '%-44s %8.2f %8s %8.2f %8s\n' "kernel TCP ($server)" "$ka" - "$kc" -
	for c in "1 0 hooked server, plain client" "0 1 hooked client, plain server" "1 1 both hooked, offer policy short"; do
		read -r sh ch label <<<"$c"
		read -r a k < <(per_conn "$sh" "$ch" "$server")
		da=$(echo "$a - $ka" | bc -l) dc=$(echo "$k - $kc" | bc -l)
		verdict=""
		if [ "$(echo "$da > $TARGET + 0.05 || $dc > $TARGET + 0.05" | bc -l)" = 1 ]; then
			verdict="  MISSED (target +$TARGET)"
			missed=1
		fi
		printf '%-44s %8.2f %+8.2f %8.2f %+8.2f%s\n' "$label ($server)" "$a" "$da" "$k" "$dc" "$verdict"
	done
done
exit "$missed"
