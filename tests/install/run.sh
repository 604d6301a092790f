#!/usr/bin/env bash
# run.sh BUILD RESULTS — `make install DESTDIR=<scratch>` checked from the
# installed tree alone: the file list, a pkg-config build that links and runs,
# every man page clean under `mandoc -T lint`, and the installed scilan_run
# accelerating a peer pair with the installed preload.  Writes RESULTS/install.txt.
set -u
build=$1 results=$2
mkdir -p "$results"
out="$results/install.txt"
tmp=$(mktemp -d)
srv=
trap '[ -n "$srv" ] && kill "$srv" 2>/dev/null; rm -rf "$tmp"' EXIT
root=$tmp/root prefix=/usr/local
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

version=$(sed -n 's/^VERSION *:= *//p' mk/install.mk)
expected() {
	cat <<LIST
$prefix/bin/scilan_ctl
$prefix/bin/scilan_run
$prefix/etc/scilan/cluster.conf.example
$prefix/include/scilan.h
$prefix/lib/libscilan.a
$prefix/lib/libscilan.so
$prefix/lib/libscilan.so.0
$prefix/lib/libscilan.so.$version
$prefix/lib/pkgconfig/scilan.pc
$prefix/lib/scilan/libscilan_preload.so
$prefix/share/bash-completion/completions/scilan_ctl
$prefix/share/bash-completion/completions/scilan_run
$prefix/share/man/man1/scilan_run.1
$prefix/share/man/man3/libscilan.3
$prefix/share/man/man5/scilan.conf.5
$prefix/share/man/man7/scilan.7
$prefix/share/man/man8/scilan_ctl.8
LIST
	for f in driver/*.c driver/*.h driver/uapi/*.h driver/Kbuild driver/dkms.conf driver/dkms-prebuild.sh; do
		echo "/usr/src/scilan-$version/${f#driver/}"
	done
}

do_install() {
	make --no-print-directory install BUILD="$build" DESTDIR="$root" PREFIX=$prefix
}
file_list() {
	diff -u <(expected | sort) <(cd "$root" && find . \( -type f -o -type l \) | sed 's/^\.//' | sort)
}
symlinks() {
	[ "$(readlink "$root$prefix/lib/libscilan.so")" = libscilan.so.0 ] &&
	[ "$(readlink "$root$prefix/lib/libscilan.so.0")" = "libscilan.so.$version" ] &&
	[ "$(objdump -p "$root$prefix/lib/libscilan.so.$version" | awk '/SONAME/ {print $2}')" = libscilan.so.0 ] &&
	grep -q "^PACKAGE_VERSION=\"$version\"" "$root/usr/src/scilan-$version/dkms.conf"
}
pc() { PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$root$prefix/lib/pkgconfig pkg-config "$@"; }
pkgconfig_build() {
	pc --exists scilan && [ "$(pc --modversion scilan)" = "$version" ] || return 1
	cat >"$tmp/prog.c" <<'C'
#include <scilan.h>
#include <stdio.h>
#include <netinet/in.h>
int main(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l = scilan_socket(AF_INET, SOCK_STREAM, 0), c = scilan_socket(AF_INET, SOCK_STREAM, 0), s;
	char buf[6] = "";

	if (l < 0 || c < 0 || scilan_bind(l, (struct sockaddr *)&a, len) || scilan_listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &len) || scilan_connect(c, (struct sockaddr *)&a, len) ||
	    (s = scilan_accept(l, NULL, NULL)) < 0 || scilan_send(c, "hello", 5, 0) != 5 ||
	    scilan_recv(s, buf, 5, MSG_WAITALL) != 5)
		return perror("scilan"), 1;
	printf("%s %d\n", buf, scilan_is_socket(s));
	return scilan_close(s) | scilan_close(c) | scilan_close(l);
}
C
	# shellcheck disable=SC2046 # pkg-config's output is a word list
	gcc -Wall -Werror -o "$tmp/prog" "$tmp/prog.c" $(pc --cflags --libs scilan) &&
	[ "$(SCILAN_RUNDIR=$tmp/run LD_LIBRARY_PATH=$root$prefix/lib "$tmp/prog")" = "hello 1" ] &&
	# the program takes libscilan from the installed tree, not the build tree
	LD_LIBRARY_PATH=$root$prefix/lib ldd "$tmp/prog" | grep -q "=> $root$prefix/lib/libscilan.so.0 "
}
static_build() {
	gcc -o "$tmp/prog_static" "$tmp/prog.c" $(pc --cflags --static scilan) "$root$prefix/lib/libscilan.a" -pthread &&
	[ "$(SCILAN_RUNDIR=$tmp/run "$tmp/prog_static")" = "hello 1" ]
}
man_lint() {
	local dir=$root$prefix/share/man pages rc=0 x
	pages=("$dir"/man*/*)
	[ ${#pages[@]} -eq 5 ] || { echo "${#pages[@]} pages installed, want 5"; return 1; }
	# Every message fails but two that depend on the machine, not the pages:
	# whether the system's pages cross-referenced are installed, and its
	# mandoc.db; our own cross-references are checked below instead.
	mandoc -T lint -W all "${pages[@]}" 2>&1 | grep -v 'referenced manual not found\|mandoc\.db' | grep . && rc=1
	# groff (groff-base) is on most Debian systems, not a dependency of ours
	if command -v groff >/dev/null; then groff -ww -mandoc -Tutf8 "${pages[@]}" 2>&1 >/dev/null | grep . && rc=1; fi
	for x in $(sed -n 's/^\.Xr \(scilan[^ ]*\|libscilan\) \([0-9]\).*/\1.\2/p' "${pages[@]}" | sort -u); do
		[ -f "$dir/man${x##*.}/$x" ] || { echo "cross reference to $x: no such page"; rc=1; }
	done
	for p in "${pages[@]}"; do
		[ "$(mandoc -T utf8 "$p" | wc -l)" -gt 20 ] || { echo "$p renders to nothing"; rc=1; }
	done
	return $rc
}
installed_run() {
	local run=$root$prefix/bin/scilan_run port=
	[ "$(env -u LD_PRELOAD "$run" sh -c 'echo "$LD_PRELOAD"')" = "$root$prefix/bin/../lib/scilan/libscilan_preload.so" ] || return 1
	# keep the build tree's hook out of reach: only the installed one can be found
	env -u SCILAN_PRELOAD_LIB SCILAN_RUNDIR="$tmp/run" SCILAN_CONF=/dev/null SCILAN_FABRIC=shm \
		timeout 60 "$run" --stats=stderr "$build/hookprogs/peer" server 127.0.0.1 >"$tmp/srv.out" 2>"$tmp/srv.err" &
	srv=$!
	for _ in $(seq 300); do
		port=$(sed -n 's/^port //p' "$tmp/srv.out" 2>/dev/null)
		[ -n "$port" ] && break
		sleep 0.1
	done
	[ -n "$port" ] || { echo "server did not start"; cat "$tmp/srv.err"; return 1; }
	env -u SCILAN_PRELOAD_LIB SCILAN_RUNDIR="$tmp/run" SCILAN_CONF=/dev/null SCILAN_FABRIC=shm \
		timeout 60 "$run" --stats=stderr "$build/hookprogs/peer" client 127.0.0.1 "$port" 1000000 >"$tmp/cli.out" 2>"$tmp/cli.err"
	local rc=$?
	wait "$srv"; local src=$?
	srv=
	cat "$tmp"/srv.* "$tmp"/cli.*
	[ $rc -eq 0 ] && [ $src -eq 0 ] &&
	grep -q '^scilan: pid [0-9]*: accelerated 1, fallback 0' "$tmp/srv.err" &&
	grep -q '^scilan: pid [0-9]*: accelerated 1, fallback 0' "$tmp/cli.err"
}
completion() {
	local dir=$root$prefix/share/bash-completion/completions
	# shellcheck disable=SC2016 # expanded by the inner bash
	[ "$(bash -c 'source "$1"; COMP_WORDS=(scilan_ctl --json map ""); COMP_CWORD=3; _scilan_ctl; echo "${COMPREPLY[*]}"' - "$dir/scilan_ctl")" = "list add del" ] &&
	# The global options after the command too, and stat's --all.
	[ "$(bash -c 'source "$1"; COMP_WORDS=(scilan_ctl devices --j); COMP_CWORD=2; _scilan_ctl; echo "${COMPREPLY[*]}"' - "$dir/scilan_ctl")" = "--json" ] &&
	[ "$(bash -c 'source "$1"; COMP_WORDS=(scilan_ctl stat --json --a); COMP_CWORD=3; _scilan_ctl; echo "${COMPREPLY[*]}"' - "$dir/scilan_ctl")" = "--all" ] &&
	[ "$(bash -c 'source "$1"; COMP_WORDS=(scilan_run --log ""); COMP_CWORD=2; _scilan_run; echo "${COMPREPLY[*]}"' - "$dir/scilan_run")" = "error warn notice info debug" ]
}
do_uninstall() {
	make --no-print-directory uninstall BUILD="$build" DESTDIR="$root" PREFIX=$prefix &&
	[ -z "$(cd "$root" && find . \( -type f -o -type l \))" ]
}

mkdir -m 0700 "$tmp/run"
check "make install DESTDIR" do_install
check "installed file list" file_list
check "library symlinks, SONAME, dkms.conf version" symlinks
check "pkg-config build links and runs" pkgconfig_build
check "static link against libscilan.a" static_build
check "mandoc -T lint on every man page" man_lint
check "installed scilan_run accelerates with the installed preload" installed_run
check "bash completion of scilan_ctl and scilan_run" completion
check "make uninstall removes every file" do_uninstall
echo "install test_install $passed $failed" >"$out"
echo "install: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
