#!/usr/bin/env bash
# perf/apps/deps.sh — installs the missing Debian packages of the server
# benchmark (perf/apps/servers.sh, `make bench-apps`) as root; otherwise prints
# the apt-get line.  A package that cannot be had leaves its rows "skipped".
set -euo pipefail
# memcaslap is Debian's name for memaslap (libmemcached-tools); ab is in
# apache2-utils; php-fpm is the release's php-fpm (8.2 on Debian 12).
packages=(postgresql postgresql-client redis-server redis-tools memcached libmemcached-tools
	python3-gunicorn nginx-light php-fpm apache2-utils sockperf gnuplot-nox util-linux
	iproute2 procps)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "scilan bench-apps: missing Debian packages; run: sudo apt-get install -y ${missing[*]}" >&2
	exit 1
fi
echo "scilan bench-apps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# Other package runs may hold the dpkg lock: wait for it rather than fail.
apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
# policy-rc.d 101: the packages' daemons (postgresql, redis, memcached, nginx,
# php-fpm) are not started by the installation; the bench starts its own.
prc=/usr/sbin/policy-rc.d
if [ ! -e "$prc" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$prc"
	chmod 755 "$prc"
	trap 'rm -f "$prc"' EXIT
fi
apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
