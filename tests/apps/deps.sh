#!/usr/bin/env bash
# tests/apps/deps.sh — installs the missing Debian packages of tests/apps and
# perf/apps (as root; otherwise prints the apt-get line).  Used by mk/apps.mk.
set -euo pipefail
packages=(iperf3 sockperf redis-server redis-tools nginx-light wrk curl memcached
	libmemcached-tools vsftpd tnftp rpcbind libtirpc-dev rpcsvc-proto pkg-config
	jq iproute2 procps gnuplot-nox util-linux openssh-server openssh-client rsync mariadb-server mariadb-client
	php-fpm libfcgi-bin apache2 golang-go varnish apache2-utils python3 podman runc)
# node-cluster.sh runs whichever node is on the PATH (Debian's, NodeSource's,
# /usr/local/bin's); Debian's nodejs only when there is none.
command -v node >/dev/null || command -v nodejs >/dev/null || packages+=(nodejs)
exec "$(dirname "$0")/../../scripts/apt-missing.sh" "scilan apps" "${packages[@]}"
