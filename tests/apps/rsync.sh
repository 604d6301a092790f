#!/usr/bin/env bash
# tests/apps/rsync.sh — an rsync daemon (rsync://, one forked child per
# session, the receiving end forking again) pulled from and pushed to by the
# rsync client, a generated tree checked file by file, on kernel TCP and scilan.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
apps_init rsync

# The tree: 300 files in nested directories, mostly small, every 50th of
# ~1 MB, an empty file, a name with spaces, a symlink: ~7 MB of random bytes.
TREE=$WORK/tree
gen_tree() {
	local i d size
	for ((i = 0; i < 300; i++)); do
		d="$TREE/d$((i % 7))/s$((i % 3))"
		[ $((i % 11)) -eq 0 ] && d="$d/deep/er"
		mkdir -p "$d"
		if [ $((i % 50)) -eq 7 ]; then
			size=$((1000000 + RANDOM))
		else
			size=$(((RANDOM * 32768 + RANDOM) % 20000))
		fi
		head -c "$size" /dev/urandom >"$d/f$i.bin"
	done
	: >"$TREE/empty"
	echo "a name with spaces" >"$TREE/d1/with some spaces.txt"
	ln -s ../d2/s0/f2.bin "$TREE/d1/link"
}
gen_tree
TOTAL=$(find "$TREE" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
NFILES=$(find "$TREE" -type f | wc -l)
echo "tree: $NFILES files, $TOTAL bytes"

# manifest DIR: every entry's type, path, symlink target and sha256: two trees
# are equal when their manifests are.
manifest() {
	(cd "$1" && find . -mindepth 1 -printf '%y %p %l\n' | LC_ALL=C sort &&
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum)
}
same_tree() { # WHAT A B
	manifest "$2" >"$WORK/manifest.a"
	manifest "$3" >"$WORK/manifest.b"
	if ! cmp -s "$WORK/manifest.a" "$WORK/manifest.b"; then
		echo "$1: the trees differ:" >&2
		diff "$WORK/manifest.a" "$WORK/manifest.b" | head -n 20 >&2
		return 1
	fi
	diff -r --no-dereference "$2" "$3"
}

server() { # MODE
	PORT=$(free_port)
	rm -rf "$WORK/dst"
	mkdir -p "$WORK/dst"
	# No chroot and the launching user: no privileges needed (a test run as
	# root keeps root; the hook withdraws the listeners of a process that
	# changes user).  Symlinks kept as they are (not munged).
	cat >"$WORK/rsyncd.$PORT.conf" <<CONF
use chroot = no
uid = $(id -u)
gid = $(id -g)
munge symlinks = no
lock file = $WORK/rsyncd.lock
log file = $WORK/rsyncd.log
[src]
	path = $TREE
	read only = yes
[dst]
	path = $WORK/dst
	read only = no
CONF
	daemon srv "$1" rsync --daemon --no-detach --config="$WORK/rsyncd.$PORT.conf" \
		--address=127.0.0.1 --port="$PORT"
	wait_listen "$PORT"
}

# client NAME MODE ARGS...: one rsync client run, its stderr in
# $WORK/NAME.err (statistics lines of the client and its fork children).
client() {
	local name=$1
	pre "$2"
	shift 2
	timeout -k 5 60 "${PRE[@]}" rsync "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" ||
		{ local rc=$?; cat "$WORK/$name.err" >&2; echo "rsync $name exited with status $rc" >&2; return "$rc"; }
	grep -a -E '^(sent|total size)' "$WORK/$name.out" || true
}

# quiesce: until the daemon's session processes have exited (up to 15 s).
# Stopping the daemon earlier would signal them too (timeout signals its whole
# process group) and rsync leaves a signal handler with _exit: no statistics.
quiesce() {
	local d i
	d=$(pgrep -P "${DPID[srv]}" | head -n 1)
	for ((i = 0; i < 150; i++)); do
		[ -z "$(pgrep -P "$d")" ] && return 0
		sleep 0.1
	done
	echo "rsync daemon sessions still running 15 s after their client" >&2
	return 1
}

# Which processes print statistics: the client's generator and sender, the
# daemon's session process (generator or sender).  Not the receivers (their
# generator ends them with SIGUSR2, whose handler calls _exit) nor the
# listening daemon (SIGTERM, _exit again): so the end that accepted has no
# "accelerated" to show; its session process counts from zero (a fork
# child), and the bytes it moved over the rings with no fallback show that
# its end was accelerated too.
check_server() { # MODE MIN_TX MIN_RX
	check_stats "$1" server 0 "$2" "$3" "$WORK/srv.err"
	[ "$1" = kernel ] || expect "no server fallback" "$(stat_sum fallback "$WORK/srv.err")" -eq 0
}

pull_case() {
	local mode=$1
	server "$mode"
	rm -rf "$WORK/pull"
	client pull "$mode" -a --stats "rsync://127.0.0.1:$PORT/src/" "$WORK/pull/"
	same_tree "pulled tree" "$TREE" "$WORK/pull"
	check_stats "$mode" client 1 1 1 "$WORK/pull.err"
	quiesce
	stop srv TERM
	check_server "$mode" "$TOTAL" 1
	echo "ok: pulled $NFILES files, $TOTAL bytes, trees equal"
}

# A push, then a second push with -I (every file compared again, block
# checksums one way and deltas the other) after changing some files.
push_case() {
	local mode=$1 src=$WORK/push.src f
	server "$mode"
	rm -rf "$src"
	cp -a "$TREE" "$src"
	client push "$mode" -a --stats "$src/" "rsync://127.0.0.1:$PORT/dst/"
	same_tree "pushed tree" "$src" "$WORK/dst"
	check_stats "$mode" client 1 "$TOTAL" 1 "$WORK/push.err"
	for f in "$src"/d3/s1/*.bin; do
		printf 'changed in the middle' | dd of="$f" bs=1 seek=$(($(stat -c %s "$f") / 2)) conv=notrunc status=none
	done
	head -c 70000 /dev/urandom >>"$src/d0/s0/f0.bin"
	rm "$src/d4/s1/f4.bin"
	client push2 "$mode" -a -I --delete --stats "$src/" "rsync://127.0.0.1:$PORT/dst/"
	same_tree "tree pushed again" "$src" "$WORK/dst"
	check_stats "$mode" "client (again)" 1 70000 1 "$WORK/push2.err"
	quiesce
	stop srv TERM
	check_server "$mode" 1 1
	[ "$mode" = kernel ] || expect "a statistics line per session" "$(stat_lines "$WORK/srv.err")" -ge 2
	echo "ok: pushed $NFILES files, $TOTAL bytes, then deltas: trees equal"
}

# Mixed ends: a plain client of a preloaded daemon and a preloaded client of
# a plain daemon use kernel TCP (a fallback counted, nothing accelerated),
# the daemon's fork children included, and move the tree intact.
mixed_case() {
	server scilan
	rm -rf "$WORK/pull"
	client pull kernel -a "rsync://127.0.0.1:$PORT/src/" "$WORK/pull/"
	same_tree "tree pulled by a plain client" "$TREE" "$WORK/pull"
	quiesce
	stop srv TERM
	stat_lines_of "$WORK/srv.err"
	expect "preloaded daemon, plain client: nothing accelerated" "$(stat_sum accelerated "$WORK/srv.err")" -eq 0
	expect "preloaded daemon, plain client: no ring bytes" "$(stat_sum tx "$WORK/srv.err")" -eq 0

	server kernel
	client push scilan -a "$TREE/" "rsync://127.0.0.1:$PORT/dst/"
	same_tree "tree pushed by a preloaded client" "$TREE" "$WORK/dst"
	stat_lines_of "$WORK/push.err"
	expect "preloaded client, plain daemon: nothing accelerated" "$(stat_sum accelerated "$WORK/push.err")" -eq 0
	expect "preloaded client, plain daemon: a fallback" "$(stat_sum fallback "$WORK/push.err")" -ge 1
	stop srv TERM
	echo "ok: both mixed pairs on kernel TCP, trees equal"
}

for mode in $MODES; do
	run_case "$mode rsync daemon pull" pull_case "$mode"
	run_case "$mode rsync daemon push" push_case "$mode"
done
[[ " $MODES " == *" scilan "* ]] && run_case "mixed rsync ends" mixed_case
apps_finish
