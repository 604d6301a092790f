#!/usr/bin/env bash
# build-debs.sh OUTDIR — `make deb`: the Debian packages of debian/ built from
# a copy of the work tree (dpkg-buildpackage writes into the parent of the
# source tree), without the test suite; as root, the Build-Depends are
# installed first.  The .debs, the .changes and lintian's report land in OUTDIR.
set -euo pipefail
out=$(realpath -m "$1")
top=$(cd "$(dirname "$0")/.." && pwd)
export DEBIAN_FRONTEND=noninteractive
# dpkg-dev reads debian/ (versions, Build-Depends) before anything else can.
if ! command -v dpkg-buildpackage >/dev/null; then
	[ "$(id -u)" -eq 0 ] || { echo "scilan: run: sudo apt-get install dpkg-dev" >&2; exit 1; }
	apt-get update -qq >/dev/null
	apt-get install -y -qq --no-install-recommends dpkg-dev >/dev/null
fi
version=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
src=$out/scilan-${version%-*}

if ! dpkg-checkbuilddeps "$top/debian/control" 2>/dev/null; then
	if [ "$(id -u)" -ne 0 ]; then
		dpkg-checkbuilddeps "$top/debian/control" || true
		echo "scilan: run as root to install them, or: sudo apt-get build-dep $top" >&2
		exit 1
	fi
	echo "scilan: installing the build dependencies of debian/control" >&2
	apt-get update -qq >/dev/null
	# apt reads Build-Depends from the directory's debian/control: no deb-src needed.
	apt-get build-dep -y -qq --no-install-recommends "$top" >/dev/null
fi
# lintian is only the report; the build does not need it.
command -v lintian >/dev/null || { [ "$(id -u)" -eq 0 ] && apt-get install -y -qq --no-install-recommends lintian >/dev/null; } || true

rm -rf "$out" && mkdir -p "$src"
tar -C "$top" --exclude=./build --exclude=./.git -cf - . | tar -C "$src" -xf -
cd "$src"
DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-}" dpkg-buildpackage -us -uc -b
cd "$out"
rm -rf "$src"
ls -1 "$out"/*.deb
if command -v lintian >/dev/null; then
	lintian --info --display-info "$out"/*.changes >"$out/lintian.txt" 2>&1 || true
	echo "lintian: $(grep -c '^E:' "$out/lintian.txt") errors, $(grep -c '^W:' "$out/lintian.txt") warnings (see $out/lintian.txt)"
	! grep -q '^E:' "$out/lintian.txt"
fi
