#!/usr/bin/env bash
# tests/apps/deps.sh — installs the missing Debian packages of tests/apps and
# perf/apps (as root; otherwise prints the apt-get line).  Used by mk/apps.mk.
set -euo pipefail
packages=(iperf3 sockperf redis-server redis-tools nginx-light wrk curl memcached
	libmemcached-tools vsftpd tnftp rpcbind libtirpc-dev rpcsvc-proto pkg-config
	jq iproute2 procps gnuplot-nox util-linux openssh-server openssh-client rsync mariadb-server mariadb-client
	php-fpm libfcgi-bin)
# node-cluster.sh runs whichever node is on the PATH (Debian's, NodeSource's,
# /usr/local/bin's); Debian's nodejs only when there is none.
command -v node >/dev/null || command -v nodejs >/dev/null || packages+=(nodejs)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "scilan: missing Debian packages; run: sudo apt-get install -y ${missing[*]}" >&2
	exit 1
fi
echo "scilan apps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# Other package runs may hold the dpkg lock: wait for it rather than fail.
apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
# policy-rc.d 101: the packages' daemons (redis, memcached, nginx, vsftpd,
# rpcbind, rsync, mariadb) are not started by the installation; the tests start their own.
prc=/usr/sbin/policy-rc.d
if [ ! -e "$prc" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$prc"
	chmod 755 "$prc"
	trap 'rm -f "$prc"' EXIT
fi
apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
