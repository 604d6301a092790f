#!/usr/bin/env bash
# deps.sh — installs the Debian packages the build, tests and benches need,
# when run as root; otherwise prints the one apt-get line to run.
set -euo pipefail
packages=(gcc make libcriterion-dev pkg-config gnuplot-nox spin iproute2 procps libpci-dev libhwloc-dev pciutils clang-14 libclang-rt-14-dev liburing-dev mandoc)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "scilan: missing Debian packages; run: sudo apt-get install -y ${missing[*]}" >&2
	exit 1
fi
echo "scilan: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq "${missing[@]}" >/dev/null
