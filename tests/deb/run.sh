#!/usr/bin/env bash
# run.sh DEBDIR RESULTS — `make test-deb` (as root): installs the packages
# `make deb` built, runs an unmodified redis pair under /usr/bin/scilan_run
# --stats (proving acceleration), builds a program against libscilan-dev with
# pkg-config, then purges the packages and checks nothing of them is left.
# Writes RESULTS/deb.txt.  Not part of `make test` (it changes the system).
set -u
debs=$(realpath "$1") results=$2
mkdir -p "$results"
[ "$(id -u)" -eq 0 ] || { echo "test-deb installs packages: run as root" >&2; exit 1; }
pkgs=(libscilan0 libscilan-dev scilan-tools scilan-dkms)
tmp=$(mktemp -d)
srv=
export DEBIAN_FRONTEND=noninteractive
purge() { apt-get purge -y -qq "${pkgs[@]}" >"$tmp/purge.log" 2>&1; }
trap '[ -n "$srv" ] && kill "$srv" 2>/dev/null; purge; rm -rf "$tmp"' EXIT
passed=0 failed=0
check() { # NAME CMD...: one case
	local name=$1 log=$tmp/log
	shift
	if "$@" >"$log" 2>&1; then
		passed=$((passed + 1)); echo "  ok    $name"
	else
		failed=$((failed + 1)); echo "  FAIL  $name"; sed 's/^/        /' "$log"
	fi
}

install_pkgs() {
	local files=()
	for p in "${pkgs[@]}"; do files+=("$(ls "$debs"/"${p}"_*.deb)") || return 1; done
	for p in "${pkgs[@]}"; do
		if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
			echo "$p is installed already: this test would remove it"; return 1
		fi
	done
	# redis is the program under test, not a dependency of the packages.
	for p in redis-server redis-tools; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			apt-get install -y -qq --no-install-recommends "$p" || return 1
	done
	apt-get install -y -qq --no-install-recommends "${files[@]}"
}
installed_files() {
	for p in "${pkgs[@]}"; do dpkg -L "$p"; done | sort -u >"$tmp/files" &&
	grep -qx /usr/bin/scilan_run "$tmp/files" && grep -qx /usr/share/bash-completion/completions/scilan_ctl "$tmp/files" &&
	grep -q '/scilan/libscilan_preload.so$' "$tmp/files" &&
	man -w scilan scilan_run scilan_ctl scilan.conf libscilan
}
run() { env -u LD_PRELOAD -u SCILAN_PRELOAD_LIB SCILAN_RUNDIR="$tmp/run" SCILAN_CONF=/dev/null SCILAN_FABRIC=shm \
	timeout -k 5 120 /usr/bin/scilan_run "$@"; }
redis_pair() {
	local port=6397 ok=
	[ "$(run sh -c 'echo "$LD_PRELOAD"')" = "/usr/bin/../lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/scilan/libscilan_preload.so" ] ||
		{ echo "LD_PRELOAD is not the packaged preload"; return 1; }
	run --stats=stderr redis-server --port $port --bind 127.0.0.1 --save '' --appendonly no \
		>"$tmp/srv.out" 2>"$tmp/srv.err" &
	srv=$!
	for _ in $(seq 100); do
		run redis-cli -p $port ping 2>/dev/null | grep -q PONG && { ok=1; break; }
		sleep 0.1
	done
	[ -n "$ok" ] || { echo "redis-server did not answer"; cat "$tmp/srv.err"; return 1; }
	run --stats=stderr redis-benchmark -p $port -n 20000 -c 1 -t set,get -q >"$tmp/bench.out" 2>"$tmp/bench.err" || return 1
	run redis-cli -p $port shutdown nosave >/dev/null 2>&1
	wait "$srv"
	srv=
	cat "$tmp/bench.out" "$tmp/bench.err"
	grep 'scilan:' "$tmp/srv.err"
	grep -q 'GET: [0-9.]* requests per second' "$tmp/bench.out" &&
	grep -Eq '^scilan: pid [0-9]+: accelerated [1-9][0-9]*, fallback 0' "$tmp/bench.err" &&
	grep -Eq '^scilan: pid [0-9]+: accelerated [1-9][0-9]*, fallback 0' "$tmp/srv.err"
}
dkms_built() { # KVER: dkms built and installed scilan.ko (and ntb.ko) for it
	dkms status scilan | tee /dev/stderr | grep -q "$1.*: installed" &&
	modinfo -k "$1" -F filename scilan | grep -q /updates/dkms/
}
dev_build() {
	printf '#include <scilan.h>\nint main(void) { int fd = scilan_socket(AF_INET, SOCK_STREAM, 0);\n return !(scilan_is_socket(fd) == 1 && scilan_close(fd) == 0); }\n' >"$tmp/p.c" &&
	# shellcheck disable=SC2046 # pkg-config's output is a word list
	gcc -Wall -Werror -o "$tmp/p" "$tmp/p.c" $(pkg-config --cflags --libs scilan) &&
	SCILAN_RUNDIR=$tmp/run "$tmp/p" && ldd "$tmp/p" | grep -q '/libscilan.so.0 '
}
purged() {
	purge || { cat "$tmp/purge.log"; return 1; }
	local left=0
	while read -r f; do
		[ -f "$f" ] || [ -L "$f" ] || continue
		# directories and files shared with other packages stay
		dpkg -S "$f" >/dev/null 2>&1 && continue
		echo "left behind: $f"; left=1
	done <"$tmp/files"
	for f in /lib/modules/*/updates/dkms/scilan.ko*; do [ -e "$f" ] && { echo "left behind: $f"; left=1; }; done
	[ $left -eq 0 ] && [ ! -e /usr/src/scilan-"$(dpkg-deb -f "$(ls "$debs"/scilan-dkms_*.deb)" Version | sed 's/-[^-]*$//')" ]
}

mkdir -m 0700 "$tmp/run"
check "apt-get install the packages" install_pkgs
check "installed files and man pages" installed_files
check "redis pair accelerated under /usr/bin/scilan_run" redis_pair
# The packages' postinst builds the driver for kernels whose headers are here.
for kdir in /lib/modules/*/build; do
	[ -e "$kdir/Makefile" ] || continue
	kver=${kdir#/lib/modules/} kver=${kver%/build}
	check "dkms builds the driver for $kver" dkms_built "$kver"
done
check "pkg-config build against libscilan-dev" dev_build
check "purge leaves nothing behind" purged
echo "deb test_deb $passed $failed" >"$results/deb.txt"
echo "deb: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
